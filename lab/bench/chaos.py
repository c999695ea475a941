"""`stratus bench --chaos`: outages at seeded moments of every run, the same for every agent.

Each run with faults gets two outages of two different kinds, drawn from the fail-closed
issue's outages that blind a measurement:

* `api-refusing`: the Kubernetes API refuses connections (the session's client reaches the
  lab's API through a `lab.outages.FaultProxy`, which resets them);
* `api-stalled`: the API accepts connections and answers nothing until the outage ends; the
  client gives up at its deadline (the bench gives it one try of 2 s with `--chaos`, so a
  stall costs wall time, not lab time);
* `prometheus-down`: every metrics call fails as `PrometheusMetrics` fails when its server
  refuses connections (`lab.outages.SwitchableMetrics`, in front of the brain's meter, the
  detector's alert source and the scan).

When: the first outage starts 10–120 lab s after the run's first fault, the second 20–150 s
after the first ends; each lasts 15–60 s. That spans detection, diagnosis, execution and the
60 s sustain window of a first or second transaction. The draws depend only on the seed and
the scenario (never on the agent or on what the run did), so every agent meets the same
outages at the same lab times.

What is scored (`unmeasured_commits`): a transaction that committed although an outage
overlapped the sustain window before its commit, the window its verdict should rest on. For
Stratus that must never happen (DESIGN rule 8: what cannot be measured is unknown, never
healthy). An agent without validation commits on no measurement at all; it is counted the same
way, so the column says how often that coincided with an outage.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from agents.model import TransactionStatus
from agents.tnr.records import TransactionRecord
from lab.outages import FaultProxy, Mode, SwitchableMetrics

logger = logging.getLogger(__name__)

FIRST_AFTER_FAULT_S = (10.0, 120.0)
GAP_S = (20.0, 150.0)
DURATION_S = (15.0, 60.0)
OUTAGES_PER_RUN = 2


class ChaosKind(StrEnum):
    API_REFUSING = "api-refusing"
    API_STALLED = "api-stalled"
    PROMETHEUS_DOWN = "prometheus-down"


@dataclass(frozen=True, slots=True)
class PlannedOutage:
    kind: ChaosKind
    at_s: float  # lab seconds from the run's start
    duration_s: float

    @property
    def end_s(self) -> float:
        return self.at_s + self.duration_s


def plan_outages(seed: int, scenario: str, first_fault_s: float) -> tuple[PlannedOutage, ...]:
    """The run's outages: a function of the seed and the scenario only."""
    rng = random.Random(f"chaos:{seed}:{scenario}")
    kinds = rng.sample(list(ChaosKind), OUTAGES_PER_RUN)
    outages: list[PlannedOutage] = []
    at = first_fault_s + rng.uniform(*FIRST_AFTER_FAULT_S)
    for kind in kinds:
        outage = PlannedOutage(
            kind=kind, at_s=round(at), duration_s=round(rng.uniform(*DURATION_S))
        )
        outages.append(outage)
        at = outage.end_s + rng.uniform(*GAP_S)
    return tuple(outages)


@dataclass(slots=True)
class OutageRecord:
    kind: ChaosKind
    on_at: datetime
    off_at: datetime | None = None


class Chaos:
    """Switches the session's outages on and off, and remembers when (lab time)."""

    def __init__(self, proxy: FaultProxy, metrics: SwitchableMetrics) -> None:
        self.proxy = proxy
        self.metrics = metrics
        self.log: list[OutageRecord] = []

    @property
    def active(self) -> ChaosKind | None:
        last = self.log[-1] if self.log else None
        return last.kind if last is not None and last.off_at is None else None

    def on(self, kind: ChaosKind, now: datetime) -> None:
        self.off(now)
        logger.info("chaos: %s on", kind.value)
        self.log.append(OutageRecord(kind=kind, on_at=now))
        match kind:
            case ChaosKind.API_REFUSING:
                self.proxy.set_mode(Mode.REFUSE)
            case ChaosKind.API_STALLED:
                self.proxy.set_mode(Mode.STALL)
            case ChaosKind.PROMETHEUS_DOWN:
                self.metrics.down = True

    def off(self, now: datetime) -> None:
        # Stamped before anything is released: a call the outage held answers only after.
        if self.log and self.log[-1].off_at is None:
            self.log[-1].off_at = now
            logger.info("chaos: %s off", self.log[-1].kind.value)
        self.proxy.set_mode(Mode.PASS)
        self.metrics.down = False

    def describe(self, elapsed: Callable[[datetime], float]) -> tuple[str, ...]:
        return tuple(
            f"{r.kind.value} {elapsed(r.on_at):.0f}–"
            + (f"{elapsed(r.off_at):.0f} s" if r.off_at is not None else "end")
            for r in self.log
        )


def unmeasured_commits(
    transactions: Iterable[TransactionRecord],
    outages: Iterable[OutageRecord],
    *,
    sustain_s: float,
) -> list[str]:
    """Committed transactions whose sustain window (the `sustain_s` before the commit) an
    outage overlapped. Each is named by its place in the run ("transaction 2"), not by its
    random id, so that the same seed gives the same report."""
    sustain = timedelta(seconds=sustain_s)
    found: list[str] = []
    spans = [(o.kind, o.on_at, o.off_at) for o in outages]
    for number, tx in enumerate(transactions, start=1):
        if tx.status is not TransactionStatus.COMMITTED or tx.ended_at is None:
            continue
        window_start = tx.ended_at - sustain
        for kind, on_at, off_at in spans:
            if on_at < tx.ended_at and (off_at is None or off_at > window_start):
                found.append(
                    f"transaction {number} committed at {tx.ended_at:%H:%M:%S} "
                    f"(μ_after={tx.mu_after}) with {kind.value} from {on_at:%H:%M:%S} "
                    "in its sustain window"
                )
                break
    return found
