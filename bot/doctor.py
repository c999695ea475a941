"""`stratus doctor`: is this installation able to do its job? Each check says ok, or the
problem and its fix.

What Stratus needs is written down once, here, and everything else is checked against it:

* `SLACK_BOT_SCOPES` — the bot token's scopes. The Slack app manifest
  (`manifests/slack/app-manifest.yaml`) lists exactly these (a test compares them), and the
  tests run the Slack surfaces on a workspace that grants exactly these.
* `READ_PERMISSIONS` and `write_permissions()` — the Kubernetes RBAC: every read detection
  and diagnosis make, and every verb the action catalog's writes (and their undo) need,
  derived from `agents.actions`. The kustomize RBAC grants exactly these (a test compares
  them), and doctor asks the API server about each with SelfSubjectAccessReview.

The checks talk to the outside world through small seams (`AccessReviewer`, a `WebClient`,
URLs), so each can be pointed at a stand-in.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

import agents.actions
from agents.adapters.kinds import kind_info
from agents.errors import ClusterError, Invalid
from agents.model import KubeObject
from agents.ports import ClusterWriter
from bot.config import WebhookSettings

if TYPE_CHECKING:
    from agents.adapters.prometheus_metrics import PrometheusMetrics

logger = logging.getLogger(__name__)

MANIFEST_HINT = "manifests/slack/app-manifest.yaml"
RBAC_HINT = "manifests/kustomize/base (rbac.yaml)"

# ----------------------------------------------------------------------------------- Slack

#: Every scope the bot token needs, and why (the Web API methods and events that need it).
SLACK_BOT_SCOPES: dict[str, str] = {
    "channels:join": "conversations.join: join the incident and digest channels",
    "channels:manage": "conversations.create/invite/setTopic/rename: one channel per incident",
    "channels:read": "conversations.list/members: find channels and who is in them",
    "chat:write": "chat.postMessage/update/postEphemeral: every message",
    "commands": "the /stratus slash command",
    "files:write": "files_upload_v2: charts, long diffs and evidence",
    "im:write": "conversations.open: tell a person privately when a click has no channel",
    "pins:write": "pins.add/remove: the incident's pinned summary",
    "usergroups:read": "usergroups.list: approvers named by user group",
}
#: Bot events the app subscribes to (the manifest's `bot_events`).
SLACK_BOT_EVENTS: tuple[str, ...] = ("app_home_opened",)


# ------------------------------------------------------------------------------ Kubernetes


@dataclass(frozen=True, slots=True, kw_only=True)
class Permission:
    """Verbs on one resource, and why Stratus needs them."""

    group: str  # "" for the core API group
    resource: str  # plural, with "/subresource" when there is one
    verbs: tuple[str, ...]
    namespaced: bool
    why: str

    @property
    def name(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource


def _p(group: str, resource: str, verbs: str, why: str, *, cluster: bool = False) -> Permission:
    return Permission(
        group=group, resource=resource, verbs=tuple(verbs.split()), namespaced=not cluster, why=why
    )


#: Reads of detection, diagnosis, severity, planning and the change journal (DESIGN 5).
READ_PERMISSIONS: tuple[Permission, ...] = (
    _p("", "namespaces", "list", "the covered namespaces", cluster=True),
    _p("", "nodes", "get list", "node conditions, taints and capacity", cluster=True),
    _p("", "pods", "get list watch", "pod states and restart counts; the cache"),
    _p("", "pods/log", "get", "log tails of failing pods"),
    _p("", "services", "get list watch", "selectors and ports; the cache and the journal"),
    _p("", "endpoints", "list watch", "ready endpoints behind each service; the cache"),
    _p("", "configmaps", "get list watch", "configuration; the cache and the journal"),
    _p("", "events", "list watch", "what the cluster reported; the cache"),
    _p("", "resourcequotas", "get list watch", "quotas that block pods; the journal"),
    _p("", "limitranges", "list watch", "default and maximum limits; the journal"),
    _p("", "persistentvolumeclaims", "list watch", "volume claims pods wait on; the journal"),
    _p("apps", "deployments", "get list watch", "workloads; the cache and the journal"),
    _p("apps", "statefulsets", "get list watch", "workloads; the cache and the journal"),
    _p("apps", "replicasets", "list watch", "rollout history (rollback); the cache"),
    _p(
        "autoscaling",
        "horizontalpodautoscalers",
        "get list watch",
        "autoscaler bounds; the journal",
    ),
    _p(
        "networking.k8s.io",
        "networkpolicies",
        "list watch",
        "policies that drop a caller; the journal",
    ),
    _p("policy", "poddisruptionbudgets", "list watch", "budgets that block evictions; the journal"),
)

#: Leader election (`agents.leadership`): one Lease in the bot's own namespace, never in a
#: covered one — read it, create it the first time, renew or take it over by PUT.
LEADER_PERMISSIONS: tuple[Permission, ...] = (
    _p("coordination.k8s.io", "leases", "get create update", "the leader lease (replicas)"),
)

#: Write verbs per way an action writes. A catalog action replaces its target (PUT: update),
#: except these, which delete it (its controller is the inverse).
_DELETING_ACTIONS = frozenset({"delete_pod"})


def catalog_actions() -> dict[str, frozenset[str]]:
    """Every admissible action kind of the catalog → the kinds it may target."""
    found: dict[str, frozenset[str]] = {}
    for name in agents.actions.__all__:
        cls = getattr(agents.actions, name)
        kind = getattr(cls, "kind", None)
        if isinstance(kind, str) and getattr(cls, "has_inverse", False):
            found[kind] = frozenset(getattr(cls, "target_kinds", frozenset()))
    return dict(sorted(found.items()))


def write_permissions() -> tuple[Permission, ...]:
    """What the catalog's writes need, per resource: `update` for a replacing action (the
    write and its server-side dry run; undo re-applies the snapshot the same way) and
    `create` (a drift-confirmed undo re-creates an object deleted since — never a Node),
    `delete` for a deleting one."""
    verbs: dict[str, set[str]] = {}
    used_by: dict[str, set[str]] = {}
    for action, kinds in catalog_actions().items():
        for kind in kinds:
            wanted = {"delete"} if action in _DELETING_ACTIONS else {"update", "create"}
            if kind == "Node":
                wanted.discard("create")
            verbs.setdefault(kind, set()).update(wanted)
            used_by.setdefault(kind, set()).add(action)
    out = []
    for kind in sorted(verbs):
        info = kind_info(kind)
        group = info.api_version.rpartition("/")[0]
        out.append(
            Permission(
                group=group,
                resource=info.plural,
                verbs=tuple(sorted(verbs[kind])),
                namespaced=info.namespaced,
                why="actions " + ", ".join(sorted(used_by[kind])),
            )
        )
    return tuple(out)


class CheckStatus(StrEnum):
    OK = "ok"
    PROBLEM = "problem"
    CANNOT_CHECK = "cannot check"
    SKIPPED = "skipped"


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    name: str
    verdict: CheckStatus
    detail: str
    fix: str = ""


class AccessReviewUnavailable(Exception):
    """The API server cannot answer access reviews (or the client cannot ask)."""


class AccessReviewer(Protocol):
    def allowed(self, *, verb: str, group: str, resource: str, namespace: str | None) -> bool:
        """Whether Stratus's own identity may do it. Raises `AccessReviewUnavailable`."""
        ...


class SelfSubjectAccessReviews:
    """Asks the API server (`authorization.k8s.io/v1` SelfSubjectAccessReview) through the
    cluster port: creating the review object is how `kubectl auth can-i` asks, too."""

    def __init__(self, writer: ClusterWriter) -> None:
        self._writer = writer

    def allowed(self, *, verb: str, group: str, resource: str, namespace: str | None) -> bool:
        resource, _, subresource = resource.partition("/")
        attributes: dict[str, str] = {"verb": verb, "group": group, "resource": resource}
        if subresource:
            attributes["subresource"] = subresource
        if namespace:
            attributes["namespace"] = namespace
        review = KubeObject(
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": attributes},
            }
        )
        try:
            answer = self._writer.create(review)
        except Invalid as e:
            raise AccessReviewUnavailable(
                f"the Kubernetes adapter cannot send SelfSubjectAccessReview ({e})"
            ) from e
        except ClusterError as e:
            raise AccessReviewUnavailable(
                f"the API server did not answer a SelfSubjectAccessReview ({e})"
            ) from e
        status = answer.body.get("status")
        if not isinstance(status, dict) or "allowed" not in status:
            raise AccessReviewUnavailable("the SelfSubjectAccessReview came back without status")
        return bool(status["allowed"])


def check_kubernetes(
    reviewer: AccessReviewer | None,
    namespaces: Sequence[str],
    *,
    reads: Iterable[Permission] = READ_PERMISSIONS,
    writes: Iterable[Permission] | None = None,
    lease_namespace: str | None = None,
) -> list[Check]:
    """One check for the reads and one for the writes, each listing every missing verb — and
    one for the leader lease in `lease_namespace` when leader election is on."""
    if reviewer is None:
        return [
            Check(
                name="kubernetes permissions",
                verdict=CheckStatus.SKIPPED,
                detail="no cluster connection (see the cluster check above)",
            )
        ]
    checks = []
    groups: list[tuple[str, Iterable[Permission], Sequence[str]]] = [
        ("reads", reads, namespaces),
        ("writes", writes or write_permissions(), namespaces),
    ]
    if lease_namespace:
        groups.append(("leader election", LEADER_PERMISSIONS, (lease_namespace,)))
    for label, permissions, spaces in groups:
        missing: list[str] = []
        checked = 0
        try:
            for permission in permissions:
                where: Sequence[str | None] = spaces if permission.namespaced else (None,)
                for namespace in where:
                    for verb in permission.verbs:
                        checked += 1
                        if reviewer.allowed(
                            verb=verb,
                            group=permission.group,
                            resource=permission.resource,
                            namespace=namespace,
                        ):
                            continue
                        place = f" in {namespace}" if namespace else " (cluster-wide)"
                        missing.append(f"{verb} {permission.name}{place} — {permission.why}")
        except AccessReviewUnavailable as e:
            checks.append(
                Check(
                    name=f"kubernetes {label}",
                    verdict=CheckStatus.CANNOT_CHECK,
                    detail=str(e),
                    fix="check by hand: kubectl auth can-i --list "
                    "--as=system:serviceaccount:stratus:stratus",
                )
            )
            continue
        if missing:
            checks.append(
                Check(
                    name=f"kubernetes {label}",
                    verdict=CheckStatus.PROBLEM,
                    detail="not allowed: " + "; ".join(missing),
                    fix=f"apply the RBAC of {RBAC_HINT}, with a RoleBinding in every covered "
                    "namespace"
                    if label != "leader election"
                    else f"apply the stratus-leader Role of {RBAC_HINT} in {lease_namespace}, "
                    "or set STRATUS_LEADER_ELECTION=off for a single replica",
                )
            )
        else:
            checks.append(
                Check(
                    name=f"kubernetes {label}",
                    verdict=CheckStatus.OK,
                    detail=f"{checked} verbs allowed",
                )
            )
    return checks


def check_slack(client: WebClient, *, app_token: str | None = None) -> list[Check]:
    """The bot token works and carries every scope of `SLACK_BOT_SCOPES`; the app-level
    token (Socket Mode) opens a connection."""
    checks: list[Check] = []
    try:
        response = client.auth_test()
    except SlackApiError as e:
        error = e.response.get("error", "error")
        return [
            Check(
                name="slack token",
                verdict=CheckStatus.PROBLEM,
                detail=f"auth.test refused the bot token: {error}",
                fix="set SLACK_BOT_TOKEN to the app's Bot User OAuth Token (xoxb-…)",
            )
        ]
    except SlackClientError as e:
        return [
            Check(
                name="slack token",
                verdict=CheckStatus.PROBLEM,
                detail=f"cannot reach Slack at {client.base_url}: {e}",
                fix="check SLACK_API_URL and the network path to Slack",
            )
        ]
    header = next((v for k, v in response.headers.items() if k.lower() == "x-oauth-scopes"), "")
    granted = {s.strip() for s in str(header).split(",") if s.strip()}
    checks.append(
        Check(
            name="slack token",
            verdict=CheckStatus.OK,
            detail=f"bot {response.get('user_id')} in team {response.get('team')}",
        )
    )
    missing = sorted(set(SLACK_BOT_SCOPES) - granted)
    extra = sorted(granted - set(SLACK_BOT_SCOPES))
    extra_note = f" (also granted, not needed: {', '.join(extra)})" if extra else ""
    if missing:
        checks.append(
            Check(
                name="slack scopes",
                verdict=CheckStatus.PROBLEM,
                detail="missing: "
                + "; ".join(f"{s} ({SLACK_BOT_SCOPES[s]})" for s in missing)
                + extra_note,
                fix=f"add the scopes from {MANIFEST_HINT} to the app and reinstall it",
            )
        )
    else:
        checks.append(
            Check(
                name="slack scopes",
                verdict=CheckStatus.OK,
                detail=f"all {len(SLACK_BOT_SCOPES)} scopes granted{extra_note}",
            )
        )
    if app_token is not None:
        try:
            WebClient(base_url=client.base_url).apps_connections_open(app_token=app_token)
            checks.append(
                Check(name="slack app token", verdict=CheckStatus.OK, detail="Socket Mode")
            )
        except SlackApiError as e:
            checks.append(
                Check(
                    name="slack app token",
                    verdict=CheckStatus.PROBLEM,
                    detail=f"apps.connections.open refused: {e.response.get('error')}",
                    fix="set SLACK_APP_TOKEN to an app-level token (xapp-…) with "
                    "connections:write, and enable Socket Mode",
                )
            )
    return checks


def check_prometheus(url: str | None, *, timeout_s: float = 5.0) -> Check:
    if url is None:
        return Check(
            name="prometheus",
            verdict=CheckStatus.SKIPPED,
            detail="STRATUS_PROMETHEUS_URL is not set: severity and diagnosis use cluster "
            "state only",
        )
    ready = url.rstrip("/") + "/-/ready"
    try:
        with urllib.request.urlopen(ready, timeout=timeout_s) as answer:  # noqa: S310 (http(s) only: checked in bot.config)
            status = int(answer.status)
    except urllib.error.HTTPError as e:
        status = int(e.code)
    except (urllib.error.URLError, OSError) as e:
        return Check(
            name="prometheus",
            verdict=CheckStatus.PROBLEM,
            detail=f"{ready} is unreachable: {getattr(e, 'reason', e)}",
            fix="check STRATUS_PROMETHEUS_URL and the NetworkPolicy's egress to Prometheus",
        )
    if status == 200:
        return Check(name="prometheus", verdict=CheckStatus.OK, detail=f"{ready} is ready")
    if status == 404:
        # Not every PromQL server has Prometheus's /-/ready (Thanos Query, VictoriaMetrics,
        # the lab's stand-in, a path prefix): the query API is what the bot needs.
        return _check_promql(url, timeout_s=timeout_s)
    return Check(
        name="prometheus",
        verdict=CheckStatus.PROBLEM,
        detail=f"{ready} answered HTTP {status}",
        fix="Prometheus is starting or unhealthy; look at its own logs",
    )


def _check_promql(url: str, *, timeout_s: float) -> Check:
    query = url.rstrip("/") + "/api/v1/query?query=vector(1)"
    try:
        with urllib.request.urlopen(query, timeout=timeout_s) as answer:  # noqa: S310 (http(s) only: checked in bot.config)
            body = json.loads(answer.read())
    except (urllib.error.URLError, OSError, ValueError) as e:
        return Check(
            name="prometheus",
            verdict=CheckStatus.PROBLEM,
            detail=f"{url} has no /-/ready and its query API failed: {getattr(e, 'reason', e)}",
            fix="STRATUS_PROMETHEUS_URL must be the base URL of a PromQL API (with its path "
            "prefix, if it has one)",
        )
    if isinstance(body, dict) and body.get("status") == "success":
        return Check(
            name="prometheus", verdict=CheckStatus.OK, detail=f"{url} answers PromQL queries"
        )
    return Check(
        name="prometheus",
        verdict=CheckStatus.PROBLEM,
        detail=f"{query} did not answer as a PromQL API",
        fix="STRATUS_PROMETHEUS_URL must be the base URL of a PromQL API",
    )


SIGNAL_FIX = (
    "set STRATUS_SIGNAL_PROFILE to the convention your cluster exports (lab, otel, istio, "
    "linkerd, micrometer, ingress-nginx), or write a profile file for "
    "STRATUS_SIGNAL_PROFILE_FILE (see README, Signal profiles)"
)


def check_signals(metrics: PrometheusMetrics, namespaces: Sequence[str]) -> list[Check]:
    """The signal profile in use and, for each golden signal and the call graph, whether its
    query returns series (in `namespaces`, or anywhere when none are configured). A signal
    the profile cannot read leaves every μ unknown (never healthy): a problem to fix."""
    from agents.adapters.signal_profiles import AUTO, CALL_GRAPH
    from agents.errors import MetricsError

    configured = metrics.configured_profile
    try:
        profile = metrics.profile()
        coverage = metrics.coverage(namespaces)
    except MetricsError as e:
        return [
            Check(
                name="signal profile",
                verdict=CheckStatus.PROBLEM,
                detail=f"{configured}: {e}",
                fix=SIGNAL_FIX,
            )
        ]
    how = f"auto found {profile.name}" if configured == AUTO else profile.name
    where = ", ".join(namespaces) if namespaces else "any namespace"
    checks = [
        Check(
            name="signal profile",
            verdict=CheckStatus.OK,
            detail=f"{how} (latency in {profile.latency_unit.value}); reading {where}",
        )
    ]
    for signal, found in coverage.items():
        name = f"signal {signal}"
        if found:
            checks.append(
                Check(name=name, verdict=CheckStatus.OK, detail="its query returns series")
            )
        elif found is None and signal == CALL_GRAPH:
            checks.append(
                Check(
                    name=name,
                    verdict=CheckStatus.SKIPPED,
                    detail=f"{profile.name} has no call graph: diagnosis finds dependencies "
                    "from the cluster only",
                    fix=SIGNAL_FIX,
                )
            )
        elif found is None:
            checks.append(
                Check(
                    name=name,
                    verdict=CheckStatus.PROBLEM,
                    detail=f"{profile.name} cannot read it: severity stays unknown, so no "
                    "transaction can start or commit",
                    fix=SIGNAL_FIX,
                )
            )
        elif signal == "error_rate":
            # No 5xx in the window is the healthy case; it cannot be told from a wrong query.
            checks.append(
                Check(
                    name=name,
                    verdict=CheckStatus.CANNOT_CHECK,
                    detail="its query returns no series (no errors in the last 5 minutes, "
                    "or the profile's error query matches nothing)",
                    fix=SIGNAL_FIX,
                )
            )
        else:
            checks.append(
                Check(
                    name=name,
                    verdict=CheckStatus.PROBLEM,
                    detail=f"its query returns no series in {where} (no traffic in the last "
                    f"5 minutes, or {profile.name} is not this cluster's convention)",
                    fix=SIGNAL_FIX,
                )
            )
    return checks


def check_policy(path: Path | None) -> Check:
    """The policy file the bot would load: `stratus run` refuses a missing or invalid one, so
    doctor must not call it fine."""
    from agents.errors import PolicyError
    from agents.policy import load_policy

    if path is None:
        return Check(
            name="policy",
            verdict=CheckStatus.SKIPPED,
            detail="STRATUS_POLICY_FILE is not set: every namespace uses the default policy "
            "(propose: every plan waits for an approval)",
        )
    try:
        policy = load_policy(path)
    except PolicyError as e:
        return Check(
            name="policy",
            verdict=CheckStatus.PROBLEM,
            detail=str(e),
            fix="fix the file named by STRATUS_POLICY_FILE (see README, Policy)",
        )
    covered = ", ".join(policy.covered_namespaces) or "default rules only"
    return Check(name="policy", verdict=CheckStatus.OK, detail=f"{path} is valid ({covered})")


def check_webhook(settings: WebhookSettings) -> Check:
    """`/alerts/alertmanager` refuses every call until Alertmanager's credentials are set."""
    if settings.token:
        how = "a bearer token"
    elif settings.configured:
        how = f"basic auth as {settings.username!r}"
    else:
        return Check(
            name="alertmanager webhook",
            verdict=CheckStatus.PROBLEM,
            detail="no credentials: /alerts/alertmanager answers 401 to every call",
            fix="set STRATUS_WEBHOOK_TOKEN (or STRATUS_WEBHOOK_TOKEN_FILE), e.g. from "
            "`openssl rand -base64 32`, and give Alertmanager the same token in "
            "http_config.authorization.credentials_file (see "
            "manifests/alertmanager/alertmanager.yml); or STRATUS_WEBHOOK_USERNAME and "
            "STRATUS_WEBHOOK_PASSWORD for http_config.basic_auth",
        )
    where = f"port {settings.port}" if settings.port is not None else "the main HTTP port"
    return Check(
        name="alertmanager webhook",
        verdict=CheckStatus.OK,
        detail=f"callers must present {how} (on {where})",
    )


def check_database(
    url: str, *, current: Callable[[str], str | None], head: Callable[[], str]
) -> Check:
    """`current`/`head` are `storage.migrations.current`/`head` (passed in: the CLI imports
    storage lazily)."""
    from storage import StorageError

    try:
        revision = current(url)
    except StorageError as e:
        return Check(
            name="database",
            verdict=CheckStatus.PROBLEM,
            detail=str(e),
            fix="check STRATUS_DATABASE_URL and that the database accepts connections",
        )
    newest = head()
    if revision == newest:
        return Check(name="database", verdict=CheckStatus.OK, detail=f"migrated to {newest}")
    return Check(
        name="database",
        verdict=CheckStatus.PROBLEM,
        detail=f"at {revision or 'no revision (empty)'}, this Stratus needs {newest}",
        fix="run `stratus db upgrade` (the bot also migrates at start)",
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    checks: tuple[Check, ...]

    def failed(self, *, strict: bool = False) -> bool:
        bad = {CheckStatus.PROBLEM, CheckStatus.CANNOT_CHECK} if strict else {CheckStatus.PROBLEM}
        return any(c.verdict in bad for c in self.checks)

    def lines(self) -> list[str]:
        marks = {
            CheckStatus.OK: "ok     ",
            CheckStatus.PROBLEM: "PROBLEM",
            CheckStatus.CANNOT_CHECK: "?      ",
            CheckStatus.SKIPPED: "skipped",
        }
        out = []
        for check in self.checks:
            out.append(f"{marks[check.verdict]}  {check.name}: {check.detail}")
            if check.fix and check.verdict is not CheckStatus.OK:
                out.append(f"         fix: {check.fix}")
        return out
