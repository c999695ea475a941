"""Fields an update may not change, and how the real server says so.

A workload's selector is fixed at creation; a pod's spec only lets images, tolerations
(additions), activeDeadlineSeconds and terminationGracePeriodSeconds change; a Service keeps
its cluster IP; a ConfigMap or Secret marked `immutable` keeps its data. Stratus's planner must
meet the same refusals in the lab as in a real cluster (a "set pod nodeSelector" plan must fail
its dry run and target the Deployment instead).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agents.model import JsonObject

if TYPE_CHECKING:
    from lab.kube.validation import Causes


POD_UPDATE_MSG = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)"
)

STS_UPDATE_MSG = (
    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
    "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are "
    "forbidden"
)


def _mutable_pod_spec(spec: JsonObject) -> JsonObject:
    """The pod spec with the fields an update may change blanked out."""
    out = dict(spec)
    for group in ("containers", "initContainers"):
        out[group] = [{**c, "image": ""} for c in spec.get(group) or []]
    for name in ("activeDeadlineSeconds", "terminationGracePeriodSeconds", "tolerations"):
        out.pop(name, None)
    # nodeName is set by binding, which the lab's scheduler performs as an internal write.
    out.pop("nodeName", None)
    return out


def _pod(c: Causes, old: JsonObject, new: JsonObject) -> None:
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if _mutable_pod_spec(old_spec) != _mutable_pod_spec(new_spec):
        c.forbidden("spec", POD_UPDATE_MSG)
        return
    old_tolerations = old_spec.get("tolerations") or []
    new_tolerations = new_spec.get("tolerations") or []
    if any(t not in new_tolerations for t in old_tolerations):
        c.forbidden(
            "spec.tolerations",
            "existing toleration can not be modified except its tolerationSeconds",
        )
    if new_spec.get("nodeName") != old_spec.get("nodeName"):
        c.forbidden("spec", POD_UPDATE_MSG)  # only the scheduler's binding sets it


def _selector(c: Causes, old: JsonObject, new: JsonObject) -> None:
    old_selector = (old.get("spec") or {}).get("selector")
    new_selector = (new.get("spec") or {}).get("selector")
    if old_selector != new_selector:
        c.invalid("spec.selector", new_selector, "field is immutable")


def _stateful_set(c: Causes, old: JsonObject, new: JsonObject) -> None:
    _selector(c, old, new)
    allowed = (
        "replicas",
        "ordinals",
        "template",
        "updateStrategy",
        "persistentVolumeClaimRetentionPolicy",
        "minReadySeconds",
    )

    def fixed(spec: JsonObject) -> JsonObject:
        return {k: v for k, v in spec.items() if k not in allowed and k != "selector"}

    if fixed(old.get("spec") or {}) != fixed(new.get("spec") or {}):
        c.forbidden("spec", STS_UPDATE_MSG)


def _service(c: Causes, old: JsonObject, new: JsonObject) -> None:
    old_ip = (old.get("spec") or {}).get("clusterIP")
    new_ip = (new.get("spec") or {}).get("clusterIP")
    if old_ip and new_ip != old_ip and (new.get("spec") or {}).get("type") != "ExternalName":
        c.invalid("spec.clusterIPs[0]", new_ip or "", "may not change once set")


def _immutable_data(c: Causes, old: JsonObject, new: JsonObject) -> None:
    if not old.get("immutable"):
        return
    if old.get("data") != new.get("data"):
        c.forbidden("data", "field is immutable when `immutable` is set")
    if old.get("binaryData") != new.get("binaryData"):
        c.forbidden("binaryData", "field is immutable when `immutable` is set")
    if not new.get("immutable"):
        c.forbidden("immutable", "field is immutable when `immutable` is set")


def _pvc(c: Causes, old: JsonObject, new: JsonObject) -> None:
    def fixed(spec: JsonObject) -> JsonObject:
        return {k: v for k, v in spec.items() if k not in ("resources", "volumeName")}

    if fixed(old.get("spec") or {}) != fixed(new.get("spec") or {}):
        c.forbidden(
            "spec",
            "spec is immutable after creation except resources.requests and "
            "volumeAttributesClassName for bound claims",
        )


def check(c: Causes, kind: str, old: JsonObject, new: JsonObject) -> None:
    if kind == "Pod":
        _pod(c, old, new)
    elif kind in ("Deployment", "ReplicaSet"):
        _selector(c, old, new)
    elif kind == "StatefulSet":
        _stateful_set(c, old, new)
    elif kind == "Service":
        _service(c, old, new)
    elif kind in ("ConfigMap", "Secret"):
        _immutable_data(c, old, new)
    elif kind == "PersistentVolumeClaim":
        _pvc(c, old, new)
