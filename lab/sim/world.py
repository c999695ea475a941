"""`LabWorld`: the whole lab in one object — clock, emulated cluster, simulated apps, telemetry.

    with LabWorld(WorldConfig(apps=("hotel-reservation",), seed=0)) as world:
        world.wait_healthy()
        world.api.patch("Service", "hotel-reservation", "geo", {...}, ...)
        world.advance(30)                      # stepped mode: lab time moves only here
        world.snapshot("hotel-reservation").services["geo"].error_ratio
        world.metrics.golden_signals("hotel-reservation")

How the simulator is driven: in **stepped** mode (bench, tests) it registers `Simulator.tick`
on the clock after the cluster, so every `advance`/`sleep` step reconciles the cluster and then
routes a second of traffic through the objects as they now are, in the caller's thread. In
**running** mode (demo) the cluster's own thread reconciles, and a `lab-sim-ticker` thread
ticks the simulator once per lab second.

Data-plane controls (what no Kubernetes write can change) are `world.dataplane`
(`revoke_roles`, `grant_roles`, `set_network`, ...); the image registry is `world.registry`;
what an app writes to its own log besides its traffic is `world.app_log`.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType

from lab.apps import APPS, AppBundle, load_app
from lab.clock import LAB_EPOCH, LabClock
from lab.kube.cluster import LabCluster
from lab.kube.runtime import ClusterAPI, ClusterView
from lab.sim import clusterdns
from lab.sim.dataplane import DataPlane
from lab.sim.exporter import MetricsExporter
from lab.sim.images import ImageRegistry
from lab.sim.promql import Evaluator
from lab.sim.simulator import Simulator
from lab.sim.snapshot import AppSnapshot
from lab.sim.source import SimMetrics

logger = logging.getLogger(__name__)


class LabNotHealthy(RuntimeError):
    """The apps did not become healthy in time; the message says what was still wrong."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WorldConfig:
    apps: tuple[str, ...] = APPS
    seed: int = 0
    stepped: bool = True
    speed: float = 1.0  # running mode: lab seconds per wall second
    nodes: int = 3
    name: str = "lab"
    serve_api: bool = False  # HTTP API on 127.0.0.1:0 (for kubectl and the official client)
    serve_metrics: bool = False  # /metrics on 127.0.0.1:0 (for a real Prometheus)
    #: The metric convention `/metrics` speaks (`lab.sim.conventions.CONVENTIONS`), and the
    #: built-in signal profile of that name through which `world.metrics` (and the alerts'
    #: `SimMetrics`) read the golden signals, so in-process reads match a real Prometheus.
    signals: str = "lab"
    kubeconfig: Path | None = None  # written when the API is served
    scrape_interval_s: float = 5.0
    retention_s: float = 3600.0
    #: When lab time starts (default: a fixed instant, for reproducible runs). The demo starts
    #: it at the wall clock so that a real Prometheus's timestamps and the lab's agree.
    start: datetime | None = None


class LabWorld:
    def __init__(self, config: WorldConfig | None = None) -> None:
        self.config = config = config or WorldConfig()
        self.bundles: tuple[AppBundle, ...] = tuple(load_app(a) for a in config.apps)
        self.clock = LabClock(
            stepped=config.stepped, speed=config.speed, start=config.start or LAB_EPOCH
        )
        self.sim = Simulator(
            models=[b.model for b in self.bundles],
            seed=config.seed,
            scrape_interval_s=config.scrape_interval_s,
            retention_s=config.retention_s,
        )
        self.cluster = LabCluster(
            clock=self.clock,
            runtime=self.sim.runtime,
            seed=config.seed,
            name=config.name,
            nodes=config.nodes,
        )
        self.sim.attach(self.cluster.api.shared, version=self.cluster.resource_version)
        self.metrics = SimMetrics(self.sim.store, now=self.clock.now, signals=config.signals)
        #: PromQL over the lab's own history (in the lab's names), for in-process readers
        #: such as the mitigation oracle; one evaluator so its selector cache is shared.
        self.promql = Evaluator(self.sim.store)
        self.api_url: str | None = None
        self.metrics_url: str | None = None
        self.kubeconfig_path: Path | None = None
        self._exporter: MetricsExporter | None = None
        self._ticker: threading.Thread | None = None
        self._stopping = threading.Event()
        self._started = False

    # ------------------------------------------------------------------ accessors

    @property
    def api(self) -> ClusterAPI:
        return self.cluster.api

    @property
    def shared(self) -> ClusterView:
        """Reads without copies, for in-process readers that never mutate
        (`lab.kube.api.SharedView`)."""
        return self.cluster.api.shared

    @property
    def dataplane(self) -> DataPlane:
        return self.sim.dataplane

    @property
    def registry(self) -> ImageRegistry:
        return self.sim.registry

    @property
    def namespaces(self) -> list[str]:
        return [b.namespace for b in self.bundles]

    def snapshot(self, namespace: str) -> AppSnapshot:
        return self.sim.snapshot(namespace)

    def app_log(self, namespace: str, service: str, message: str, *, level: str = "ERROR") -> int:
        """`service`'s running containers write `message` to their log (a config dump, an
        error quoting a connection string), as the app itself would; `kubectl logs` shows it
        once the kubelet has collected it. Returns how many containers wrote it."""
        return self.sim.runtime.write_log(
            namespace, service, message, level=level, now=self.clock.now()
        )

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> LabWorld:
        """Deploy the apps, wire the simulator's tick and serve what the config asks for."""
        if self._started:
            return self
        self._started = True
        # Cluster DNS first, as kubeadm installs it before any app.
        self.registry.push(clusterdns.IMAGE, clusterdns.IMAGE_SPEC)
        self.cluster.apply_manifests(clusterdns.manifests(), field_manager="kubeadm")
        self.cluster.reconcile()  # DNS answers before the first app pod starts, as it does
        for bundle in self.bundles:
            self.cluster.apply_manifests(list(bundle.manifests), field_manager="lab")
        if self.config.serve_api:
            self.serve(self.config.kubeconfig)
        if self.config.serve_metrics:
            self._exporter = MetricsExporter(self.sim.store, signals=self.config.signals)
            self.metrics_url = self._exporter.start()
        if self.clock.stepped:
            self.clock.on_tick(self.sim.tick)
        else:
            self.cluster.start()
            self._ticker = threading.Thread(
                target=self._tick_forever, name="lab-sim-ticker", daemon=True
            )
            self._ticker.start()
        logger.info("lab world started: apps=%s seed=%s", self.namespaces, self.config.seed)
        return self

    def serve(self, kubeconfig: Path | None = None) -> str:
        """Serve the API over HTTP (and write a kubeconfig naming it); `start` does it when
        the config says so. Callable later on a started world: the bench warms a world up
        unserved and serves it in each process forked from it (threads do not survive a
        fork). Serving changes nothing in the cluster."""
        self.api_url = self.cluster.serve()
        if kubeconfig is not None:
            self.cluster.write_kubeconfig(kubeconfig)
            self.kubeconfig_path = kubeconfig
        return self.api_url

    def _tick_forever(self) -> None:
        while not self._stopping.is_set():
            try:
                self.sim.tick(self.clock.now())
            except Exception:  # the ticker thread is an outer boundary: log, keep the lab alive
                logger.exception("simulator tick failed")
            self._stopping.wait(1.0 / self.clock.speed)

    def stop(self) -> None:
        self._stopping.set()
        if self._ticker is not None:
            self._ticker.join(10)
            self._ticker = None
        if self._exporter is not None:
            self._exporter.stop()
            self._exporter = None
        self.cluster.stop()

    def __enter__(self) -> LabWorld:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def advance(self, seconds: float) -> None:
        """Move lab time (stepped) or wait for it (running)."""
        self.clock.sleep(seconds)

    # ------------------------------------------------------------------ readiness

    def problems(self) -> list[str]:
        """What keeps the apps from being healthy now (empty when they are)."""
        out: list[str] = []
        for ns in self.namespaces:
            for dep in self.shared.list("Deployment", ns):
                want = int((dep.get("spec") or {}).get("replicas", 1))
                have = int((dep.get("status") or {}).get("availableReplicas", 0) or 0)
                if have < want:
                    out.append(f"{ns}/{dep['metadata']['name']}: {have}/{want} available")
            snap = self.sim.snapshot(ns)
            if snap.entry_rps <= 0:
                out.append(f"{ns}: no traffic yet")
            for name, sig in snap.services.items():
                if sig.error_ratio > 0:
                    out.append(f"{ns}/{name}: error ratio {sig.error_ratio:.3f}")
        return out

    def wait_healthy(self, timeout_s: float = 300.0, *, settle_s: float = 5.0) -> None:
        """Wait (in lab time) until every Deployment is available and no service errs for
        `settle_s` in a row. Raises `LabNotHealthy` listing what was still wrong."""
        waited = healthy_for = 0.0
        problems: list[str] = []
        while waited <= timeout_s:
            problems = self.problems()
            healthy_for = healthy_for + 1.0 if not problems else 0.0
            if healthy_for > settle_s:
                return
            self.clock.sleep(1.0)
            waited += 1.0
        raise LabNotHealthy(
            f"apps not healthy after {timeout_s:.0f} lab seconds: " + "; ".join(problems[:10])
        )
