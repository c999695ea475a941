"""The apps' manifests and behaviour models load, agree with each other, and fail clearly."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from lab.apps import APPS, AppBundle, ManifestError, check_bundle, load_app, parse_manifests
from lab.sim.model import ModelError, load_model, parse_model


@pytest.mark.parametrize("name", APPS)
def test_app_manifests_are_real_kubernetes_objects(name: str) -> None:
    bundle = load_app(name)
    kinds = {m["kind"] for m in bundle.manifests}
    assert {"Namespace", "Deployment", "Service", "ConfigMap", "Secret"} <= kinds
    deployments = bundle.objects("Deployment")
    assert 15 <= len(deployments) <= 20
    replicas = {d["metadata"]["name"]: d["spec"]["replicas"] for d in deployments}
    assert replicas.pop("frontend") == 2
    assert set(replicas.values()) == {1}
    for dep in deployments:
        assert dep["metadata"]["namespace"] == bundle.namespace
        pod = dep["spec"]["template"]
        assert dep["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
        for container in pod["spec"]["containers"]:
            assert container["resources"]["limits"] and container["resources"]["requests"]
    assert check_bundle(bundle) == []


def test_hotel_reads_mongo_from_a_configmap_and_a_secret() -> None:
    geo = next(
        d
        for d in load_app("hotel-reservation").objects("Deployment")
        if d["metadata"]["name"] == "geo"
    )
    env = {e["name"]: e for e in geo["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["DB_ADDR"]["valueFrom"]["configMapKeyRef"] == {
        "name": "hotel-config",
        "key": "GEO_MONGO_ADDR",
    }
    assert env["DB_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "mongodb-credentials"


def test_shop_flags_are_off_by_default() -> None:
    import json

    cm = next(
        c
        for c in load_app("online-shop").objects("ConfigMap")
        if c["metadata"]["name"] == "flagd-config"
    )
    flags = json.loads(cm["data"]["demo.flagd.json"])["flags"]
    for name in (
        "adFailure",
        "cartFailure",
        "productCatalogFailure",
        "paymentFailure",
        "recommendationCacheFailure",
    ):
        assert flags[name]["defaultVariant"] == "off"


def _model(name: str = "hotel-reservation") -> dict[str, Any]:
    path = Path(__file__).resolve().parents[3] / "lab" / "apps" / name / "model.yaml"
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return data


@pytest.mark.parametrize(
    ("break_it", "message"),
    [
        (
            lambda m: m["services"]["geo"]["calls"][0].__setitem__("target", "mongo-geo"),
            "services.geo.calls[0].target: unknown service 'mongo-geo'",
        ),
        (
            lambda m: m["services"]["geo"].__setitem__("latency_ms", "fast"),
            "services.geo.latency_ms",
        ),
        (
            lambda m: m["services"]["geo"].__setitem__("colour", "red"),
            "services.geo.colour: Extra inputs are not permitted",
        ),
        (
            lambda m: m["services"]["mongodb-geo"].__setitem__(
                "calls", [{"target": "geo", "port": 8083}]
            ),
            "call graph has a cycle",
        ),
        (
            lambda m: m["services"]["rate"]["calls"].reverse(),
            "fallback_for: 'memcached-rate' is not an earlier call of rate",
        ),
        (
            lambda m: m["entry"].__setitem__("target", "nginx"),
            "entry.target: unknown service 'nginx'",
        ),
        (
            lambda m: m["services"]["geo"].__setitem__("binary", "/go/bin/geo2"),
            "services.geo.binary: '/go/bin/geo2' is in no image",
        ),
        (lambda m: m["services"]["geo"].pop("listen"), "services.geo.listen: Field required"),
    ],
)
def test_a_broken_model_names_the_field_and_the_reason(break_it: Any, message: str) -> None:
    data = _model()
    break_it(data)
    with pytest.raises(ModelError) as info:
        parse_model(data, source="model.yaml")
    assert message in str(info.value)
    assert str(info.value).startswith("model.yaml:")


def test_model_files_that_are_not_yaml_or_not_mappings(tmp_path: Path) -> None:
    bad = tmp_path / "model.yaml"
    bad.write_text("app: [unclosed")
    with pytest.raises(ModelError, match="not valid YAML"):
        load_model(bad)
    bad.write_text("- a list")
    with pytest.raises(ModelError, match="expected a mapping"):
        load_model(bad)
    with pytest.raises(ModelError, match="cannot read"):
        load_model(tmp_path / "missing.yaml")


def test_manifest_errors_are_clear() -> None:
    two_docs = (
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n"
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {}\n"
    )
    with pytest.raises(ManifestError, match=r"document 2 \(Deployment\): missing metadata.name"):
        parse_manifests(two_docs)
    with pytest.raises(ManifestError, match="missing kind"):
        parse_manifests("apiVersion: v1\nmetadata: {name: a}\n")
    with pytest.raises(ManifestError, match="unknown app"):
        load_app("sock-shop")


def test_disagreement_between_manifests_and_model_is_reported() -> None:
    bundle = load_app("hotel-reservation")
    manifests = [copy.deepcopy(m) for m in bundle.manifests]
    for m in manifests:
        if m["kind"] == "Deployment" and m["metadata"]["name"] == "geo":
            m["spec"]["template"]["spec"]["containers"][0]["image"] = "ghcr.io/lab/hotel/geo:7"
        if m["kind"] == "Service" and m["metadata"]["name"] == "rate":
            m["spec"]["ports"][0]["targetPort"] = 9999
    broken = AppBundle(
        name=bundle.name, namespace=bundle.namespace, manifests=tuple(manifests), model=bundle.model
    )
    problems = "\n".join(check_bundle(broken))
    assert "Deployment/geo: image 'ghcr.io/lab/hotel/geo:7' is not in the model" in problems
    assert "Service/rate: no port targets 8084, where rate listens" in problems
