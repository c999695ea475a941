"""Pods changed outside their controller: a pod whose containers differ from its owner's
template.

A controller-owned pod is made from its owner's pod template (a ReplicaSet's, a
StatefulSet's). Of a running pod's spec, only a container's image may be changed in place
(`kubectl set image pod/...`, `kubectl patch pod`, a chaos tool that swaps it for a pause
image), so a pod whose image — or command, or args — is not its template's was changed by
someone other than its controller. That is an operation error on *that pod*, not a fault of
the template: a wrong command in the template would fail every fresh pod, this one fails only
the pods that were touched. Deleting such a pod is the fix — its controller creates a new one
from the template — and undoing a delete is the controller's job.

Reads are bounded: only pods that look unwell are read in full (`MAX_PODS`), and the
namespace's ReplicaSets once, only when such a pod is owned by one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING

from agents.diagnosis.items import Item, make_item
from agents.diagnosis.observe import ContainerSpec, Observations, PodDrift, parse_containers
from agents.model import EvidenceKind, KubeObject, ObjectRef, PodState

if TYPE_CHECKING:
    from agents.diagnosis.collect import Collector

logger = logging.getLogger(__name__)

#: Pods read in full per diagnosis, at most.
MAX_PODS = 20
#: The container fields a pod may differ on from its template, in the order they are told.
FIELDS = ("image", "command", "args")


def _value(c: ContainerSpec, field: str) -> str:
    if field == "image":
        return c.image
    return str(list(c.command if field == "command" else c.args))


def drift(
    pod: str, owner: str, pod_containers: Sequence[ContainerSpec], template: Sequence[ContainerSpec]
) -> list[PodDrift]:
    """Where a pod's containers differ from its owner's template (matched by name; a pod
    container the template does not have is left alone: it was injected, e.g. a sidecar)."""
    by_name = {c.name: c for c in template}
    out = []
    for c in pod_containers:
        want = by_name.get(c.name)
        if want is None:
            continue
        for field in FIELDS:
            have, should = _value(c, field), _value(want, field)
            if have != should:
                out.append(
                    PodDrift(
                        pod=pod,
                        owner=owner,
                        container=c.name,
                        index=c.index,
                        field=field,
                        pod_value=have,
                        template_value=should,
                    )
                )
    return out


def _unwell(pod: PodState) -> bool:
    return not pod.ready or any(c.state != "running" or c.restart_count > 0 for c in pod.containers)


def read_drift(collector: Collector, obs: Observations) -> list[Item]:
    """Compare the unwell, controller-owned pods of the namespace with their owners'
    templates; record what differs in `obs.pod_drift` and as evidence."""
    chosen = _chosen_pods(obs)
    if not chosen:
        return []
    templates = _templates(collector, obs, {pod.owner for _, pod in chosen if pod.owner})
    items: list[Item] = []
    for service, pod in chosen:
        template = templates.get(pod.owner or "")
        if template is None:
            continue
        found = _read_pod_drift(collector, obs, pod, template)
        if not found:
            continue
        obs.pod_drift.setdefault(service, []).extend(found)
        key = f"podspec:{pod.name}"
        obs.cite(f"podspec:{service}", key)
        items.append(_drift_item(collector, obs, service, key, found))
    return items


def _chosen_pods(obs: Observations) -> list[tuple[str, PodState]]:
    """The unwell, controller-owned pods, by service name, at most `MAX_PODS` of them."""
    return [
        (service, pod)
        for service, pods in sorted(obs.pods.items())
        for pod in pods
        if pod.owner is not None and _unwell(pod)
    ][:MAX_PODS]


def _read_pod_drift(
    collector: Collector, obs: Observations, pod: PodState, template: Sequence[ContainerSpec]
) -> list[PodDrift]:
    """Read the pod in full and compare it with its template (nothing when it cannot be read)."""
    ref = ObjectRef(api_version="v1", kind="Pod", name=pod.name, namespace=obs.scope.namespace)
    body = collector.read_one(obs, f"pod {pod.name}", partial(collector.cluster.get, ref))
    if body is None:
        return []
    return drift(pod.name, pod.owner or "", _pod_containers(collector, body), template)


def _drift_item(
    collector: Collector, obs: Observations, service: str, key: str, found: list[PodDrift]
) -> Item:
    first = found[0]
    return make_item(
        key=key,
        kind=EvidenceKind.POD_STATE,
        source=f"pods/{obs.scope.namespace}/{first.pod}#{first.path}",
        summary=f"Pod {first.pod} differs from its {first.owner}'s template: "
        + "; ".join(
            f"{d.container} {d.field} {d.pod_value!r} (template {d.template_value!r})"
            for d in found[:3]
        )
        + " — changed outside its controller",
        service=service,
        detail="\n".join(
            f"{d.path}: pod {d.pod_value!r}, {d.owner} template {d.template_value!r}" for d in found
        ),
        redactor=collector.redactor,
        relevance=0.95,
    )


def _pod_containers(collector: Collector, pod: KubeObject) -> tuple[ContainerSpec, ...]:
    spec = pod.body.get("spec")
    return parse_containers(spec if isinstance(spec, dict) else {}, collector.redactor)


def _templates(
    collector: Collector, obs: Observations, owners: Iterable[str]
) -> Mapping[str, tuple[ContainerSpec, ...]]:
    """Owner ("Kind/name") → its template's containers, for the owners that can be read."""
    wanted = set(owners)
    out: dict[str, tuple[ContainerSpec, ...]] = {}
    for owner in wanted:
        kind, _, name = owner.partition("/")
        spec = obs.specs.get(name)
        if spec is not None and spec.kind == kind:
            out[owner] = spec.containers  # StatefulSet (and any workload read already)
    if any(o.startswith("ReplicaSet/") and o not in out for o in wanted):
        ns = obs.scope.namespace
        sets = collector.read_many(
            obs,
            "replica sets",
            lambda: collector.cluster.list_objects(
                api_version="apps/v1", kind="ReplicaSet", namespace=ns
            ),
        )
        for rs in sets:
            owner = f"ReplicaSet/{rs.name}"
            if owner in wanted:
                template = ((rs.body.get("spec") or {}).get("template") or {}).get("spec")
                out[owner] = parse_containers(
                    template if isinstance(template, dict) else {}, collector.redactor
                )
    return out
