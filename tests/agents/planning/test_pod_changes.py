"""A pod changed outside its controller is deleted (its controller makes it again from the
unchanged template); a top hypothesis with nothing to restore gets the low-risk generic step
before anyone escalates on another hypothesis's runbook."""

from __future__ import annotations

from dataclasses import replace

import pytest

from agents.actions import DeletePod, RolloutRestart, admit
from agents.diagnosis.suspect import Suspect
from tests.agents.diagnosis import faults
from tests.agents.diagnosis.world import World, hotel, shop
from tests.agents.planning.scene import Scene, diagnosis_of, propose


@pytest.mark.parametrize(
    ("make", "service", "caller"),
    [(hotel, "geo", "search"), (shop, "currency", "frontend")],
    ids=["hotel-geo", "shop-currency"],
)
def test_a_pod_whose_image_was_swapped_is_deleted_and_comes_back_from_its_template(
    make: object, service: str, caller: str
) -> None:
    w: World = make()  # type: ignore[operator]
    scene = Scene.of(w, lambda w: faults.pod_failure(w, service, caller))
    diagnosis, proposal = propose(scene, caller, "KubePodCrashLooping")
    assert str(diagnosis.top.category) == "virtualization/operation_error"
    assert proposal.escalation is None
    first = proposal.candidates[0]
    (action,) = first.actions
    assert isinstance(action, DeletePod)
    assert str(action.target) == f"Pod/{w.namespace}/{service}-7d9f8-0"
    assert "changed outside the controller" in first.rationale
    assert faults.PAUSE in first.rationale and w.apps[service].image in first.rationale
    admit(action, scene.incident(caller).scope)
    # The generic alternative replaces every pod too.
    assert any(isinstance(a, RolloutRestart) for c in proposal.candidates[1:] for a in c.actions)

    scene.apply(first.actions)
    (fresh,) = scene.world.pods[service]
    assert fresh.name != f"{service}-7d9f8-0"
    assert scene.world.pod_body(fresh)["spec"]["containers"][0]["image"] == w.apps[service].image
    _, again = propose(scene, caller, "KubePodCrashLooping")
    assert not any(isinstance(a, DeletePod) for c in again.candidates for a in c.actions)


def test_every_changed_pod_of_the_workload_is_deleted_in_one_plan() -> None:
    w = shop()

    def two_replicas(w: World) -> None:
        faults.pod_failure(w, "currency", "frontend")
        (pod,) = w.pods["currency"]
        w.pods["currency"] = [pod, replace(pod, name="currency-7d9f8-1")]
        w.pod_containers["currency-7d9f8-1"] = w.pod_containers["currency-7d9f8-0"]

    scene = Scene.of(w, two_replicas)
    suspect = Suspect(
        kind="Pod",
        namespace="online-shop",
        name="currency-7d9f8-0",
        field="spec.containers[0].image",
        current=faults.PAUSE,
        reason="changed outside its controller",
    )
    diagnosis = diagnosis_of(("currency", "virtualization/operation_error", 0.95, suspect))
    _, proposal = propose(scene, "frontend", diagnosis=diagnosis)
    targets = [str(a.target) for a in proposal.candidates[0].actions]
    assert targets == ["Pod/online-shop/currency-7d9f8-0", "Pod/online-shop/currency-7d9f8-1"]


def test_a_top_with_nothing_to_restore_gets_the_generic_step_not_anothers_runbook() -> None:
    # geo's pods fail, but the diagnosis names no object to put back for it; the runner-up is
    # a network hypothesis that escalates. The first plan is for the best explanation.
    scene = Scene.of(hotel(), lambda w: faults.pod_failure(w, "geo", "search"))
    diagnosis = diagnosis_of(
        ("geo", "application/misconfiguration", 0.9, None),
        ("mongodb-rate", "virtualization/network", 0.6, None),
    )
    _, proposal = propose(scene, "search", diagnosis=diagnosis)
    assert proposal.escalation is None
    kinds = [type(a) for c in proposal.candidates for a in c.actions]
    assert kinds[:2] == [DeletePod, RolloutRestart]
    assert all(c.hypothesis == "geo: application/misconfiguration" for c in proposal.candidates)


def test_a_healthy_top_with_nothing_to_do_escalates_on_its_own_terms() -> None:
    scene = Scene.of(shop())
    diagnosis = diagnosis_of(
        ("payment", "application/misconfiguration", 0.7, None),
        ("currency", "virtualization/network", 0.5, None),
    )
    _, proposal = propose(scene, "checkout", diagnosis=diagnosis)
    assert not proposal.candidates
    assert proposal.escalation is not None
    assert proposal.escalation.reason == (
        "no action in the catalog fits payment: application/misconfiguration"
    )
    runbook = proposal.escalation.runbook
    assert "If it is rather currency: virtualization/network (50%)" in runbook
    assert runbook.index("payment") < runbook.index("network path to currency")
