"""Fixes derived from the cluster's state when there is nothing to put back, how readers of a
ConfigMap are found, and what the planner refuses to restore (secrets, its own changes)."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from datetime import datetime

from agents.actions import (
    PatchService,
    RollbackWorkload,
    RolloutRestart,
    SetConfigMapKeys,
    SetContainerEnv,
    SetResources,
    SetScheduling,
)
from agents.diagnosis.suspect import Suspect
from agents.model import Change, JsonObject, Scope
from agents.planning import RulePlanner
from agents.redact import REDACTED
from storage.errors import Unavailable
from tests.agents.diagnosis import faults
from tests.agents.diagnosis.world import World, hotel, shop
from tests.agents.planning.scene import NOW, Scene, diagnosis_of, propose


def test_a_named_service_port_is_pointed_at_the_container_port_of_that_name() -> None:
    def fault(w: World) -> None:
        c = w.spec_container("checkout")
        c["ports"] = [
            {"containerPort": 9464, "name": "metrics", "protocol": "TCP"},
            {"containerPort": 5050, "name": "grpc", "protocol": "TCP"},
        ]
        w.services["checkout"]["spec"]["ports"] = [
            {"name": "grpc", "port": 5050, "targetPort": 5051, "protocol": "TCP"}
        ]

    scene = Scene.of(shop(), fault)
    suspect = Suspect(
        kind="Service",
        namespace="online-shop",
        name="checkout",
        field="spec.ports[0].targetPort",
        current="5051",
        reason="targetPort matches no containerPort",
    )
    diagnosis = diagnosis_of(("checkout", "virtualization/misconfiguration", 0.85, suspect))
    _, proposal = propose(scene, "frontend", diagnosis=diagnosis, journal=False)
    (action,) = proposal.candidates[0].actions
    assert isinstance(action, PatchService) and action.ports is not None
    assert action.ports[0]["targetPort"] == 5050, "by the port's name, not the first port"


def _readers(w: World) -> None:
    """shop-config read four ways: env key, envFrom, a subPath file, a whole-volume file."""
    spec = w.deployments
    spec["quote"]["spec"]["template"]["spec"]["containers"][0]["envFrom"] = [
        {"configMapRef": {"name": "shop-config"}}
    ]
    email = spec["email"]["spec"]["template"]["spec"]
    email["volumes"] = [{"name": "cfg", "configMap": {"name": "shop-config"}}]
    email["containers"][0]["volumeMounts"] = [
        {"name": "cfg", "mountPath": "/etc/app/valkey", "subPath": "VALKEY_ADDR"}
    ]
    ad = spec["ad"]["spec"]["template"]["spec"]
    ad["volumes"] = [{"name": "cfg", "configMap": {"name": "shop-config"}}]
    ad["containers"][0]["volumeMounts"] = [{"name": "cfg", "mountPath": "/etc/app"}]
    w.config_maps["shop-config"]["VALKEY_ADDR"] = "valkey-cart:6380"
    w.change(
        "ConfigMap", "shop-config", {"data.VALKEY_ADDR": ("valkey-cart:6379", "valkey-cart:6380")}
    )


def test_every_way_of_reading_a_setting_at_start_gets_a_restart() -> None:
    scene = Scene.of(shop(), _readers)
    suspect = Suspect(
        kind="ConfigMap",
        namespace="online-shop",
        name="shop-config",
        field="data.VALKEY_ADDR",
        current="valkey-cart:6380",
        reason="Service valkey-cart has no port 6380",
    )
    diagnosis = diagnosis_of(("cart", "application/misconfiguration", 0.9, suspect))
    _, proposal = propose(scene, "cart", diagnosis=diagnosis)
    plan = proposal.candidates[0]
    restore, *restarts = plan.actions
    assert isinstance(restore, SetConfigMapKeys)
    assert dict(restore.values) == {"VALKEY_ADDR": "valkey-cart:6379"}
    names = [a.target.name for a in restarts if isinstance(a, RolloutRestart)]
    # cart reads the key (env), quote all keys (envFrom), email a subPath copy; ad mounts the
    # whole map, and an ordinary setting (not a flag) is read at start too.
    assert names == ["cart", "ad", "email", "quote"], "the hypothesis's service first"


def test_a_wrong_port_in_an_address_without_a_journal_becomes_the_services_only_port() -> None:
    scene = Scene.of(shop(), _readers)
    suspect = Suspect(
        kind="ConfigMap",
        namespace="online-shop",
        name="shop-config",
        field="data.VALKEY_ADDR",
        current="valkey-cart:6380",
        reason="Service valkey-cart has no port 6380",
    )
    diagnosis = diagnosis_of(("cart", "application/misconfiguration", 0.9, suspect))
    _, proposal = propose(scene, "cart", diagnosis=diagnosis, journal=False)
    restore = proposal.candidates[0].actions[0]
    assert isinstance(restore, SetConfigMapKeys)
    assert dict(restore.values) == {"VALKEY_ADDR": "valkey-cart:6379"}
    assert "has no port 6380" in proposal.candidates[0].rationale


def test_an_affinity_no_node_satisfies_is_removed_without_a_journal() -> None:
    def fault(w: World) -> None:
        spec = w.deployments["checkout"]["spec"]["template"]["spec"]
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}
                    ]
                }
            }
        }

    scene = Scene.of(shop(), fault)
    suspect = Suspect(
        kind="Deployment",
        namespace="online-shop",
        name="checkout",
        field="spec.template.spec.affinity",
        reason="0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.",
    )
    diagnosis = diagnosis_of(("checkout", "virtualization/misconfiguration", 0.9, suspect))
    _, proposal = propose(scene, "checkout", diagnosis=diagnosis, journal=False)
    (action,) = proposal.candidates[0].actions
    assert isinstance(action, SetScheduling) and action.affinity == {}
    scene.apply([action])
    assert "affinity" not in scene.world.deployments["checkout"]["spec"]["template"]["spec"]


def test_without_a_suspect_the_services_own_recent_changes_are_put_back() -> None:
    scene = Scene.of(
        hotel(),
        lambda w: faults.db_address(
            w, "geo", "hotel-config", "GEO_MONGO_ADDR", "mongodb-gep:27017"
        ),
    )
    diagnosis = diagnosis_of(("geo", "application/misconfiguration", 0.7, None))
    _, proposal = propose(scene, "geo", diagnosis=diagnosis)
    plan = proposal.candidates[0]
    assert [a.kind for a in plan.actions] == ["set_configmap", "rollout_restart"]
    assert "changed by kubectl-edit shortly before" in plan.rationale


def test_a_service_that_reaches_none_of_its_pods_is_fixed_without_a_suspect() -> None:
    scene = Scene.of(hotel(), lambda w: faults.target_port(w, "geo", 9999, caller="search"))
    diagnosis = diagnosis_of(("geo", "virtualization/misconfiguration", 0.5, None))
    _, proposal = propose(scene, "search", diagnosis=diagnosis, journal=False)
    (action,) = proposal.candidates[0].actions
    assert isinstance(action, PatchService) and action.ports is not None
    assert action.ports[0]["targetPort"] == 8083


def test_a_secret_setting_is_never_restored_from_a_record() -> None:
    def fault(w: World) -> None:
        w.config_maps["hotel-config"]["GEO_DB_PASSWORD"] = "new-pass"
        w.change("ConfigMap", "hotel-config", {"data.GEO_DB_PASSWORD": ("old-pass", "new-pass")})

    scene = Scene.of(hotel(), fault)
    suspect = Suspect(
        kind="ConfigMap",
        namespace="hotel-reservation",
        name="hotel-config",
        field="data.GEO_DB_PASSWORD",
        current=REDACTED,
        last_known_good="old-pass",  # a careless record: still never written back
        reason="credentials changed",
    )
    diagnosis = diagnosis_of(("geo", "application/authentication", 0.85, suspect))
    _, proposal = propose(scene, "geo", diagnosis=diagnosis)
    values = [
        str(dict(a.values))
        for c in proposal.candidates
        for a in c.actions
        if isinstance(a, SetConfigMapKeys)
    ]
    assert not any("old-pass" in v or REDACTED in v for v in values)
    assert proposal.escalation is not None and "inside the database" in proposal.escalation.reason


class DownJournal:
    """The change journal's storage is unavailable."""

    def changes(
        self, scope: Scope, since: datetime, until: datetime, kinds: Sequence[str] | None = None
    ) -> list[Change]:
        raise Unavailable("database is locked")

    def last_known_good(
        self, scope: Scope, kind: str, name: str, before: datetime
    ) -> JsonObject | None:
        raise Unavailable("database is locked")


def test_a_journal_that_cannot_be_read_leaves_the_derived_fixes() -> None:
    scene = Scene.of(shop(), lambda w: faults.oom(w, "recommendation"))
    diagnosis = scene.diagnose("recommendation", "KubePodCrashLooping")
    planner = RulePlanner(scene.cluster, DownJournal())
    proposal = planner.plan(scene.incident("recommendation"), diagnosis, [], now=NOW)
    first = proposal.candidates[0]
    # The diagnosis recorded the old limit itself; with no journal the planner uses that.
    assert first.actions[0].kind == "set_resources"
    assert "the diagnosis's change record" in first.rationale


def test_stratus_own_change_is_never_taken_for_the_breaking_one() -> None:
    scene = Scene.of(shop(), lambda w: faults.oom(w, "recommendation"))
    _, first = propose(scene, "recommendation", "KubePodCrashLooping")
    derived = first.candidates[1]  # 64Mi: twice the 32Mi limit
    scene.apply(derived.actions)
    _, again = propose(scene, "recommendation", "KubePodCrashLooping")
    restore = again.candidates[0].actions[0]
    assert restore.kind == "set_resources"
    assert getattr(restore, "limits", None) == {"memory": "256Mi"}, "before kubectl-edit's change"


def _suspect(kind: str, name: str, field: str, **values: str) -> Suspect:
    return Suspect(kind=kind, namespace="hotel-reservation", name=name, field=field, **values)


def test_the_diagnosis_record_alone_puts_a_target_port_back() -> None:
    scene = Scene.of(hotel(), lambda w: faults.target_port(w, "geo", 9999, caller="search"))
    suspect = _suspect(
        "Service", "geo", "spec.ports[0].targetPort", current="9999", last_known_good="8083"
    )
    diagnosis = diagnosis_of(("geo", "virtualization/misconfiguration", 0.9, suspect))
    _, proposal = propose(scene, "search", diagnosis=diagnosis, journal=False)
    plan = proposal.candidates[0]
    assert isinstance(plan.actions[0], PatchService) and plan.actions[0].ports is not None
    assert plan.actions[0].ports[0]["targetPort"] == 8083
    assert "the diagnosis's change record" in plan.rationale
    assert plan.confidence == 0.9, "a restore, not a derived fix"


def test_the_diagnosis_record_of_one_selector_label_puts_the_selector_back() -> None:
    scene = Scene.of(hotel(), lambda w: faults.selector(w, "rate", caller="search"))
    suspect = _suspect(
        "Service",
        "rate",
        "spec.selector.io.kompose.service",
        current="rate-v2",
        last_known_good="rate",
    )
    diagnosis = diagnosis_of(("rate", "virtualization/misconfiguration", 0.9, suspect))
    _, proposal = propose(scene, "search", diagnosis=diagnosis, journal=False)
    action = proposal.candidates[0].actions[0]
    assert isinstance(action, PatchService)
    assert action.selector == {"io.kompose.service": "rate"}


def _rate_db_addr_typo(w: World) -> None:
    """A release sets rate's DB_ADDR to a host that does not exist."""
    w.spec_container("rate")["env"][0]["value"] = "mongodb-rat:27017"
    w.change(
        "Deployment",
        "rate",
        {
            "spec.template.spec.containers[hotel-reserv-rate].env[DB_ADDR].value": (
                "mongodb-rate:27017",
                "mongodb-rat:27017",
            )
        },
    )


def test_a_literal_env_value_is_set_back_then_the_template_rolled_back() -> None:
    scene = Scene.of(hotel(), _rate_db_addr_typo)
    suspect = _suspect(
        "Deployment",
        "rate",
        "spec.template.spec.containers[0].env[0].value",
        current="mongodb-rat:27017",
        reason="mongodb-rat is not a Service of hotel-reservation",
    )
    diagnosis = diagnosis_of(("rate", "application/misconfiguration", 0.88, suspect))
    _, proposal = propose(scene, "rate", diagnosis=diagnosis)
    env, rollback = proposal.candidates[:2]
    assert isinstance(env.actions[0], SetContainerEnv)
    assert dict(env.actions[0].env) == {"DB_ADDR": "mongodb-rate:27017"}
    assert env.actions[0].container == "hotel-reserv-rate"
    assert [a.kind for a in rollback.actions] == ["rollback"]
    scene.apply(env.actions)
    assert scene.world.spec_container("rate")["env"][0] == {
        "name": "DB_ADDR",
        "value": "mongodb-rate:27017",
    }


def test_a_rollback_passes_over_a_restart_of_the_faulty_template() -> None:
    """A restart of the bad release (a person's, or a wrong attempt rolled back) leaves an
    earlier revision that differs from the current one only by an annotation; the rollback
    goes to the template from before the change, not to that copy of the fault."""

    scene = Scene.of(hotel(), _rate_db_addr_typo)
    (good, bad) = scene.revisions["rate"]
    assert [good[0], bad[0]] == [1, 2]
    restarted = copy.deepcopy(bad[1])
    restarted.setdefault("metadata", {}).setdefault("annotations", {})[
        "kubectl.kubernetes.io/restartedAt"
    ] = "2026-01-05T09:00:00Z"
    # The Deployment controller after a restart and its undo: the restart is revision 3, and
    # the faulty template (the undo put it back) is revision 4.
    scene.revisions["rate"] = [good, (3, restarted), (4, bad[1])]
    scene.world.deployments["rate"]["metadata"]["annotations"][
        "deployment.kubernetes.io/revision"
    ] = "4"
    suspect = _suspect(
        "Deployment",
        "rate",
        "spec.template.spec.containers[0].env[0].value",
        current="mongodb-rat:27017",
        reason="mongodb-rat is not a Service of hotel-reservation",
    )
    diagnosis = diagnosis_of(("rate", "application/misconfiguration", 0.88, suspect))
    _, proposal = propose(scene, "rate", diagnosis=diagnosis)
    rollbacks = [
        a for c in proposal.candidates for a in c.actions if isinstance(a, RollbackWorkload)
    ]
    assert [a.revision for a in rollbacks] == [1]


def test_requests_no_node_can_satisfy_go_back_to_what_was_scheduled() -> None:
    def fault(w: World) -> None:
        w.spec_container("search")["resources"]["requests"]["cpu"] = "6"
        w.change(
            "Deployment",
            "search",
            {"spec.template.spec.containers[0].resources.requests.cpu": ("100m", "6")},
        )

    scene = Scene.of(hotel(), fault)
    suspect = _suspect(
        "Deployment",
        "search",
        "spec.template.spec.containers[0].resources.requests.cpu",
        current="6000",
        reason="0/2 nodes are available: 2 Insufficient cpu.",
    )
    diagnosis = diagnosis_of(("search", "virtualization/misconfiguration", 0.9, suspect))
    _, proposal = propose(scene, "search", diagnosis=diagnosis)
    lower, rollback = proposal.candidates[:2]
    assert isinstance(lower.actions[0], SetResources)
    assert lower.actions[0].requests == {"cpu": "100m"}
    assert [a.kind for a in rollback.actions] == ["rollback"]
