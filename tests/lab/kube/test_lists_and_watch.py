"""Conformance: label and field selectors, limit/continue, watches (replay, 410, timeouts)."""

from __future__ import annotations

import threading

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from tests.lab.kube.conftest import Target, deployment, eventually, wait_rolled_out


def _config_map(name: str, labels: dict[str, str]) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels=labels))


@pytest.fixture
def labelled(core: client.CoreV1Api, ns: str) -> str:
    for name, labels in {
        "a": {"tier": "web", "env": "prod"},
        "b": {"tier": "db", "env": "prod"},
        "c": {"tier": "cache"},
        "d": {"env": "dev"},
    }.items():
        core.create_namespaced_config_map(ns, _config_map(name, labels))
    return ns


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("tier=web", {"a"}),
        ("tier==db", {"b"}),
        ("tier!=web", {"b", "c", "d", "kube-root-ca.crt"}),
        ("tier in (web,cache)", {"a", "c"}),
        ("tier notin (web,cache)", {"b", "d", "kube-root-ca.crt"}),
        ("env", {"a", "b", "d"}),
        ("!env", {"c", "kube-root-ca.crt"}),
        ("env=prod,tier!=db", {"a"}),
    ],
)
def test_label_selectors(
    core: client.CoreV1Api, labelled: str, selector: str, expected: set[str]
) -> None:
    items = core.list_namespaced_config_map(labelled, label_selector=selector).items
    assert {i.metadata.name for i in items} == expected


def test_invalid_label_selector_is_400(core: client.CoreV1Api, ns: str) -> None:
    with pytest.raises(ApiException) as info:
        core.list_namespaced_config_map(ns, label_selector="a in (b")
    assert info.value.status == 400


def test_field_selectors_on_name_phase_and_node(
    core: client.CoreV1Api, apps: client.AppsV1Api, target: Target, labelled: str
) -> None:
    names = core.list_namespaced_config_map(labelled, field_selector="metadata.name=b").items
    assert [i.metadata.name for i in names] == ["b"]
    others = core.list_namespaced_config_map(labelled, field_selector="metadata.name!=b").items
    assert "b" not in {i.metadata.name for i in others} and len(others) >= 4
    apps.create_namespaced_deployment(labelled, deployment("web", replicas=2))
    wait_rolled_out(apps, labelled, "web", target.timeout_s)
    running = core.list_namespaced_pod(labelled, field_selector="status.phase=Running").items
    assert len(running) == 2
    node = running[0].spec.node_name
    on_node = core.list_namespaced_pod(labelled, field_selector=f"spec.nodeName={node}").items
    assert node and all(p.spec.node_name == node for p in on_node) and on_node
    assert not core.list_namespaced_pod(labelled, field_selector="status.phase=Failed").items


def test_event_field_selectors(
    core: client.CoreV1Api, apps: client.AppsV1Api, target: Target, ns: str
) -> None:
    apps.create_namespaced_deployment(ns, deployment("web", replicas=1))
    wait_rolled_out(apps, ns, "web", target.timeout_s)
    events = core.list_namespaced_event(
        ns, field_selector="involvedObject.kind=Deployment,involvedObject.name=web"
    ).items
    assert events and all(e.involved_object.name == "web" for e in events)
    assert any(e.reason == "ScalingReplicaSet" for e in events)
    normal = core.list_namespaced_event(ns, field_selector="type=Normal").items
    assert normal and all(e.type == "Normal" for e in normal)
    assert core.list_namespaced_event(ns, field_selector="reason=ScalingReplicaSet").items


def test_unknown_field_selector_is_400(core: client.CoreV1Api, ns: str) -> None:
    with pytest.raises(ApiException) as info:
        core.list_namespaced_config_map(ns, field_selector="spec.nothing=x")
    assert info.value.status == 400


def test_limit_and_continue_page_through_everything(core: client.CoreV1Api, ns: str) -> None:
    for i in range(7):
        core.create_namespaced_config_map(ns, _config_map(f"cm-{i}", {"page": "yes"}))
    seen: list[str] = []
    token = None
    pages = 0
    while True:
        page = core.list_namespaced_config_map(
            ns, label_selector="page=yes", limit=3, _continue=token
        )
        pages += 1
        seen += [i.metadata.name for i in page.items]
        assert len(page.items) <= 3
        token = page.metadata._continue
        if not token:
            break
    assert pages == 3
    assert seen == [f"cm-{i}" for i in range(7)]


def test_watch_streams_added_modified_deleted(core: client.CoreV1Api, ns: str) -> None:
    start = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespaced_config_map(ns, _config_map("w", {"x": "1"}))
    core.patch_namespaced_config_map("w", ns, {"data": {"k": "v"}})
    core.delete_namespaced_config_map("w", ns)
    seen = []
    stream = watch.Watch()
    for event in stream.stream(
        core.list_namespaced_config_map, ns, resource_version=start, timeout_seconds=5
    ):
        if event["object"].metadata.name == "w":
            seen.append((event["type"], event["object"].metadata.name))
        if event["type"] == "DELETED":
            stream.stop()
    assert seen == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


def test_watch_without_resource_version_starts_with_current_state(
    core: client.CoreV1Api, labelled: str
) -> None:
    stream = watch.Watch()
    names = []
    for event in stream.stream(
        core.list_namespaced_config_map, labelled, label_selector="env", timeout_seconds=2
    ):
        assert event["type"] == "ADDED"
        names.append(event["object"].metadata.name)
        if len(names) == 3:
            stream.stop()
    assert sorted(names) == ["a", "b", "d"]


def test_watch_sees_live_changes_and_selector_exits(core: client.CoreV1Api, ns: str) -> None:
    core.create_namespaced_config_map(ns, _config_map("live", {"watched": "yes"}))
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    seen: list[str] = []

    def writer() -> None:
        # Written from rv on, so the watch replays whatever it connects too late to see live.
        core.patch_namespaced_config_map("live", ns, {"data": {"a": "b"}})
        core.patch_namespaced_config_map("live", ns, {"metadata": {"labels": {"watched": "no"}}})

    thread = threading.Thread(target=writer)
    thread.start()
    stream = watch.Watch()
    try:
        for event in stream.stream(
            core.list_namespaced_config_map,
            ns,
            resource_version=rv,
            label_selector="watched=yes",
            timeout_seconds=10,
        ):
            seen.append(event["type"])
            if event["type"] == "DELETED":
                stream.stop()
    finally:
        thread.join()
    # leaving the selector is reported as DELETED, as the real watch cache does
    assert seen[-2:] == ["MODIFIED", "DELETED"]


def test_watch_from_a_compacted_resource_version_is_410(core: client.CoreV1Api, ns: str) -> None:
    with pytest.raises(ApiException) as info:
        for _ in watch.Watch().stream(
            core.list_namespaced_config_map, ns, resource_version="1", timeout_seconds=5
        ):
            pass
    assert info.value.status == 410


def test_watch_timeout_ends_the_stream(core: client.CoreV1Api, ns: str) -> None:
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    events = list(
        watch.Watch().stream(
            core.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=1
        )
    )
    assert events == []


def test_watch_of_pods_follows_a_rollout(
    core: client.CoreV1Api, apps: client.AppsV1Api, target: Target, ns: str
) -> None:
    rv = core.list_namespaced_pod(ns).metadata.resource_version
    apps.create_namespaced_deployment(ns, deployment("web", replicas=1))
    stream = watch.Watch()

    def running() -> bool:
        for event in stream.stream(
            core.list_namespaced_pod, ns, resource_version=rv, timeout_seconds=int(target.timeout_s)
        ):
            pod = event["object"]
            if pod.status.phase == "Running" and pod.status.container_statuses[0].ready:
                stream.stop()
                return True
        return False

    assert eventually(running, timeout_s=target.timeout_s, what="a Running pod event")
