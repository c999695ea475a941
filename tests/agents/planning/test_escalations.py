"""Escalations: what no catalog action can fix gets a runbook a person can act on — with this
incident's database, user, callers and nodes filled in — instead of a plan."""

from __future__ import annotations

import pytest

from agents.actions import CordonNode, SetScheduling, admit
from agents.diagnosis.suspect import Suspect
from agents.model import NodeInfo, OutcomeKind
from agents.planning import Escalation, Proposal
from tests.agents.diagnosis import faults
from tests.agents.diagnosis.world import World, hotel, shop
from tests.agents.planning.scene import Scene, attempt, diagnosis_of, propose


def escalation(proposal: Proposal) -> Escalation:
    assert not proposal.candidates, [c.hypothesis for c in proposal.candidates]
    assert proposal.escalation is not None
    return proposal.escalation


def _revoked(w: World) -> None:
    faults.revoke_auth(w, "geo", "mongodb-geo", "geo-db")
    w.log("search", "error calling geo: rpc error: code = Unknown desc = not authorized on geo-db")
    w.sick("search", errors=0.5)


def test_a_database_refusing_credentials_escalates_with_a_mongo_runbook() -> None:
    scene = Scene.of(hotel(), _revoked)
    diagnosis, proposal = propose(scene, "search")
    assert (diagnosis.top.service, str(diagnosis.top.category)) == (
        "mongodb-geo",
        "application/authentication",
    )
    found = escalation(proposal)
    assert "inside the database" in found.reason
    runbook = found.runbook
    assert 'db.getUser("geo_svc"' in runbook, "the user geo presents, read from its settings"
    assert 'db.grantRolesToUser("geo_svc", [{role: "readWrite", db: "geo-db"}])' in runbook
    assert "statefulset/mongodb-geo" in runbook and "-n hotel-reservation" in runbook
    assert "Stratus never execs" in runbook
    assert "geo-pw-14x" not in runbook, "no secret in a runbook"


def test_a_postgres_refusing_credentials_gets_a_postgres_runbook() -> None:
    def fault(w: World) -> None:
        w.spec_container("mongodb-rate")["image"] = "postgres:16"

    scene = Scene.of(hotel(), fault)
    diagnosis = diagnosis_of(("mongodb-rate", "application/authentication", 0.86, None))
    _, proposal = propose(scene, "rate", diagnosis=diagnosis)
    runbook = escalation(proposal).runbook
    assert "psql" in runbook and "GRANT CONNECT ON DATABASE" in runbook
    assert "rate" in runbook, "the client that names the database in its settings"


def test_timeouts_to_healthy_pods_escalate_with_a_network_runbook() -> None:
    scene = Scene.of(hotel(), lambda w: faults.network_delay(w, "geo", caller="search"))
    _, proposal = propose(scene, "search", "HighLatency")
    found = escalation(proposal)
    assert "network path to geo" in found.reason
    runbook = found.runbook
    assert "search time out" in runbook, "the callers, from the evidence"
    assert "node-0" in runbook, "the nodes hosting geo"
    assert "networkchaos" in runbook and "networkpolicy" in runbook
    assert "time-bounded" in runbook and "Page the platform / network on-call" in runbook


def test_a_weak_unfixable_top_does_not_block_a_restore_another_hypothesis_rests_on() -> None:
    scene = Scene.of(hotel(), lambda w: faults.target_port(w, "geo", 9999, caller="search"))
    port = Suspect(
        kind="Service",
        namespace="hotel-reservation",
        name="geo",
        field="spec.ports[0].targetPort",
        current="9999",
        reason="targetPort matches no containerPort",
    )
    weak = diagnosis_of(
        ("geo", "virtualization/network", 0.6, None),
        ("geo", "virtualization/misconfiguration", 0.35, port),
    )
    _, proposal = propose(scene, "search", diagnosis=weak)
    assert proposal.escalation is None
    assert proposal.candidates[0].actions[0].kind == "patch_service"
    strong = diagnosis_of(
        ("geo", "virtualization/network", 0.8, None),
        ("geo", "virtualization/misconfiguration", 0.35, port),
    )
    _, proposal = propose(scene, "search", diagnosis=strong)
    assert "network path" in escalation(proposal).reason


def test_no_fault_escalates_instead_of_acting() -> None:
    scene = Scene.of(hotel())
    diagnosis, proposal = propose(scene, "frontend")
    assert str(diagnosis.top.category) == "application/none"
    assert "nothing wrong" in escalation(proposal).reason


def test_a_missing_config_map_cannot_be_created_so_it_escalates() -> None:
    scene = Scene.of(hotel())
    suspect = Suspect(
        kind="ConfigMap",
        namespace="hotel-reservation",
        name="geo-settings",
        field="data",
        reason='configmap "geo-settings" not found',
    )
    diagnosis = diagnosis_of(("geo", "application/misconfiguration", 0.82, suspect))
    _, proposal = propose(scene, "geo", diagnosis=diagnosis)
    found = escalation(proposal)
    assert "does not exist" in found.reason
    assert "source control" in found.runbook


@pytest.mark.parametrize("kind", ["Secret", "PersistentVolumeClaim"])
def test_a_suspect_stratus_may_not_write_escalates(kind: str) -> None:
    scene = Scene.of(hotel())
    suspect = Suspect(
        kind=kind,
        namespace="hotel-reservation",
        name="mongodb-credentials",
        field="data.geo-password",
        reason="rotated",
    )
    diagnosis = diagnosis_of(("geo", "application/misconfiguration", 0.8, suspect))
    _, proposal = propose(scene, "geo", diagnosis=diagnosis)
    found = escalation(proposal)
    assert kind in found.reason
    assert f"{kind}/hotel-reservation/mongodb-credentials" in found.runbook


def test_a_hypothesis_nothing_can_be_derived_for_escalates_listing_what_was_considered() -> None:
    scene = Scene.of(shop())
    diagnosis = diagnosis_of(
        ("payment", "application/misconfiguration", 0.6, None),
        ("payment", "application/code_defect", 0.3, None),
    )
    _, proposal = propose(scene, "checkout", diagnosis=diagnosis)
    found = escalation(proposal)
    assert "no action in the catalog fits payment" in found.reason
    assert "- payment: application/code_defect (30%)" in found.runbook


def test_a_cordoned_node_is_uncordoned_and_its_taints_escalate() -> None:
    def fault(w: World) -> None:
        w.nodes[1] = NodeInfo(
            name="node-1",
            ready=True,
            unschedulable=True,
            labels={"zone": "a"},
            taints=("dedicated=infra:NoSchedule",),
            allocatable_cpu_millis=4000,
            allocatable_memory_bytes=8 << 30,
        )

    scene = Scene.of(shop(), fault)
    cordoned = Suspect(kind="Node", name="node-1", field="spec.unschedulable", current="True")
    _, proposal = propose(
        scene,
        "checkout",
        diagnosis=diagnosis_of(("checkout", "virtualization/misconfiguration", 0.8, cordoned)),
    )
    (action,) = proposal.candidates[0].actions
    assert isinstance(action, CordonNode) and action.cordon is False
    assert action.target.namespace is None
    admit(action, scene.incident("checkout").scope)
    tainted = Suspect(kind="Node", name="node-1", field="spec.taints", current="dedicated=infra")
    _, proposal = propose(
        scene,
        "checkout",
        diagnosis=diagnosis_of(("checkout", "virtualization/misconfiguration", 0.8, tainted)),
    )
    assert "kubectl taint nodes node-1" in escalation(proposal).runbook


def test_when_the_plans_for_the_alternatives_fail_the_unfixable_tops_runbook_leads() -> None:
    scene = Scene.of(hotel(), lambda w: faults.target_port(w, "geo", 9999, caller="search"))
    port = Suspect(
        kind="Service",
        namespace="hotel-reservation",
        name="geo",
        field="spec.ports[0].targetPort",
        current="9999",
        reason="targetPort matches no containerPort",
    )
    diagnosis = diagnosis_of(
        ("geo", "virtualization/network", 0.6, None),
        ("geo", "virtualization/misconfiguration", 0.35, port),
    )
    _, first = propose(scene, "search", diagnosis=diagnosis)
    tried = [
        attempt(c, OutcomeKind.ABORTED, mu_before=3, mu_after=3, reason="no improvement", number=n)
        for n, c in enumerate(first.candidates, start=1)
    ]
    _, last = propose(scene, "search", diagnosis=diagnosis, attempts=tried)
    found = escalation(last)
    assert found.reason.startswith("the network path to geo")
    assert found.runbook.index("networkchaos") < found.runbook.index("What was tried:")
    assert "1. Set port 8083 → targetPort 8083 on Service/hotel-reservation/geo" in found.runbook


def test_tolerations_shown_as_text_are_never_taken_for_objects() -> None:
    def fault(w: World) -> None:
        spec = w.deployments["checkout"]["spec"]["template"]["spec"]
        spec["tolerations"] = [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]
        w.change(
            "Deployment",
            "checkout",
            {"spec.template.spec.tolerations": ([], spec["tolerations"])},
        )

    suspect = Suspect(
        kind="Deployment",
        namespace="online-shop",
        name="checkout",
        field="spec.template.spec.tolerations",
        current="['dedicated=infra:NoSchedule']",
        last_known_good="['dedicated=other:NoSchedule']",
        reason="0/2 nodes are available: 2 node(s) had untolerated taint",
    )
    diagnosis = diagnosis_of(("checkout", "virtualization/misconfiguration", 0.9, suspect))
    scene = Scene.of(shop(), fault)
    _, without = propose(scene, "checkout", diagnosis=diagnosis, journal=False)
    assert not any(a.kind == "set_scheduling" for c in without.candidates for a in c.actions)
    _, with_journal = propose(scene, "checkout", diagnosis=diagnosis)
    action = with_journal.candidates[0].actions[0]
    assert isinstance(action, SetScheduling) and action.tolerations == ()
