"""Leader election on a Kubernetes Lease (`coordination.k8s.io/v1`), the way client-go's
`leaderelection` does it, so that of several replicas exactly one runs the singleton work
(the scan, the journal's watches, the digests, approval expiry and recovery).

    elector = LeaderElector(cluster, LeaseConfig(namespace="stratus"), identity="stratus/pod-a",
                            on_started=lead, on_stopped=step_down)
    elector.start()   # a daemon thread campaigns every `retry_s`
    ...
    elector.stop()    # releases the lease if held, so a follower takes over at once

The rules, all measured on this process's monotonic clock (never on the lease's timestamps,
which another machine wrote with its own clock):

* **Acquire.** A follower takes the lease when nobody holds it, or when its record (holder and
  renew time) has not changed for the record's `leaseDurationSeconds` since this process first
  saw it. The write is a PUT carrying the resourceVersion read just before: of two followers
  that try at once, the API server takes one and answers 409 to the other.
* **Renew.** The leader renews every `retry_s`. If it has not renewed for `renew_deadline_s`
  (the API is unreachable, or the lease was taken), it **stops leading at once** and never
  campaigns again in this process: `on_stopped` runs, and `stratus run` exits so that its
  restart starts clean. `renew_deadline_s < lease_s` leaves the old leader
  `lease_s - renew_deadline_s` to stop before anyone may take over (settings refuse anything
  else).
* **Fencing token.** `leaseTransitions` counts changes of holder; the leader's token is the
  value it wrote. Every singleton pass asks `fence()` first, which refuses once the elector has
  stepped down or its last renewal is older than the renew deadline, so a leader paused past
  its lease (GC, a stalled call) does not run one more pass on a lease it no longer holds.

The Lease is Stratus's own coordination object in its own namespace, never an object of a
covered namespace: it is the one write outside the transaction engine, and it changes nothing
an incident measures.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from agents.errors import ClusterError, Conflict, Forbidden, NotFound, StratusError
from agents.model import JsonObject, KubeObject, ObjectRef

logger = logging.getLogger(__name__)

API_VERSION = "coordination.k8s.io/v1"


class NotLeader(StratusError):
    """A singleton pass was asked of a replica that does not (or no longer surely) lead."""


class LeaseAPI(Protocol):
    """What the elector needs of the cluster (`KubernetesCluster` is one)."""

    def get(self, ref: ObjectRef) -> KubeObject: ...

    def create(self, obj: KubeObject) -> KubeObject: ...

    def replace(self, obj: KubeObject) -> KubeObject: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaseConfig:
    namespace: str
    name: str = "stratus-leader"
    lease_s: float = 15.0  # how long a silent leader's lease holds off the others
    renew_deadline_s: float = 10.0  # a leader that has not renewed for this long steps down
    retry_s: float = 2.0  # how often the leader renews and a follower tries

    def problem(self) -> str:
        """Why these timings cannot fence ("" when they can)."""
        if not 0 < self.retry_s < self.renew_deadline_s < self.lease_s:
            return (
                f"need 0 < retry ({self.retry_s:g} s) < renew deadline "
                f"({self.renew_deadline_s:g} s) < lease ({self.lease_s:g} s)"
            )
        return ""


@dataclass(frozen=True, slots=True)
class Leadership:
    """What `/readyz`, `/metrics` and the logs say about the election."""

    identity: str
    leading: bool
    holder: str  # who holds the lease as last read ("" if nobody or unknown)
    token: int | None  # the fencing token while leading


def _micro_time(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        api: LeaseAPI,
        config: LeaseConfig,
        *,
        identity: str,
        on_started: Callable[[int], None],
        on_stopped: Callable[[], None],
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        problem = config.problem()
        if problem:
            raise ValueError(f"lease timings: {problem}")
        self.config = config
        self.identity = identity
        self._api = api
        self._on_started = on_started
        self._on_stopped = on_stopped
        self._now = monotonic
        self._ref = ObjectRef(
            api_version=API_VERSION, kind="Lease", name=config.name, namespace=config.namespace
        )
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._leading = False
        self._stepped_down = False
        self._token: int | None = None
        self._renewed_at = 0.0
        self._holder = ""
        #: (holder, renewTime) of the record last read, and when this process first saw it
        self._seen: tuple[str, str] | None = None
        self._seen_at = 0.0
        self._failing = ""

    # ------------------------------------------------------------------ for the process

    def start(self) -> None:
        """Campaign once in the caller's thread (a lone replica leads before this returns),
        then every `retry_s` in a daemon thread."""
        if not self._turn():
            return
        self._thread = threading.Thread(
            target=self._run, name=f"leader-election {self.config.name}", daemon=True
        )
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop campaigning; a leader releases the lease (best effort) so that a follower
        takes over within its retry period instead of a whole lease."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        if self._leading:
            self._step_down("stopping")
            self._release()

    def halt(self, timeout_s: float = 5.0) -> None:
        """Stop campaigning without releasing the lease and without calling `on_stopped` —
        what a killed process leaves behind. The others take over after the lease; used by
        the failover tests and `benchmarks/failover.py`."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        with self._lock:
            self._leading = False
            self._stepped_down = True

    def status(self) -> Leadership:
        with self._lock:
            return Leadership(
                identity=self.identity,
                leading=self._leading,
                holder=self._holder,
                token=self._token if self._leading else None,
            )

    @property
    def leading(self) -> bool:
        return self._leading and not self._stepped_down

    def fence(self) -> int:
        """The fencing token, or `NotLeader` if this replica must not run a singleton pass
        now: it stepped down, or its last renewal is older than the renew deadline."""
        with self._lock:
            fresh = self._now() - self._renewed_at < self.config.renew_deadline_s
            if not self._leading or self._token is None or not fresh:
                raise NotLeader(f"{self.identity} does not hold lease {self._ref}")
            return self._token

    def fenced(self) -> bool:
        """Whether `fence()` would pass."""
        try:
            self.fence()
        except NotLeader:
            return False
        return True

    # --------------------------------------------------------------------- the campaign

    def _run(self) -> None:
        while not self._stop.wait(self.config.retry_s):
            if not self._turn():
                return

    def _turn(self) -> bool:
        """One attempt to acquire or renew, and what follows from it; False once this
        process has stepped down (it never campaigns again)."""
        renewed = self._attempt()
        if self._leading:
            if renewed:
                with self._lock:
                    self._renewed_at = self._now()
            elif self._holder not in ("", self.identity) or (
                self._now() - self._renewed_at >= self.config.renew_deadline_s
            ):
                self._step_down(f"lease held by {self._holder or 'nobody'}")
                return False
        elif renewed:
            with self._lock:
                self._leading = True
                self._renewed_at = self._now()
            logger.info("%s leads (lease %s, token %s)", self.identity, self._ref, self._token)
            self._call(lambda: self._on_started(self._token or 0), "on_started")
        return not self._stepped_down

    def _step_down(self, why: str) -> None:
        with self._lock:
            if self._stepped_down:
                return
            self._stepped_down = True
            self._leading = False
        # A clean stop is routine; losing the lease is what an operator must hear about.
        level = logging.INFO if why == "stopping" else logging.WARNING
        logger.log(level, "%s stops leading (%s)", self.identity, why)
        self._call(self._on_stopped, "on_stopped")

    def _call(self, callback: Callable[[], object], what: str) -> None:
        try:
            callback()
        except Exception:  # the election thread's boundary: it must keep (or stop) leading
            logger.exception("leader election: %s failed", what)

    def _attempt(self) -> bool:
        """One try to acquire or renew; True if this process holds the lease after it."""
        try:
            return self._acquire_or_renew()
        except Conflict:
            return False  # another replica wrote first; read again next time
        except ClusterError as e:
            self._complain(e)
            return False

    def _complain(self, error: ClusterError) -> None:
        text = str(error)
        if text != self._failing:
            self._failing = text
            hint = (
                f" (the service account needs get, create and update on leases in "
                f"{self.config.namespace})"
                if isinstance(error, Forbidden)
                else ""
            )
            logger.warning("leader election: %s%s", text, hint)

    def _acquire_or_renew(self) -> bool:
        try:
            current = self._api.get(self._ref)
        except NotFound:
            created = self._api.create(self._record(None, transitions=0))
            self._remember(created)
            return True
        spec = current.body.get("spec")
        spec = spec if isinstance(spec, dict) else {}
        holder = str(spec.get("holderIdentity") or "")
        self._observe(holder, str(spec.get("renewTime") or ""))
        duration = float(spec.get("leaseDurationSeconds") or self.config.lease_s)
        if holder not in ("", self.identity) and self._now() < self._seen_at + duration:
            return False
        transitions = int(spec.get("leaseTransitions") or 0)
        if holder != self.identity:
            transitions += 1
        acquired = spec.get("acquireTime") if holder == self.identity else None
        written = self._api.replace(
            self._record(current, transitions=transitions, acquired=acquired)
        )
        self._remember(written)
        return True

    def _observe(self, holder: str, renew_time: str) -> None:
        with self._lock:
            self._holder = holder
            if self._seen != (holder, renew_time):
                self._seen = (holder, renew_time)
                self._seen_at = self._now()
        self._failing = ""

    def _remember(self, written: KubeObject) -> None:
        spec = written.body.get("spec")
        spec = spec if isinstance(spec, dict) else {}
        with self._lock:
            self._holder = self.identity
            self._token = int(spec.get("leaseTransitions") or 0)
        self._failing = ""

    def _record(
        self, current: KubeObject | None, *, transitions: int, acquired: object = None
    ) -> KubeObject:
        now = _micro_time(datetime.now(UTC))
        metadata: JsonObject = {"name": self.config.name, "namespace": self.config.namespace}
        if current is not None and current.resource_version:
            metadata["resourceVersion"] = current.resource_version
        return KubeObject(
            {
                "apiVersion": API_VERSION,
                "kind": "Lease",
                "metadata": metadata,
                "spec": {
                    "holderIdentity": self.identity,
                    "leaseDurationSeconds": max(1, round(self.config.lease_s)),
                    "acquireTime": acquired or now,
                    "renewTime": now,
                    "leaseTransitions": transitions,
                },
            }
        )

    def _release(self) -> None:
        """Give the lease back: empty holder, so a follower need not wait out the lease."""
        try:
            current = self._api.get(self._ref)
            spec = current.body.get("spec")
            if not isinstance(spec, dict) or spec.get("holderIdentity") != self.identity:
                return
            body = dict(current.body)
            body["spec"] = {**spec, "holderIdentity": "", "leaseDurationSeconds": 1}
            self._api.replace(KubeObject(body))
            logger.info("%s released lease %s", self.identity, self._ref)
        except ClusterError as e:
            logger.warning("leader election: could not release the lease: %s", e)
