"""A controller-owned pod whose containers differ from its owner's template was changed outside
its controller: an operation error on that pod, not a fault of the template — in both app
shapes, with an explicit command (the swapped image lacks the binary) and without one."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from agents.diagnosis import Diagnoser, suspects_of
from agents.diagnosis.observe import ContainerSpec
from agents.diagnosis.podspec import drift
from agents.model import Diagnosis, KubeObject, ObjectRef
from tests.agents.diagnosis import faults
from tests.agents.diagnosis.conftest import Run
from tests.agents.diagnosis.world import (
    FakeCluster,
    FakeMetrics,
    FixedClock,
    World,
    alert,
    hotel,
    incident,
    shop,
)


def top(d: Diagnosis) -> tuple[str, str]:
    return d.top.service, str(d.top.category)


@pytest.mark.parametrize(
    ("make", "service", "caller"),
    [(hotel, "geo", "search"), (shop, "currency", "frontend")],
    ids=["hotel-geo-with-command", "shop-currency-without-command"],
)
def test_a_pod_whose_image_was_swapped_is_an_operation_error_on_that_pod(
    run: Run, make: object, service: str, caller: str
) -> None:
    w: World = make()  # type: ignore[operator]
    faults.pod_failure(w, service, caller)
    d = run(w, caller, "KubePodCrashLooping")
    assert top(d) == (service, "virtualization/operation_error")
    (suspect, *_) = suspects_of(d)
    assert (suspect.kind, suspect.name, suspect.field) == (
        "Pod",
        f"{service}-7d9f8-0",
        "spec.containers[0].image",
    )
    assert suspect.current == faults.PAUSE
    assert suspect.last_known_good == w.apps[service].image
    # Not the template's command: the template is what a fresh pod runs, and it is fine.
    wrong = [h for h in d.hypotheses if h.service == service and "misconfig" in str(h.category)]
    assert all(h.confidence < d.top.confidence - 0.3 for h in wrong), wrong
    changed = [e for e in d.evidence if "changed outside its controller" in e.summary]
    assert changed and f"ReplicaSet/{service}-7d9f8" in changed[0].summary


def test_a_template_command_naming_a_missing_binary_is_still_a_misconfiguration(
    run: Run,
) -> None:
    w = hotel()
    faults.missing_binary(w, "profile")
    d = run(w, "profile", "KubePodCrashLooping")
    assert top(d) == ("profile", "application/misconfiguration")
    assert not [e for e in d.evidence if "changed outside its controller" in e.summary]


class CountingCluster(FakeCluster):
    """The fake cluster, counting what is read in full."""

    def __init__(self, world: World) -> None:
        super().__init__(world)
        self.full: list[str] = []

    def get(self, ref: ObjectRef) -> KubeObject:
        self.full.append(f"{ref.kind}/{ref.name}")
        return super().get(ref)

    def list_objects(
        self, *, api_version: str, kind: str, namespace: str | None, label_selector: str = ""
    ) -> Sequence[KubeObject]:
        self.full.append(kind)
        return super().list_objects(
            api_version=api_version, kind=kind, namespace=namespace, label_selector=label_selector
        )


def test_only_unwell_pods_are_read_in_full() -> None:
    w = shop()
    faults.pod_failure(w, "currency", "frontend")
    cluster = CountingCluster(w)
    Diagnoser(cluster=cluster, metrics=FakeMetrics(w), clock=FixedClock()).diagnose(
        incident(w, "frontend"), [alert(w, "HighErrorRate", "frontend")]
    )
    assert [r for r in cluster.full if r.startswith("Pod/")] == ["Pod/currency-7d9f8-0"]
    assert cluster.full.count("ReplicaSet") == 1
    healthy = CountingCluster(shop())
    Diagnoser(cluster=healthy, metrics=FakeMetrics(healthy.w), clock=FixedClock()).diagnose(
        incident(healthy.w, "frontend"), [alert(healthy.w, "HighErrorRate", "frontend")]
    )
    assert not [r for r in healthy.full if r.startswith("Pod/") or r == "ReplicaSet"]


def _spec(index: int, name: str, image: str, *command: str) -> ContainerSpec:
    return ContainerSpec(index=index, name=name, image=image, command=tuple(command))


def test_drift_compares_image_command_and_args_by_container_name() -> None:
    template = (_spec(0, "app", "shop/cart:2.0", "cart"), _spec(1, "proxy", "envoy:1.30"))
    same = (_spec(0, "proxy", "envoy:1.30"), _spec(1, "app", "shop/cart:2.0", "cart"))
    assert drift("cart-1", "ReplicaSet/cart-6f", same, template) == []
    # An injected sidecar the template does not have is not a change of the pod.
    injected = (*same, _spec(2, "istio-proxy", "istio/proxyv2:1.22"))
    assert drift("cart-1", "ReplicaSet/cart-6f", injected, template) == []
    patched = (_spec(0, "app", "shop/cart:2.0", "sleep", "3600"), _spec(1, "proxy", "pause:3"))
    found = drift("cart-1", "ReplicaSet/cart-6f", patched, template)
    assert [(d.container, d.field, d.path) for d in found] == [
        ("app", "command", "spec.containers[0].command"),
        ("proxy", "image", "spec.containers[1].image"),
    ]
    assert (found[1].pod_value, found[1].template_value) == ("pause:3", "envoy:1.30")
