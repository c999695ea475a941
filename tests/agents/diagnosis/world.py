"""A small, realistic cluster state for diagnosis tests, and in-test fakes of the read ports.

`World` holds what a namespace shows — Deployments, Services, ConfigMaps, pods with container
states, events, log tails, golden signals, the observed call graph, the change journal — for
the two app shapes of DESIGN section 9. Faults are applied by changing what the cluster
*shows* (a Service's targetPort, a pod in ImagePullBackOff and its event, callers' error
lines), the way the lab's simulator would derive it; the reasoner only sees the ports.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from agents.errors import Invalid, NotFound, QueryError
from agents.kubeparse import parse_workload
from agents.model import (
    Alert,
    AlertStatus,
    Change,
    ChangeType,
    ConfigMapInfo,
    ContainerState,
    EventRecord,
    GoldenSignals,
    Incident,
    IncidentId,
    IncidentState,
    JsonObject,
    KubeObject,
    NodeInfo,
    ObjectRef,
    PodState,
    QuotaInfo,
    RevisionInfo,
    Scope,
    Series,
    ServiceInfo,
    SimilarIncident,
    WorkloadState,
)

T0 = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)  # the incident starts here


@dataclass(frozen=True, slots=True, kw_only=True)
class Svc:
    name: str
    port: int
    image: str
    calls: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()  # literal values
    env_cm: tuple[tuple[str, str, str], ...] = ()  # (env name, configmap, key)
    command: tuple[str, ...] = ()
    volume_cm: str | None = None
    kind: str = "Deployment"


HOTEL = (
    Svc(
        name="frontend",
        port=5000,
        image="ghcr.io/lab/hotel/hotelreservation:1.0",
        calls=("search", "profile", "reservation"),
        command=("frontend",),
    ),
    Svc(
        name="search",
        port=8082,
        image="ghcr.io/lab/hotel/hotelreservation:1.0",
        calls=("geo", "rate"),
        command=("search",),
    ),
    Svc(
        name="geo",
        port=8083,
        image="ghcr.io/lab/hotel/hotelreservation:1.0",
        calls=("mongodb-geo",),
        command=("geo",),
        env_cm=(
            ("DB_ADDR", "hotel-config", "GEO_MONGO_ADDR"),
            ("DB_USER", "hotel-config", "GEO_DB_USER"),
        ),
        env=(("DB_PASSWORD", "geo-pw-14x"),),
    ),
    Svc(
        name="rate",
        port=8084,
        image="ghcr.io/lab/hotel/hotelreservation:1.0",
        calls=("mongodb-rate", "memcached-rate"),
        command=("rate",),
        env=(("DB_ADDR", "mongodb-rate:27017"), ("MEMC_ADDR", "memcached-rate:11211")),
    ),
    Svc(
        name="profile",
        port=8081,
        image="ghcr.io/lab/hotel/hotelreservation:1.0",
        calls=("mongodb-profile",),
        command=("profile",),
        env=(("DB_ADDR", "mongodb-profile:27017"),),
    ),
    Svc(
        name="reservation",
        port=8087,
        image="ghcr.io/lab/hotel/hotelreservation:1.0",
        command=("reservation",),
    ),
    Svc(name="mongodb-geo", port=27017, image="mongo:4.4.6", kind="StatefulSet"),
    Svc(name="mongodb-rate", port=27017, image="mongo:4.4.6"),
    Svc(name="mongodb-profile", port=27017, image="mongo:4.4.6"),
    Svc(name="memcached-rate", port=11211, image="memcached:1.6.7"),
)

SHOP = (
    Svc(
        name="frontend-proxy",
        port=8080,
        image="ghcr.io/lab/shop/frontend-proxy:2.0.2",
        calls=("frontend",),
        env=(("FRONTEND_ADDR", "frontend:8080"),),
    ),
    Svc(
        name="frontend",
        port=8080,
        image="ghcr.io/lab/shop/frontend:2.0.2",
        calls=(
            "ad",
            "cart",
            "checkout",
            "product-catalog",
            "recommendation",
            "currency",
            "shipping",
        ),
        env=(
            ("AD_ADDR", "ad:9555"),
            ("CHECKOUT_ADDR", "checkout:5050"),
            ("RECOMMENDATION_ADDR", "recommendation:9001"),
            ("FLAGD_HOST", "flagd"),
            ("FLAGD_PORT", "8013"),
        ),
        env_cm=(
            ("CART_ADDR", "shop-config", "CART_ADDR"),
            ("CURRENCY_ADDR", "shop-config", "CURRENCY_ADDR"),
            ("PRODUCT_CATALOG_ADDR", "shop-config", "PRODUCT_CATALOG_ADDR"),
            ("SHIPPING_ADDR", "shop-config", "SHIPPING_ADDR"),
        ),
    ),
    Svc(
        name="cart",
        port=7070,
        image="ghcr.io/lab/shop/cart:2.0.2",
        calls=("valkey-cart", "flagd"),
        env=(("FLAGD_HOST", "flagd"), ("VALKEY_PASSWORD", "cart-valkey-pw")),
        env_cm=(("VALKEY_ADDR", "shop-config", "VALKEY_ADDR"),),
    ),
    Svc(
        name="checkout",
        port=5050,
        image="ghcr.io/lab/shop/checkout:2.0.2",
        calls=("cart", "payment", "email", "shipping", "currency", "product-catalog"),
        env=(("PAYMENT_ADDR", "payment:50051"), ("EMAIL_ADDR", "http://email:6060")),
        env_cm=(("SHIPPING_ADDR", "shop-config", "SHIPPING_ADDR"),),
    ),
    Svc(
        name="product-catalog",
        port=3550,
        image="ghcr.io/lab/shop/product-catalog:2.0.2",
        calls=("flagd",),
        env=(("FLAGD_HOST", "flagd"),),
    ),
    Svc(
        name="recommendation",
        port=9001,
        image="ghcr.io/lab/shop/recommendation:2.0.2",
        calls=("product-catalog", "flagd"),
        env=(("FLAGD_HOST", "flagd"),),
    ),
    Svc(
        name="ad",
        port=9555,
        image="ghcr.io/lab/shop/ad:2.0.2",
        calls=("flagd",),
        env=(("FLAGD_HOST", "flagd"),),
    ),
    Svc(name="currency", port=7001, image="ghcr.io/lab/shop/currency:2.0.2"),
    Svc(
        name="shipping",
        port=50050,
        image="ghcr.io/lab/shop/shipping:2.0.2",
        calls=("quote",),
        env=(("QUOTE_ADDR", "http://quote:8090"),),
    ),
    Svc(
        name="payment",
        port=50051,
        image="ghcr.io/lab/shop/payment:2.0.2",
        calls=("flagd",),
        env=(("FLAGD_HOST", "flagd"),),
    ),
    Svc(name="email", port=6060, image="ghcr.io/lab/shop/email:2.0.2"),
    Svc(name="quote", port=8090, image="ghcr.io/lab/shop/quote:2.0.2"),
    Svc(name="valkey-cart", port=6379, image="valkey/valkey:7.2"),
    Svc(
        name="flagd", port=8013, image="ghcr.io/open-feature/flagd:v0.11", volume_cm="flagd-config"
    ),
)

FLAGS_OFF = (
    '{"flags": {"adFailure": {"state": "ENABLED", "variants": {"on": true, "off": false}, '
    '"defaultVariant": "off"}, "cartFailure": {"state": "ENABLED", "variants": {"on": true, '
    '"off": false}, "defaultVariant": "off"}, "paymentFailure": {"state": "ENABLED", '
    '"variants": {"100%": 1, "50%": 0.5, "off": 0}, "defaultVariant": "off"}}}'
)


def stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.000Z")


@dataclass
class World:
    namespace: str
    label: str
    apps: dict[str, Svc]
    deployments: dict[str, JsonObject] = field(default_factory=dict)
    services: dict[str, JsonObject] = field(default_factory=dict)
    config_maps: dict[str, dict[str, str]] = field(default_factory=dict)
    pods: dict[str, list[PodState]] = field(default_factory=dict)
    events: list[EventRecord] = field(default_factory=list)
    logs: dict[tuple[str, str, bool], list[str]] = field(default_factory=dict)
    signals: dict[str, GoldenSignals] = field(default_factory=dict)
    edges: list[tuple[str, str]] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    lkg: dict[tuple[str, str], JsonObject] = field(default_factory=dict)
    nodes: list[NodeInfo] = field(default_factory=list)
    quotas: list[QuotaInfo] = field(default_factory=list)
    pod_metrics: list[JsonObject] | None = None
    network_policies: list[JsonObject] = field(default_factory=list)
    queries: dict[str, list[Series]] = field(default_factory=dict)
    ips: dict[str, str] = field(default_factory=dict)
    show_call_graph: bool = True
    #: Pod name → its spec.containers where the pod no longer matches the template it was
    #: created from (someone changed the pod itself).
    pod_containers: dict[str, list[JsonObject]] = field(default_factory=dict)

    # ---------------------------------------------------------------------- building

    @classmethod
    def build(
        cls,
        namespace: str,
        label: str,
        apps: Sequence[Svc],
        config: Mapping[str, Mapping[str, str]],
    ) -> World:
        world = cls(namespace=namespace, label=label, apps={a.name: a for a in apps})
        world.config_maps = {k: dict(v) for k, v in config.items()}
        for i, app in enumerate(apps):
            world.ips[app.name] = f"10.96.0.{10 + i}"
            world.deployments[app.name] = world._deployment(app)
            world.services[app.name] = world._service(app)
            world.pods[app.name] = [world._pod(app, 0)]
            where = f"INF cmd/{app.name}/main.go >"
            world.logs[(f"{app.name}-7d9f8-0", world.container(app.name), False)] = [
                f"{stamp(T0 - timedelta(minutes=5))} {where} Starting server at :{app.port}",
                f"{stamp(T0 - timedelta(minutes=1))} {where} served 1200 requests",
            ]
            world.signals[app.name] = GoldenSignals(
                service=app.name,
                request_rate=20.0,
                error_ratio=0.0,
                latency_p50_ms=3.0,
                latency_p99_ms=20.0,
            )
            world.edges += [(app.name, c) for c in app.calls]
        world.nodes = [
            NodeInfo(
                name=f"node-{i}",
                ready=True,
                unschedulable=False,
                labels={"kubernetes.io/os": "linux", "zone": "a"},
                taints=(),
                allocatable_cpu_millis=4000,
                allocatable_memory_bytes=8 << 30,
            )
            for i in range(2)
        ]
        world.quotas = [
            QuotaInfo(
                name="compute",
                namespace=namespace,
                hard={"pods": "50"},
                used={"pods": str(len(apps))},
            )
        ]
        return world

    def container(self, name: str) -> str:
        return f"{'hotel-reserv-' if self.namespace.startswith('hotel') else ''}{name}"

    def _deployment(self, app: Svc) -> JsonObject:
        env: list[JsonObject] = [{"name": k, "value": v} for k, v in app.env]
        env += [
            {"name": k, "valueFrom": {"configMapKeyRef": {"name": cm, "key": key}}}
            for k, cm, key in app.env_cm
        ]
        container: JsonObject = {
            "name": self.container(app.name),
            "image": app.image,
            "ports": [{"containerPort": app.port, "protocol": "TCP"}],
            "env": env,
            "resources": {
                "requests": {"cpu": "100m", "memory": "64Mi"},
                "limits": {"cpu": "1", "memory": "256Mi"},
            },
        }
        if app.command:
            container["command"] = list(app.command)
        pod_spec: JsonObject = {"containers": [container]}
        if app.volume_cm:
            pod_spec["volumes"] = [{"name": "config", "configMap": {"name": app.volume_cm}}]
        return {
            "apiVersion": "apps/v1",
            "kind": app.kind,
            "metadata": {
                "name": app.name,
                "namespace": self.namespace,
                "generation": 1,
                "annotations": {"deployment.kubernetes.io/revision": "1"},
            },
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {self.label: app.name}},
                "template": {"metadata": {"labels": {self.label: app.name}}, "spec": pod_spec},
            },
        }

    def _service(self, app: Svc) -> JsonObject:
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": app.name, "namespace": self.namespace},
            "spec": {
                "clusterIP": self.ips[app.name],
                "selector": {self.label: app.name},
                "ports": [
                    {
                        "name": str(app.port),
                        "port": app.port,
                        "targetPort": app.port,
                        "protocol": "TCP",
                    }
                ],
            },
        }

    def _pod(self, app: Svc, i: int, **container: Any) -> PodState:
        state = ContainerState(
            name=self.container(app.name),
            image=app.image,
            ready=True,
            restart_count=0,
            state="running",
        )
        state = replace(state, **container)
        return PodState(
            name=f"{app.name}-7d9f8-{i}",
            namespace=self.namespace,
            phase="Running"
            if state.state == "running"
            else "Pending"
            if container.get("_pending")
            else "Running",
            ready=state.ready,
            node="node-0",
            labels={self.label: app.name},
            owner=f"ReplicaSet/{app.name}-7d9f8",
            containers=(state,),
            created_at=T0 - timedelta(hours=1),
        )

    # ---------------------------------------------------------------------- faulting

    def set_pod(self, name: str, **container: Any) -> PodState:
        pod = self.pods[name][0]
        c = replace(pod.containers[0], **container)
        pod = replace(pod, containers=(c,), ready=c.ready)
        self.pods[name] = [pod]
        return pod

    def log(self, service: str, *lines: str, previous: bool = False, level: str = "ERR") -> None:
        key = (f"{service}-7d9f8-0", self.container(service), previous)
        self.logs.setdefault(key, [])
        self.logs[key] += [
            f"{stamp(T0 + timedelta(seconds=i))} {level} cmd/{service}/main.go > {line}"
            for i, line in enumerate(lines)
        ]

    def raw_log(self, service: str, *lines: str, previous: bool = False) -> None:
        key = (f"{service}-7d9f8-0", self.container(service), previous)
        self.logs.setdefault(key, []).extend(lines)

    def sick(
        self, service: str, *, errors: float = 0.0, p99: float = 20.0, rate: float = 20.0
    ) -> None:
        self.signals[service] = GoldenSignals(
            service=service,
            request_rate=rate,
            error_ratio=errors,
            latency_p50_ms=p99 / 4,
            latency_p99_ms=p99,
        )

    def event(
        self,
        kind: str,
        name: str,
        reason: str,
        message: str,
        type_: str = "Warning",
        count: int = 3,
    ) -> None:
        self.events.append(
            EventRecord(
                namespace=self.namespace,
                object_kind=kind,
                object_name=name,
                reason=reason,
                message=message,
                type=type_,
                count=count,
                last_seen=T0 + timedelta(seconds=30),
            )
        )

    def change(
        self,
        kind: str,
        name: str,
        diff: Mapping[str, tuple[Any, Any]],
        *,
        manager: str = "kubectl-edit",
        minutes_before: float = 3.0,
    ) -> None:
        self.changes.append(
            Change(
                at=T0 - timedelta(minutes=minutes_before),
                cluster="lab",
                namespace=self.namespace,
                kind=kind,
                name=name,
                manager=manager,
                change_type=ChangeType.MODIFIED,
                diff=dict(diff),
            )
        )

    def snapshot(self, kind: str, name: str) -> None:
        """Remember the object as it is now as its last known good (call before faulting it)."""
        source = self.services if kind == "Service" else self.deployments
        if kind == "ConfigMap":
            self.lkg[(kind, name)] = {
                "kind": "ConfigMap",
                "metadata": {"name": name},
                "data": dict(self.config_maps[name]),
            }
        else:
            self.lkg[(kind, name)] = copy.deepcopy(source[name])

    def spec_container(self, name: str) -> JsonObject:
        c: JsonObject = self.deployments[name]["spec"]["template"]["spec"]["containers"][0]
        return c

    def replica_set(self, name: str) -> JsonObject:
        """The ReplicaSet every pod of a workload belongs to: its current template."""
        body = self.deployments[name]
        return {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": f"{name}-7d9f8", "namespace": self.namespace},
            "spec": {"replicas": 1, "template": copy.deepcopy(body["spec"]["template"])},
        }

    def pod_body(self, pod: PodState) -> JsonObject:
        """The pod as the API serves it: made from its workload's template, unless someone
        changed it since (`pod_containers`)."""
        service = pod.name.rsplit("-", 2)[0]
        spec = copy.deepcopy(self.deployments[service]["spec"]["template"]["spec"])
        if pod.name in self.pod_containers:
            spec["containers"] = copy.deepcopy(self.pod_containers[pod.name])
        meta: JsonObject = {
            "name": pod.name,
            "namespace": pod.namespace,
            "labels": dict(pod.labels),
        }
        if pod.owner:
            kind, _, owner = pod.owner.partition("/")
            meta["ownerReferences"] = [{"kind": kind, "name": owner, "controller": True}]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def hotel() -> World:
    return World.build(
        "hotel-reservation",
        "io.kompose.service",
        HOTEL,
        {
            "hotel-config": {
                "GEO_MONGO_ADDR": "mongodb-geo:27017",
                "GEO_DB_USER": "geo_svc",
                "LOG_LEVEL": "info",
                "JAEGER_SAMPLE_RATIO": "0.01",
            },
        },
    )


def shop() -> World:
    return World.build(
        "online-shop",
        "opentelemetry.io/name",
        SHOP,
        {
            "shop-config": {
                "CART_ADDR": "cart:7070",
                "CURRENCY_ADDR": "currency:7001",
                "PRODUCT_CATALOG_ADDR": "product-catalog:3550",
                "SHIPPING_ADDR": "shipping:50050",
                "VALKEY_ADDR": "valkey-cart:6379",
            },
            "flagd-config": {"demo.flagd.json": FLAGS_OFF},
        },
    )


# ---------------------------------------------------------------------------- the ports


class FakeCluster:
    cluster_name = "lab"

    def __init__(self, world: World) -> None:
        self.w = world
        self.log_reads: list[tuple[str, bool, int]] = []

    def get(self, ref: ObjectRef) -> KubeObject:
        body = (
            self.w.deployments.get(ref.name) if ref.kind in ("Deployment", "StatefulSet") else None
        )
        if ref.kind == "Pod":
            pod = next((p for ps in self.w.pods.values() for p in ps if p.name == ref.name), None)
            body = self.w.pod_body(pod) if pod is not None else None
        if body is None:
            raise NotFound(str(ref))
        return KubeObject(copy.deepcopy(body))

    def list_objects(
        self, *, api_version: str, kind: str, namespace: str | None, label_selector: str = ""
    ) -> Sequence[KubeObject]:
        if kind in ("Deployment", "StatefulSet"):
            return [
                KubeObject(self._with_status(name, b))
                for name, b in self.w.deployments.items()
                if b["kind"] == kind
            ]
        if kind == "Service":
            return [KubeObject(copy.deepcopy(b)) for b in self.w.services.values()]
        if kind == "ReplicaSet":
            return [KubeObject(self.w.replica_set(name)) for name in self.w.deployments]
        if kind == "NetworkPolicy":
            return [KubeObject(copy.deepcopy(b)) for b in self.w.network_policies]
        if kind == "PodMetrics" and self.w.pod_metrics is not None:
            return [KubeObject(b) for b in self.w.pod_metrics]
        raise Invalid(f"unsupported kind {api_version}/{kind}")

    def pods(self, namespace: str, *, label_selector: str = "") -> Sequence[PodState]:
        return [p for pods in self.w.pods.values() for p in pods]

    def _with_status(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """The workload as the server would list it: its status counts its ready pods."""
        pods = self.w.pods.get(name, [])
        ready = sum(1 for p in pods if p.ready)
        status = {
            "readyReplicas": ready,
            "availableReplicas": ready,
            "updatedReplicas": len(pods),
            "observedGeneration": 1,
        }
        return {**copy.deepcopy(body), "status": status}

    def workloads(self, namespace: str) -> Sequence[WorkloadState]:
        return [parse_workload(self._with_status(n, b)) for n, b in self.w.deployments.items()]

    def events(self, namespace: str, *, limit: int = 200) -> Sequence[EventRecord]:
        return self.w.events[:limit]

    def pod_logs(
        self,
        namespace: str,
        pod: str,
        *,
        container: str | None = None,
        tail_lines: int = 50,
        previous: bool = False,
    ) -> Sequence[str]:
        self.log_reads.append((pod, previous, tail_lines))
        lines = self.w.logs.get((pod, container or "", previous))
        if lines is None:
            raise Invalid(
                f'previous terminated container "{container}" in pod "{pod}" not found'
                if previous
                else f"container {container} is waiting to start"
            )
        return lines[-tail_lines:]

    def services(self, namespace: str) -> Sequence[ServiceInfo]:
        out = []
        for body in self.w.services.values():
            sel = body["spec"]["selector"]
            ready = sum(
                1
                for pods in self.w.pods.values()
                for p in pods
                if p.ready and all(p.labels.get(k) == v for k, v in sel.items())
            )
            from agents.kubeparse import parse_service

            out.append(parse_service(body, ready))
        return out

    def config_maps(self, namespace: str) -> Sequence[ConfigMapInfo]:
        return [
            ConfigMapInfo(name=k, namespace=namespace, data=dict(v))
            for k, v in self.w.config_maps.items()
        ]

    def nodes(self) -> Sequence[NodeInfo]:
        return list(self.w.nodes)

    def quotas(self, namespace: str) -> Sequence[QuotaInfo]:
        return list(self.w.quotas)

    def rollout_history(self, namespace: str, deployment: str) -> Sequence[RevisionInfo]:
        if deployment not in self.w.deployments:
            raise NotFound(f"Deployment/{namespace}/{deployment}")
        images = {
            c["name"]: c["image"]
            for c in self.w.deployments[deployment]["spec"]["template"]["spec"]["containers"]
        }
        return [RevisionInfo(revision=1, images=images, replica_set=f"{deployment}-7d9f8")]

    def namespaces(self) -> Sequence[str]:
        return [self.w.namespace]


class FakeMetrics:
    def __init__(self, world: World) -> None:
        self.w = world
        self.queries: list[str] = []

    def golden_signals(
        self, namespace: str, services: Sequence[str] | None = None, *, window_s: int = 60
    ) -> Mapping[str, GoldenSignals]:
        return {k: v for k, v in self.w.signals.items() if services is None or k in services}

    def firing_alerts(self, namespace: str | None = None) -> Sequence[Alert]:
        return []

    def series(
        self, namespace: str, service: str, signal: str, *, start: datetime, end: datetime
    ) -> Sequence[Series]:
        return []

    def call_graph(self, namespace: str, *, window_s: int = 300) -> Sequence[tuple[str, str]]:
        return list(self.w.edges) if self.w.show_call_graph else []

    def query(self, promql: str) -> Sequence[Series]:
        self.queries.append(promql)
        if promql in self.w.queries:
            return self.w.queries[promql]
        if ("{" in promql and "}" not in promql) or promql.count("(") != promql.count(")"):
            raise QueryError(promql, "bad_data: 1:10: parse error: unclosed left parenthesis")
        return []


class FakeJournal:
    def __init__(self, world: World) -> None:
        self.w = world

    def changes(
        self, scope: Scope, since: datetime, until: datetime, kinds: Sequence[str] | None = None
    ) -> list[Change]:
        return [
            c for c in self.w.changes if since <= c.at <= until and (not kinds or c.kind in kinds)
        ]

    def last_known_good(
        self, scope: Scope, kind: str, name: str, before: datetime
    ) -> JsonObject | None:
        return copy.deepcopy(self.w.lkg.get((kind, name)))


class FakeSimilar:
    def __init__(self, found: list[SimilarIncident] | None = None) -> None:
        self.found = found or []
        self.texts: list[str] = []

    def search(
        self, text: str, *, exclude: IncidentId | None = None, limit: int = 3
    ) -> list[SimilarIncident]:
        self.texts.append(text)
        return self.found[:limit]


class FixedClock:
    def __init__(self, now: datetime = T0 + timedelta(minutes=2)) -> None:
        self._now = now
        self.slept: list[float] = []

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        return self._now.timestamp()

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


def incident(world: World, service: str | None, title: str = "alert") -> Incident:
    return Incident(
        id=IncidentId("inc-1"),
        title=title,
        scope=Scope(cluster="lab", namespace=world.namespace),
        state=IncidentState.DIAGNOSING,
        mu0=3.0,
        opened_at=T0,
        updated_at=T0,
        service=service,
    )


def alert(world: World, name: str, service: str | None, **labels: str) -> Alert:
    base = {"alertname": name, "namespace": world.namespace, "severity": "critical"}
    if service:
        base["service"] = service
    base.update(labels)
    return Alert(
        fingerprint=f"fp-{name}-{service}",
        name=name,
        status=AlertStatus.FIRING,
        labels=base,
        annotations={"summary": f"{name} on {service}"},
        starts_at=T0,
    )
