"""Ranking, bounds and admission: hypotheses in diagnosis order, restore → derived → generic
within one, at most K actions per plan, no duplicates, the planner's clock in every stamp,
and every proposed action admissible in the incident's namespace."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta

import pytest

from agents.actions import (
    RolloutRestart,
    SetConfigMapKeys,
    SetImage,
    admit,
)
from agents.diagnosis.suspect import Suspect
from agents.errors import ClusterError
from agents.model import ObjectRef, RevisionInfo
from agents.planning import RulePlanner
from agents.planning.reflection import signature
from agents.policy import NamespacePolicy, Policy
from agents.tnr import TnrLimits
from tests.agents.diagnosis import faults
from tests.agents.diagnosis.world import World, hotel, shop
from tests.agents.planning.scene import NOW, PlanCluster, Scene, diagnosis_of, propose

Fault = Callable[[World], object]


def _scale_down(service: str, caller: str) -> Fault:
    def fault(w: World) -> None:
        w.show_call_graph = False
        faults.scale_down(w, service, caller)

    return fault


def _flag(w: World) -> None:
    message = "GetAds Failed with status UNAVAILABLE: ad service failure flag enabled"
    faults.flag(w, "adFailure", "on", "ad", "frontend", message, 0.3)


#: name → (app, fault, alerting service, alert name)
SCENARIOS: dict[str, tuple[Callable[[], World], Fault, str, str]] = {
    "target-port": (
        hotel,
        lambda w: faults.target_port(w, "geo", 9999, caller="search", top="frontend"),
        "frontend",
        "HighErrorRate",
    ),
    "selector": (
        shop,
        lambda w: faults.selector(w, "cart", "frontend"),
        "frontend",
        "HighErrorRate",
    ),
    "image-pull": (
        shop,
        lambda w: faults.image_pull(w, "currency", "frontend"),
        "frontend",
        "KubePodNotReady",
    ),
    "bad-build": (
        hotel,
        lambda w: faults.bad_build(w, "rate", caller="search"),
        "search",
        "KubePodCrashLooping",
    ),
    "missing-binary": (
        shop,
        lambda w: faults.missing_binary(w, "shipping"),
        "shipping",
        "KubePodCrashLooping",
    ),
    "db-address": (
        hotel,
        lambda w: faults.db_address(
            w, "geo", "hotel-config", "GEO_MONGO_ADDR", "mongodb-gep:27017"
        ),
        "geo",
        "KubePodCrashLooping",
    ),
    "runtime-address": (
        shop,
        lambda w: faults.runtime_address(w, "frontend", "shop-config", "CART_ADDR", "carts:7070"),
        "frontend",
        "HighErrorRate",
    ),
    "scale-down": (hotel, _scale_down("mongodb-rate", "rate"), "rate", "HighErrorRate"),
    "cpu-limit": (
        hotel,
        lambda w: faults.cpu_limit(w, "geo", caller="search"),
        "search",
        "HighLatency",
    ),
    "oom": (shop, lambda w: faults.oom(w, "cart"), "cart", "KubePodCrashLooping"),
    "node-selector": (
        shop,
        lambda w: faults.node_selector(w, "checkout"),
        "checkout",
        "KubePodNotScheduled",
    ),
    "flag": (shop, _flag, "frontend", "HighErrorRate"),
    "pod-kill": (
        hotel,
        lambda w: faults.pod_kill(w, "profile", caller="frontend"),
        "frontend",
        "HighErrorRate",
    ),
    "pods-deleted": (
        shop,
        lambda w: faults.pods_deleted(w, "email", caller="checkout"),
        "checkout",
        "HighErrorRate",
    ),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_proposed_action_is_admitted_in_the_incidents_namespace(name: str) -> None:
    make, fault, service, alertname = SCENARIOS[name]
    scene = Scene.of(make(), fault)
    _, proposal = propose(scene, service, alertname)
    assert proposal.candidates, f"{name}: no candidates"
    scope = scene.incident(service).scope
    for candidate in proposal.candidates:
        assert 1 <= len(candidate.actions) <= 5
        for action in candidate.actions:
            admit(action, scope)  # raises Inadmissible


def test_the_quota_merge_patch_is_admitted() -> None:
    scene = Scene.of(hotel(), lambda w: faults.quota(w, "reservation"))
    _, proposal = propose(scene, "reservation", "KubeDeploymentReplicasMismatch")
    scope = scene.incident("reservation").scope
    for candidate in proposal.candidates:
        for action in candidate.actions:
            admit(action, scope)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_candidates_are_distinct_and_within_a_hypothesis_restore_comes_first(name: str) -> None:
    make, fault, service, alertname = SCENARIOS[name]
    scene = Scene.of(make(), fault)
    diagnosis, proposal = propose(scene, service, alertname)
    hashes = [c.content_hash for c in proposal.candidates]
    signatures = [signature(c.actions) for c in proposal.candidates]
    assert len(set(hashes)) == len(hashes) and len(set(signatures)) == len(signatures)
    order = [f"{h.service}: {h.category}" for h in diagnosis.hypotheses]
    # A bare restart for an alternative hypothesis waits until every specific fix had its turn.
    last_resort = [
        c.hypothesis != order[0] and [a.kind for a in c.actions] == ["rollout_restart"]
        for c in proposal.candidates
    ]
    assert last_resort == sorted(last_resort), "bare restarts of alternatives come last"
    ranks = [
        order.index(c.hypothesis)
        for c, late in zip(proposal.candidates, last_resort, strict=True)
        if not late
    ]
    assert ranks == sorted(ranks), "hypotheses in diagnosis order"
    for label in set(c.hypothesis for c in proposal.candidates):
        confidences = [c.confidence for c in proposal.candidates if c.hypothesis == label]
        assert confidences == sorted(confidences, reverse=True), "restore → derived → generic"


def test_oom_restore_then_derived_then_the_other_hypotheses() -> None:
    scene = Scene.of(shop(), lambda w: faults.oom(w, "recommendation"))
    diagnosis, proposal = propose(scene, "recommendation", "KubePodCrashLooping")
    top = f"{diagnosis.top.service}: {diagnosis.top.category}"
    labels = [c.hypothesis for c in proposal.candidates]
    assert labels[:2] == [top, top]
    restore, derived = proposal.candidates[:2]
    assert restore.confidence == diagnosis.top.confidence
    assert derived.confidence < restore.confidence
    assert "restart" in " ".join(
        a.describe().lower() for c in proposal.candidates[2:] for a in c.actions
    ), "a generic restart comes last"


def _two_faults(w: World) -> None:
    faults.target_port(w, "geo", 9999, caller="search", top="frontend")
    faults.scale_down(w, "mongodb-rate", "rate")


def _port_and_replicas() -> tuple[Suspect, Suspect]:
    port = Suspect(
        kind="Service",
        namespace="hotel-reservation",
        name="geo",
        field="spec.ports[0].targetPort",
        current="9999",
        reason="targetPort matches no containerPort",
    )
    replicas = Suspect(
        kind="Deployment",
        namespace="hotel-reservation",
        name="mongodb-rate",
        field="spec.replicas",
        current="0",
        reason="replicas lowered by an operator",
    )
    return port, replicas


@pytest.mark.parametrize("geo_first", [True, False])
def test_the_top_hypothesis_gives_the_first_plan_and_alternatives_the_next(
    geo_first: bool,
) -> None:
    scene = Scene.of(hotel(), _two_faults)
    port, replicas = _port_and_replicas()
    geo = ("geo", "virtualization/misconfiguration", 0.8, port)
    rate = ("mongodb-rate", "virtualization/operation_error", 0.7, replicas)
    diagnosis = diagnosis_of(*((geo, rate) if geo_first else (rate, geo)))
    _, proposal = propose(scene, "frontend", diagnosis=diagnosis)
    kinds = [c.actions[0].kind for c in proposal.candidates]
    assert kinds == (["patch_service", "scale"] if geo_first else ["scale", "patch_service"])


def test_a_plan_longer_than_k_is_split_and_every_reader_still_restarts() -> None:
    def fault(w: World) -> None:
        for body in w.deployments.values():
            env = body["spec"]["template"]["spec"]["containers"][0]["env"]
            env.append(
                {
                    "name": "LOG_LEVEL",
                    "valueFrom": {"configMapKeyRef": {"name": "hotel-config", "key": "LOG_LEVEL"}},
                }
            )
        w.config_maps["hotel-config"]["LOG_LEVEL"] = "trace-all"
        w.change("ConfigMap", "hotel-config", {"data.LOG_LEVEL": ("info", "trace-all")})

    scene = Scene.of(hotel(), fault)
    suspect = Suspect(
        kind="ConfigMap",
        namespace="hotel-reservation",
        name="hotel-config",
        field="data.LOG_LEVEL",
        current="trace-all",
        reason="a setting every service rejects",
    )
    diagnosis = diagnosis_of(("rate", "application/misconfiguration", 0.8, suspect))
    _, proposal = propose(scene, "rate", diagnosis=diagnosis, max_actions=3)
    parts = [c for c in proposal.candidates if c.hypothesis == "rate: application/misconfiguration"]
    assert all(len(c.actions) <= 3 for c in proposal.candidates)
    first = parts[0]
    assert isinstance(first.actions[0], SetConfigMapKeys)
    assert dict(first.actions[0].values) == {"LOG_LEVEL": "info"}
    assert str(first.actions[1].target) == "Deployment/hotel-reservation/rate", "its own first"
    restarted = {a.target.name for c in parts for a in c.actions if isinstance(a, RolloutRestart)}
    assert restarted == set(scene.world.deployments), "every reader of the key restarts"
    assert "part 1 of 4" in first.rationale


def test_once_the_key_is_back_pods_that_started_before_it_are_restarted() -> None:
    scene = Scene.of(
        hotel(),
        lambda w: faults.db_address(
            w, "geo", "hotel-config", "GEO_MONGO_ADDR", "mongodb-gep:27017"
        ),
    )
    restore_only = SetConfigMapKeys(
        target=ObjectRef(
            api_version="v1", kind="ConfigMap", name="hotel-config", namespace="hotel-reservation"
        ),
        values={"GEO_MONGO_ADDR": "mongodb-geo:27017"},
    )
    scene.apply([restore_only])  # someone put the key back but nobody restarted geo
    _, proposal = propose(scene, "geo", "KubePodCrashLooping")
    restarts = [
        c for c in proposal.candidates if [a.kind for a in c.actions] == ["rollout_restart"]
    ]
    assert restarts and str(restarts[0].actions[0].target) == "Deployment/hotel-reservation/geo"
    assert not any(isinstance(a, SetConfigMapKeys) for c in proposal.candidates for a in c.actions)


def test_restart_stamps_come_from_the_planners_clock() -> None:
    scene = Scene.of(hotel(), lambda w: faults.pod_kill(w, "profile", caller="frontend"))
    later = NOW + timedelta(minutes=7)
    for now in (NOW, later):
        _, proposal = propose(scene, "frontend", now=now)
        stamps = {
            a.stamp for c in proposal.candidates for a in c.actions if isinstance(a, RolloutRestart)
        }
        assert stamps == {now.isoformat()}


def test_the_number_of_candidates_is_bounded() -> None:
    scene = Scene.of(shop(), lambda w: faults.oom(w, "recommendation"))
    diagnosis = scene.diagnose("recommendation", "KubePodCrashLooping")
    planner = RulePlanner(scene.cluster, scene.journal, max_candidates=2)
    proposal = planner.plan(scene.incident("recommendation"), diagnosis, [], now=NOW)
    assert len(proposal.candidates) == 2
    with pytest.raises(ValueError, match="max_actions"):
        RulePlanner(scene.cluster, scene.journal, max_actions=0)


def test_a_model_named_suspect_with_a_journal_style_path_is_understood() -> None:
    scene = Scene.of(hotel(), lambda w: faults.image_pull(w, "geo", "search"))
    suspect = Suspect(
        kind="Deployment",
        namespace="hotel-reservation",
        name="geo",
        field="spec.template.spec.containers[hotel-reserv-geo].image",
        current="ghcr.io/lab/hotel/hotelreservation:9.9.9",
        last_known_good="ghcr.io/lab/hotel/hotelreservation:1.0",
        reason="named by the model",
    )
    diagnosis = diagnosis_of(("geo", "virtualization/operation_error", 0.9, suspect))
    _, proposal = propose(scene, "search", diagnosis=diagnosis, journal=False)
    kinds = [c.actions[0].kind for c in proposal.candidates]
    assert kinds[:2] == ["rollback", "set_image"]
    image = proposal.candidates[1].actions[0]
    assert isinstance(image, SetImage) and image.container == "hotel-reserv-geo"
    assert "the diagnosis's change record" in proposal.candidates[1].rationale


class NoHistory(PlanCluster):
    """A reader whose rollout-history reads fail (RBAC, a flaky API server)."""

    def rollout_history(self, namespace: str, deployment: str) -> Sequence[RevisionInfo]:
        raise ClusterError("replicasets is forbidden")


def test_a_failed_read_means_unknown_not_a_failed_plan() -> None:
    scene = Scene.of(hotel(), lambda w: faults.image_pull(w, "geo", "search"))
    diagnosis = scene.diagnose("search", "KubePodNotReady")
    planner = RulePlanner(NoHistory(scene), scene.journal)
    proposal = planner.plan(scene.incident("search"), diagnosis, [], now=NOW)
    first = proposal.candidates[0]
    assert [a.kind for a in first.actions] == ["set_image"], "no rollback without a history"


def test_the_namespaces_own_k_from_the_policy_bounds_its_plans() -> None:
    scene = Scene.of(
        hotel(),
        lambda w: faults.db_address(
            w, "geo", "hotel-config", "GEO_MONGO_ADDR", "mongodb-gep:27017"
        ),
    )
    diagnosis = scene.diagnose("geo", "KubePodCrashLooping")
    strict = NamespacePolicy(namespace="hotel-reservation", limits=TnrLimits(max_actions=1))
    policy = Policy(
        defaults=NamespacePolicy(namespace="*"), namespaces={"hotel-reservation": strict}
    )
    planner = RulePlanner(scene.cluster, scene.journal, max_actions=5, policy=policy)
    assert planner.k_for(scene.incident("geo")) == 1
    proposal = planner.plan(scene.incident("geo"), diagnosis, [], now=NOW)
    restore, restart = proposal.candidates[:2]
    assert [a.kind for a in restore.actions] == ["set_configmap"]
    assert [a.kind for a in restart.actions] == ["rollout_restart"]
    assert "part 1 of 2" in restore.rationale and "part 2 of 2" in restart.rationale
