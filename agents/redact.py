"""Redaction: secrets never leave the process — not to a model, not to Slack, not to the journal.

Two complementary nets:

* **Text patterns** for credentials that are recognisable by their shape wherever they appear:
  Slack, Anthropic, OpenAI, GitHub, AWS and Google keys, JWTs, bearer/basic authorization,
  private key blocks, passwords inside URLs, and `name=value` / `"name": "value"` pairs whose
  *name* looks secret.
* **Names** for structured data: a mapping entry (or a Kubernetes `env` item, `{name, value}`)
  whose key looks secret has its value masked whatever the value looks like.

Both err on the side of masking a harmless value over leaking a real one, but the shapes are
chosen so that ordinary log lines pass unchanged: `connection refused`, image references and
digests, hostnames, UUIDs and git SHAs are never touched. A bare 40-character base64 string
could be an AWS secret key or a hash; it is only masked when its name says which.

Everything is compiled once; a line without any trigger word costs one regex scan.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping
from typing import Any

REDACTED = "‹redacted›"

# ------------------------------------------------------------------------------ secret names

#: Words that make a name secret on their own ("DB_PASSWORD", "dbPassword", "client-secret").
_SECRET_WORDS = frozenset(
    {
        "password",
        "passwd",
        "pass",
        "passphrase",
        "secret",
        "secrets",
        "token",
        "credential",
        "credentials",
        "apikey",
        "dsn",
        "privatekey",
        "accesskey",
        "secretkey",
    }
)
#: Word pairs that make a name secret ("API_KEY", "x-api-key", "PRIVATE_KEY", "accessKey").
_SECRET_PAIRS = frozenset(
    {
        ("api", "key"),
        ("access", "key"),
        ("private", "key"),
        ("secret", "key"),
        ("signing", "key"),
        ("encryption", "key"),
        ("auth", "key"),
        ("session", "key"),
        ("master", "key"),
        ("client", "secret"),
        ("connection", "string"),
    }
)
#: Kubernetes fields whose names contain a secret word but whose values are references, not
#: secrets (the *name* of a Secret, a selector of one).
_NOT_SECRET_NAMES = frozenset(
    {
        "secretname",
        "secretkeyref",
        "secretref",
        "imagepullsecrets",
        "automountserviceaccounttoken",
        "serviceaccounttoken",
        "tokenexpirationseconds",
    }
)
#: Endings that make one run-together word secret ("PGPASSWORD", "dbpass", "MYSQL_ROOTPWD",
#: "authtoken") — but not "bypass" or "compass".
_SECRET_SUFFIXES = ("password", "passwd", "pass", "pwd", "secret", "token", "credentials")
#: "PWD" and "OLDPWD" alone are the shell's working directories; "DB_PWD" is a password.
_NOT_SECRET_WORDS = frozenset({"bypass", "compass", "surpass", "overpass", "underpass", "oldpwd"})
#: The last word of a compound name that makes it secret ("SSH_KEY", "STRIPE_KEY",
#: "BASIC_AUTH", "REDIS_AUTH") — alone ("key: app" in a selector or a toleration) it is not.
_SECRET_LAST = frozenset({"key", "auth"})
#: Compound names ending in "key" that name identifiers, not secrets.
_NOT_SECRET_KEY_WORDS = frozenset(
    {
        "public",
        "primary",
        "sort",
        "partition",
        "cache",
        "foreign",
        "routing",
        "shard",
        "hash",
        "lookup",
        "idempotency",
        "object",
        "label",
        "annotation",
        "selector",
        "topology",
        "map",
    }
)
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def _words(name: str) -> list[str]:
    return [w.lower() for w in _WORD_SPLIT.split(name) if w]


def looks_secret(name: str) -> bool:
    """Does a key, variable or header name say that its value is a secret?"""
    if name.lower().replace("-", "").replace("_", "") in _NOT_SECRET_NAMES:
        return False
    words = _words(name)
    if words == ["pwd"]:
        return False
    if any(w in _SECRET_WORDS for w in words):
        return True
    if any(w.endswith(_SECRET_SUFFIXES) and w not in _NOT_SECRET_WORDS for w in words):
        return True
    if (
        len(words) >= 2
        and words[-1] in _SECRET_LAST
        and (words[-1] == "auth" or words[-2] not in _NOT_SECRET_KEY_WORDS)
    ):
        return True
    return any(pair in _SECRET_PAIRS for pair in itertools.pairwise(words))


# ------------------------------------------------------------------------------ text patterns

#: A line break between the lines of a block, as the redactor may meet it: in the text, escaped
#: in a JSON string (`\n`), or between the strings of a JSON list of lines (`", "`) — a tool
#: result or a log tail is often serialised before it is redacted.
_BREAK = r"""(?:\r?\n|\\r\\n|\\n|"\s*,\s*")"""
#: Credentials recognisable by their shape alone. Each match is replaced entirely.
_TOKEN_PATTERNS = (
    # Slack bot/user/app/config tokens and incoming-webhook URLs.
    r"\bxox[abposre]-[A-Za-z0-9-]{8,}",
    r"\bxapp-\d-[A-Za-z0-9-]{8,}",
    r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+",
    # Anthropic (sk-ant-...) and OpenAI (sk-..., sk-proj-...) keys; Stripe-style live keys.
    # Keys are mixed case; Kubernetes names ("sk-payments-7d9c6") are not.
    r"\bsk-(?=[A-Za-z0-9_-]*[A-Z])[A-Za-z0-9_-]{20,}",
    r"\bsk-ant-[A-Za-z0-9_-]{8,}",
    r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}",
    # GitHub tokens.
    r"\bgh[pousr]_[A-Za-z0-9]{30,}",
    r"\bgithub_pat_[A-Za-z0-9_]{20,}",
    # AWS access key ids; Google API keys.
    r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|AKPA)[A-Z0-9]{16}\b",
    r"\bAIza[0-9A-Za-z_-]{35}",
    # JWTs: three base64url segments, the first two JSON objects ("eyJ").
    r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    # PEM private keys; a block whose end was cut off loses the base64 lines after its head.
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?:.*?-----END [A-Z ]*PRIVATE KEY-----"
    rf"|(?:[ \t]*{_BREAK}[ \t]*[A-Za-z0-9+/=]{{16,}})*[A-Za-z0-9+/=]*)",
)
_TOKENS = re.compile("|".join(f"(?:{p})" for p in _TOKEN_PATTERNS), re.DOTALL)
#: A PEM block whose head was cut off (a log tail that starts inside it): the base64 lines
#: right before its end line. Only tried on text that has an end line.
_PEM_TAIL = re.compile(
    rf"(?<![A-Za-z0-9+/=])(?:[A-Za-z0-9+/=]{{16,}}[ \t]*{_BREAK}[ \t]*)+"
    r"-----END [A-Z ]*PRIVATE KEY-----"
)

#: "Authorization: Bearer ..." (any scheme, or none) loses the credential whatever it looks
#: like; elsewhere "Bearer abc..." loses it only when it contains a digit, so that prose such as
#: "Bearer authentication failed" is left alone.
_AUTH_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|digest)\s+)?)"
    r"([^\s\"',;]{8,})"
)
_AUTH_SCHEME = re.compile(
    r"(?i)\b(bearer|basic|token|digest)(\s+)(?=[A-Za-z0-9._~+/=-]*\d)[A-Za-z0-9._~+/=-]{12,}"
)
#: scheme://user:password@host — the user stays (it is useful and rarely secret).
_URL_CREDENTIALS = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://)([^/\s:@]*):([^/\s@]+)@")
#: name=value, name: value, "name": "value", --name value, for names containing a secret word
#: (`looks_secret` then decides: "tokenizer" contains one and is not secret). Only such names
#: match, so "code=abc&access_token=..." is not swallowed by the harmless pair before it. An
#: unquoted value runs to whitespace: a password containing "&" must not leak its tail. The
#: quotes may be escaped, `\"name\": \"value\"`: JSON text inside a JSON string, as a log
#: line is in a serialised tool result.
_PAIR = re.compile(
    r"""(?P<lead>(?<![\w.-])(?P<dashes>--?)?(?P<q>\\?["']|)"""
    r"""(?P<name>[A-Za-z0-9_.-]{0,40}?(?:pass|pwd|secret|token|key|credential|dsn|auth)[A-Za-z0-9_.-]{0,40})"""
    r"""(?P=q))"""
    r"""(?P<sep>\s*[:=]\s*|(?(dashes)\s+|(?!)))"""
    r"""(?P<value>\\"(?:[^"\\]|\\[^"])*\\"|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[^\s,;"'}\]]+)""",
    re.IGNORECASE,
)
#: Words that follow "token:" or "password:" in error prose ("invalid token: expired"), never
#: as a value worth hiding.
_PROSE_VALUES = frozenset(
    {
        "expired",
        "invalid",
        "missing",
        "required",
        "empty",
        "none",
        "null",
        "unset",
        "not",
        "is",
        "was",
        "revoked",
        "denied",
        "rejected",
        "malformed",
        "incorrect",
        "wrong",
        "true",
        "false",
    }
)
#: Cheap pre-check: no trigger word, no pair worth looking at.
_TRIGGER = re.compile(r"(?i)pass|pwd|secret|token|key|credential|dsn|auth")


def _mask_pair(match: re.Match[str]) -> str:
    name, value = match.group("name"), match.group("value")
    if not looks_secret(name) or REDACTED in value:
        return match.group(0)
    if ":" in match.group("sep") and value.lower() in _PROSE_VALUES:
        return match.group(0)
    if value.startswith('\\"') and len(value) >= 4:
        masked = f'\\"{REDACTED}\\"'
    elif value[:1] in "\"'" and len(value) >= 2:
        masked = f"{value[0]}{REDACTED}{value[0]}"
    else:
        masked = REDACTED
    return f"{match.group('lead')}{match.group('sep')}{masked}"


def redact_text(text: str) -> str:
    """`text` with every recognisable secret replaced by `REDACTED`."""
    if not text:
        return text
    out = _TOKENS.sub(REDACTED, text)
    if "PRIVATE KEY-----" in out:
        out = _PEM_TAIL.sub(REDACTED, out)
    out = _URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}{m.group(2)}:{REDACTED}@", out)
    out = _AUTH_HEADER.sub(lambda m: f"{m.group(1)}{REDACTED}", out)
    out = _AUTH_SCHEME.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", out)
    if _TRIGGER.search(out):
        out = _PAIR.sub(_mask_pair, out)
    return out


# ------------------------------------------------------------------------------ structures


def _mask(value: Any) -> Any:
    """The masked form of a value under a secret name. Booleans and empty values carry no
    secret (and `automount...: false` must stay readable); everything else is masked whole."""
    if value is None or isinstance(value, bool) or value in ("", [], {}):
        return value
    if isinstance(value, str | int | float | bytes):
        return REDACTED
    return redact_value(value)


def redact_value(value: Any) -> Any:
    """A copy of a JSON-like value (mappings, lists, scalars) with secrets removed: text
    patterns in every string, and values under secret-looking names masked whole."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return redact_mapping(value)
    if isinstance(value, list | tuple):
        return [redact_value(v) for v in value]
    return value


def redact_mapping(mapping: Mapping[Any, Any]) -> dict[Any, Any]:
    """`redact_value` for a mapping. An `{name: SECRET_NAME, value: ...}` item (a container's
    env entry) has its value masked, as does any entry whose key looks secret."""
    name = mapping.get("name")
    env_like = isinstance(name, str) and looks_secret(name)
    result: dict[Any, Any] = {}
    for key, item in mapping.items():
        if (isinstance(key, str) and looks_secret(key)) or (env_like and key == "value"):
            result[key] = _mask(item)
        else:
            result[key] = redact_value(item)
    return result


_PATH_PART = re.compile(r"[^.\[\]]+")


def redact_at_path(path: str, value: Any) -> Any:
    """Redact a value found at a dotted field path (`data.DB_PASSWORD`,
    `spec.template.spec.containers[geo].env[API_TOKEN].value`): masked whole when the leaf
    name, or the env item it belongs to, looks secret; pattern-redacted otherwise."""
    parts = _PATH_PART.findall(path)
    if parts and looks_secret(parts[-1]):
        return _mask(value)
    if len(parts) >= 2 and parts[-1] == "value" and looks_secret(parts[-2]):
        return _mask(value)
    return redact_value(value)


def contains_redacted(value: Any) -> bool:
    """Whether a (redacted) value hides something: restoring it verbatim would write the
    marker instead of the secret, so a restore must keep the live value there."""
    if isinstance(value, str):
        return REDACTED in value
    if isinstance(value, Mapping):
        return any(contains_redacted(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(contains_redacted(v) for v in value)
    return False


# ------------------------------------------------------------------------------ text entries


def redact_entry(key: str, value: str, redactor: Callable[[str], str] = redact_text) -> str:
    """One `key: value` text entry (a ConfigMap key, an env variable): masked whole when the
    key names a secret, else passed through `redactor`."""
    if looks_secret(key):
        return value if value == "" else REDACTED
    return redactor(value)


def redact_entries(
    data: Mapping[str, str], redactor: Callable[[str], str] = redact_text
) -> dict[str, str]:
    """`redact_entry` for each entry of a string mapping (ConfigMap data, env)."""
    return {k: redact_entry(k, v, redactor) for k, v in data.items()}
