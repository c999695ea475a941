"""The action catalog as pure transforms: what each action writes, how it travels as JSON,
and what admission refuses."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import pytest

from agents.actions import (
    CordonNode,
    DataChange,
    Delete,
    DeleteObject,
    DeletePod,
    ExecInContainer,
    MergePatch,
    PatchService,
    Replace,
    RollbackWorkload,
    RolloutRestart,
    ScaleWorkload,
    SetConfigMapKeys,
    SetContainerEnv,
    SetHpaBounds,
    SetImage,
    SetResources,
    SetScheduling,
    action_from_json,
    action_kinds,
    action_to_json,
    actions_hash,
    admit,
)
from agents.actions.base import Action
from agents.actions.snapshot import clean, comparable, field_changes, restorable, unified_diff
from agents.errors import Inadmissible, Invalid, NotFound
from agents.model import KubeObject, ObjectRef, Risk, Scope

SCOPE = Scope(cluster="lab", namespace="hotel")


def ref(kind: str, name: str, namespace: str | None = "hotel", api: str = "apps/v1") -> ObjectRef:
    return ObjectRef(api_version=api, kind=kind, name=name, namespace=namespace)


DEPLOY = ref("Deployment", "geo")


def deployment(**spec: Any) -> KubeObject:
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "geo",
            "namespace": "hotel",
            "uid": "u-1",
            "resourceVersion": "41",
            "generation": 3,
            "annotations": {"deployment.kubernetes.io/revision": "3"},
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "geo"}},
            "template": {
                "metadata": {"labels": {"app": "geo"}},
                "spec": {
                    "containers": [
                        {
                            "name": "geo",
                            "image": "lab/geo:1.0",
                            "env": [
                                {"name": "MONGO_HOST", "value": "mongodb-geo"},
                                {"name": "LOG_LEVEL", "value": "info"},
                            ],
                        }
                    ],
                    "nodeSelector": {"disk": "ssd"},
                },
            },
        },
        "status": {"replicas": 1},
    }
    body["spec"].update(spec)
    return KubeObject(body)


class NoReads:
    """A ClusterReader for actions that must not read anything."""

    cluster_name = "lab"

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"unexpected read: {name}")


class ReplicaSets(NoReads):
    def __init__(self, sets: Sequence[KubeObject]) -> None:
        self.sets = sets

    def list_objects(self, **kwargs: Any) -> Sequence[KubeObject]:
        assert kwargs["kind"] == "ReplicaSet"
        return self.sets


def written(action: Action, live: KubeObject, reader: Any = None) -> dict[str, Any]:
    write = action.desired(live, reader or NoReads())
    assert isinstance(write, Replace)
    return write.obj.body


def container_of(body: dict[str, Any]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = body["spec"]["template"]["spec"]["containers"]
    return containers[0]


def test_scale_sets_replicas_and_leaves_the_live_object_alone() -> None:
    live = deployment()
    before = copy.deepcopy(live.body)
    body = written(ScaleWorkload(target=DEPLOY, replicas=3, from_replicas=1), live)
    assert body["spec"]["replicas"] == 3
    assert live.body == before
    assert field_changes(before, body) == {"spec.replicas": [1, 3]}


@pytest.mark.parametrize(
    ("replicas", "start", "risk"),
    [(3, 1, Risk.LOW), (1, 3, Risk.MEDIUM), (0, 1, Risk.HIGH), (2, None, Risk.LOW)],
)
def test_scale_risk_follows_direction(replicas: int, start: int | None, risk: Risk) -> None:
    assert ScaleWorkload(target=DEPLOY, replicas=replicas, from_replicas=start).risk is risk


def test_scale_refuses_negative_replicas() -> None:
    with pytest.raises(ValueError, match="replicas"):
        ScaleWorkload(target=DEPLOY, replicas=-1)


def test_set_image_changes_only_the_named_container() -> None:
    body = written(SetImage(target=DEPLOY, container="geo", image="lab/geo:0.9"), deployment())
    assert container_of(body)["image"] == "lab/geo:0.9"
    with pytest.raises(Invalid, match="no container 'nope'"):
        written(SetImage(target=DEPLOY, container="nope", image="x"), deployment())


def test_set_env_sets_replaces_and_unsets() -> None:
    action = SetContainerEnv(
        target=DEPLOY,
        container="geo",
        env={"MONGO_HOST": "mongodb-geo-2", "LOG_LEVEL": None, "NEW": "1"},
    )
    env = container_of(written(action, deployment()))["env"]
    assert env == [{"name": "MONGO_HOST", "value": "mongodb-geo-2"}, {"name": "NEW", "value": "1"}]


def test_set_resources_merges_limits() -> None:
    action = SetResources(target=DEPLOY, container="geo", limits={"memory": "512Mi"})
    assert container_of(written(action, deployment()))["resources"] == {
        "limits": {"memory": "512Mi"}
    }
    assert action.risk is Risk.LOW
    with pytest.raises(ValueError, match="unknown resources"):
        SetResources(target=DEPLOY, container="geo", limits={"gpu": "1"})


def test_set_scheduling_removes_node_selector_with_an_empty_mapping() -> None:
    body = written(SetScheduling(target=DEPLOY, node_selector={}), deployment())
    assert "nodeSelector" not in body["spec"]["template"]["spec"]
    body = written(
        SetScheduling(target=DEPLOY, tolerations=({"key": "k", "operator": "Exists"},)),
        deployment(),
    )
    assert body["spec"]["template"]["spec"]["tolerations"] == [{"key": "k", "operator": "Exists"}]
    with pytest.raises(ValueError, match="changes nothing"):
        SetScheduling(target=DEPLOY)


def test_rollout_restart_stamps_the_template() -> None:
    body = written(RolloutRestart(target=DEPLOY, stamp="2026-01-05T09:00:00+00:00"), deployment())
    annotations = body["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {"kubectl.kubernetes.io/restartedAt": "2026-01-05T09:00:00+00:00"}


def replica_set(revision: int, image: str, owner_uid: str = "u-1") -> KubeObject:
    return KubeObject(
        {
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"geo-{revision}",
                "annotations": {"deployment.kubernetes.io/revision": str(revision)},
                "ownerReferences": [{"uid": owner_uid, "controller": True}],
            },
            "spec": {
                "template": {
                    "metadata": {"labels": {"app": "geo", "pod-template-hash": f"h{revision}"}},
                    "spec": {"containers": [{"name": "geo", "image": image}]},
                }
            },
        }
    )


def test_rollback_takes_the_previous_revisions_template_without_its_hash() -> None:
    sets = [
        replica_set(1, "lab/geo:1.0"),
        replica_set(2, "lab/geo:1.1"),
        replica_set(3, "lab/geo:bad"),
    ]
    sets.append(replica_set(2, "someone-else", owner_uid="other"))
    body = written(RollbackWorkload(target=DEPLOY), deployment(), ReplicaSets(sets))
    template = body["spec"]["template"]
    assert template["spec"]["containers"][0]["image"] == "lab/geo:1.1"
    assert template["metadata"]["labels"] == {"app": "geo"}
    body = written(RollbackWorkload(target=DEPLOY, revision=1), deployment(), ReplicaSets(sets))
    assert body["spec"]["template"]["spec"]["containers"][0]["image"] == "lab/geo:1.0"


def test_rollback_without_history_says_what_it_found() -> None:
    with pytest.raises(NotFound, match=r"revisions: 3"):
        written(RollbackWorkload(target=DEPLOY), deployment(), ReplicaSets([replica_set(3, "x")]))


def service() -> KubeObject:
    return KubeObject(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "geo", "namespace": "hotel"},
            "spec": {"selector": {"app": "geo"}, "ports": [{"port": 8083, "targetPort": 9999}]},
        }
    )


def test_patch_service_replaces_ports_and_describes_them() -> None:
    action = PatchService(
        target=ref("Service", "geo", api="v1"), ports=({"port": 8083, "targetPort": 8083},)
    )
    assert written(action, service())["spec"]["ports"] == [{"port": 8083, "targetPort": 8083}]
    assert "port 8083 → targetPort 8083" in action.describe()
    with pytest.raises(ValueError):
        PatchService(target=action.target)


def test_configmap_keys_set_and_remove() -> None:
    live = KubeObject(
        {"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}}
    )
    action = SetConfigMapKeys(target=ref("ConfigMap", "c", api="v1"), values={"a": "9", "b": None})
    assert written(action, live)["data"] == {"a": "9"}


def test_delete_pod_needs_a_controller() -> None:
    target = ref("Pod", "geo-1", api="v1")
    owned = KubeObject(
        {"kind": "Pod", "metadata": {"name": "geo-1", "ownerReferences": [{"controller": True}]}}
    )
    assert DeletePod(target=target).desired(owned, NoReads()) == Delete(ref=target)
    bare = KubeObject({"kind": "Pod", "metadata": {"name": "geo-1"}})
    with pytest.raises(Inadmissible, match="no controller"):
        DeletePod(target=target).desired(bare, NoReads())


def test_cordon_and_uncordon() -> None:
    node = KubeObject({"kind": "Node", "metadata": {"name": "n1"}, "spec": {}})
    target = ref("Node", "n1", namespace=None, api="v1")
    cordoned = written(CordonNode(target=target), node)
    assert cordoned["spec"]["unschedulable"] is True
    assert (
        "unschedulable"
        not in written(CordonNode(target=target, cordon=False), KubeObject(cordoned))["spec"]
    )


def test_hpa_bounds_are_validated() -> None:
    target = ref("HorizontalPodAutoscaler", "geo", api="autoscaling/v2")
    hpa = KubeObject(
        {"kind": "HorizontalPodAutoscaler", "metadata": {"name": "geo"}, "spec": {"maxReplicas": 3}}
    )
    assert written(SetHpaBounds(target=target, min_replicas=2, max_replicas=6), hpa)["spec"] == {
        "maxReplicas": 6,
        "minReplicas": 2,
    }
    with pytest.raises(ValueError):
        SetHpaBounds(target=target, min_replicas=5, max_replicas=2)


def test_merge_patch_stays_inside_its_allowlist() -> None:
    patch = MergePatch(target=DEPLOY, patch={"spec": {"replicas": 2, "paused": None}})
    body = written(patch, deployment(paused=True))
    assert body["spec"]["replicas"] == 2
    assert "paused" not in body["spec"]
    assert patch.risk is Risk.HIGH
    with pytest.raises(Inadmissible, match="may only change"):
        written(MergePatch(target=DEPLOY, patch={"metadata": {"name": "x"}}), deployment())


def test_every_action_kind_round_trips_through_json() -> None:
    samples: list[Action] = [
        ScaleWorkload(target=DEPLOY, replicas=2, from_replicas=0),
        SetImage(target=DEPLOY, container="geo", image="x:1"),
        RollbackWorkload(target=DEPLOY, revision=2),
        RolloutRestart(target=DEPLOY, stamp="t"),
        SetContainerEnv(target=DEPLOY, container="geo", env={"A": None, "B": "b"}),
        SetResources(target=DEPLOY, container="geo", requests={"cpu": "100m"}, limits={"cpu": "1"}),
        SetScheduling(target=DEPLOY, node_selector={}, tolerations=({"key": "a"},)),
        PatchService(
            target=ref("Service", "s", api="v1"), ports=({"port": 1},), selector={"a": "b"}
        ),
        SetConfigMapKeys(target=ref("ConfigMap", "c", api="v1"), values={"k": "v"}),
        DeletePod(target=ref("Pod", "p", api="v1")),
        CordonNode(target=ref("Node", "n", namespace=None, api="v1"), cordon=False),
        SetHpaBounds(
            target=ref("HorizontalPodAutoscaler", "h", api="autoscaling/v2"), max_replicas=4
        ),
        MergePatch(target=DEPLOY, patch={"spec": {"replicas": 1}}, reason="model"),
        ExecInContainer(target=ref("Pod", "p", api="v1"), command="rm -rf /data"),
        DeleteObject(target=ref("PersistentVolumeClaim", "data", api="v1")),
        DataChange(target=ref("Deployment", "mongodb-geo"), description="grant roles"),
    ]
    assert {s.kind for s in samples} == set(action_kinds())
    for action in samples:
        assert action_from_json(action_to_json(action)) == action


def test_json_errors_name_the_problem() -> None:
    with pytest.raises(Invalid, match="unknown action kind 'teleport'"):
        action_from_json({"kind": "teleport"})
    with pytest.raises(Invalid, match="missing field 'replicas'"):
        action_from_json(
            {
                "kind": "scale",
                "target": action_to_json(ScaleWorkload(target=DEPLOY, replicas=1))["target"],
            }
        )
    with pytest.raises(Invalid, match="'target' is malformed"):
        action_from_json({"kind": "scale", "target": "geo", "replicas": 1})
    with pytest.raises(Invalid, match="replicas must be"):
        action_from_json(
            {
                "kind": "scale",
                "target": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "g"},
                "replicas": -2,
            }
        )


def test_hash_binds_to_exact_contents_and_order() -> None:
    a = ScaleWorkload(target=DEPLOY, replicas=1)
    b = SetImage(target=DEPLOY, container="geo", image="x:1")
    assert actions_hash([a, b]) == actions_hash([a, b])
    assert actions_hash([a, b]) != actions_hash([b, a])
    assert actions_hash([a]) != actions_hash([ScaleWorkload(target=DEPLOY, replicas=2)])


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        (ExecInContainer(target=ref("Pod", "p", api="v1"), command="ls"), "no inverse"),
        (DeleteObject(target=ref("Namespace", "hotel", namespace=None, api="v1")), "loses data"),
        (DeleteObject(target=ref("PersistentVolumeClaim", "d", api="v1")), "loses data"),
        (DeleteObject(target=ref("ConfigMap", "d", api="v1")), "no inverse"),
        (DataChange(target=DEPLOY, description="drop table"), "no inverse"),
        (
            ScaleWorkload(target=ref("ReplicaSet", "geo-1"), replicas=1),
            "applies to Deployment, StatefulSet",
        ),
        (ScaleWorkload(target=ref("Deployment", "geo", namespace="other"), replicas=1), "outside"),
        (MergePatch(target=ref("Secret", "s", api="v1"), patch={"data": {}}), "applies to"),
        (CordonNode(target=ref("Node", "n", namespace="hotel", api="v1")), "cluster-scoped"),
    ],
)
def test_admission_refuses_with_the_reason(action: Action, reason: str) -> None:
    with pytest.raises(Inadmissible, match=reason):
        admit(action, SCOPE)


def test_admission_lets_catalog_actions_in() -> None:
    admit(ScaleWorkload(target=DEPLOY, replicas=1), SCOPE)
    admit(CordonNode(target=ref("Node", "n", namespace=None, api="v1")), SCOPE)


def test_snapshot_drops_server_fields_and_restores_with_the_live_version() -> None:
    live = deployment()
    snap = clean(live.body)
    assert "status" not in snap
    assert {"uid", "resourceVersion", "generation"}.isdisjoint(snap["metadata"])
    back = restorable(snap, "99")
    assert back["metadata"]["resourceVersion"] == "99"
    assert "resourceVersion" not in snap["metadata"]
    assert "deployment.kubernetes.io/revision" not in comparable(live.body)["metadata"].get(
        "annotations", {}
    )


def test_diff_shows_the_change_an_approver_reads() -> None:
    live = deployment()
    after = written(SetImage(target=DEPLOY, container="geo", image="lab/geo:0.9"), live)
    text = unified_diff(live.body, after, name="geo")
    lines = text.splitlines()
    assert lines[0] == "--- live/geo" and lines[1] == "+++ after/geo"
    assert [x for x in lines if x.startswith("-") and "image:" in x] == [
        "-        image: lab/geo:1.0"
    ]
    assert [x for x in lines if x.startswith("+") and "image:" in x] == [
        "+        image: lab/geo:0.9"
    ]
    assert "resourceVersion" not in text


def test_field_changes_match_named_lists_by_name() -> None:
    before = {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
    after = {"env": [{"name": "B", "value": "2"}, {"name": "A", "value": "3"}]}
    assert field_changes(before, after) == {"env[A].value": ["1", "3"]}
