"""The pod-template view the planning rules read workloads through: who reads a ConfigMap and
how, containers and labels, and bodies from clusters we have never met."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agents.planning.template import ConfigMapWay, PodTemplate


def _deployment(pod: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "spec": {
            "selector": {"matchLabels": {"app": "geo"}},
            "template": {"metadata": {"labels": {"app": "geo", "v": 2}}, "spec": pod},
            **spec,
        }
    }


READERS = _deployment(
    {
        "initContainers": [
            {"name": "migrate", "image": "m:1", "envFrom": [{"configMapRef": {"name": "db"}}]}
        ],
        "containers": [
            {
                "name": "geo",
                "image": "geo:2",
                "env": [
                    {
                        "name": "MODE",
                        "valueFrom": {"configMapKeyRef": {"name": "app", "key": "mode"}},
                    },
                    {"name": "PLAIN", "value": "x"},
                ],
                "volumeMounts": [
                    {"name": "flags", "mountPath": "/flags"},
                    {"name": "conf", "mountPath": "/etc/geo.yaml", "subPath": "geo.yaml"},
                ],
            },
            {"name": "sidecar", "image": "envoy:1"},
        ],
        "volumes": [
            {"name": "flags", "configMap": {"name": "flags"}},
            {"name": "conf", "configMap": {"name": "app"}},
            {"name": "spare", "configMap": {"name": "unused"}},
            {"name": "data", "emptyDir": {}},
        ],
    }
)


def test_every_way_a_config_map_is_read_is_found() -> None:
    view = PodTemplate.of(READERS)
    assert view.config_maps() == {"app", "flags", "db", "unused"}
    assert view.way_of("flags") is ConfigMapWay.VOLUME
    assert view.way_of("db") is ConfigMapWay.ENV_FROM  # by the init container
    assert view.way_of("unused") is ConfigMapWay.VOLUME  # a volume nothing mounts
    assert view.way_of("absent") is None
    # `app` is read as an env var (key `mode`) and as a subPath file: env names it.
    assert view.way_of("app") is ConfigMapWay.ENV
    assert view.way_of("app", key="mode") is ConfigMapWay.ENV
    # Another key of `app` reaches the pods only through the subPath file.
    assert view.way_of("app", key="other") is ConfigMapWay.SUB_PATH
    [env] = [u for u in view.uses_of("app") if u.way is ConfigMapWay.ENV]
    assert (env.container, env.key) == ("geo", "mode")
    assert ConfigMapWay.SUB_PATH.at_start and not ConfigMapWay.VOLUME.at_start


def test_containers_images_labels_and_selector() -> None:
    view = PodTemplate.of(READERS)
    assert [c.name for c in view.containers] == ["geo", "sidecar"]
    assert [c.name for c in view.init_containers] == ["migrate"]
    assert view.images == ("geo:2", "envoy:1")
    geo = view.container("geo")
    assert geo is not None and geo.raw is READERS["spec"]["template"]["spec"]["containers"][0]
    assert view.container("migrate") is None  # app containers only
    assert view.labels == {"app": "geo", "v": "2"} and view.selector == {"app": "geo"}


def test_a_tracked_spec_state_reads_like_a_body() -> None:
    tracked = {"spec": READERS["spec"]}
    assert PodTemplate.of(tracked) == PodTemplate.of(READERS)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
_keys = st.sampled_from(
    [
        "spec",
        "template",
        "metadata",
        "labels",
        "containers",
        "initContainers",
        "volumes",
        "env",
        "envFrom",
        "valueFrom",
        "configMapKeyRef",
        "configMapRef",
        "volumeMounts",
        "configMap",
        "name",
        "key",
        "subPath",
        "image",
        "selector",
        "matchLabels",
    ]
)
_shaped = st.recursive(
    st.none() | st.integers() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=5),
    max_leaves=30,
)


@given(
    body=st.dictionaries(_keys, _shaped, max_size=3) | st.dictionaries(st.text(), _json, max_size=3)
)
def test_a_body_of_any_shape_is_read_without_raising(body: dict[str, Any]) -> None:
    view = PodTemplate.of(body)
    for name in view.config_maps():
        assert view.uses_of(name) and view.way_of(name) is not None
    assert all(isinstance(c.name, str) and isinstance(c.image, str) for c in view.containers)
