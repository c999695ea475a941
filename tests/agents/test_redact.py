"""Redaction: seeded secrets never survive; ordinary log lines pass unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.redact import (
    REDACTED,
    contains_redacted,
    looks_secret,
    redact_at_path,
    redact_mapping,
    redact_text,
    redact_value,
)

# Secrets with the shapes real ones have (none of them is real).
SLACK_BOT = "xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
SLACK_USER = "xoxp-1234567890-1234567890-1234567890123-0123456789abcdef0123456789abcdef"
SLACK_APP = "xapp-1-A0123456789-1234567890123-0123456789abcdef0123456789abcdef"
SLACK_HOOK = "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"
ANTHROPIC = "sk-ant-api03-Xy9aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789_-AbCdEfGhIjKlMnOpQrSt"
OPENAI = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGhIjKl"
OPENAI_OLD = "sk-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0UvWxYz012345678901"
AWS_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
GITHUB_PAT = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ"
GOOGLE = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
OPAQUE_BEARER = "a8f5f167f44f4964e6c998dee827110c"
BASIC = "ZGJ1c2VyOmh1bnRlcjI="
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
    "-----END RSA PRIVATE KEY-----"
)
PASSWORD = "Tr0ub4dor&3"
PLAIN_PASSWORD = "letmein"

SEEDED: list[tuple[str, str]] = [
    (f"posting to slack with token {SLACK_BOT}", SLACK_BOT),
    (f"SLACK_BOT_TOKEN={SLACK_BOT}", SLACK_BOT),
    (f"user token {SLACK_USER} revoked", SLACK_USER),
    (f"socket mode app token: {SLACK_APP}", SLACK_APP),
    (f"webhook {SLACK_HOOK} returned 404", SLACK_HOOK),
    (f"anthropic client configured with {ANTHROPIC}", ANTHROPIC),
    (f'{{"api_key": "{ANTHROPIC}"}}', ANTHROPIC),
    (f"OPENAI_API_KEY={OPENAI}", OPENAI),
    (f"using key {OPENAI_OLD} for completions", OPENAI_OLD),
    (f"aws: credentials {AWS_ID} rejected", AWS_ID),
    (f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET),
    (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
    (f'"SecretAccessKey": "{AWS_SECRET}"', AWS_SECRET),
    (f"git clone https://{GITHUB}@github.com/acme/app.git", GITHUB),
    (f"GITHUB_TOKEN={GITHUB}", GITHUB),
    (f"pushing with {GITHUB_PAT}", GITHUB_PAT),
    (f"maps key {GOOGLE} over quota", GOOGLE),
    (f"session cookie {JWT} expired", JWT),
    (f"Authorization: Bearer {JWT}", JWT),
    (f"Authorization: Bearer {OPAQUE_BEARER}", OPAQUE_BEARER),
    (f"curl -H 'Authorization: Bearer abcdefghijklmnopqrstuvwx' {SLACK_HOOK}", "abcdefghijklmnop"),
    (f'request headers {{"authorization": "Basic {BASIC}"}}', BASIC),
    (f"proxy-authorization: {OPAQUE_BEARER}", OPAQUE_BEARER),
    (f"retrying with bearer {OPAQUE_BEARER}", OPAQUE_BEARER),
    (f"loaded key\n{PEM}\nok", "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"),
    (f"{PEM[:120]}", "MIIEowIBAAKCAQEAu1SU1LfV"),  # a log tail that cut the key off
    (f"connecting to mongodb://geo:{PASSWORD}@mongodb-geo:27017/geo-db", PASSWORD),
    (f"DATABASE_URL=postgres://app:{PASSWORD}@db.internal:5432/app", PASSWORD),
    (f"redis://:{PASSWORD}@redis:6379/0 unreachable", PASSWORD),
    (f"password={PASSWORD} user=geo", PASSWORD),
    (f"password: {PLAIN_PASSWORD}", PLAIN_PASSWORD),
    (f'{{"user": "geo", "password": "{PASSWORD}"}}', PASSWORD),
    (f"{{'password': '{PASSWORD}'}}", PASSWORD),
    (f"DB_PASSWORD={PLAIN_PASSWORD}", PLAIN_PASSWORD),
    (f"dbPassword: {PLAIN_PASSWORD}", PLAIN_PASSWORD),
    (f"mysqld --user=root --password {PASSWORD} --port 3306", PASSWORD),
    (f"starting with --api-key={PLAIN_PASSWORD}", PLAIN_PASSWORD),
    (f"X-Api-Key: {PLAIN_PASSWORD}", PLAIN_PASSWORD),
    (f"client_secret={PLAIN_PASSWORD}&grant_type=client_credentials", PLAIN_PASSWORD),
    (f"GET /callback?code=abc&access_token={OPAQUE_BEARER} 302", OPAQUE_BEARER),
    (f"SENTRY_DSN=https://{OPAQUE_BEARER}@o1.ingest.sentry.io/1", OPAQUE_BEARER),
    (f"STRIPE_KEY=sk_live_{OPAQUE_BEARER}", OPAQUE_BEARER),
]

ORDINARY = [
    "dial tcp 10.96.0.12:5432: connect: connection refused",
    'rpc error: code = Unavailable desc = connection error: desc = "transport: Error while '
    'dialing dial tcp: lookup geo on 10.96.0.10:53: no such host"',
    "2026-01-05T09:00:03.123Z INFO  frontend GET /hotels?inDate=2026-01-05 200 12ms",
    "pulling image gcr.io/google-samples/microservices-demo/frontend:v0.10.1",
    "Successfully pulled image docker.io/library/nginx@sha256:"
    "0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31",
    "GET /api/v1/reservations/3f2a9c1e-8b7d-4c6e-9f0a-1b2c3d4e5f6a 404 3ms",
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 deployed to hotel",
    "Back-off restarting failed container geo in pod geo-7d9c6b5f4-x2kq9_hotel",
    "pod sk-payments-7d9c6b5f4-x2kq9 is ready",
    "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
    'pods "geo-7d9c6b5f4-" is forbidden: exceeded quota: compute, requested: cpu=500m',
    "Readiness probe failed: HTTP probe failed with statuscode: 503",
    'FATAL: password authentication failed for user "geo"',
    "Authentication failed. Bearer authentication failed for request 42",
    "invalid token: expired",
    "token refresh scheduled in 300s",
    "max_tokens=1024 tokenizer=bert temperature=0.2",
    "secretName=db-credentials mounted at /etc/creds",
    'level=warn msg="slow query" duration=2.3s table=reservations key=user:42',
    "https://grafana.example.com:3000/d/abc123/hotel?orgId=1&from=now-1h",
    "memcached-rate:11211 get rate:2026-01-05 miss",
    "OOMKilled: container geo exceeded memory limit 256Mi",
    "keyspace hits=1042 misses=17 evicted_keys=0",
    "user=geo host=mongodb-geo.hotel.svc.cluster.local port=27017",
]


@pytest.mark.parametrize(("line", "secret"), SEEDED)
def test_no_seeded_secret_survives(line: str, secret: str) -> None:
    out = redact_text(line)
    assert secret not in out
    assert REDACTED in out


@pytest.mark.parametrize("line", ORDINARY)
def test_ordinary_lines_are_unchanged(line: str) -> None:
    assert redact_text(line) == line


def test_redaction_keeps_the_useful_context() -> None:
    assert (
        redact_text(f"connecting to mongodb://geo:{PASSWORD}@mongodb-geo:27017/geo-db")
        == f"connecting to mongodb://geo:{REDACTED}@mongodb-geo:27017/geo-db"
    )
    assert redact_text(f"Authorization: Bearer {JWT}") == f"Authorization: Bearer {REDACTED}"
    assert redact_text(f'{{"password": "{PASSWORD}", "user": "geo"}}') == (
        f'{{"password": "{REDACTED}", "user": "geo"}}'
    )


def test_a_whole_log_excerpt_at_once() -> None:
    text = "\n".join([line for line, _ in SEEDED] + ORDINARY)
    out = redact_text(text)
    for _, secret in SEEDED:
        assert secret not in out
    for line in ORDINARY:
        assert line in out


@pytest.mark.parametrize(
    ("line", "secret"),
    [('"db_password": "Js0nPw-55aa"', "Js0nPw-55aa"), ("{'api_key': 'k-0f1e2d3c'}", "k-0f1e2d3c")],
)
def test_a_quoted_pair_inside_a_json_string_loses_its_value(line: str, secret: str) -> None:
    """A log line holding JSON, serialised again (a tool result, a list of log lines)."""
    text = json.dumps({"data": [f"ERR > {line} tail"]})
    out = redact_text(text)
    assert secret not in out
    assert json.loads(out)["data"][0].endswith(" tail")


_PEM_LINES = PEM.split("\n")
_PEM_BODY = _PEM_LINES[1:3]


@pytest.mark.parametrize(
    "text",
    [
        # Cut off after its head, as the text, a JSON string and a JSON list of log lines
        # (a tool result is serialised before it is redacted).
        "\n".join(_PEM_LINES[:3]),
        json.dumps({"message": "\n".join(_PEM_LINES[:3])}),
        json.dumps(["ERR > " + _PEM_LINES[0], *_PEM_BODY, "ERR > next"]),
        # Cut off before its end (a log tail that starts inside the block), the same ways.
        "\n".join(_PEM_LINES[1:]),
        json.dumps({"message": "\n".join(_PEM_LINES[1:])}),
        json.dumps(["ERR > earlier", *_PEM_LINES[1:], "ERR > next"]),
    ],
)
def test_a_private_key_block_cut_off_at_either_end_loses_its_key_lines(text: str) -> None:
    out = redact_text(text)
    assert REDACTED in out
    for line in _PEM_BODY:
        assert line not in out
    assert ("ERR > next" in out) == ("ERR > next" in text)


def test_base64_lines_not_before_a_key_end_are_left_alone() -> None:
    text = "\n".join([_PEM_BODY[0], "-----END CERTIFICATE-----"])
    assert redact_text(text) == text


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("DB_PASSWORD", True),
        ("dbPassword", True),
        ("db-passwd", True),
        ("SECRET_KEY", True),
        ("client_secret", True),
        ("GITHUB_TOKEN", True),
        ("API_KEY", True),
        ("X-Api-Key", True),
        ("apiKey", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("awsAccessKeyId", True),
        ("PRIVATE_KEY", True),
        ("GOOGLE_APPLICATION_CREDENTIALS", True),
        ("SENTRY_DSN", True),
        ("DB_HOST", False),
        ("PWD", False),
        ("OLDPWD", False),
        ("DB_PWD", True),
        ("MYSQL_PWD", True),
        ("DB_PASS", True),
        ("PGPASSWORD", True),
        ("REDIS_AUTH", True),
        ("basicAuth", True),
        ("SSH_KEY", True),
        ("STRIPE_KEY", True),
        ("CREDENTIALS", True),
        ("FEATURE_BYPASS", False),
        ("AUTH_URL", False),
        ("sort_key", False),
        ("publicKey", False),
        ("tokenizer", False),
        ("key", False),
        ("MONKEY", False),
        ("secretName", False),
        ("secretKeyRef", False),
        ("imagePullSecrets", False),
    ],
)
def test_looks_secret(name: str, secret: bool) -> None:
    assert looks_secret(name) is secret


def test_mappings_mask_values_under_secret_names_and_env_items() -> None:
    spec = {
        "containers": [
            {
                "name": "geo",
                "image": "hotel/geo:1.4",
                "args": [f"--db-password={PASSWORD}", "--port=8083"],
                "env": [
                    {"name": "DB_HOST", "value": "mongodb-geo"},
                    {"name": "DB_PASSWORD", "value": PASSWORD},
                    {"name": "API_TOKEN", "valueFrom": {"secretKeyRef": {"name": "t", "key": "k"}}},
                    {"name": "DB_URL", "value": f"mongodb://geo:{PASSWORD}@mongodb-geo"},
                ],
            }
        ],
        "volumes": [{"name": "creds", "secret": {"secretName": "db-credentials"}}],
        "automountServiceAccountToken": False,
    }
    out = redact_value(spec)
    assert PASSWORD not in repr(out)
    container = out["containers"][0]
    assert container["image"] == "hotel/geo:1.4"
    assert container["args"] == [f"--db-password={REDACTED}", "--port=8083"]
    assert container["env"][0] == {"name": "DB_HOST", "value": "mongodb-geo"}
    assert container["env"][1] == {"name": "DB_PASSWORD", "value": REDACTED}
    assert container["env"][2] == spec["containers"][0]["env"][2]  # type: ignore[index]
    assert container["env"][3]["value"] == f"mongodb://geo:{REDACTED}@mongodb-geo"
    assert out["volumes"][0]["secret"] == {"secretName": "db-credentials"}
    assert out["automountServiceAccountToken"] is False
    # The input is not modified.
    assert spec["containers"][0]["env"][1]["value"] == PASSWORD  # type: ignore[index]


def test_config_map_data_under_secret_keys() -> None:
    data = {"DB_HOST": "mongodb-geo", "DB_PASSWORD": PASSWORD, "flags.yaml": "enable: true"}
    assert redact_mapping(data) == {
        "DB_HOST": "mongodb-geo",
        "DB_PASSWORD": REDACTED,
        "flags.yaml": "enable: true",
    }


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("data.DB_PASSWORD", PASSWORD, REDACTED),
        ("spec.template.spec.containers[geo].env[API_TOKEN].value", PASSWORD, REDACTED),
        ("spec.template.spec.containers[geo].env[DB_HOST].value", "db", "db"),
        ("spec.template.spec.containers[token-svc].image", "app:1", "app:1"),
        ("data.url", f"mongodb://u:{PASSWORD}@h", f"mongodb://u:{REDACTED}@h"),
        ("spec.replicas", 3, 3),
        ("data.DB_PASSWORD", None, None),
    ],
)
def test_redact_at_path(path: str, value: object, expected: object) -> None:
    assert redact_at_path(path, value) == expected


def test_contains_redacted() -> None:
    assert contains_redacted({"a": [1, {"b": f"x{REDACTED}"}]})
    assert not contains_redacted({"a": [1, {"b": "x"}]})


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_redaction_is_idempotent(text: str) -> None:
    once = redact_text(text)
    assert redact_text(once) == once


# ------------------------------------------------------------------------------ the corpus

CORPUS_FILE = Path(__file__).with_name("redact_corpus.txt")


def _unescape(line: str) -> str:
    return line.replace("\\\\n", "\0").replace("\\n", "\n").replace("\0", "\\n")


def load_corpus() -> list[tuple[str, str]]:
    """(text, secret) pairs from `redact_corpus.txt` (the secret is marked ⟦…⟧)."""
    pairs = []
    for line in CORPUS_FILE.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        before, rest = line.split("⟦", 1)
        secret, after = rest.split("⟧", 1)
        pairs.append((_unescape(before + secret + after), _unescape(secret)))
    return pairs


CORPUS = load_corpus()


def test_the_corpus_has_at_least_forty_shapes() -> None:
    assert len(CORPUS) >= 40
    assert len({secret for _, secret in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize(("text", "secret"), CORPUS)
def test_no_corpus_secret_survives(text: str, secret: str) -> None:
    assert secret not in redact_text(text)
    assert secret not in str(redact_value({"data": {"note": text}}))


#: Surrounding text: words, punctuation and the separators found in logs, env and YAML.
_SURROUNDING = st.lists(
    st.sampled_from([*"abcxyzABC019 _-.:=/,;'\"{}[]()\t\n", "level=info ", "msg=", "user: "]),
    max_size=20,
).map("".join)
_SEPARATORS = st.sampled_from([" ", "\n", "\t", " | ", "; ", ", ", "\n  "])


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(CORPUS), _SURROUNDING, _SEPARATORS, _SURROUNDING, _SEPARATORS, st.booleans())
def test_no_corpus_secret_survives_in_any_surrounding_text(
    pair: tuple[str, str], before: str, sep1: str, after: str, sep2: str, twice: bool
) -> None:
    text, secret = pair
    body = f"{text}{sep2}{text}" if twice else text
    out = redact_text(f"{before}{sep1}{body}{sep2}{after}")
    assert secret not in out
