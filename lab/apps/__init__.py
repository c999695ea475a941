"""The lab's simulated apps, each a folder of real Kubernetes manifests plus a behaviour model.

    lab/apps/<app>/manifests.yaml   multi-document YAML, exactly what `kubectl apply -f` takes
    lab/apps/<app>/model.yaml       what the programs do (lab/sim/model.py)

`load_app(name)` reads both and cross-checks them (every modelled workload has a Deployment
labelled with the model's `service_label`, every image a container uses is in the model's
registry, Services point at the ports the programs listen on), so that a typo in either file
fails loudly here instead of as a puzzling symptom in a scenario.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import yaml

from agents.model import JsonObject
from lab.sim.model import SAFE_LOADER, AppModel, load_model

logger = logging.getLogger(__name__)


APPS_DIR = Path(__file__).resolve().parent
APPS: tuple[str, ...] = ("hotel-reservation", "online-shop")

_CLUSTER_SCOPED = frozenset({"Namespace", "Node", "ClusterRole", "ClusterRoleBinding"})


class ManifestError(ValueError):
    """An app's manifests are invalid or disagree with its model."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AppBundle:
    name: str
    namespace: str
    manifests: tuple[JsonObject, ...]
    model: AppModel

    def objects(self, kind: str) -> list[JsonObject]:
        return [m for m in self.manifests if m.get("kind") == kind]


def app_dir(name: str) -> Path:
    if name not in APPS:
        raise ManifestError(f"unknown app {name!r}; known apps: {', '.join(APPS)}")
    return APPS_DIR / name


def parse_manifests(text: str, *, source: str = "<manifests>") -> list[JsonObject]:
    """Multi-document YAML → object dicts, each checked for apiVersion, kind and name."""
    try:
        docs = [d for d in yaml.load_all(text, Loader=SAFE_LOADER) if d is not None]
    except yaml.YAMLError as e:
        raise ManifestError(f"{source}: not valid YAML: {e}") from e
    out: list[JsonObject] = []
    for i, doc in enumerate(docs):
        where = f"{source}: document {i + 1}"
        if not isinstance(doc, dict):
            raise ManifestError(f"{where}: expected a mapping, got {type(doc).__name__}")
        for key in ("apiVersion", "kind"):
            if not isinstance(doc.get(key), str) or not doc[key]:
                raise ManifestError(f"{where}: missing {key}")
        meta = doc.get("metadata")
        if not isinstance(meta, dict) or not meta.get("name"):
            raise ManifestError(f"{where} ({doc['kind']}): missing metadata.name")
        out.append(doc)
    return out


def load_app(name: str) -> AppBundle:
    folder = app_dir(name)
    model = load_model(folder / "model.yaml")
    path = folder / "manifests.yaml"
    manifests = parse_manifests(path.read_text(encoding="utf-8"), source=str(path))
    bundle = AppBundle(
        name=name, namespace=model.namespace, manifests=tuple(manifests), model=model
    )
    problems = check_bundle(bundle)
    if problems:
        raise ManifestError(f"{folder}: manifests disagree with the model:\n" + "\n".join(problems))
    return bundle


def check_bundle(bundle: AppBundle) -> list[str]:
    """Every disagreement between an app's manifests and its model, as readable lines."""
    model = bundle.model
    problems: list[str] = []
    for obj in bundle.manifests:
        kind, meta = obj["kind"], obj["metadata"]
        if kind not in _CLUSTER_SCOPED and meta.get("namespace") != bundle.namespace:
            problems.append(f"{kind}/{meta['name']}: namespace must be {bundle.namespace!r}")
    known_images = {f"{image.repository}:{tag}" for image in model.images for tag in image.tags}
    deployments: dict[str, JsonObject] = {}
    for dep in bundle.objects("Deployment"):
        template = dep.get("spec", {}).get("template", {})
        workload = template.get("metadata", {}).get("labels", {}).get(model.service_label)
        name = dep["metadata"]["name"]
        if workload is None:
            problems.append(f"Deployment/{name}: pod template lacks label {model.service_label}")
            continue
        deployments[workload] = dep
        for container in template.get("spec", {}).get("containers", []):
            if container.get("image") not in known_images:
                problems.append(
                    f"Deployment/{name}: image {container.get('image')!r} is not in the model"
                )
    for service in model.services:
        if service not in deployments:
            problems.append(f"services.{service}: no Deployment labelled {model.service_label}")
    for svc in bundle.objects("Service"):
        name = svc["metadata"]["name"]
        program = model.services.get(name)
        if program is None:
            continue
        targets = {p.get("targetPort", p.get("port")) for p in svc.get("spec", {}).get("ports", [])}
        if program.listen.port not in targets:
            problems.append(
                f"Service/{name}: no port targets {program.listen.port}, where {name} listens"
            )
    if not any(s["metadata"]["name"] == model.entry.target for s in bundle.objects("Service")):
        problems.append(f"entry.target: no Service named {model.entry.target!r}")
    return problems
