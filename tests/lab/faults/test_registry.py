"""The registry and the parts every fault shares: ids, categories from docs/taxonomy.md,
parameters and their errors, app and target selection, and the lab's own reset (`recover`)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.faults import BadParameter, UnknownFault, check_mitigation, fault, faults
from lab.faults.base import Fault, FaultContext, clean, targets
from lab.faults.workload import OPERATION
from lab.sim.world import LabWorld, WorldConfig

TAXONOMY = Path(__file__).resolve().parents[3] / "docs" / "taxonomy.md"

EXPECTED = {
    "scale-to-zero": "virtualization/operation_error",
    "wrong-target-port": "virtualization/misconfiguration",
    "image-not-found": "virtualization/operation_error",
    "crashing-image": "application/code_defect",
    "wrong-binary": "application/misconfiguration",
    "node-selector-mismatch": "virtualization/misconfiguration",
    "memory-limit-too-low": "virtualization/misconfiguration",
    "cpu-limit-too-low": "virtualization/misconfiguration",
    "wrong-database-host": "application/misconfiguration",
    "feature-flag": "application/misconfiguration",
    "revoked-db-credentials": "application/authentication",
    "resource-quota-too-low": "virtualization/misconfiguration",
    "network-delay": "virtualization/network",
    "network-loss": "virtualization/network",
    "pod-failure": "virtualization/operation_error",
    "readiness-probe-wrong-port": "virtualization/misconfiguration",
    "missing-config-key": "application/misconfiguration",
    "init-container-fails": "application/misconfiguration",
    "image-pull-unauthorized": "virtualization/misconfiguration",
    "requests-exceed-node": "virtualization/misconfiguration",
    "node-taint-no-toleration": "virtualization/misconfiguration",
    "pvc-pending": "virtualization/misconfiguration",
    "limitrange-too-low": "virtualization/misconfiguration",
    "node-not-ready": "virtualization/operation_error",
    "hpa-max-too-low": "virtualization/misconfiguration",
    "rollout-stuck-progress-deadline": "virtualization/misconfiguration",
    "pdb-blocks-drain": "virtualization/misconfiguration",
    "job-keeps-failing": "application/misconfiguration",
    "slow-memory-leak": "application/code_defect",
    "configmap-without-restart": "application/misconfiguration",
    "network-policy-deny": "virtualization/network",
    "cluster-dns-failing": "virtualization/network",
    "no-fault": None,
}


def test_the_library_and_its_ground_truth_categories() -> None:
    library = faults()
    assert [f.id for f in library] == list(EXPECTED)
    taxonomy = set(re.findall(r"`([a-z_]+/[a-z_]+)`", TAXONOMY.read_text()))
    for f in library:
        category = None if f.category is None else str(f.category)
        assert category == EXPECTED[f.id], f.id
        assert category is None or category in taxonomy, f.id
        assert f.description and "\n" not in f.description and len(f.description) < 100
        assert fault(f.id) is f
        assert f.apps and set(f.apps) <= {"hotel-reservation", "online-shop"}
    no_undo = {f.id for f in library if not f.undoable_fix}
    assert no_undo == {
        "revoked-db-credentials",
        "network-delay",
        "network-loss",
        "node-taint-no-toleration",
        "limitrange-too-low",
        "node-not-ready",
        "pdb-blocks-drain",
        "job-keeps-failing",
        "network-policy-deny",
        "cluster-dns-failing",
    }
    bounded = {f.id for f in library if f.time_bounded}
    assert bounded == {"network-delay", "network-loss", "pod-failure"}


def test_unknown_fault_names_the_known_ones() -> None:
    with pytest.raises(UnknownFault, match="unknown fault 'nope'; faults: scale-to-zero, "):
        fault("nope")


@pytest.fixture(scope="module")
def both() -> Iterator[LabWorld]:
    with LabWorld(WorldConfig(apps=("hotel-reservation", "online-shop"), seed=1)) as world:
        world.wait_healthy(timeout_s=120)
        world.advance(30)
        yield world


@pytest.mark.parametrize(
    ("fault_id", "kwargs", "message"),
    [
        ("scale-to-zero", {"params": {"replicaz": "0"}}, "unknown parameter 'replicaz'"),
        ("wrong-target-port", {"params": {"port": "http"}}, "port: expected an integer"),
        ("wrong-target-port", {"params": {"port": "70000"}}, "port: must be ≤ 65535"),
        ("network-loss", {"params": {"loss": "2"}}, "loss: must be ≤ 1"),
        ("feature-flag", {"app": "hotel-reservation"}, "does not apply to hotel-reservation"),
        ("feature-flag", {"params": {"flag": "nope"}}, "unknown flag 'nope'"),
        ("scale-to-zero", {"target": "nope"}, "has no service 'nope'"),
        ("scale-to-zero", {"app": "social-network"}, "app 'social-network' is not running"),
        ("image-not-found", {"params": {"tag": "1.0"}}, "the registry has"),
        ("crashing-image", {"params": {"tag": "1.1"}}, "is not a build that crashes"),
        ("crashing-image", {"target": "geo", "params": {"tag": "9"}}, "not a build that crashes"),
        ("wrong-binary", {"params": {"command": "profile"}}, "is the target's own binary"),
        ("revoked-db-credentials", {"target": "geo"}, "is not a database with users"),
        ("pod-failure", {"params": {"mode": "some"}}, "expected 'all' or 'one'"),
    ],
)
def test_bad_parameters_are_one_clear_line(
    both: LabWorld, fault_id: str, kwargs: dict[str, object], message: str
) -> None:
    before = both.cluster.resource_version()
    with pytest.raises(BadParameter) as caught:
        fault(fault_id).inject(both, **kwargs)  # type: ignore[arg-type]
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert both.cluster.resource_version() == before  # nothing was changed


def test_a_target_picks_its_app_and_a_flag_its_target(both: LabWorld) -> None:
    f = fault("scale-to-zero")
    injection = f.inject(both, target="product-catalog")
    assert (injection.namespace, injection.target) == ("online-shop", "product-catalog")
    f.recover(both, injection)
    injection = fault("feature-flag").inject(both, params={"flag": "adFailure"})
    assert injection.target == "ad" and injection.truth.root_causes == ("ad", "flagd")
    fault("feature-flag").recover(both, injection)


def _specs(world: LabWorld) -> dict[str, object]:
    out: dict[str, object] = {}
    for ns in world.namespaces:
        for kind in ("Deployment", "Service", "ConfigMap", "ResourceQuota"):
            for obj in world.api.list(kind, ns):
                body = clean(obj)
                body["metadata"].pop("annotations", None)
                out[f"{kind}/{ns}/{obj['metadata']['name']}"] = body.get("spec", body.get("data"))
    return out


def test_every_fault_injects_with_defaults_and_recovers_on_both_apps(both: LabWorld) -> None:
    original = _specs(both)
    users = {ns: both.dataplane.users(ns, "mongodb-geo") for ns in both.namespaces}
    for f in faults():
        for app in f.apps:
            injection = f.inject(both, app=app)
            assert injection.changes, (f.id, app)
            assert injection.truth.namespace == app
            assert injection.truth.root_causes[:1] == (
                (injection.target,) if f.id != "no-fault" else ()
            )
            both.advance(2)
            f.recover(both, injection)
            assert _specs(both) == original, (f.id, app)
    assert {ns: both.dataplane.users(ns, "mongodb-geo") for ns in both.namespaces} == users
    assert both.dataplane.network("hotel-reservation", "rate", both.clock.now()) is None
    both.advance(60)
    for app in both.namespaces:
        verdict = check_mitigation(both, fault("no-fault").inject(both, app=app))
        assert verdict.mitigated, (app, verdict.problems)


class _HalfDone(Fault):
    """A fault whose second step fails: the first must be undone."""

    id = "half-done"
    description = "scale geo, then patch a Deployment that does not exist"
    category = OPERATION
    default_targets = targets({"hotel-reservation": "geo"})

    def apply(self, ctx: FaultContext) -> None:
        ctx.patch(
            "Deployment",
            "geo",
            {"spec": {"replicas": 3}},
            patch_type="merge",
            change="Deployment/geo: spec.replicas 1 → 3",
        )
        ctx.patch(
            "Deployment", "nope", {"spec": {"replicas": 0}}, patch_type="merge", change="never"
        )


def test_an_injection_that_fails_half_way_changes_nothing(both: LabWorld) -> None:
    before = _specs(both)
    with pytest.raises(BadParameter, match="Deployment hotel-reservation/nope does not exist"):
        _HalfDone().inject(both, app="hotel-reservation")
    assert _specs(both) == before
