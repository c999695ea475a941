"""Failover between `stratus run` processes in each state of one incident, for
`test_replica_failover.py` and `benchmarks/failover_processes.py`.

Two replicas run against one lab cluster, one Slack workspace and one PostgreSQL database;
the Claude reasoner talks to the scripted Messages API stand-in, whose "model" thinks for a
few seconds (so DIAGNOSING lasts long enough to be caught). One fault opens one incident, and
each time the incident enters the next of DIAGNOSING, AWAITING_APPROVAL, EXECUTING and
VALIDATING — read from the database, where every transition is persisted before it is
announced — the leading process is SIGKILLed and a fresh replica is started in its place, so
that there is always a follower. A person approves every plan that asks (the click lands on
whichever replica holds a socket; a follower records it and the leader acts on it).

Measured per kill: which replica died, which took over and how long after the kill it said so
on `/readyz`. At the end: the incident's timeline, every transaction's status and the states
of its undo entries, and the lab's own verdict on whether the fault is mitigated.
"""

from __future__ import annotations

import dataclasses
import string
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.ids import ActionId, MessageKind
from lab.alerts.stack import free_port
from lab.faults import check_mitigation, fault
from storage import Store
from tests.bot.replicas import HOTEL, Replica, replica_lab, wait
from tests.bot.scenario.harness import GEO_TARGET_PORT_ANSWER, buttons
from tests.support.anthropic_standin import Turn, messages_standin, tool_use

STATES = ("diagnosing", "awaiting_approval", "executing", "validating")
#: How long the stand-in model thinks before it answers: DIAGNOSING lasts at least this long.
THINK_S = 8.0
#: The writer lease (STRATUS_LOCK_LEASE_S): a dead writer's transaction is recovered once it
#: has gone this long without a renewal. Half the default, so the calls' deadlines are
#: shortened to fit a third of it (2 tries × 2 s against a local lab).
LOCK_LEASE_S = 15
ENDS = ("closed", "escalated")


@dataclass(frozen=True, slots=True, kw_only=True)
class Takeover:
    state: str  # the incident's state when its leader was killed
    killed: str  # the replica SIGKILLed
    leader: str  # the replica that took over
    takeover_s: float  # the kill → the new leader says so on /readyz
    killed_at: float  # wall-clock time of the kill


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessFailover:
    takeovers: list[Takeover]
    timeline: list[tuple[str, str]]  # (state, message) of the incident, oldest first
    transactions: dict[str, str]  # id → status
    undo_entries: dict[str, list[str]]  # transaction id → its undo entries' states
    approvals: int  # Approve clicks the person made
    mitigated: bool
    problems: str
    elapsed_s: float  # the fault → the incident's end
    #: The VALIDATING kill → recovery's abort of the dead leader's transaction (it may start
    #: only once the writer lease has run out); None without such a kill or abort.
    recovery_s: float | None = None

    @property
    def end(self) -> str:
        return self.timeline[-1][0] if self.timeline else "?"


def thinking(body: dict[str, Any]) -> Turn:
    return dataclasses.replace(
        tool_use("submit_diagnosis", GEO_TARGET_PORT_ANSWER), delay_s=THINK_S
    )


class Replicas:
    """The live replicas by name; a killed one is replaced by a fresh one."""

    def __init__(self, start: Any) -> None:
        self._start = start
        self.live: dict[str, Replica] = {}
        self._names = iter(string.ascii_lowercase)

    def add(self, port: int | None = None) -> str:
        name = next(self._names)
        self.live[name] = self._start(name, port)
        return name

    def leader(self) -> str | None:
        for name, replica in self.live.items():
            if replica.process.poll() is not None:
                raise AssertionError(f"replica {name} exited: {replica.tail()}")
        return next((name for name, r in self.live.items() if r.leading()), None)


def fail_over_in_each_state(
    tmp: Path, stack: ExitStack, *, states: tuple[str, ...] = STATES
) -> ProcessFailover:
    model = stack.enter_context(messages_standin())
    model.add(*[thinking] * 60)
    ports = (free_port(), free_port())
    # Alertmanager posts to the first follower, which is alive when the fault fires.
    lab = replica_lab(
        tmp,
        stack,
        webhook_port=ports[1],
        extra={
            "ANTHROPIC_API_KEY": "sk-ant-test-key-000000",
            "ANTHROPIC_BASE_URL": model.base_url,
            "STRATUS_LOCK_LEASE_S": str(LOCK_LEASE_S),
            "STRATUS_KUBE_TIMEOUT_S": "2",
            "STRATUS_PROMETHEUS_TIMEOUT_S": "2",
        },
    )
    replicas = Replicas(lab.replica)
    first = replicas.add(ports[0])
    wait("the first replica to lead", lambda: replicas.leader() == first, 90)
    second = replicas.add(ports[1])
    wait("the second replica to answer", lambda: replicas.live[second].tail() != "", 30)
    lab.ws.wait_until(lambda: lab.ws.socket_connections == 2, timeout=90)

    store = Store.connect(lab.schema.url)
    stack.callback(store.close)
    injection = fault("wrong-target-port").inject(lab.world, app=HOTEL)
    began = time.monotonic()
    incident = wait("an incident", store.incidents.list_open, 240)[0]
    pending = list(states)
    takeovers: list[Takeover] = []
    approvals = 0
    last_click = 0.0
    deadline = time.monotonic() + 900
    while (state := store.incidents.get(incident.id).state) not in ENDS:
        assert time.monotonic() < deadline, f"the incident is still {state}"
        if pending and state == pending[0]:
            victim = replicas.leader()
            if victim is None:  # between leaders: the state is the old leader's last word
                time.sleep(0.1)
                continue
            takeovers.append(_kill_and_take_over(replicas, victim, state))
            pending.pop(0)
        elif (
            state == "awaiting_approval"
            and time.monotonic() - last_click > 15
            and _approve(lab, store, incident.id)
        ):
            approvals += 1
            last_click = time.monotonic()
        time.sleep(0.1)
    elapsed = time.monotonic() - began
    assert not pending, f"the incident ended {state} before it entered {pending}"

    timeline = [(e.state, e.message) for e in store.incidents.timeline(incident.id)]
    recovery_s = _recovery_s(store, incident.id, takeovers)
    txs = store.transactions.list_for_incident(incident.id)
    verdict = check_mitigation(lab.world, injection, window_s=5)
    give_up = time.monotonic() + 20  # the lab's telemetry runs in its own threads
    while not verdict.mitigated and time.monotonic() < give_up:
        time.sleep(0.5)
        verdict = check_mitigation(lab.world, injection, window_s=5)
    return ProcessFailover(
        takeovers=takeovers,
        timeline=timeline,
        transactions={t.id: t.status for t in txs},
        undo_entries={t.id: [e.state for e in store.undo.stack(t.id)] for t in txs},
        approvals=approvals,
        mitigated=verdict.mitigated,
        problems="; ".join(verdict.problems),
        elapsed_s=elapsed,
        recovery_s=recovery_s,
    )


def _recovery_s(store: Store, incident_id: str, takeovers: list[Takeover]) -> float | None:
    killed = next((t.killed_at for t in takeovers if t.state == "validating"), None)
    aborts = [
        a.at.timestamp()
        for a in store.audit.query(verb="abort", incident_id=incident_id)
        if a.detail.get("recovery")
    ]
    later = [at - killed for at in aborts if killed is not None and at >= killed]
    return min(later) if later else None


def _kill_and_take_over(replicas: Replicas, victim: str, state: str) -> Takeover:
    replicas.live.pop(victim).kill()
    killed, killed_at = time.monotonic(), time.time()
    replicas.add()  # a fresh follower, as a Deployment replaces a dead pod
    leader = wait("another replica to lead", replicas.leader, 60, step_s=0.1)
    return Takeover(
        state=state,
        killed=victim,
        leader=leader,
        takeover_s=time.monotonic() - killed,
        killed_at=killed_at,
    )


def _approve(lab: Any, store: Store, incident_id: str) -> bool:
    """Click Approve on the incident's newest plan message, if it offers one."""
    rows = store.slack_messages.find(incident_id=incident_id, kind=MessageKind.PLAN.value)
    if not rows:
        return False
    message = lab.ws.message(rows[-1].channel, rows[-1].ts)
    if message is None or ActionId.APPROVE not in buttons(message):
        return False
    lab.ws.click("alice", rows[-1].channel, rows[-1].ts, ActionId.APPROVE)
    return True
