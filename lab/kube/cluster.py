"""`LabCluster`: the emulated cluster assembled — store, API, controllers, scheduler, kubelet
model, HTTP server — and the ways to drive its time.

* `reconcile()` runs every controller until nothing is left to do at the current lab time.
* With a running clock, `start()` runs a background driver that reconciles every ~150 ms of
  wall time, and promptly after each write.
* With a stepped clock, the cluster registers on `clock.on_tick`, so `clock.advance(...)`
  runs the controllers deterministically in the caller's thread. Identifiers and addresses
  come from a seeded generator: the same seed and the same calls give the same objects.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType

import yaml

from agents.model import JsonObject
from lab.clock import LabClock
from lab.kube import manifests
from lab.kube.api import KubeApi
from lab.kube.bootstrap import NodeSpec, bootstrap, default_nodes
from lab.kube.controllers.base import Controller
from lab.kube.controllers.deployment import DeploymentController
from lab.kube.controllers.disruption import DisruptionController
from lab.kube.controllers.endpoints import EndpointsController
from lab.kube.controllers.job import JobController
from lab.kube.controllers.kubelet import Kubelet
from lab.kube.controllers.lifecycle import GarbageCollector, NamespaceController
from lab.kube.controllers.limitranger import LimitRanger
from lab.kube.controllers.misc import EventExpiry, HorizontalPodAutoscalerController, VolumeBinder
from lab.kube.controllers.nodes import NodeLifecycleController
from lab.kube.controllers.quota import QuotaAdmission, QuotaController
from lab.kube.controllers.replicaset import ReplicaSetController
from lab.kube.controllers.scheduler import Scheduler
from lab.kube.controllers.statefulset import StatefulSetController
from lab.kube.ids import Ids, PodAddresses
from lab.kube.logs import LogStore
from lab.kube.rbac import ADMIN_TOKEN, Authorizer
from lab.kube.resources import ResourceType
from lab.kube.runtime import PodRuntime
from lab.kube.server.app import ApiServer
from lab.kube.server.thread import ServerThread
from lab.kube.services import release_service
from lab.kube.static_runtime import StaticRuntime
from lab.kube.store import Change, Store

logger = logging.getLogger(__name__)


#: Reconcile rounds per call before giving up on quiescence (a controller fighting itself).
MAX_ROUNDS = 200


class LabCluster:
    def __init__(
        self,
        *,
        clock: LabClock | None = None,
        runtime: PodRuntime | None = None,
        seed: int = 0,
        name: str = "lab",
        nodes: int | Sequence[NodeSpec] = 3,
        history_limit: int = 20_000,
        interval_s: float = 0.15,
        kubelet_period_s: float = 1.0,
    ) -> None:
        self.name = name
        self.clock = clock or LabClock()
        self.runtime: PodRuntime = runtime or StaticRuntime()
        self.ids = Ids(seed)
        self.store = Store(history_limit=history_limit)
        self.api = KubeApi(store=self.store, clock=self.clock, ids=self.ids)
        self.logs = LogStore()
        # RBAC for requests over HTTP; in-process callers (controllers, `cluster.api`) are the
        # control plane and are not subject to it.
        self.rbac = Authorizer(self.store, seed=f"{name}/{seed}")
        self.addresses = PodAddresses()
        # LimitRanger first: it is a mutating plugin, and quota counts the limits it defaults.
        self.api.admission.append(LimitRanger(self.store))
        self.api.admission.append(QuotaAdmission(self.store))
        self.api.delete_hooks.append(self._released)
        self.kubelet = Kubelet(
            self.api, self.runtime, self.logs, self.ids, self.addresses, period_s=kubelet_period_s
        )
        self.controllers: list[Controller] = [
            NamespaceController(self.api),
            GarbageCollector(self.api),
            DeploymentController(self.api),
            ReplicaSetController(self.api),
            StatefulSetController(self.api),
            JobController(self.api),
            NodeLifecycleController(self.api),
            Scheduler(self.api),
            self.kubelet,
            EndpointsController(self.api),
            QuotaController(self.api),
            VolumeBinder(self.api),
            HorizontalPodAutoscalerController(self.api),
            DisruptionController(self.api),
            EventExpiry(self.api),
        ]
        self.store.add_listener(self._dispatch)
        self._interval_s = interval_s
        self._reconcile_lock = threading.RLock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._driver: threading.Thread | None = None
        self._server: ApiServer | None = None
        self._server_thread: ServerThread | None = None
        node_specs = default_nodes(nodes) if isinstance(nodes, int) else list(nodes)
        bootstrap(self.api, self.ids, node_specs)
        self.reconcile()
        self.store.compact()
        if self.clock.stepped:
            self.clock.on_tick(self._tick)
        self.api.write_hooks.append(self._wake.set)

    # ------------------------------------------------------------------ wiring

    def _dispatch(self, change: Change) -> None:
        for controller in self.controllers:
            controller.on_change(change)

    def _released(self, rt: ResourceType, obj: JsonObject) -> None:
        if rt.kind == "Service":
            release_service(self.ids, obj)

    def resource_version(self) -> int:
        """The store's global resourceVersion: changes whenever any object changes."""
        return self.store.resource_version

    # ------------------------------------------------------------------ time

    def reconcile(self) -> int:
        """Run the controllers until quiescent at the current lab time; returns the rounds."""
        with self._reconcile_lock:
            now = self.clock.now()
            for rounds in range(1, MAX_ROUNDS + 1):
                progressed = False
                for controller in self.controllers:
                    progressed = controller.sync(now) or progressed
                if not progressed:
                    return rounds
            logger.warning("the lab cluster did not quiesce within %d rounds", MAX_ROUNDS)
            return MAX_ROUNDS

    def _tick(self, now: datetime) -> None:
        del now
        self.reconcile()

    def start(self) -> LabCluster:
        """Start the background driver (running clock only; a stepped clock is driven by
        `clock.advance`)."""
        if self.clock.stepped or self._driver is not None:
            return self
        self._stopping.clear()
        self._driver = threading.Thread(target=self._drive, name="lab-kube-driver", daemon=True)
        self._driver.start()
        return self

    def _drive(self) -> None:
        while not self._stopping.is_set():
            woke = self._wake.wait(self._interval_s)
            if self._stopping.is_set():
                return
            if woke:
                self._wake.clear()
            try:
                self.reconcile()
            except Exception:  # the driver's outer boundary: keep the cluster alive
                logger.exception("lab cluster reconcile failed")

    def stop(self) -> None:
        """Stop the driver and the HTTP server, if running."""
        self._stopping.set()
        self._wake.set()
        if self._driver is not None:
            self._driver.join(timeout=10)
            self._driver = None
        if self._server_thread is not None:
            self._server_thread.stop()
            self._server_thread = None

    close = stop

    def running(self) -> bool:
        """Whether the driver or the HTTP server thread is still alive."""
        return self._driver is not None or self._server_thread is not None

    def __enter__(self) -> LabCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ HTTP

    def serve(self, port: int = 0) -> str:
        """Serve the API over HTTP on 127.0.0.1; returns its URL."""
        if self._server_thread is None:
            self._server = ApiServer(api=self.api, logs=self.logs, authorizer=self.rbac)
            self._server_thread = ServerThread(self._server, port=port)
            self._server_thread.start()
        return self._server_thread.url

    def end_watches(self) -> None:
        """End every open watch stream, as an API server does when a watch's timeout runs
        out or the server restarts: clients re-open their watches."""
        if self._server_thread is not None:
            self._server_thread.end_watches()

    @property
    def url(self) -> str:
        return self._server_thread.url if self._server_thread is not None else ""

    def kubeconfig(self, *, service_account: tuple[str, str] | None = None) -> JsonObject:
        """The admin's kubeconfig, or with `service_account=(namespace, name)` one holding a
        token the lab issued to `system:serviceaccount:NAMESPACE:NAME` (subject to RBAC)."""
        if not self.url:
            raise RuntimeError("call serve() before asking for a kubeconfig")
        user, token = f"{self.name}-admin", ADMIN_TOKEN
        if service_account is not None:
            user = f"{self.name}-{service_account[0]}-{service_account[1]}"
            token = self.rbac.service_account_token(*service_account)
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": self.name, "cluster": {"server": self.url}}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [
                {
                    "name": self.name,
                    "context": {
                        "cluster": self.name,
                        "user": user,
                        "namespace": "default",
                    },
                }
            ],
            "current-context": self.name,
            "preferences": {},
        }

    def write_kubeconfig(
        self, path: str | Path, *, service_account: tuple[str, str] | None = None
    ) -> Path:
        target = Path(path)
        config = self.kubeconfig(service_account=service_account)
        target.write_text(yaml.safe_dump(config, sort_keys=False))
        return target

    # ------------------------------------------------------------------ manifests

    def apply_manifests(
        self, docs: manifests.Manifests, *, field_manager: str = "lab"
    ) -> list[JsonObject]:
        """Create each object, or replace it if it exists (YAML text, a dict, or dicts)."""
        return manifests.apply(self.api, docs, field_manager=field_manager)
