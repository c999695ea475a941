"""The agents' error tree. Adapters translate SDK exceptions into these (`raise ... from e`);
each error says whether trying again can help."""

from __future__ import annotations


class StratusError(Exception):
    """Root of every error the agents raise on purpose."""


class ClusterError(StratusError):
    """A cluster read or write failed."""


class NotFound(ClusterError):
    pass


class Conflict(ClusterError):
    """The object changed since it was read (409), or already exists."""


class Forbidden(ClusterError):
    """RBAC refused the request (403)."""


class Invalid(ClusterError):
    """The server refused the object or patch (400/422)."""


class Expired(ClusterError):
    """410 Gone: a resourceVersion older than the server's history; list again to go on."""


class TransientError(ClusterError):
    """Timeouts, 429, 5xx, connection errors: retrying later may succeed."""

    def __init__(self, message: str, *, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class MetricsError(StratusError):
    pass


class MetricsUnavailable(MetricsError):
    """The metrics source gave no answer (connection refused, timed out): unlike a refused
    query or a profile that fits nothing, retrying later may succeed."""


class QueryError(MetricsError):
    """A query the metrics source refused. The message quotes the query so a model can fix it."""

    def __init__(self, query: str, reason: str) -> None:
        super().__init__(f"query {query!r} failed: {reason}")
        self.query = query
        self.reason = reason


class SourcesUnavailable(StratusError):
    """The cluster or the metrics did not answer the reads a diagnosis stands on (the
    namespace's workloads and pods, its golden signals). Not a finding: diagnose again when
    they answer."""


class Inadmissible(StratusError):
    """An action the engine will never execute (no inverse, forbidden kind, data changes)."""


class LockLost(StratusError):
    """The writer lock expired and another holder took it: our fencing token is stale."""


class BudgetExceeded(StratusError):
    """A reasoner ran out of steps or tokens."""


class StepBudgetExceeded(BudgetExceeded):
    pass


class TokenBudgetExceeded(BudgetExceeded):
    pass


class ModelUnavailable(StratusError):
    """The language model API failed after its retries."""


class PolicyError(StratusError):
    """The policy file is invalid. The message names file, line, field and reason."""


class SignalProfileError(StratusError):
    """A signal profile file is invalid. The message names file, line, field and reason."""
