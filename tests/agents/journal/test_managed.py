"""Attribution of a change from managedFields."""

from __future__ import annotations

from agents.journal import UNKNOWN_MANAGER, attribute
from tests.agents.detection.fakes import at
from tests.agents.journal.objects import creator, managed

IMAGE = "spec.template.spec.containers[geo].image"


def test_the_precise_owner_wins_over_a_newer_coarse_one() -> None:
    entries = [
        creator(0),
        managed(
            "kubectl-set",
            100,
            {
                "f:spec": {
                    "f:template": {
                        "f:spec": {"f:containers": {'k:{"name":"geo"}': {"f:image": {}}}}
                    }
                }
            },
        ),
        managed("kube-controller-manager", 101, {"f:metadata": {"f:annotations": {}}}),
        managed("kube-controller-manager", 102, {"f:status": {}}, subresource="status"),
    ]
    got = attribute(entries, [IMAGE])
    assert (got.manager, got.operation, got.at) == ("kubectl-set", "Update", at(100))


def test_without_paths_the_newest_non_status_entry() -> None:
    entries = [
        creator(0),
        managed("helm", 50, {"f:spec": {}}),
        managed("kubelet", 60, {"f:status": {}}, subresource="status"),
    ]
    assert attribute(entries).manager == "helm"


def test_a_removed_field_goes_to_the_owner_nearby_that_wrote_since() -> None:
    entries = [
        creator(0),
        managed(
            "ops",
            70,
            {
                "f:spec": {
                    "f:template": {"f:spec": {"f:containers": {'k:{"name":"geo"}': {"f:args": {}}}}}
                }
            },
        ),
    ]
    removed = ["spec.template.spec.containers[geo].env[DEBUG].value"]
    # The creator still owns the env list, but wrote it before the state the journal last saw.
    assert attribute(entries, removed).manager == "kubectl-client-side-apply"
    assert attribute(entries, removed, not_before=at(50)).manager == "ops"


def test_entries_older_than_the_previous_state_are_passed_over() -> None:
    entries = [creator(0), managed("helm", 10, {"f:spec": {"f:replicas": {}}})]
    assert attribute(entries, ["spec.replicas"], not_before=at(5)).manager == "helm"
    assert attribute(entries, ["spec.replicas"], not_before=at(20)).manager == UNKNOWN_MANAGER


def test_missing_or_malformed_managed_fields() -> None:
    assert attribute(None).manager == UNKNOWN_MANAGER
    assert attribute("garbage", ["spec"]).manager == UNKNOWN_MANAGER
    got = attribute([{"manager": "m", "fieldsV1": {'k:{"broken': {}}}], ["spec.x[a]"])
    assert (got.manager, got.at) == ("m", None)
