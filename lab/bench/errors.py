"""The bench's errors: a scenario that cannot run as written is the scenario's fault, reported
with the scenario and the reason; everything else is a bug the run records with its traceback."""

from __future__ import annotations


class BenchError(Exception):
    """Base of the bench's errors."""


class ScenarioRunError(BenchError):
    """The scenario cannot run as written (a fault the lab refuses, noise that would do harm,
    a ground truth that disagrees with the fault library)."""


class UnknownAgent(BenchError):
    """`--agents` named an agent the bench does not have."""
