"""Property: for every action type, apply then undo leaves the object's spec equal to the
original (server-managed fields excluded) — on generated Deployments, Services, ConfigMaps and
HPAs, against the lab cluster over HTTP through the official client."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.actions import (
    Action,
    CordonNode,
    DeletePod,
    MergePatch,
    PatchService,
    RollbackWorkload,
    RolloutRestart,
    ScaleWorkload,
    SetConfigMapKeys,
    SetContainerEnv,
    SetHpaBounds,
    SetImage,
    SetResources,
    SetScheduling,
)
from agents.actions.snapshot import comparable
from agents.adapters.kubernetes_cluster import KubernetesCluster
from agents.clock import SystemClock
from agents.model import KubeObject, ObjectRef, OutcomeKind, Scope
from agents.severity import SeverityMeter
from agents.tnr import (
    EngineOptions,
    TnrLimits,
    TransactionEngine,
    TransactionRequest,
    Undoer,
    UndoStatus,
)
from agents.tnr.ledger import StorageLedger
from lab.clock import LabClock
from lab.kube.cluster import LabCluster
from storage import Store
from storage.migrations import upgrade

NS = "props"
SCOPE = Scope(cluster="lab", namespace=NS)
_names = itertools.count()

names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
label_values = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=10)
images = st.sampled_from(["lab/app:1.0", "lab/app:1.1", "registry.local/web:2", "busybox:1.36"])
quantities_cpu = st.sampled_from(["50m", "100m", "250m", "1"])
quantities_mem = st.sampled_from(["64Mi", "128Mi", "256Mi", "1Gi"])


@st.composite
def containers(draw: st.DrawFn) -> list[dict[str, Any]]:
    count = draw(st.integers(min_value=1, max_value=2))
    result = []
    for i in range(count):
        env_names = draw(st.lists(names.map(str.upper), max_size=3, unique=True))
        container: dict[str, Any] = {
            "name": f"c{i}",
            "image": draw(images),
            "env": [{"name": n, "value": draw(label_values)} for n in env_names],
            "ports": [{"containerPort": 8000 + i, "name": f"http{i}"}],
        }
        if draw(st.booleans()):
            container["resources"] = {
                "requests": {"cpu": draw(quantities_cpu)},
                "limits": {"memory": draw(quantities_mem)},
            }
        result.append(container)
    return result


@st.composite
def deployments(draw: st.DrawFn) -> dict[str, Any]:
    name = f"d{next(_names)}"
    labels = {"app": name, "tier": draw(label_values)}
    spec: dict[str, Any] = {"containers": draw(containers())}
    if draw(st.booleans()):
        spec["nodeSelector"] = {"kubernetes.io/os": "linux"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {
            "replicas": draw(st.integers(min_value=0, max_value=2)),
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": labels}, "spec": spec},
        },
    }


@st.composite
def services(draw: st.DrawFn) -> dict[str, Any]:
    name = f"s{next(_names)}"
    ports = draw(
        st.lists(st.integers(min_value=1, max_value=65535), min_size=1, max_size=3, unique=True)
    )
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "selector": {"app": draw(label_values)},
            "ports": [
                {"name": f"p{i}", "port": p, "targetPort": draw(st.integers(1, 65535))}
                for i, p in enumerate(ports)
            ],
        },
    }


@st.composite
def config_maps(draw: st.DrawFn) -> dict[str, Any]:
    name = f"c{next(_names)}"
    data = draw(st.dictionaries(names, st.text(max_size=40), max_size=4))
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS},
        "data": data,
    }


class Lab:
    """One lab cluster and engine for the whole module (hypothesis runs many examples)."""

    def __init__(self, tmp: Path) -> None:
        # Stepped: controllers run only when the test reconciles, so nothing races the test.
        self.clock = LabClock(stepped=True)
        self.cluster = LabCluster(clock=self.clock, seed=7)
        self.cluster.serve()
        kubeconfig = tmp / "kubeconfig"
        self.cluster.write_kubeconfig(kubeconfig)
        self.cluster.api.create(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
            field_manager="test",
        )
        url = f"sqlite:///{tmp / 'props.db'}"
        upgrade(url)
        self.store = Store.connect(url)
        self.client = KubernetesCluster.connect(kubeconfig=kubeconfig, cluster_name="lab")
        self.engine = TransactionEngine(
            reader=self.client,
            writer=self.client,
            meter=SeverityMeter(reader=self.client, metrics=None),
            ledger=StorageLedger(self.store),
            clock=SystemClock(),
            holder="props",
            limits=TnrLimits(lock_ttl_s=30, poll_s=0.2, settle_min_s=0, sustain_s=0),
            options=EngineOptions(validate=False),
        )
        self.undoer = Undoer(self.engine)

    def close(self) -> None:
        self.client.close()
        self.store.close()
        self.cluster.stop()

    def create(self, body: dict[str, Any]) -> KubeObject:
        created = self.client.create(KubeObject(body))
        self.clock.advance(2)  # let the controllers see it as created (revision 1)
        return created

    def read(self, obj: KubeObject) -> KubeObject:
        return self.client.get(obj.ref)

    def apply_then_undo(self, action: Action) -> None:
        outcome = self.engine.run(
            TransactionRequest(scope=SCOPE, actions=(action,), mu0=100.0, actor="props")
        )
        assert outcome.kind is OutcomeKind.COMMITTED, outcome.reason
        result = self.undoer.undo(outcome.transaction_id, actor="props")
        assert result.status is UndoStatus.UNDONE, result.message


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    lab = Lab(tmp_path_factory.mktemp("props"))
    yield lab
    lab.close()


PROPERTY = settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def roundtrip(lab: Lab, body: dict[str, Any], make: Callable[[KubeObject], Action]) -> None:
    created = lab.create(body)
    original = comparable(lab.read(created).body)
    action = make(lab.read(created))
    lab.apply_then_undo(action)
    assert comparable(lab.read(created).body) == original


def ref(obj: KubeObject) -> ObjectRef:
    return obj.ref


@PROPERTY
@given(body=deployments(), replicas=st.integers(min_value=0, max_value=5))
def test_scale(lab: Lab, body: dict[str, Any], replicas: int) -> None:
    roundtrip(lab, body, lambda o: ScaleWorkload(target=ref(o), replicas=replicas))


@PROPERTY
@given(body=deployments(), image=images)
def test_set_image(lab: Lab, body: dict[str, Any], image: str) -> None:
    roundtrip(lab, body, lambda o: SetImage(target=ref(o), container="c0", image=image))


@PROPERTY
@given(
    body=deployments(),
    env=st.dictionaries(
        names.map(str.upper), st.one_of(st.none(), label_values), min_size=1, max_size=3
    ),
)
def test_set_env(lab: Lab, body: dict[str, Any], env: dict[str, str | None]) -> None:
    roundtrip(lab, body, lambda o: SetContainerEnv(target=ref(o), container="c0", env=env))


@PROPERTY
@given(body=deployments(), cpu=quantities_cpu, memory=quantities_mem)
def test_set_resources(lab: Lab, body: dict[str, Any], cpu: str, memory: str) -> None:
    roundtrip(
        lab,
        body,
        lambda o: SetResources(
            target=ref(o), container="c0", requests={"cpu": cpu}, limits={"memory": memory}
        ),
    )


@PROPERTY
@given(
    body=deployments(),
    selector=st.dictionaries(names, label_values, max_size=2),
    tolerate=st.booleans(),
)
def test_set_scheduling(
    lab: Lab, body: dict[str, Any], selector: dict[str, str], tolerate: bool
) -> None:
    tolerations = (
        ({"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"},) if tolerate else ()
    )
    roundtrip(
        lab,
        body,
        lambda o: SetScheduling(target=ref(o), node_selector=selector, tolerations=tolerations),
    )


@PROPERTY
@given(body=deployments(), stamp=st.datetimes().map(lambda d: d.isoformat()))
def test_rollout_restart(lab: Lab, body: dict[str, Any], stamp: str) -> None:
    roundtrip(lab, body, lambda o: RolloutRestart(target=ref(o), stamp=stamp))


@PROPERTY
@given(body=deployments(), image=images)
def test_rollback(lab: Lab, body: dict[str, Any], image: str) -> None:
    created = lab.create(body)
    # A second revision to roll back from.
    lab.cluster.api.patch(
        "Deployment",
        NS,
        created.name,
        {
            "spec": {
                "template": {
                    "metadata": {"annotations": {"rev": "2"}},
                    "spec": {"containers": [{"name": "c0", "image": image}]},
                }
            }
        },
        patch_type="strategic",
        field_manager="kubectl",
    )
    lab.clock.advance(2)
    original = comparable(lab.read(created).body)
    lab.apply_then_undo(RollbackWorkload(target=created.ref))
    assert comparable(lab.read(created).body) == original


@PROPERTY
@given(
    body=deployments(),
    patch=st.fixed_dictionaries(
        {
            "spec": st.fixed_dictionaries(
                {"replicas": st.integers(0, 4), "minReadySeconds": st.integers(0, 30)}
            )
        }
    ),
)
def test_merge_patch(lab: Lab, body: dict[str, Any], patch: dict[str, Any]) -> None:
    roundtrip(lab, body, lambda o: MergePatch(target=ref(o), patch=patch))


@PROPERTY
@given(
    body=services(),
    port=st.integers(min_value=1, max_value=65535),
    target=st.integers(min_value=1, max_value=65535),
    selector=st.dictionaries(names, label_values, min_size=1, max_size=2),
)
def test_patch_service(
    lab: Lab, body: dict[str, Any], port: int, target: int, selector: dict[str, str]
) -> None:
    roundtrip(
        lab,
        body,
        lambda o: PatchService(
            target=ref(o),
            ports=({"name": "web", "port": port, "targetPort": target},),
            selector=selector,
        ),
    )


@PROPERTY
@given(
    body=config_maps(),
    values=st.dictionaries(
        names, st.one_of(st.none(), st.text(max_size=30)), min_size=1, max_size=3
    ),
)
def test_set_configmap(lab: Lab, body: dict[str, Any], values: dict[str, str | None]) -> None:
    roundtrip(lab, body, lambda o: SetConfigMapKeys(target=ref(o), values=values))


@PROPERTY
@given(low=st.integers(min_value=1, max_value=3), extra=st.integers(min_value=0, max_value=5))
def test_set_hpa_bounds(lab: Lab, low: int, extra: int) -> None:
    name = f"h{next(_names)}"
    body = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "none"},
            "minReplicas": 1,
            "maxReplicas": 4,
        },
    }
    roundtrip(
        lab, body, lambda o: SetHpaBounds(target=ref(o), min_replicas=low, max_replicas=low + extra)
    )


@pytest.mark.parametrize("cordon", [True, False])
def test_cordon_node(lab: Lab, cordon: bool) -> None:
    node = lab.client.get(ObjectRef(api_version="v1", kind="Node", name="lab-node-2"))
    original = comparable(node.body)
    lab.apply_then_undo(CordonNode(target=node.ref, cordon=cordon))
    assert comparable(lab.client.get(node.ref).body) == original


def test_delete_pod_is_undone_by_its_controller(lab: Lab) -> None:
    name = f"d{next(_names)}"
    created = lab.create(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": NS},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "c0", "image": "busybox:1.36"}]},
                },
            },
        }
    )
    lab.clock.advance(2)
    [pod] = lab.client.pods(NS, label_selector=f"app={name}")
    lab.apply_then_undo(
        DeletePod(target=ObjectRef(api_version="v1", kind="Pod", name=pod.name, namespace=NS))
    )
    lab.clock.advance(2)
    pods = lab.client.pods(NS, label_selector=f"app={name}")
    assert [p.name for p in pods] != [pod.name] and len(pods) == 1
    assert comparable(lab.read(created).body)["spec"]["replicas"] == 1
