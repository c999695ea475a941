"""The transient-fault matrix (issue 14, after Rainmaker): one external call site at a time,
four fault kinds, each on a full incident of the real loop on the lab.

A cell is the production wiring (`build_services`) with every external service behind a
`FaultProxy` (tests/support/faultproxy.py), reached through the real clients:

* Slack Web API: the lab's workspace (`lab.slack`), `WebClient` via SLACK_API_URL;
* Kubernetes API: the lab's emulated API server, the `kubernetes` client via the kubeconfig;
* Prometheus: `PrometheusMetrics` (prometheus-api-client) via STRATUS_PROMETHEUS_URL, against
  `tests.support.promapi` (Prometheus's query API over the lab's telemetry);
* Anthropic Messages: the SDK via ANTHROPIC_BASE_URL, against the scripted stand-in
  (`tests.support.anthropic_standin`), which diagnoses the fault correctly;
* the database: PostgreSQL (a fresh schema per cell) via STRATUS_DATABASE_URL, psycopg
  through a TCP proxy that reads the SQL of each statement.

One `Injection` is armed on the site's proxy: the first `FAULTED` requests that match the
site fail with the fault, the rest pass. The faults, per service:

* timeout: HTTP — no answer until the client's own timeout closes the connection, or
  `HANG_S` then RST; PostgreSQL — no answer for `HANG_S`, then RST (psycopg has no read
  timeout);
* reset: RST at once;
* 503: HTTP 503 with the service's error body; PostgreSQL `FATAL 57P01` (admin shutdown),
  then close;
* 429: HTTP 429 with `Retry-After: 1` and the service's rate-limit body; PostgreSQL
  `FATAL 53300` (too many connections), then close.

No faulted request reaches the service: each fault is one the caller can retry safely, which
is the case a retry policy must get right first (a lost *answer* to a write that happened is
the next step, not covered here).

Then the incident runs: wrong-target-port on geo, Approve pressed on each plan (again after
15 s if the click left no trace, as a person would), until it closes or escalates, or
`CELL_S`. A kubelet-like probe asks /readyz every 2 s meanwhile (that is how the readiness
sites are reached). Sites that incident never calls have a `Drive` (`DRIVES`): what people
and the cluster do besides, through the lab workspace and the lab cluster, so the bot makes
the call — an Undo with its modal, an Undo after someone deleted the object, a pod-failure
incident whose plan deletes pods, a bot nobody invited into #incidents, watch streams the API
server ends. The judge (`judge`): no lost and no duplicated Slack message, no incident stuck,
no transaction committed on a sustain window a faulted measurement read overlapped, no undo
entry lost, the bot still serving (/healthz and /readyz answer 200); where an Undo was
pressed, the transaction undone and the person's modal showing the result.
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import struct
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import psycopg
import yaml
from sqlalchemy.engine import make_url

from agents.detection.records import incident_from_record
from agents.model import IncidentId, IncidentState, TransactionStatus, UndoState
from agents.tnr.ledger import StorageLedger
from agents.tnr.records import TransactionRecord
from bot.ids import CallbackId
from bot.messages import IncidentMessages
from bot.services import Options
from lab.alerts import attach_alerts
from lab.faults import fault
from lab.sim.world import LabWorld, WorldConfig
from lab.slack import SlackWorkspace, WorkspaceConfig
from storage import Store
from storage.db import Database
from tests.bot.scenario.harness import (
    ACK_TIMEOUT_S,
    BOLT_ACK_TIMEOUT_S,
    HOTEL,
    LIMITS,
    POLICY,
    ROUTE,
    SPEED,
    ActionId,
    AlertForwarder,
    BotLab,
    MessageKind,
    buttons,
    settings_values,
    text_of,
)
from tests.support.anthropic_standin import MessagesStandIn, tool_use
from tests.support.call_sites import bot_sites
from tests.support.faultproxy import Action, FaultProxy, Injection
from tests.support.promapi import PromApi
from tests.support.registry import REGISTRY

S = IncidentState

FAULTED = 2  # requests that fail per cell: more than one naive retry
HANG_S = 8.0  # past the Kubernetes, Prometheus and Messages API client timeouts (5 s)
CELL_S = 90.0  # wall seconds for the incident to close or escalate
SYNC_S = 20.0  # then, for Slack to show what storage says (housekeeping retries every 1 s)
REAPPROVE_S = 15.0

GEO_ANSWER = {
    "root_cause": {
        "service": "geo",
        "category": "virtualization/misconfiguration",
        "confidence": 0.9,
        "explanation": "Service geo targets a port where nothing listens; search is refused.",
        "evidence": [0],
    },
    "alternatives": [],
    "summary": "geo's Service points at the wrong port.",
}


POD_FAILURE_ANSWER = {
    "root_cause": {
        "service": "geo",
        "category": "virtualization/operation_error",
        "confidence": 0.9,
        "explanation": "geo's pods run a pause image and serve nothing; search fails.",
        "evidence": [0],
    },
    "alternatives": [],
    "summary": "geo's pods failed (pause image); fresh pods from the template would serve.",
}


class Fault(StrEnum):
    TIMEOUT = "timeout"
    RESET = "reset"
    UNAVAILABLE = "503"
    THROTTLED = "429"


class Service(StrEnum):
    SLACK = "slack"
    KUBE = "kube"
    PROMETHEUS = "prometheus"
    ANTHROPIC = "anthropic"
    DB = "db"


# ---------------------------------------------------------------------- matching requests


def _request_line(first: bytes) -> tuple[str, str, str]:
    """(method, path, query) of an HTTP request's first bytes ('' if not HTTP)."""
    line = first.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ")
    if len(parts) < 3 or not parts[2].startswith("HTTP/"):
        return "", "", ""
    url = urlparse(parts[1])
    return parts[0], url.path, url.query


def _slack(*methods: str) -> Callable[[bytes], bool]:
    return lambda first: _request_line(first)[1].rsplit("/", 1)[-1] in methods


def _kube_shape(path: str) -> tuple[int, str]:
    """(segments after the resource type's position, last segment) of an API path: 1 for a
    collection, 2 for an object, 3 for a subresource."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"]:
        rest = parts[2:]
    elif parts[:1] == ["apis"]:
        rest = parts[3:]
    else:
        return 0, ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        rest = rest[2:]
    return len(rest), rest[-1] if rest else ""


def _kube(site: str) -> Callable[[bytes], bool]:
    def match(first: bytes) -> bool:
        method, path, query = _request_line(first)
        depth, last = _kube_shape(path)
        watch = "watch=true" in query
        return {
            "kube:get": method == "GET" and depth == 2,
            "kube:list_versioned": method == "GET" and depth == 1 and not watch,
            "kube:watch": method == "GET" and depth == 1 and watch,
            "kube:pod_logs": method == "GET" and depth == 3 and last == "log",
            "kube:replace": method == "PUT",
            "kube:create": method == "POST",
            "kube:delete": method == "DELETE",
        }[site]

    return match


def _path(pattern: str) -> Callable[[bytes], bool]:
    return lambda first: re.fullmatch(pattern, _request_line(first)[1]) is not None


_PG_WRITE = re.compile(rb'INSERT INTO|UPDATE "?\w+"? SET|DELETE FROM')
_PG_SCHEDULER = re.compile(rb"apscheduler_jobs")
_PG_PROBE = re.compile(rb"stratus_write_probe")
_PG_MIGRATE = re.compile(rb"alembic_version|pg_advisory_xact_lock")


def _sql(kind: str) -> Callable[[bytes], bool]:
    def match(first: bytes) -> bool:
        if first[:1] not in (b"Q", b"P"):  # simple Query or extended Parse: the SQL text
            return False
        special = (
            _PG_SCHEDULER.search(first) or _PG_PROBE.search(first) or _PG_MIGRATE.search(first)
        )
        if kind == "write":
            return _PG_WRITE.search(first) is not None and not special
        if kind == "read":
            return b"SELECT" in first and not _PG_WRITE.search(first) and not special
        pattern = {"scheduler": _PG_SCHEDULER, "check_write": _PG_PROBE, "migrate": _PG_MIGRATE}
        return pattern[kind].search(first) is not None

    return match


class Drive(StrEnum):
    """What a cell's run does besides the incident, as people and the cluster would, so the
    bot makes the site's call: the plain incident (a Service fix, approved) reaches most."""

    INCIDENT = "incident"
    #: After the close, alice presses Undo on the outcome message: a modal opens
    #: (`views.open`) and shows the result (`views.update`).
    UNDO = "undo"
    #: Before that Undo, someone deletes the object the transaction changed (as `kubectl
    #: delete` would); the Undo shows the drift and alice submits "Overwrite & undo", so the
    #: restore re-creates the object (`kube:create`).
    UNDO_DELETED = "undo-deleted"
    #: The incident is a pod failure (chaos-mesh's pause image on geo's pods): the plan
    #: deletes the failed pods, a dry run in the preview, then the write (`kube:delete`).
    DELETE_POD = "delete-pod"
    #: The bot is not a member of #incidents (nobody invited it): it joins it to announce
    #: the incident (`conversations.join`).
    JOIN = "join"
    #: Once the fault is armed, the API server ends every watch stream (a watch's timeout,
    #: an API server restart), so the bot re-opens its watches inside the fault window.
    REOPEN_WATCHES = "reopen-watches"


#: Sites the plain incident does not reach, and the drive that reaches each.
DRIVES: dict[str, Drive] = {
    "slack:views.open": Drive.UNDO,
    "slack:views.update": Drive.UNDO,
    "kube:create": Drive.UNDO_DELETED,
    "kube:delete": Drive.DELETE_POD,
    "slack:conversations.join": Drive.JOIN,
    "kube:watch": Drive.REOPEN_WATCHES,
}


#: Sites no code path calls: listed by the scan (the method that makes the call exists),
#: reached by no incident and no person. `tests/test_transient_drives.py` fails when a
#: caller appears, so the mark cannot outlive the dead code.
DEAD: dict[str, str] = {}  # `slack:pins.remove` was one: `SlackIO.unpin` is gone


@dataclass(frozen=True, slots=True)
class Site:
    id: str
    service: Service
    match: Callable[[bytes], bool]
    #: Measurement reads: a fault here blinds a sustain window (the judge's commit rule).
    measures: bool = False
    #: Made only while the bot starts: the injection is armed before it starts.
    at_start: bool = False
    drive: Drive = Drive.INCIDENT


def _site(site_id: str) -> Site:
    site = _match_site(site_id)
    drive = DRIVES.get(site_id, Drive.INCIDENT)
    # The bot joins #incidents once, at its first announcement: that can be a warm-up
    # incident's, before a cell armed after the start would be (the first 503 cell missed it).
    return replace(site, drive=drive, at_start=site.at_start or drive is Drive.JOIN)


def _match_site(site_id: str) -> Site:
    service, _, operation = site_id.partition(":")
    if service == "slack":
        methods = (
            ("files.getUploadURLExternal", "files.completeUploadExternal")
            if operation == "files_upload_v2"
            else (operation,)
        )
        return Site(site_id, Service.SLACK, _slack(*methods))
    if service == "kube":
        reads = ("kube:get", "kube:list_versioned", "kube:pod_logs")
        return Site(site_id, Service.KUBE, _kube(site_id), measures=site_id in reads)
    if service == "prometheus":
        path = {
            "custom_query": r".*/api/v1/query",
            "custom_query_range": r".*/api/v1/query_range",
            "all_metrics": r".*/api/v1/label/__name__/values",  # the auto signal profile's
        }[operation]
        return Site(site_id, Service.PROMETHEUS, _path(path), measures=True)
    if service == "anthropic":
        return Site(site_id, Service.ANTHROPIC, _path(r".*/v1/messages"))
    if service == "db":
        return Site(site_id, Service.DB, _sql(operation), at_start=operation == "migrate")
    raise ValueError(f"no injection known for {site_id}: add one to tests/support/transient.py")


Cell = tuple[Site, Fault]

#: One row per call site of the running bot, in the registry's order.
SITES: tuple[Site, ...] = tuple(_site(s) for s in bot_sites(REGISTRY))


# ---------------------------------------------------------------------- fault bytes


def _http(status: int, reason: str, body: dict[str, Any], headers: dict[str, str]) -> bytes:
    data = json.dumps(body).encode()
    head = [f"HTTP/1.1 {status} {reason}", "Content-Type: application/json"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    head += [f"Content-Length: {len(data)}", "Connection: close", "", ""]
    return "\r\n".join(head).encode() + data


def _error_body(service: Service, fault_kind: Fault) -> dict[str, Any]:
    limited = fault_kind is Fault.THROTTLED
    message = "injected: " + ("rate limited" if limited else "service unavailable")
    if service is Service.SLACK:
        return {"ok": False, "error": "ratelimited" if limited else "service_unavailable"}
    if service is Service.KUBE:
        details = {"retryAfterSeconds": 1} if limited else {}
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "message": message,
            "reason": "TooManyRequests" if limited else "ServiceUnavailable",
            "details": details,
            "code": 429 if limited else 503,
        }
    if service is Service.PROMETHEUS:
        return {"status": "error", "errorType": "unavailable", "error": message}
    kind = "rate_limit_error" if limited else "api_error"
    return {"type": "error", "error": {"type": kind, "message": message}}


def _pg_fatal(code: str, message: str) -> bytes:
    fields = b"".join(
        tag + value.encode() + b"\0"
        for tag, value in ((b"S", "FATAL"), (b"V", "FATAL"), (b"C", code), (b"M", message))
    )
    fields += b"\0"
    return b"E" + struct.pack("!I", len(fields) + 4) + fields


def injection(site: Site, fault_kind: Fault, on_fault: Callable[[], None]) -> Injection:
    common: dict[str, Any] = {"match": site.match, "count": FAULTED, "on_fault": on_fault}
    if fault_kind is Fault.TIMEOUT:
        return Injection(action=Action.HANG, hang_s=HANG_S, **common)
    if fault_kind is Fault.RESET:
        return Injection(action=Action.RESET, **common)
    if site.service is Service.DB:
        code, text = (
            ("53300", "sorry, too many clients already")
            if fault_kind is Fault.THROTTLED
            else ("57P01", "terminating connection due to administrator command")
        )
        return Injection(action=Action.RESPOND, response=_pg_fatal(code, text), **common)
    body = _error_body(site.service, fault_kind)
    if fault_kind is Fault.THROTTLED:
        response = _http(429, "Too Many Requests", body, {"Retry-After": "1"})
    else:
        response = _http(503, "Service Unavailable", body, {})
    return Injection(action=Action.RESPOND, response=response, **common)


# ---------------------------------------------------------------------- the sample


#: The CI sample: every site once, the fault kinds rotated from a seeded start (so every
#: row and every column is covered), shuffled with the seed and dealt into incidents of
#: `PER_INCIDENT` cells each: one cell per incident would take ~25 min of CI, over the
#: budget of 5. Several sites faulted in one incident is harsher than the matrix (the faults
#: add up) and a violation is reported for the whole incident.
#: `benchmarks/transient_faults.py` runs every cell alone.
SAMPLE_SEED = 14
PER_INCIDENT = 7


def sample_cells(seed: int = SAMPLE_SEED) -> list[Cell]:
    faults = list(Fault)
    rng = random.Random(seed)
    start = rng.randrange(len(faults))
    cells = [(site, faults[(start + i) % len(faults)]) for i, site in enumerate(SITES)]
    rng.shuffle(cells)
    return cells


#: Sites an incident with this drive never calls: the pod-failure incident's plan deletes
#: pods, so it neither replaces an object nor has one to re-create on Undo.
#: Undo's modal is not sure either there: a CI run's pod-failure incident never updated one.
UNREACHED_WITH: dict[Drive, frozenset[str]] = {
    Drive.DELETE_POD: frozenset(
        {"kube:replace", "kube:create", "slack:views.open", "slack:views.update"}
    ),
}

#: Sites never called while another site of the same incident fails: a modal that did not
#: open (`views.open` faulted, the undo runs without it) is never updated; responders whose
#: user groups or the channel's members could not be read are not invited.
UNREACHED_BESIDE: dict[str, frozenset[str]] = {
    "slack:views.open": frozenset({"slack:views.update"}),
    "slack:usergroups.list": frozenset({"slack:conversations.invite"}),
    "slack:usergroups.users.list": frozenset({"slack:conversations.invite"}),
    "slack:conversations.members": frozenset({"slack:conversations.invite"}),
}


def unreached(incident: list[Cell]) -> list[Cell]:
    drives = {site.drive for site, _ in incident}
    missed = frozenset().union(*(UNREACHED_WITH.get(d, frozenset()) for d in drives))
    missed |= frozenset().union(*(UNREACHED_BESIDE.get(s.id, frozenset()) for s, _ in incident))
    return [c for c in incident if c[0].id in missed]


def sample_incidents(seed: int = SAMPLE_SEED) -> list[list[Cell]]:
    cells = sample_cells(seed)
    incidents = [cells[i : i + PER_INCIDENT] for i in range(0, len(cells), PER_INCIDENT)]
    # A short remainder joins the incident before it: alone, a cell whose site the incident
    # may never call (`views.open` is called only when someone opens a modal) fires no fault.
    if len(incidents) > 1 and len(incidents[-1]) < PER_INCIDENT // 2:
        incidents[-2].extend(incidents.pop())
    # A cell dealt into an incident whose drive never makes its call changes places with a
    # plain cell of another incident, so every sampled cell can fire.
    for incident in incidents:
        for cell in unreached(incident):
            for other in incidents:
                plain = [c for c in other if c[0].drive is Drive.INCIDENT]
                if other is incident or not plain or unreached([*other, cell]):
                    continue
                i, j = incident.index(cell), other.index(plain[0])
                incident[i], other[j] = other[j], incident[i]
                break
    return incidents


def all_cells() -> list[tuple[Site, Fault]]:
    return [(s, f) for s in SITES for f in Fault]


# ---------------------------------------------------------------------- the lab


@dataclass
class Proxies:
    by_service: dict[Service, FaultProxy]

    def stop(self) -> None:
        for proxy in self.by_service.values():
            proxy.stop()


#: The PostgreSQL the cells use (each in a fresh schema), as the storage tests take it.
DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"


@contextmanager
def _schema(base_url: str) -> Iterator[str]:
    """A fresh schema on `base_url` for one cell (dropped after); yields its name."""
    name = f"stratus_tf_{uuid.uuid4().hex[:12]}"
    admin = make_url(base_url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{name}"')
    try:
        yield name
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@dataclass
class TransientLab:
    lab: BotLab
    proxies: Proxies
    model: MessagesStandIn
    seen: Observer


class Observer:
    """What the harness reads of the bot's storage, over its own connection straight to
    PostgreSQL: a read through the bot's store would pass the database proxy and could take
    the fault meant for the bot (the first db:read run crashed the harness that way)."""

    def __init__(self, url: str, lab: BotLab) -> None:
        self.db = Database.connect(url)
        self.store = Store.over(self.db)
        self.ledger = StorageLedger(self.store)
        services = lab.services
        self.messages = IncidentMessages(
            store=self.store,
            policy=services.policy,
            clock=services.clock,
            transactions=lambda i: list(self.ledger.for_incident(IncidentId(i))),
        )

    def close(self) -> None:
        self.db.close()

    def state(self, incident_id: str) -> IncidentState:
        return incident_from_record(self.store.incidents.get(incident_id)).state

    def transactions(self, incident_id: str) -> list[TransactionRecord]:
        return list(self.ledger.for_incident(IncidentId(incident_id)))

    def message_ref(self, incident_id: str, kind: MessageKind) -> tuple[str, str] | None:
        rows = self.store.slack_messages.find(incident_id=incident_id, kind=kind.value)
        return (rows[-1].channel, rows[-1].ts) if rows else None

    def incident_ids(self) -> set[str]:
        return {r.id for r in self.store.incidents.list_by_state(*[s.value for s in S])}


@contextmanager
def transient_lab(
    tmp: Path,
    *,
    postgres_url: str = DEFAULT_POSTGRES_URL,
    before_start: Callable[[Proxies], None] | None = None,
    seed: int = 5,
    drives: frozenset[Drive] = frozenset(),
) -> Iterator[TransientLab]:
    tmp.mkdir(parents=True, exist_ok=True)
    stack = contextlib.ExitStack()
    with stack:
        workspace = WorkspaceConfig()
        if Drive.JOIN in drives:
            channels = tuple(
                replace(c, bot_member=False) if c.name == "incidents" else c
                for c in workspace.channels
            )
            workspace = replace(workspace, channels=channels)
        ws = SlackWorkspace(replace(workspace, ack_timeout_s=ACK_TIMEOUT_S))
        ws.start()
        stack.callback(ws.stop)
        world = LabWorld(
            WorldConfig(
                apps=(HOTEL,),
                seed=seed,
                stepped=False,
                speed=SPEED,
                serve_api=True,
                kubeconfig=tmp / "kubeconfig",
            )
        )
        stack.callback(world.stop)
        forwarder = AlertForwarder()
        stack.callback(forwarder.stop)
        world.start()
        world.wait_healthy()
        alerts = attach_alerts(world, webhook=forwarder, route=ROUTE)
        prom = PromApi(world, alerts).start()
        stack.callback(prom.stop)
        answer = POD_FAILURE_ANSWER if Drive.DELETE_POD in drives else GEO_ANSWER
        model = MessagesStandIn([tool_use("submit_diagnosis", answer)] * 200)
        model.start()
        stack.callback(model.stop)
        schema = stack.enter_context(_schema(postgres_url))
        database = make_url(postgres_url)
        in_schema = {"options": f"-csearch_path={schema}"}

        def upstream(url: str) -> tuple[str, int]:
            parsed = urlparse(url)
            return parsed.hostname or "127.0.0.1", parsed.port or 80

        proxies = Proxies(
            {
                Service.SLACK: FaultProxy(upstream(ws.api_url)).start(),
                Service.KUBE: FaultProxy(upstream(world.cluster.url)).start(),
                Service.PROMETHEUS: FaultProxy(("127.0.0.1", prom.port)).start(),
                Service.ANTHROPIC: FaultProxy(("127.0.0.1", model.port)).start(),
                Service.DB: FaultProxy(
                    (database.host or "127.0.0.1", database.port or 5432)
                ).start(),
            }
        )
        stack.callback(proxies.stop)
        config = yaml.safe_load((tmp / "kubeconfig").read_text())
        config["clusters"][0]["cluster"]["server"] = proxies.by_service[Service.KUBE].url
        (tmp / "kubeconfig-proxied").write_text(yaml.safe_dump(config, sort_keys=False))
        policy = tmp / "policy.yaml"
        policy.write_text(POLICY.format(ttl="15m"))
        slack_path = urlparse(ws.api_url).path
        values = settings_values(
            ws,
            mode="socket",
            tmp=tmp,
            kubeconfig=tmp / "kubeconfig-proxied",
            policy=policy,
            SLACK_API_URL=proxies.by_service[Service.SLACK].url + slack_path,
            STRATUS_DATABASE_URL=database.set(
                host="127.0.0.1",
                port=proxies.by_service[Service.DB].port,
                query=in_schema,
            ).render_as_string(hide_password=False),
            STRATUS_PROMETHEUS_URL=proxies.by_service[Service.PROMETHEUS].url,
            ANTHROPIC_API_KEY="sk-ant-test-key-000000",
            ANTHROPIC_BASE_URL=proxies.by_service[Service.ANTHROPIC].url,
            # Below HANG_S, so "timeout" is the client's own timeout for this client too.
            STRATUS_LLM_TIMEOUT_S="5",
        )
        options = Options(
            clock=world.clock,
            limits=LIMITS,
            housekeeping_interval_s=1.0,
            ack_timeout_s=BOLT_ACK_TIMEOUT_S,
        )
        lab = BotLab(
            ws=ws,
            world=world,
            alerts=alerts,
            forwarder=forwarder,
            tmp=tmp,
            mode="socket",
            values=values,
            options=options,
        )
        if before_start is not None:
            before_start(proxies)
        _start(lab)
        stack.callback(lab.runtime.stop)
        seen = Observer(database.set(query=in_schema).render_as_string(hide_password=False), lab)
        stack.callback(seen.close)
        journal = seen.store.journal
        lab.wait("the journal's baseline", lambda: journal.query("lab", HOTEL, kind="Service"))
        yield TransientLab(lab=lab, proxies=proxies, model=model, seen=seen)


RESTARTS = 3  # a start that fails is tried again, as the kubelet restarts a crashed container


def _start(lab: BotLab) -> int:
    for attempt in range(RESTARTS):
        try:
            lab.start_bot()
            return attempt
        except Exception:
            if attempt == RESTARTS - 1:
                raise
    return RESTARTS


# ---------------------------------------------------------------------- running a cell


@dataclass
class CellResult:
    site: str
    fault: Fault
    faulted: int = 0
    passed_after: int = 0
    delay_s: float | None = None  # first faulted request → first matching request that passed
    incident_state: str = ""
    transactions: list[str] = field(default_factory=list)
    end: str = ""
    violations: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def reached(self) -> bool:
        return self.faulted > 0

    @property
    def outcome(self) -> str:
        if self.violations:
            return "FAILS"
        return "ok" if self.reached else "not reached"


@dataclass
class _Window:
    """When faults were injected, in lab time (for the commit rule)."""

    clock: Callable[[], datetime]
    stamps: list[datetime] = field(default_factory=list)

    def stamp(self) -> None:
        self.stamps.append(self.clock())


class _Prober:
    """Asks /readyz every 2 s, as a kubelet's readiness probe does."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="readyz-probe", daemon=True)

    def __enter__(self) -> _Prober:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(2.0):
            with contextlib.suppress(OSError):
                urllib.request.urlopen(self._url, timeout=5).close()


def run_cells(
    tmp: Path, incidents: list[list[Cell]], *, postgres_url: str = DEFAULT_POSTGRES_URL
) -> list[CellResult]:
    """Run `incidents` in turn, each a full incident on a fresh lab with its cells' faults
    armed (one cell per incident in the matrix; several in the CI sample). A fresh lab per
    incident is also the faster choice: a second incident on the same lab waited for the
    first one's alerts to resolve (about 45 s a cell against 30 s)."""
    results: list[CellResult] = []
    for n, cells in enumerate(incidents):
        armed: list[tuple[Cell, Injection, _Window]] = []

        def before_start(
            proxies: Proxies,
            cells: list[Cell] = cells,
            armed: list[tuple[Cell, Injection, _Window]] = armed,
        ) -> None:
            for site, fault_kind in cells:
                if site.at_start:
                    armed.append(_arm(proxies, site, fault_kind, datetime.now))

        lab_dir = tmp / f"incident-{n}"
        drives = frozenset(site.drive for site, _ in cells)
        with transient_lab(
            lab_dir, postgres_url=postgres_url, before_start=before_start, drives=drives
        ) as tl:
            for _, _, window in armed:
                window.clock = tl.lab.world.clock.now
            _quiet(tl)
            for site, fault_kind in cells:
                if not site.at_start:
                    armed.append(_arm(tl.proxies, site, fault_kind, tl.lab.world.clock.now))
            if Drive.REOPEN_WATCHES in drives:
                tl.lab.world.cluster.end_watches()
            _one_incident(tl, armed, results, drives)
    return results


def run_cell(
    tmp: Path, site: Site, fault_kind: Fault, *, postgres_url: str = DEFAULT_POSTGRES_URL
) -> CellResult:
    [result] = run_cells(tmp, [[(site, fault_kind)]], postgres_url=postgres_url)
    return result


QUIET_S = 60.0


def _quiet(tl: TransientLab) -> None:
    """Wait until no incident is open before the fault and the injection: the lab's warm-up
    can fire an alert while the bot starts, and the incident it opens would absorb the
    injected fault's alerts (same namespace group), so no new incident would open. That was
    the "timed out waiting for a new incident" of some cells of the first matrix run."""
    deadline = time.monotonic() + QUIET_S
    while tl.seen.store.incidents.list_open() and time.monotonic() < deadline:
        time.sleep(0.2)


def _arm(
    proxies: Proxies, site: Site, fault_kind: Fault, clock: Callable[[], datetime]
) -> tuple[Cell, Injection, _Window]:
    window = _Window(clock)
    armed = injection(site, fault_kind, window.stamp)
    proxies.by_service[site.service].injections.append(armed)
    return (site, fault_kind), armed, window


def _one_incident(
    tl: TransientLab,
    armed: list[tuple[Cell, Injection, _Window]],
    results: list[CellResult],
    drives: frozenset[Drive] = frozenset(),
) -> None:
    """One incident with `armed` faults, judged."""
    lab = tl.lab
    started = time.monotonic()
    seen = tl.seen
    before = seen.incident_ids()
    broken = "pod-failure" if Drive.DELETE_POD in drives else "wrong-target-port"
    fault(broken).inject(lab.world, app=HOTEL)
    undos: list[UndoClick] = []
    with _Prober(f"{lab.runtime.http_url}/readyz"):
        incident_id = lab.wait("a new incident", lambda: _new_incident(seen, before), 60)
        _drive(lab, seen, incident_id)
        if drives & {Drive.UNDO, Drive.UNDO_DELETED}:
            undos = _undo(lab, seen, incident_id, delete_first=Drive.UNDO_DELETED in drives)
    cell_results = [
        CellResult(site=site.id, fault=fault_kind) for (site, fault_kind), _, _ in armed
    ]
    results.extend(cell_results)
    judge(lab, seen, [(c, w.stamps) for c, _, w in armed], incident_id, cell_results, undos)
    # Counted after the judge, which waits for the bot to finish: the calls a click sets off
    # (the Undo modal's `views.update`) may come after the drive returns.
    for result, (_, injected, _) in zip(cell_results, armed, strict=True):
        result.faulted = len(injected.faulted)
        result.passed_after = len(injected.passed)
        if injected.faulted and injected.passed:
            result.delay_s = injected.passed[0] - injected.faulted[0]
    wall = time.monotonic() - started
    for result in cell_results:
        result.wall_s = wall


def _new_incident(seen: Observer, before: set[str]) -> str | None:
    fresh = sorted(seen.incident_ids() - before)
    return fresh[0] if fresh else None


_DONE = (S.CLOSED, S.ESCALATED)


def _drive(lab: BotLab, seen: Observer, incident_id: str) -> None:
    """Press Approve on each plan until the incident closes or escalates, or CELL_S."""
    deadline = time.monotonic() + CELL_S
    clicked: dict[str, float] = {}
    visited = False
    while time.monotonic() < deadline:
        state = seen.state(incident_id)
        if state in _DONE:
            return
        if state is S.AWAITING_APPROVAL:
            ref = seen.message_ref(incident_id, MessageKind.PLAN)
            message = lab.ws.message(*ref) if ref is not None else None
            if ref is not None and message is not None and ActionId.APPROVE in buttons(message):
                if not visited:
                    # Two more people, to reach the sites a quiet incident does not: carol
                    # (no approval rights, not in the channel) is refused in a DM, alice
                    # opens the App Home.
                    visited = True
                    with contextlib.suppress(Exception):
                        lab.ws.click("carol", ref[0], message["ts"], ActionId.APPROVE)
                    with contextlib.suppress(Exception):
                        lab.ws.open_app_home("alice")
                last = clicked.get(message["ts"])
                if last is None or time.monotonic() - last > REAPPROVE_S:
                    clicked[message["ts"]] = time.monotonic()
                    lab.ws.click("alice", ref[0], message["ts"], ActionId.APPROVE)
        time.sleep(0.1)


UNDO_WAIT_S = 30.0  # for the modal to answer an Undo click, or the undo to finish
UNDO_CLICKS = 3  # a person presses Undo again when nothing answers, this many times at most


@dataclass
class UndoClick:
    """What the Undo drive did: the transaction, the clicks, the modals it saw."""

    transaction_id: str
    clicks: int = 0
    views: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    confirmed: bool = False


def _undo(lab: BotLab, seen: Observer, incident_id: str, *, delete_first: bool) -> list[UndoClick]:
    """alice presses Undo on the last committed transaction's outcome message, as a person
    who changed their mind would; with `delete_first`, someone has deleted the objects it
    changed before that (kubectl delete), and alice submits the drift modal's "Overwrite &
    undo". Nothing to do if no transaction committed (the cell then reports what it reached)."""
    committed = [
        t for t in seen.transactions(incident_id) if t.status is TransactionStatus.COMMITTED
    ]
    if not committed:
        return []
    tx = committed[-1]
    click = UndoClick(transaction_id=tx.id)

    def outcome() -> tuple[str, str] | None:
        rows = seen.store.slack_messages.find(
            incident_id=incident_id, kind=MessageKind.OUTCOME.value
        )
        for row in rows:
            message = lab.ws.message(row.channel, row.ts) if row.ref == tx.id else None
            if message is not None and ActionId.UNDO in buttons(message):
                return row.channel, row.ts
        return None

    where = _wait_for(outcome, SYNC_S)
    if where is None:
        return [click]
    if delete_first:
        for entry in seen.ledger.stack(tx.id):
            target = entry.target
            if entry.state is UndoState.APPLIED and lab.world.api.get(
                target.kind, target.namespace, target.name
            ):
                lab.world.api.delete(target.kind, target.namespace, target.name)
                click.deleted.append(str(target))

    def status() -> TransactionStatus:
        return next(t.status for t in seen.transactions(incident_id) if t.id == tx.id)

    def answered() -> str | None:
        if status() is not TransactionStatus.COMMITTED:
            return "done"
        views = lab.ws.views("alice")
        if views and views[-1].get("callback_id") == CallbackId.UNDO_DRIFT:
            return "drift"
        return None

    while click.clicks < UNDO_CLICKS and status() is TransactionStatus.COMMITTED:
        for view in lab.ws.views("alice"):  # a modal left from the last try: closed first
            lab.ws.close_view("alice", view["id"])
        click.clicks += 1
        with contextlib.suppress(Exception):
            lab.ws.click("alice", where[0], where[1], ActionId.UNDO)
        click.views += [v["id"] for v in lab.ws.views("alice") if v["id"] not in click.views]
        state = _wait_for(answered, UNDO_WAIT_S)
        click.views += [v["id"] for v in lab.ws.views("alice") if v["id"] not in click.views]
        if state == "drift":
            drift = lab.ws.views("alice")[-1]
            with contextlib.suppress(Exception):
                lab.ws.submit_view("alice", drift["id"], {})
            click.confirmed = True
            _wait_for(lambda: status() is not TransactionStatus.COMMITTED or None, UNDO_WAIT_S)
    return [click]


def _wait_for(predicate: Callable[[], Any], timeout_s: float) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.2)
    return None


def undo_problems(
    lab: BotLab, seen: Observer, incident_id: str, undos: list[UndoClick]
) -> list[str]:
    """What a person who pressed Undo would find wrong: the transaction not undone after
    `UNDO_CLICKS` tries, an object the undo should have put back not there, or a modal of
    theirs that never left "Undoing…" though the undo is over."""
    problems: list[str] = []
    for click in undos:
        tx = next(t for t in seen.transactions(incident_id) if t.id == click.transaction_id)
        if click.clicks == 0:
            problems.append(f"lost: no Undo button on {tx.id}'s outcome message")
            continue
        if tx.status is not TransactionStatus.UNDONE:
            problems.append(
                f"Undo of {tx.id} pressed {click.clicks} times, still {tx.status.value}"
            )
        for entry in seen.ledger.stack(tx.id):
            t = entry.target
            if (
                entry.state is UndoState.RESTORED
                and lab.world.api.get(t.kind, t.namespace, t.name) is None
            ):
                problems.append(f"undo of {tx.id} marked {t} restored, but it does not exist")
        if tx.status is not TransactionStatus.UNDONE:
            continue
        still_open = {v["id"]: v for v in lab.ws.views("alice")}
        for view_id in click.views:
            view = still_open.get(view_id)
            if view is not None and "Undoing" in json.dumps(view):
                problems.append(f"lost: alice's Undo modal still says 'Undoing {tx.id}…'")
    return problems


# ---------------------------------------------------------------------- the verdict


def _bot_messages(lab: BotLab, channels: set[str]) -> list[dict[str, Any]]:
    """Every message the bot left in `channels`, thread replies included (not file shares)."""
    bot = lab.services.bot_user_id
    found: list[dict[str, Any]] = []
    for channel in channels:
        for top in lab.ws.messages(channel):
            thread = lab.ws.messages(channel, top["ts"]) if top.get("reply_count") else [top]
            for message in thread:
                # Channel events (topic set, renamed, joined) are Slack's, not posts.
                own = message.get("user") == bot and message.get("subtype") in (
                    None,
                    "thread_broadcast",
                )
                if own and not message.get("files"):
                    found.append({**message, "channel": channel})
    return found


def slack_problems(lab: BotLab, seen: Observer, incident_id: str) -> list[str]:
    """Lost and duplicated messages of the incident: what storage says should be there
    (the notifier's own `wanted`, recomputed) against what the workspace holds."""
    store = lab.services.store
    rows = store.slack_messages.find(incident_id=incident_id)
    problems: list[str] = []
    # The notifier's IncidentMessages: the same computation of "what the channel should show"
    # that a sync makes (private attribute: the test reuses it instead of copying it).
    messages = lab.services.notifier._messages
    incident = messages.incident(incident_id)
    recorded = {(r.kind, r.ref or ""): r for r in rows}
    for wanted in messages.wanted(incident, progress={}):
        row = recorded.get(wanted.key)
        if row is None:
            problems.append(f"lost: the {wanted.kind.value} message was never posted")
        elif lab.ws.message(row.channel, row.ts) is None:
            problems.append(f"lost: the {wanted.kind.value} message is not in the workspace")
    # An incident with its own channel is announced in #incidents (`Channels.open`); that
    # message is posted once, not re-rendered from storage, so IncidentMessages omits it.
    own_channel = any(r.kind == MessageKind.SUMMARY.value and not r.thread_ts for r in rows)
    announced = [r for r in rows if r.kind == MessageKind.ANNOUNCE.value]
    if own_channel and not announced:
        problems.append("lost: the incident was never announced in #incidents")
    for row in announced:
        if lab.ws.message(row.channel, row.ts) is None:
            problems.append("lost: the announcement is not in #incidents")
    # Recorded by any incident: the announce channel holds every incident's announcement.
    known = {(r.channel, r.ts) for r in store.slack_messages.find()}
    channels = {r.channel for r in rows}
    for message in _bot_messages(lab, channels):
        if (message["channel"], message["ts"]) not in known:
            first = text_of(message).splitlines()[0][:100] if text_of(message) else ""
            problems.append(f"duplicated: a message Stratus did not record: {first!r}")
    return problems


def _serving(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return None if answer.status == 200 else f"{url} answered {answer.status}"
    except OSError as e:
        return f"{url} did not answer 200: {e}"


def _poll(check: Callable[[], list[str]], timeout_s: float) -> list[str]:
    """The problems `check` still finds after `timeout_s`, or [] as soon as it finds none."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            found = check()
        except Exception as e:
            found = [f"could not be checked: {type(e).__name__}: {e}"]
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.25)


def judge(
    lab: BotLab,
    seen: Observer,
    cells: list[tuple[Cell, list[datetime]]],
    incident_id: str,
    results: list[CellResult],
    undos: list[UndoClick] | None = None,
) -> None:
    """Judge the incident once; every cell armed in it gets the same violations (the CI
    sample arms several sites per incident, so a violation names the sites)."""
    v: list[str] = []
    ledger = seen.ledger
    # The bot still serves: both probes answer (the readiness sites recover once the fault
    # is spent; the probe caches a failed Slack answer briefly, so poll).
    http = lab.runtime.http_url
    v += _poll(lambda: [p for u in ("/healthz", "/readyz") if (p := _serving(http + u))], 30)
    # No lost and no duplicated Slack message (the housekeeping job retries failed syncs).
    v += _poll(lambda: slack_problems(lab, seen, incident_id), SYNC_S)
    # What the person who pressed Undo sees (the Undo drives): done, and told so.
    if undos:
        v += _poll(lambda: undo_problems(lab, seen, incident_id, undos), SYNC_S)
    state = seen.state(incident_id)
    txs = seen.transactions(incident_id)
    statuses = [t.status.value for t in txs]
    # No incident stuck: it closed, escalated, or waits for a person with a plan in Slack.
    waiting = state is S.AWAITING_APPROVAL and seen.message_ref(incident_id, MessageKind.PLAN)
    if state not in _DONE and not waiting:
        v.append(f"incident stuck in {state.value} after {CELL_S:.0f} s")
    # No commit on a sustain window that a faulted measurement read fell in.
    sustain = timedelta(seconds=LIMITS.sustain_s)
    for (site, _), faults_at in cells:
        for tx in txs:
            if not (site.measures and tx.status is TransactionStatus.COMMITTED and tx.ended_at):
                continue
            window_start = tx.ended_at - sustain
            blind = [t for t in faults_at if window_start <= t <= tx.ended_at]
            if blind:
                v.append(
                    f"transaction {tx.id} committed on a sustain window "
                    f"({window_start:%H:%M:%S}–{tx.ended_at:%H:%M:%S} lab time) in which "
                    f"{site.id} failed at {blind[0]:%H:%M:%S}"
                )
    # No undo entry lost.
    for tx in txs:
        if tx.status in (TransactionStatus.ABORTED, TransactionStatus.UNDONE):
            lost = [
                e for e in ledger.stack(tx.id) if e.state in (UndoState.APPLIED, UndoState.PENDING)
            ]
            if lost:
                v.append(
                    f"{tx.status.value} transaction {tx.id} left "
                    f"{[f'{e.seq}:{e.state.value}' for e in lost]} not restored"
                )
        if tx.status is TransactionStatus.COMMITTED and not ledger.stack(tx.id):
            v.append(f"committed transaction {tx.id} has no undo entries")
    # The end, in words.
    end = next(
        (s for s in ("committed", "escalated", "aborted", "undone") if s in statuses),
        statuses[-1] if statuses else "no transaction",
    )
    for result in results:
        result.incident_state = state.value
        result.transactions = statuses
        result.end = f"{end}; incident {state.value}"
        result.violations = list(v)
