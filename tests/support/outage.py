"""The outage matrix: one cell is the real loop (production wiring, lab world over HTTP, local
Slack workspace, SQLite) with one outage switched on when the incident reaches one phase.

Outages: the Kubernetes API refusing connections, stalled past the writer lease, slow (+5 s
per request) — all through `FaultProxy`, which the bot's kubeconfig names; Prometheus down
(`SwitchableMetrics`: the lab's metrics are in process, so "down" is the source refusing as
`PrometheusMetrics` does); the database not taking writes (`SqliteLock`: another connection
holds `BEGIN EXCLUSIVE`, as a primary that lost its disk or a failover in progress).

Phases: diagnosing, executing, validating, aborting (a transaction made to abort: while it
validates, the lab scales five of frontend's backends to zero, so μ_after > μ_before and
the transaction aborts), undo (a committed
transaction, then Undo pressed in the workspace).

`run_cell` returns what happened (`CellResult`); `contract_violations` lists every way the
cell broke issue 13's contract. The test asserts the list is empty; the benchmark writes the
whole matrix to docs/outage-matrix.md.
"""

from __future__ import annotations

import random
import re
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from agents.model import IncidentState, TransactionStatus, UndoState
from agents.tnr import TnrLimits
from bot.services import Options
from lab.alerts import attach_alerts
from lab.faults import fault
from lab.sim.world import LabWorld, WorldConfig
from lab.slack import SlackWorkspace, WorkspaceConfig
from tests.bot.scenario.harness import (
    ACK_TIMEOUT_S,
    BOLT_ACK_TIMEOUT_S,
    HOTEL,
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
from tests.support.faultproxy import FaultProxy, Mode, SqliteLock, SwitchableMetrics

S = IncidentState

#: Lab seconds (SPEED × wall). The lease is wall time in the database: 6 s. Δ is 20 s of wall
#: time, so a transaction that keeps measuring through an outage reaches it within a cell.
LIMITS = TnrLimits(
    sustain_s=20, poll_s=2, settle_min_s=2, settle_timeout_s=90, lock_ttl_s=6, deadline_s=200
)
LEASE_WALL_S = 6.0
OUTAGE_WALL_S = 6.0  # longer than the sustain window (2 s wall) and than a settle
STALL_WALL_S = LEASE_WALL_S + 5.0  # "stalled past the lease"
SLOW_WALL_S = 8.0
SETTLE_AFTER_S = 10.0  # after the outage: time for the loop to reach its end


#: Scaled to zero while the "aborting" cell's transaction validates.
WORSEN = ("search", "profile", "rate", "reservation", "user")


class Outage(StrEnum):
    API_REFUSING = "api-refusing"
    API_STALLED = "api-stalled"
    API_SLOW = "api-slow"
    PROMETHEUS_DOWN = "prometheus-down"
    DATABASE_READ_ONLY = "database-read-only"


class Phase(StrEnum):
    DIAGNOSING = "diagnosing"
    EXECUTING = "executing"
    VALIDATING = "validating"
    ABORTING = "aborting"
    UNDO = "undo"


#: One cell per row and per column (a Latin diagonal: the phases shuffled with a fixed seed)
#: is the CI sample. Seed 110 gives refusing × diagnosing, stalled × validating, slow × undo,
#: prometheus-down × executing, database × aborting: the sample then covers the issue's
#: failure classes (closed while firing, lease/restart, a transaction started blind) as well
#: as two cells that pass today. benchmarks/outage_matrix.py runs all 25.
SAMPLE_SEED = 110


def sample_cells(seed: int = SAMPLE_SEED) -> list[tuple[Outage, Phase]]:
    phases = list(Phase)
    random.Random(seed).shuffle(phases)
    return list(zip(Outage, phases, strict=True))


def all_cells() -> list[tuple[Outage, Phase]]:
    return [(o, p) for o in Outage for p in Phase]


@dataclass
class Switch:
    """Turns one outage on and off, remembering when (lab time) for the verdicts."""

    outage: Outage
    proxy: FaultProxy
    metrics: SwitchableMetrics
    db: SqliteLock
    world: LabWorld
    on_at: datetime | None = None
    off_at: datetime | None = None
    phase_seen: str = ""

    def on(self) -> None:
        self.on_at = self.world.clock.now()
        match self.outage:
            case Outage.API_REFUSING:
                self.proxy.set_mode(Mode.REFUSE)
            case Outage.API_STALLED:
                self.proxy.set_mode(Mode.STALL)
            case Outage.API_SLOW:
                self.proxy.set_mode(Mode.SLOW)
            case Outage.PROMETHEUS_DOWN:
                self.metrics.down = True
            case Outage.DATABASE_READ_ONLY:
                self.db.hold()

    def off(self) -> None:
        # The end is stamped before anything is released: a call the outage held answers only
        # after that, so a window that starts with its answer starts after `off_at`.
        if self.on_at is not None and self.off_at is None:
            self.off_at = self.world.clock.now()
        self.proxy.set_mode(Mode.PASS)
        self.metrics.down = False
        self.db.release()

    @property
    def hold_s(self) -> float:
        return {Outage.API_STALLED: STALL_WALL_S, Outage.API_SLOW: SLOW_WALL_S}.get(
            self.outage, OUTAGE_WALL_S
        )


@dataclass
class CellResult:
    outage: Outage
    phase: Phase
    phase_seen: str = ""
    incident_state: str = ""
    transactions: list[str] = field(default_factory=list)
    end: str = ""
    messages: list[str] = field(default_factory=list)
    last_message: str = ""
    violations: list[str] = field(default_factory=list)
    wall_s: float = 0.0


@contextmanager
def outage_lab(tmp: Path, *, seed: int = 5) -> Iterator[tuple[BotLab, Switch]]:
    """`tests.bot.scenario.harness.bot_lab`, with the bot's Kubernetes API behind a
    `FaultProxy`, its metrics behind `SwitchableMetrics`, and a short lease."""
    ws = SlackWorkspace(replace(WorkspaceConfig(), ack_timeout_s=ACK_TIMEOUT_S))
    ws.start()
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
    forwarder = AlertForwarder()
    lab: BotLab | None = None
    proxy: FaultProxy | None = None
    switch: Switch | None = None
    try:
        world.start()
        world.wait_healthy()
        alerts = attach_alerts(world, webhook=forwarder, route=ROUTE)
        upstream = urlparse(world.cluster.url)
        proxy = FaultProxy((upstream.hostname or "127.0.0.1", upstream.port or 80)).start()
        config = yaml.safe_load((tmp / "kubeconfig").read_text())
        config["clusters"][0]["cluster"]["server"] = proxy.url
        (tmp / "kubeconfig-proxied").write_text(yaml.safe_dump(config, sort_keys=False))
        policy = tmp / "policy.yaml"
        policy.write_text(POLICY.format(ttl="15m"))
        values = settings_values(
            ws,
            mode="socket",
            tmp=tmp,
            kubeconfig=tmp / "kubeconfig-proxied",
            policy=policy,
            # Every call under the 6 s lease must fit in a third of it (the bot refuses to
            # start otherwise): one try of at most 2 s.
            STRATUS_KUBE_TIMEOUT_S="2",
            STRATUS_KUBE_ATTEMPTS="1",
            STRATUS_PROMETHEUS_TIMEOUT_S="2",
            STRATUS_PROMETHEUS_ATTEMPTS="1",
        )
        metrics = SwitchableMetrics(alerts.metrics)
        options = Options(
            clock=world.clock,
            metrics_source=metrics,
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
        lab.start_bot()
        journal = lab.services.store.journal
        lab.wait("the journal's baseline", lambda: journal.query("lab", HOTEL, kind="Service"))
        switch = Switch(
            outage=Outage.API_REFUSING,
            proxy=proxy,
            metrics=metrics,
            db=SqliteLock(tmp / "stratus.db"),
            world=world,
        )
        yield lab, switch
    finally:
        if switch is not None:
            switch.off()
        if lab is not None and hasattr(lab, "runtime"):
            lab.runtime.stop()
        if proxy is not None:
            proxy.stop()
        forwarder.stop()
        world.stop()
        ws.stop()


# ---------------------------------------------------------------------- driving a cell


def _poll(predicate: Callable[[], bool], timeout: float, every: float = 0.01) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return True
        except Exception:  # the store may be locked by the outage itself
            pass
        time.sleep(every)
    return False


def _approve(lab: BotLab, incident_id: str) -> None:
    lab.wait_state(incident_id, S.AWAITING_APPROVAL, timeout=90)
    message = lab.wait_message(
        incident_id, MessageKind.PLAN, predicate=lambda m: ActionId.APPROVE in buttons(m)
    )
    channel, ts = lab.message_ref(incident_id, MessageKind.PLAN) or ("", "")
    assert message["ts"] == ts
    lab.ws.click("alice", channel, ts, ActionId.APPROVE)


def _in(lab: BotLab, incident_id: str, *states: IncidentState) -> bool:
    return lab.state(incident_id) in states


def _arm(lab: BotLab, switch: Switch, incident_id: str, phase: Phase) -> None:
    """Drive the loop to `phase` and switch the outage on there; record the state seen."""
    machine = lab.services.brain.machine
    reached = True
    if phase is Phase.DIAGNOSING:
        reached = _poll(lambda: _in(lab, incident_id, S.DETECTED, S.DIAGNOSING), 30)
    elif phase is Phase.EXECUTING:
        _approve(lab, incident_id)
        reached = _poll(
            lambda: (
                any(t.status is TransactionStatus.OPEN for t in machine.transactions(incident_id))
                or _in(lab, incident_id, S.EXECUTING)
            ),
            60,
            0.002,
        )
    elif phase is Phase.VALIDATING:
        _approve(lab, incident_id)
        reached = _poll(lambda: _in(lab, incident_id, S.VALIDATING), 60)
    elif phase is Phase.ABORTING:
        _approve(lab, incident_id)
        _poll(lambda: _in(lab, incident_id, S.VALIDATING), 60)
        for victim in WORSEN:
            fault("scale-to-zero").inject(lab.world, app=HOTEL, target=victim)
        reached = _poll(
            lambda: (
                _in(lab, incident_id, S.ABORTING)
                or any(
                    t.status is TransactionStatus.ABORTING
                    for t in machine.transactions(incident_id)
                )
            ),
            30,
            0.005,
        )
    elif phase is Phase.UNDO:
        _approve(lab, incident_id)
        lab.wait_state(incident_id, S.CLOSED, S.ESCALATED, timeout=120)
        outcome = lab.wait_message(
            incident_id, MessageKind.OUTCOME, predicate=lambda m: ActionId.UNDO in buttons(m)
        )
        channel = (lab.message_ref(incident_id, MessageKind.OUTCOME) or ("", ""))[0]
        switch.phase_seen = f"{lab.state(incident_id).value} (undo pressed)"
        switch.on()
        lab.ws.click("alice", channel, outcome["ts"], ActionId.UNDO)
        return
    switch.phase_seen = lab.state(incident_id).value + ("" if reached else " (phase missed)")
    switch.on()


def run_cell(tmp: Path, outage: Outage, phase: Phase) -> CellResult:
    started = time.monotonic()
    result = CellResult(outage=outage, phase=phase)
    with outage_lab(tmp) as (lab, switch):
        switch.outage = outage
        broken_before = None
        fault("wrong-target-port").inject(lab.world, app=HOTEL)
        incident = lab.incident()
        if phase is Phase.UNDO:
            broken_before = lab.world.api.get("Service", HOTEL, "geo")
        _arm(lab, switch, incident.id, phase)
        time.sleep(switch.hold_s)
        switch.off()
        time.sleep(SETTLE_AFTER_S)
        result.phase_seen = switch.phase_seen
        _judge(lab, switch, incident.id, result, broken_before)
    result.wall_s = time.monotonic() - started
    return result


# ---------------------------------------------------------------------- the verdict

_CLAIMS_HEALTHY = ("healthy", "resolved")
#: The messages that state a verdict (diagnosis and alert lists name healthy services and
#: resolved alerts truthfully).
_VERDICTS = {k.value for k in (MessageKind.OUTCOME, MessageKind.TRANSACTION, MessageKind.CLOSED)}
_DIAGNOSES = {k.value for k in (MessageKind.DIAGNOSIS, MessageKind.PLAN)}
_NOT_A_CLAIM = ("not healthy", "unhealthy", "cannot", "unknown", "unmeasured", "not measured")


def _incident_texts(lab: BotLab, incident_id: str) -> list[tuple[str, str]]:
    """(kind, text as the workspace shows it now) of every message Stratus stored for it."""
    found: list[tuple[str, str]] = []
    for row in lab.services.store.slack_messages.find(incident_id=incident_id):
        message = lab.ws.message(row.channel, row.ts)
        if message is not None:
            found.append((row.kind, text_of(message)))
    return found


def _still_firing(lab: BotLab, incident_id: str) -> set[str]:
    opened_by = {a.alertname for a in lab.services.store.incidents.alerts(incident_id)}
    firing = {a.name for a in lab.alerts.metrics.firing_alerts(HOTEL)}
    return opened_by & firing


_BLAMES_RESTART = re.compile(
    r"interrupted by a restart|(bot|process|stratus) (was )?restarted|after a restart|"
    r"restart interrupted",
    re.IGNORECASE,
)


def _judge(
    lab: BotLab,
    switch: Switch,
    incident_id: str,
    result: CellResult,
    broken_before: dict[str, Any] | None,
) -> None:
    v = result.violations
    machine = lab.services.brain.machine
    ledger = lab.services.brain.engine.ledger
    state = lab.state(incident_id)
    result.incident_state = state.value
    txs = machine.transactions(incident_id)
    result.transactions = [t.status.value for t in txs]
    sustain = timedelta(seconds=LIMITS.sustain_s)

    # 1. No commit on a window the outage overlapped — for the outages that blind the
    # measurement. A database that takes no writes does not hide the cluster or the metrics:
    # the window is still measured (the engine waits to record it), and what that outage must
    # not do — lose an undo entry, let two writers act, claim a restart — is checked below.
    blinding = switch.outage is not Outage.DATABASE_READ_ONLY
    for tx in txs:
        if blinding and tx.status is TransactionStatus.COMMITTED:
            window_start = (tx.ended_at or tx.started_at) - sustain
            if (
                switch.on_at is not None
                and switch.off_at is not None
                and tx.ended_at is not None
                and window_start < switch.off_at
                and tx.ended_at > switch.on_at
            ):
                v.append(
                    f"transaction {tx.id} committed (μ_after={tx.mu_after}, "
                    f"validation={tx.validation}) on a sustain window the outage overlapped "
                    f"(outage {switch.on_at:%H:%M:%S}–{switch.off_at:%H:%M:%S}, transaction "
                    f"{tx.started_at:%H:%M:%S}–{tx.ended_at:%H:%M:%S} lab time)"
                )
    # 1b. No transaction starts on a μ_before that could not be measured.
    if switch.outage in (Outage.API_REFUSING, Outage.PROMETHEUS_DOWN):
        for tx in txs:
            if (
                switch.on_at is not None
                and switch.off_at is not None
                and switch.on_at <= tx.started_at <= switch.off_at
            ):
                v.append(
                    f"transaction {tx.id} started during {switch.outage.value} with "
                    f"μ_before={tx.mu_before}: μ_before could not have been measured"
                )
    # 2. No undo entry lost.
    for tx in txs:
        stack = ledger.stack(tx.id)
        if tx.status in (TransactionStatus.ABORTED, TransactionStatus.UNDONE):
            lost = [e for e in stack if e.state in (UndoState.APPLIED, UndoState.PENDING)]
            if lost:
                v.append(
                    f"{tx.status.value} transaction {tx.id} left "
                    f"{[f'{e.seq}:{e.state.value}' for e in lost]} not restored"
                )
        if tx.status is TransactionStatus.UNDONE and broken_before is not None:
            geo = lab.world.api.get("Service", HOTEL, "geo")
            if geo is None or geo["spec"] != broken_before["spec"]:
                v.append(f"transaction {tx.id} says undone but geo is not as it was")
    # 3. Truthful Slack.
    texts = _incident_texts(lab, incident_id)
    result.messages = [k for k, _ in texts]
    result.last_message = texts[-1][1].splitlines()[0][:160] if texts else ""
    # After a real fix and a real undo the alert fires again, as it should: not a lie.
    firing = set() if result.phase is Phase.UNDO else _still_firing(lab, incident_id)
    everything = "\n".join(t for _, t in texts)
    # "Restart the pods of …" is an action, not an excuse: only words that blame a restart of
    # the bot for the state of the work count.
    said = [ln for ln in everything.splitlines() if _BLAMES_RESTART.search(ln)]
    if said:
        v.append(f"a message says a restart interrupted the work; nothing restarted: {said[:2]}")
    timeline = lab.services.store.incidents.timeline(incident_id)
    blamed = [e.message for e in timeline if _BLAMES_RESTART.search(e.message)]
    if blamed:
        v.append(f"the timeline blames a restart; nothing restarted: {blamed[:2]}")
    if firing:
        if state in (S.RESOLVED, S.CLOSED):
            v.append(f"incident is {state.value} while {sorted(firing)} still fires")
        for kind, text in texts:
            if kind not in _VERDICTS:
                continue
            lower = text.lower()
            claims = [w for w in _CLAIMS_HEALTHY if w in lower]
            if claims and not any(n in lower for n in _NOT_A_CLAIM):
                v.append(f"{kind} message says {claims} while {sorted(firing)} still fires")
    if result.phase is Phase.DIAGNOSING and switch.outage is not Outage.DATABASE_READ_ONLY:
        for kind, text in texts:
            lower = text.lower()
            if kind in _DIAGNOSES and "nothing wrong" in lower and "cannot read" not in lower:
                v.append(f"{kind} message says nothing is wrong though its reads failed")
    if result.phase is Phase.UNDO and broken_before is not None:
        # The fix was real and the incident closed before the outage; what must be true now
        # is that the undo's report matches the cluster.
        geo = lab.world.api.get("Service", HOTEL, "geo")
        restored = geo is not None and geo["spec"] == broken_before["spec"]
        for kind, text in texts:
            if kind == MessageKind.UNDO.value and "restored" in text.lower() and not restored:
                v.append("the undo message says restored but geo is not as it was")
    # 4. The bot still serves.
    try:
        with urllib.request.urlopen(f"{lab.runtime.http_url}/healthz", timeout=10) as answer:
            if answer.status != 200:
                v.append(f"/healthz answered {answer.status}")
    except OSError as e:
        v.append(f"/healthz did not answer: {e}")
    # The end state, in words.
    if any(s == TransactionStatus.COMMITTED.value for s in result.transactions):
        result.end = "committed"
    elif any(s == TransactionStatus.ESCALATED.value for s in result.transactions):
        result.end = "held (escalated)"
    elif any(s == TransactionStatus.ABORTED.value for s in result.transactions):
        result.end = "aborted"
    elif any(s == TransactionStatus.UNDONE.value for s in result.transactions):
        result.end = "undone"
    elif result.transactions:
        result.end = f"transaction {result.transactions[-1]}"
    else:
        result.end = "no transaction"
    result.end += f"; incident {state.value}"
