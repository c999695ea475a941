"""Settings: the one place that reads the environment.

Every setting is read here, validated, and handed down as typed, grouped, frozen values
(kopf's habit). Nothing else in Stratus reads `os.environ`. A bad setting is reported as one
line that names the setting and what is wrong with it; the CLI turns that into exit code 2.

An optional settings file (`STRATUS_SETTINGS_FILE`, lines of `NAME=value`) supplies defaults;
the environment overrides it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlparse

from agents.deadlines import CallDeadline, below_lease

T = TypeVar("T")


class SettingsError(ValueError):
    """A setting is missing or malformed. `str(error)` is the one line shown to the user."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"{name}: {problem}")
        self.name = name
        self.problem = problem


class SlackMode(StrEnum):
    SOCKET = "socket"
    HTTP = "http"


class ChannelMode(StrEnum):
    CHANNEL = "channel"  # one channel per incident
    THREAD = "thread"  # one thread per incident in STRATUS_INCIDENT_CHANNEL


@dataclass(frozen=True, slots=True, kw_only=True)
class Setting:
    """One documented setting. The README table is generated from `SETTINGS`."""

    name: str
    default: str | None
    meaning: str
    secret: bool = False


#: STRATUS_CLUSTER_NAME's default: a deployment that never named its cluster runs alone, and
#: channel names leave it out ("default" in every one would say nothing).
UNNAMED_CLUSTER = "default"

SETTINGS: tuple[Setting, ...] = (
    Setting(name="SLACK_BOT_TOKEN", default=None, meaning="Bot token (`xoxb-…`).", secret=True),
    Setting(
        name="SLACK_APP_TOKEN",
        default=None,
        meaning="App-level token (`xapp-…`) for Socket Mode.",
        secret=True,
    ),
    Setting(
        name="SLACK_SIGNING_SECRET",
        default=None,
        meaning="Signing secret; verifies requests in HTTP mode.",
        secret=True,
    ),
    Setting(
        name="SLACK_API_URL",
        default="https://slack.com/api/",
        meaning="Slack Web API base URL (the local workspace's URL in the demo and tests).",
    ),
    Setting(
        name="STRATUS_SLACK_MODE",
        default="socket",
        meaning="`socket` (no public endpoint) or `http` (requests at `/slack/events`).",
    ),
    Setting(
        name="STRATUS_CHANNEL_MODE",
        default="channel",
        meaning="`channel`: one `#inc-<date>-<slug>` channel per incident "
        "(`#inc-<date>-<cluster>-<slug>` once `STRATUS_CLUSTER_NAME` is set); `thread`: one "
        "thread per incident in `STRATUS_INCIDENT_CHANNEL`.",
    ),
    Setting(
        name="STRATUS_INCIDENT_CHANNEL",
        default="incidents",
        meaning="Channel for thread mode, and where channel mode announces new incidents.",
    ),
    Setting(
        name="STRATUS_HTTP_HOST",
        default="127.0.0.1",
        meaning="Address of the HTTP endpoints (webhook, health, metrics; Slack in HTTP mode).",
    ),
    Setting(name="STRATUS_HTTP_PORT", default="8080", meaning="Port of the HTTP endpoints."),
    Setting(
        name="STRATUS_WEBHOOK_PORT",
        default=None,
        meaning="Serve `/alerts/alertmanager` on this port instead, apart from `/slack/events`.",
    ),
    Setting(
        name="STRATUS_WEBHOOK_TOKEN",
        default=None,
        meaning="Bearer token Alertmanager must send (`http_config.authorization`). With no "
        "token and no basic auth the webhook refuses every call (401).",
        secret=True,
    ),
    Setting(
        name="STRATUS_WEBHOOK_TOKEN_FILE",
        default=None,
        meaning="File holding the webhook's bearer token (a mounted Secret).",
    ),
    Setting(
        name="STRATUS_WEBHOOK_USERNAME",
        default=None,
        meaning="Basic-auth user Alertmanager must send (`http_config.basic_auth`).",
    ),
    Setting(
        name="STRATUS_WEBHOOK_PASSWORD",
        default=None,
        meaning="Basic-auth password for the webhook.",
        secret=True,
    ),
    Setting(
        name="STRATUS_WEBHOOK_PASSWORD_FILE",
        default=None,
        meaning="File holding the webhook's basic-auth password.",
    ),
    Setting(
        name="STRATUS_DATABASE_URL",
        default="sqlite:///stratus.db",
        meaning="SQLAlchemy URL. SQLite (a file) by default; `postgresql://…` in production.",
    ),
    Setting(
        name="KUBECONFIG",
        default=None,
        meaning="Kubeconfig path; unset means in-cluster config when running in a pod.",
    ),
    Setting(name="STRATUS_KUBE_CONTEXT", default=None, meaning="Kubeconfig context to use."),
    Setting(
        name="STRATUS_CLUSTER_NAME",
        default=UNNAMED_CLUSTER,
        meaning="Name of the cluster in scopes, locks, messages and channel names (where "
        "`default` is left out). Give each cluster's deployment its own when they share a "
        "workspace or a database.",
    ),
    Setting(
        name="STRATUS_NAMESPACES",
        default="",
        meaning="Comma-separated namespaces Stratus covers; empty means the policy's namespaces.",
    ),
    Setting(
        name="STRATUS_PROMETHEUS_URL",
        default=None,
        meaning="Prometheus base URL; unset degrades to cluster-state signals only.",
    ),
    Setting(
        name="STRATUS_SIGNAL_PROFILE",
        default="auto",
        meaning="Metric convention of the golden signals: `auto` (found from Prometheus's "
        "metric names), `lab`, `otel`, `istio`, `linkerd`, `micrometer` or `ingress-nginx`.",
    ),
    Setting(
        name="STRATUS_SIGNAL_PROFILE_FILE",
        default=None,
        meaning="YAML signal profile of your own (PromQL per signal); overrides "
        "`STRATUS_SIGNAL_PROFILE`.",
    ),
    Setting(
        name="STRATUS_KUBE_TIMEOUT_S",
        default="5",
        meaning="Deadline of one try of a Kubernetes API call (connect and read), seconds.",
    ),
    Setting(
        name="STRATUS_KUBE_ATTEMPTS",
        default="2",
        meaning="Tries per Kubernetes API call (reads retry timeouts; writes only failed "
        "connections). Timeout × attempts must stay within a third of the writer lease.",
    ),
    Setting(
        name="STRATUS_PROMETHEUS_TIMEOUT_S",
        default="5",
        meaning="Deadline of one try of a Prometheus query (connect and read), seconds.",
    ),
    Setting(
        name="STRATUS_PROMETHEUS_ATTEMPTS",
        default="2",
        meaning="Tries per Prometheus query. Timeout × attempts must stay within a third of "
        "the writer lease.",
    ),
    Setting(
        name="STRATUS_LOCK_LEASE_S",
        default="30",
        meaning="Writer lease, seconds: a heartbeat renews it every third; recovery takes over "
        "a transaction only once its writer has not renewed it for this long.",
    ),
    Setting(
        name="STRATUS_LEADER_ELECTION",
        default="on",
        meaning="`on`: replicas elect a leader on a Kubernetes Lease, and only the leader runs "
        "the scan, watches, digests, approval expiry and recovery; every replica serves Slack "
        "and the webhook. `off` only for one replica that may not touch leases.",
    ),
    Setting(
        name="STRATUS_LEADER_NAMESPACE",
        default=None,
        meaning="Namespace of the leader Lease (default: the pod's own namespace, else `default`).",
    ),
    Setting(
        name="STRATUS_LEADER_LEASE_NAME",
        default="stratus-leader",
        meaning="Name of the leader Lease (one per cluster: each cluster's replicas elect "
        "their own leader).",
    ),
    Setting(
        name="STRATUS_LEADER_LEASE_S",
        default="15",
        meaning="Leader lease, seconds: a follower takes over once the leader has not renewed "
        "it for this long.",
    ),
    Setting(
        name="STRATUS_LEADER_RENEW_DEADLINE_S",
        default="10",
        meaning="A leader that could not renew its lease for this long stops leading and "
        "exits (must be below the lease).",
    ),
    Setting(
        name="STRATUS_LEADER_RETRY_S",
        default="2",
        meaning="How often the leader renews and a follower tries to lead, seconds (below the "
        "renew deadline).",
    ),
    Setting(
        name="ANTHROPIC_API_KEY",
        default=None,
        meaning="Enables the Claude reasoner; unset uses the offline reasoner.",
        secret=True,
    ),
    Setting(
        name="ANTHROPIC_BASE_URL",
        default=None,
        meaning="Messages API base URL (a local stand-in in tests).",
    ),
    Setting(
        name="STRATUS_ANTHROPIC_MODEL",
        default="claude-sonnet-4-6",
        meaning="Model id for the Claude reasoner.",
    ),
    Setting(
        name="STRATUS_LLM_TIMEOUT_S",
        default="60",
        meaning="Per-request timeout of the Messages API, seconds.",
    ),
    Setting(
        name="STRATUS_LLM_MAX_RETRIES",
        default="2",
        meaning="Retries on 429/5xx/529 (each honours Retry-After up to 30 s).",
    ),
    Setting(
        name="STRATUS_LLM_MAX_STEPS",
        default="12",
        meaning="Tool-use steps before the Claude reasoner falls back to the offline one.",
    ),
    Setting(
        name="STRATUS_LLM_TOKEN_BUDGET",
        default="60000",
        meaning="Tokens per diagnosis before falling back to the offline reasoner.",
    ),
    Setting(
        name="STRATUS_EVIDENCE_TOKEN_BUDGET",
        default="24000",
        meaning="Estimated tokens of evidence sent to a reasoner.",
    ),
    Setting(
        name="STRATUS_POLICY_FILE",
        default=None,
        meaning="Policy YAML (autonomy, approvers, limits); unset uses the built-in "
        "`propose` policy.",
    ),
    Setting(
        name="STRATUS_SCAN_INTERVAL_S",
        default="30",
        meaning="Seconds between periodic detection scans (0 turns the scan off).",
    ),
    Setting(
        name="STRATUS_DIGEST_SCHEDULES",
        default="",
        meaning="Digests as `channel=cron` pairs separated by `;`, e.g. `team-sre=0 9 * * 1-5`.",
    ),
    Setting(name="STRATUS_LOG_LEVEL", default="INFO", meaning="DEBUG, INFO, WARNING or ERROR."),
    Setting(
        name="STRATUS_SETTINGS_FILE",
        default=None,
        meaning="Optional file of `NAME=value` lines; the environment overrides it.",
    ),
)

_KNOWN = {s.name: s for s in SETTINGS}


# ------------------------------------------------------------------------------ grouped values


@dataclass(frozen=True, slots=True, kw_only=True)
class SlackSettings:
    bot_token: str | None
    app_token: str | None
    signing_secret: str | None
    api_url: str
    mode: SlackMode
    channel_mode: ChannelMode
    incident_channel: str


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpSettings:
    host: str
    port: int


@dataclass(frozen=True, slots=True, kw_only=True)
class WebhookSettings:
    """How `/alerts/alertmanager` authenticates callers. No credentials: every call is 401."""

    token: str | None = field(default=None, repr=False)
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    port: int | None = None  # None: the same server as the other endpoints

    @property
    def configured(self) -> bool:
        return bool(self.token) or bool(self.username and self.password)


@dataclass(frozen=True, slots=True, kw_only=True)
class DatabaseSettings:
    url: str


@dataclass(frozen=True, slots=True, kw_only=True)
class KubernetesSettings:
    kubeconfig: Path | None
    context: str | None
    cluster_name: str
    namespaces: tuple[str, ...]
    deadline: CallDeadline = field(default_factory=CallDeadline)


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderSettings:
    """Leader election among replicas (`agents.leadership`); None in `Settings` when off."""

    namespace: str
    lease_name: str
    lease_s: float
    renew_deadline_s: float
    retry_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class PrometheusSettings:
    url: str | None
    deadline: CallDeadline = field(default_factory=CallDeadline)
    #: `auto` or a built-in profile's name (`agents.adapters.signal_profiles.CHOICES`).
    signal_profile: str = "auto"
    #: A custom profile file; when set it wins over `signal_profile`.
    signal_profile_file: Path | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AnthropicSettings:
    api_key: str | None = field(repr=False)
    base_url: str | None
    model: str
    timeout_s: float
    max_retries: int
    max_steps: int
    token_budget: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    slack: SlackSettings
    http: HttpSettings
    database: DatabaseSettings
    kubernetes: KubernetesSettings
    prometheus: PrometheusSettings
    anthropic: AnthropicSettings
    policy_file: Path | None
    evidence_token_budget: int
    scan_interval_s: float
    digest_schedules: tuple[tuple[str, str], ...]  # (channel, cron)
    log_level: str
    lock_lease_s: float = 30.0  # the writer lease every call under the lock must fit within
    webhook: WebhookSettings = field(default_factory=WebhookSettings)
    leader: LeaderSettings | None = None  # None: no election, this process does everything


# ------------------------------------------------------------------------------------ parsing


class _Reader:
    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = values

    def raw(self, name: str) -> str | None:
        value = self._values.get(name)
        if value is None or value.strip() == "":
            default = _KNOWN[name].default
            return default if default not in (None, "") else None
        return value.strip()

    def text(self, name: str) -> str:
        value = self.raw(name)
        return value if value is not None else ""

    def number(self, name: str, convert: Callable[[str], T], low: T, high: T) -> T:
        text = self.raw(name)
        if text is None:
            raise SettingsError(name, "is required")
        try:
            value = convert(text)
        except ValueError:
            raise SettingsError(name, f"must be a number, got {text!r}") from None
        if not (low <= value <= high):  # type: ignore[operator]
            raise SettingsError(name, f"must be between {low} and {high}, got {text}")
        return value

    def choice(self, name: str, enum: type[StrEnumT]) -> StrEnumT:
        text = self.text(name).lower()
        try:
            return enum(text)
        except ValueError:
            allowed = ", ".join(m.value for m in enum)
            raise SettingsError(name, f"must be one of {allowed}, got {text!r}") from None


StrEnumT = TypeVar("StrEnumT", bound=StrEnum)


def _check_url(name: str, url: str | None, schemes: tuple[str, ...]) -> str | None:
    if url is None:
        return None
    parsed = urlparse(url)
    if parsed.scheme not in schemes or not (parsed.netloc or parsed.path):
        allowed = ", ".join(f"{s}://" for s in schemes)
        raise SettingsError(name, f"must be a URL starting with {allowed}, got {url!r}")
    return url


_DB_SCHEMES = ("sqlite", "postgresql", "postgresql+psycopg", "postgres")


def database_url(values: Mapping[str, str]) -> str:
    """Only the database URL (for `stratus db`, which needs nothing else)."""
    reader = _Reader(values)
    url = reader.text("STRATUS_DATABASE_URL")
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if scheme not in _DB_SCHEMES:
        allowed = ", ".join(_DB_SCHEMES)
        raise SettingsError(
            "STRATUS_DATABASE_URL", f"unsupported scheme {scheme or url!r} (use one of {allowed})"
        )
    return url


def _digests(text: str) -> tuple[tuple[str, str], ...]:
    pairs: list[tuple[str, str]] = []
    for item in filter(None, (p.strip() for p in text.split(";"))):
        channel, sep, cron = item.partition("=")
        fields = cron.split()
        if not sep or not channel.strip() or len(fields) != 5:
            raise SettingsError(
                "STRATUS_DIGEST_SCHEDULES",
                f"expected 'channel=<5-field cron>' pairs separated by ';', got {item!r}",
            )
        pairs.append((channel.strip().lstrip("#"), " ".join(fields)))
    return tuple(pairs)


def read_settings_file(path: Path) -> dict[str, str]:
    """`NAME=value` lines; `#` comments and blank lines are ignored."""
    values: dict[str, str] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise SettingsError("STRATUS_SETTINGS_FILE", f"cannot read {path}: {e.strerror}") from e
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        name, sep, value = stripped.partition("=")
        name = name.strip()
        if not sep or name not in _KNOWN:
            raise SettingsError(
                "STRATUS_SETTINGS_FILE",
                f"{path}:{number}: expected NAME=value with a known setting, got {stripped!r}",
            )
        values[name] = value.strip().strip('"').strip("'")
    return values


def environment() -> dict[str, str]:
    """The process environment merged over the optional settings file."""
    env = dict(os.environ)
    file = env.get("STRATUS_SETTINGS_FILE", "").strip()
    merged = read_settings_file(Path(file)) if file else {}
    merged.update({k: v for k, v in env.items() if k in _KNOWN})
    return merged


#: What a helper process (the chart worker) may see of the environment: where Python and its
#: packages are, the locale and time zone, and writable cache directories. Never a token.
_CHILD_ENVIRONMENT = (
    "PATH",
    "HOME",
    "TMPDIR",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "PYTHONPATH",
    "PYTHONDONTWRITEBYTECODE",
    "VIRTUAL_ENV",
    "MPLCONFIGDIR",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
)


def child_environment() -> dict[str, str]:
    """The environment for a helper process: the few variables it needs, none of the bot's
    settings (tokens, database URL, API keys)."""
    return {name: os.environ[name] for name in _CHILD_ENVIRONMENT if name in os.environ}


def check_deadlines(
    kube: CallDeadline, prometheus: CallDeadline, lease_s: float, *, lease_name: str
) -> None:
    """Refuse deadlines that a call made under the writer lock could outlast (DESIGN section 3,
    rule 8): one line naming the settings, exit 2."""
    for prefix, deadline in (("STRATUS_KUBE", kube), ("STRATUS_PROMETHEUS", prometheus)):
        problem = below_lease(deadline, lease_s)
        if problem is not None:
            raise SettingsError(
                f"{prefix}_TIMEOUT_S × {prefix}_ATTEMPTS",
                f"{problem} ({lease_name}); lower them or lengthen the lease",
            )


def _deadline(r: _Reader, prefix: str) -> CallDeadline:
    return CallDeadline(
        timeout_s=r.number(f"{prefix}_TIMEOUT_S", float, 0.1, 600.0),
        attempts=r.number(f"{prefix}_ATTEMPTS", int, 1, 10),
    )


def load_settings(values: Mapping[str, str] | None = None) -> Settings:
    """Validate everything at once. `values` defaults to `environment()`."""
    values = environment() if values is None else values
    r = _Reader(values)
    slack = SlackSettings(
        bot_token=r.raw("SLACK_BOT_TOKEN"),
        app_token=r.raw("SLACK_APP_TOKEN"),
        signing_secret=r.raw("SLACK_SIGNING_SECRET"),
        api_url=_with_slash(
            _check_url("SLACK_API_URL", r.text("SLACK_API_URL"), ("http", "https"))
        ),
        mode=r.choice("STRATUS_SLACK_MODE", SlackMode),
        channel_mode=r.choice("STRATUS_CHANNEL_MODE", ChannelMode),
        incident_channel=r.text("STRATUS_INCIDENT_CHANNEL").lstrip("#"),
    )
    kubeconfig = r.raw("KUBECONFIG")
    namespaces = tuple(n.strip() for n in r.text("STRATUS_NAMESPACES").split(",") if n.strip())
    level = r.text("STRATUS_LOG_LEVEL").upper()
    if level not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise SettingsError(
            "STRATUS_LOG_LEVEL", f"must be DEBUG, INFO, WARNING or ERROR, got {level!r}"
        )
    policy = r.raw("STRATUS_POLICY_FILE")
    profile_file = r.raw("STRATUS_SIGNAL_PROFILE_FILE")
    kube_deadline = _deadline(r, "STRATUS_KUBE")
    prometheus_deadline = _deadline(r, "STRATUS_PROMETHEUS")
    lease_s = r.number("STRATUS_LOCK_LEASE_S", float, 3.0, 3600.0)
    check_deadlines(kube_deadline, prometheus_deadline, lease_s, lease_name="STRATUS_LOCK_LEASE_S")
    return Settings(
        slack=slack,
        http=HttpSettings(
            host=r.text("STRATUS_HTTP_HOST"), port=r.number("STRATUS_HTTP_PORT", int, 0, 65535)
        ),
        database=DatabaseSettings(url=database_url(values)),
        kubernetes=KubernetesSettings(
            kubeconfig=Path(kubeconfig) if kubeconfig else None,
            context=r.raw("STRATUS_KUBE_CONTEXT"),
            cluster_name=r.text("STRATUS_CLUSTER_NAME"),
            namespaces=namespaces,
            deadline=kube_deadline,
        ),
        prometheus=PrometheusSettings(
            url=_check_url(
                "STRATUS_PROMETHEUS_URL", r.raw("STRATUS_PROMETHEUS_URL"), ("http", "https")
            ),
            deadline=prometheus_deadline,
            signal_profile=_signal_profile(r),
            signal_profile_file=Path(profile_file) if profile_file else None,
        ),
        anthropic=AnthropicSettings(
            api_key=r.raw("ANTHROPIC_API_KEY"),
            base_url=_check_url(
                "ANTHROPIC_BASE_URL", r.raw("ANTHROPIC_BASE_URL"), ("http", "https")
            ),
            model=r.text("STRATUS_ANTHROPIC_MODEL"),
            timeout_s=r.number("STRATUS_LLM_TIMEOUT_S", float, 1.0, 600.0),
            max_retries=r.number("STRATUS_LLM_MAX_RETRIES", int, 0, 10),
            max_steps=r.number("STRATUS_LLM_MAX_STEPS", int, 1, 100),
            token_budget=r.number("STRATUS_LLM_TOKEN_BUDGET", int, 1000, 10_000_000),
        ),
        policy_file=Path(policy) if policy else None,
        evidence_token_budget=r.number("STRATUS_EVIDENCE_TOKEN_BUDGET", int, 500, 1_000_000),
        scan_interval_s=r.number("STRATUS_SCAN_INTERVAL_S", float, 0.0, 86400.0),
        digest_schedules=_digests(r.text("STRATUS_DIGEST_SCHEDULES")),
        log_level=level,
        lock_lease_s=lease_s,
        webhook=_webhook(r),
        leader=_leader(r),
    )


#: Where Kubernetes tells a pod its own namespace.
POD_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def _own_namespace() -> str:
    try:
        return POD_NAMESPACE_FILE.read_text(encoding="utf-8").strip() or "default"
    except OSError:
        return "default"


def _leader(r: _Reader) -> LeaderSettings | None:
    switch = r.text("STRATUS_LEADER_ELECTION").lower()
    if switch not in ("on", "off"):
        raise SettingsError("STRATUS_LEADER_ELECTION", f"must be on or off, got {switch!r}")
    if switch == "off":
        return None
    leader = LeaderSettings(
        namespace=r.raw("STRATUS_LEADER_NAMESPACE") or _own_namespace(),
        lease_name=r.text("STRATUS_LEADER_LEASE_NAME"),
        lease_s=r.number("STRATUS_LEADER_LEASE_S", float, 2.0, 600.0),
        renew_deadline_s=r.number("STRATUS_LEADER_RENEW_DEADLINE_S", float, 1.0, 600.0),
        retry_s=r.number("STRATUS_LEADER_RETRY_S", float, 0.1, 60.0),
    )
    if not leader.retry_s < leader.renew_deadline_s < leader.lease_s:
        raise SettingsError(
            "STRATUS_LEADER_RENEW_DEADLINE_S",
            f"must lie between STRATUS_LEADER_RETRY_S ({leader.retry_s:g}) and "
            f"STRATUS_LEADER_LEASE_S ({leader.lease_s:g}), got {leader.renew_deadline_s:g}",
        )
    return leader


def _signal_profile(r: _Reader) -> str:
    from agents.adapters.signal_profiles import CHOICES

    name = r.text("STRATUS_SIGNAL_PROFILE").lower()
    if name not in CHOICES:
        raise SettingsError(
            "STRATUS_SIGNAL_PROFILE", f"must be one of {', '.join(CHOICES)}, got {name!r}"
        )
    return name


def _secret(r: _Reader, name: str) -> str | None:
    """A secret given inline (`NAME`) or in a file (`NAME_FILE`, trailing newline dropped)."""
    inline = r.raw(name)
    file = r.raw(f"{name}_FILE")
    if inline is not None and file is not None:
        raise SettingsError(name, f"set {name} or {name}_FILE, not both")
    if file is None:
        return inline
    try:
        text = Path(file).read_text(encoding="utf-8").strip()
    except OSError as e:
        raise SettingsError(f"{name}_FILE", f"cannot read {file}: {e.strerror}") from e
    if not text:
        raise SettingsError(f"{name}_FILE", f"{file} is empty")
    return text


def _webhook(r: _Reader) -> WebhookSettings:
    username, password = r.raw("STRATUS_WEBHOOK_USERNAME"), _secret(r, "STRATUS_WEBHOOK_PASSWORD")
    if (username is None) != (password is None):
        raise SettingsError(
            "STRATUS_WEBHOOK_USERNAME", "basic auth needs both a user name and a password"
        )
    port = (
        r.number("STRATUS_WEBHOOK_PORT", int, 0, 65535)
        if r.raw("STRATUS_WEBHOOK_PORT") is not None
        else None
    )
    return WebhookSettings(
        token=_secret(r, "STRATUS_WEBHOOK_TOKEN"), username=username, password=password, port=port
    )


def _with_slash(url: str | None) -> str:
    # slack_sdk's WebClient needs the trailing slash or it drops the last path segment.
    assert url is not None
    return url if url.endswith("/") else url + "/"
