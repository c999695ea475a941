"""Collateral drift on constructed states: what the agent left changed, field by field,
leaving out a fault's own value left in place, a fault put back, and the restart stamp."""

from __future__ import annotations

import copy
from typing import Any

from lab.bench.drift import changed, collateral, flatten, object_fields

Obj = dict[str, Any]


def _deployment(image: str = "geo:1.0", cpu: str = "1", stamp: str | None = None) -> Obj:
    annotations = {"kubectl.kubernetes.io/restartedAt": stamp} if stamp else {}
    return {
        "metadata": {"name": "geo"},
        "spec": {
            "replicas": 1,
            "template": {
                "metadata": {"annotations": annotations},
                "spec": {
                    "containers": [
                        {"name": "geo", "image": image, "resources": {"limits": {"cpu": cpu}}}
                    ]
                },
            },
        },
    }


def _state(**objects: Obj) -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for key, obj in objects.items():
        kind = "ConfigMap" if key.startswith("cm_") else "Deployment"
        out[(kind, obj["metadata"]["name"])] = object_fields(kind, obj)
    return out


def test_named_list_items_are_keyed_by_name() -> None:
    fields = flatten({"containers": [{"name": "geo", "image": "x"}], "ports": [80]}, "spec")
    assert fields == {
        "spec.containers[geo].name": "geo",
        "spec.containers[geo].image": "x",
        "spec.ports[0]": 80,
    }


def test_a_constructed_case_counts_each_field_the_agent_left_changed() -> None:
    before = _state(
        geo=_deployment(),
        search=_deployment() | {"metadata": {"name": "search"}},
        cm_geo={"metadata": {"name": "geo-config"}, "data": {"db": "mongo:27017"}},
    )
    # The fault: geo's CPU limit 1 → 0.1, geo-config's db key broken.
    faulted_geo = _deployment(cpu="100m")
    after_fault = _state(
        geo=faulted_geo,
        search=_deployment() | {"metadata": {"name": "search"}},
        cm_geo={"metadata": {"name": "geo-config"}, "data": {"db": "nowhere:1"}},
    )
    faulted = changed(before, after_fault)
    assert set(faulted) == {
        ("Deployment", "geo", "spec.template.spec.containers[geo].resources.limits.cpu"),
        ("ConfigMap", "geo-config", "data.db"),
    }
    # The agent raised the limit past what it was (1 → 0.1 → 8), restarted geo, rolled the
    # decoy search to another image, and put the ConfigMap key back.
    end_geo = _deployment(cpu="8", stamp="2026-01-01T00:00:00Z")
    search = _deployment(image="geo:0.9") | {"metadata": {"name": "search"}}
    search["metadata"] = {"name": "search"}
    end = _state(
        geo=end_geo,
        search=search,
        cm_geo={"metadata": {"name": "geo-config"}, "data": {"db": "mongo:27017"}},
    )
    written = [("Deployment", "geo"), ("Deployment", "search"), ("ConfigMap", "geo-config")]
    lines = collateral(before, end, written=written, faulted=faulted)
    assert lines == [
        "Deployment/geo spec.template.spec.containers[geo].resources.limits.cpu: 1 → 8",
        "Deployment/search spec.template.spec.containers[geo].image: geo:1.0 → geo:0.9",
    ]


def test_a_fault_left_in_place_or_an_object_not_written_is_not_drift() -> None:
    before = _state(geo=_deployment())
    after = _state(geo=_deployment(cpu="100m"))
    faulted = changed(before, after)
    assert collateral(before, after, written=[("Deployment", "geo")], faulted=faulted) == []
    other = _state(geo=_deployment(image="geo:2.0"))
    assert collateral(before, other, written=[], faulted={}) == []


def test_a_field_the_agent_removed_or_added_is_drift() -> None:
    before = _state(geo=_deployment())
    geo = copy.deepcopy(_deployment())
    geo["spec"]["template"]["spec"]["nodeSelector"] = {"disk": "ssd"}
    lines = collateral(before, _state(geo=geo), written=[("Deployment", "geo")], faulted={})
    assert lines == ["Deployment/geo spec.template.spec.nodeSelector.disk: <absent> → ssd"]
