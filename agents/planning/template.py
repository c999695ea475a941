"""One typed view of a workload's pod template, for the planning rules.

The rules ask the same few questions of a Deployment or StatefulSet body — which containers,
which images, which labels, who reads ConfigMap `x` and how — and used to answer each by
walking the raw JSON, three times over for the ConfigMap question with three slightly
different answers. `PodTemplate.of(body)` reads the body once. A body from a cluster we have
never met may miss any part or hold the wrong type anywhere: a missing or malformed part reads
as empty, never raises, and the rule that needed it proposes less.

The raw container stays on each `Container` (`raw`): the rules that build a write patch from
the live container need every field as the cluster returned it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from agents.model import JsonObject


class ConfigMapWay(StrEnum):
    """How a container reads a ConfigMap. Env vars and `subPath` mounts are read once, at
    container start; a whole-volume mount is refreshed in place by the kubelet."""

    ENV = "env"  # a key, through `env[].valueFrom.configMapKeyRef`
    ENV_FROM = "envFrom"  # the whole map, through `envFrom[].configMapRef`
    SUB_PATH = "subPath"  # one file of a mounted volume
    VOLUME = "volume"  # a whole mounted volume (or a volume of the map nothing mounts)

    @property
    def at_start(self) -> bool:
        return self is not ConfigMapWay.VOLUME


#: When one workload reads a map several ways, the way that asks the most of a fix names it.
WAY_ORDER = (ConfigMapWay.ENV, ConfigMapWay.ENV_FROM, ConfigMapWay.SUB_PATH, ConfigMapWay.VOLUME)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigMapUse:
    config_map: str
    way: ConfigMapWay
    container: str | None  # None: a volume of the map that no container mounts
    key: str | None = None  # the key an `env` use reads; None: the whole map


@dataclass(frozen=True, slots=True, kw_only=True)
class Container:
    name: str
    image: str
    init: bool
    raw: JsonObject  # as the cluster returned it, for patches built from the live container


@dataclass(frozen=True, slots=True, kw_only=True)
class PodTemplate:
    labels: Mapping[str, str]  # spec.template.metadata.labels
    selector: Mapping[str, str]  # spec.selector.matchLabels
    containers: tuple[Container, ...]  # the app containers, in order
    init_containers: tuple[Container, ...]
    spec: JsonObject  # spec.template.spec, raw
    config_map_uses: tuple[ConfigMapUse, ...]

    @classmethod
    def of(cls, body: JsonObject) -> PodTemplate:
        """The view of a workload body (or of a tracked `{"spec": ...}` state)."""
        spec = _map(body.get("spec"))
        template = _map(spec.get("template"))
        pod = _map(template.get("spec"))
        app = tuple(_container(c, init=False) for c in _maps(pod.get("containers")))
        init = tuple(_container(c, init=True) for c in _maps(pod.get("initContainers")))
        return cls(
            labels=_labels(_map(template.get("metadata")).get("labels")),
            selector=_labels(_map(spec.get("selector")).get("matchLabels")),
            containers=app,
            init_containers=init,
            spec=pod,
            config_map_uses=_config_map_uses(pod, (*init, *app)),
        )

    def container(self, name: str) -> Container | None:
        return next((c for c in self.containers if c.name == name), None)

    @property
    def images(self) -> tuple[str, ...]:
        return tuple(c.image for c in self.containers)

    def config_maps(self) -> set[str]:
        """Every ConfigMap the pods read, by any container (init ones too) or volume."""
        return {use.config_map for use in self.config_map_uses}

    def uses_of(self, config_map: str, *, key: str | None = None) -> tuple[ConfigMapUse, ...]:
        """How the pods read `config_map`; with `key`, an `env` use counts only for that key
        (the whole-map uses read every key)."""
        return tuple(
            use
            for use in self.config_map_uses
            if use.config_map == config_map
            and (key is None or use.way is not ConfigMapWay.ENV or use.key == key)
        )

    def way_of(self, config_map: str, *, key: str | None = None) -> ConfigMapWay | None:
        """The one way that names how the workload reads `config_map` (`WAY_ORDER`)."""
        ways = {use.way for use in self.uses_of(config_map, key=key)}
        return next((way for way in WAY_ORDER if way in ways), None)


def _map(value: Any) -> JsonObject:
    return value if isinstance(value, dict) else {}


def _maps(value: Any) -> list[JsonObject]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _labels(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in _map(value).items()}


def _container(raw: JsonObject, *, init: bool) -> Container:
    return Container(
        name=str(raw.get("name") or ""), image=str(raw.get("image") or ""), init=init, raw=raw
    )


def _config_map_uses(
    pod: JsonObject, containers: tuple[Container, ...]
) -> tuple[ConfigMapUse, ...]:
    volumes = {
        str(v.get("name")): str(ref["name"])
        for v in _maps(pod.get("volumes"))
        if (ref := _map(v.get("configMap"))).get("name")
    }
    uses: list[ConfigMapUse] = []
    mounted: set[str] = set()
    for c in containers:
        for env in _maps(c.raw.get("env")):
            ref = _map(_map(env.get("valueFrom")).get("configMapKeyRef"))
            if ref.get("name"):
                key = str(ref["key"]) if ref.get("key") is not None else None
                uses.append(_use(str(ref["name"]), ConfigMapWay.ENV, c.name, key))
        for source in _maps(c.raw.get("envFrom")):
            ref = _map(source.get("configMapRef"))
            if ref.get("name"):
                uses.append(_use(str(ref["name"]), ConfigMapWay.ENV_FROM, c.name))
        for mount in _maps(c.raw.get("volumeMounts")):
            volume = str(mount.get("name"))
            if volume in volumes:
                mounted.add(volume)
                way = ConfigMapWay.SUB_PATH if mount.get("subPath") else ConfigMapWay.VOLUME
                uses.append(_use(volumes[volume], way, c.name))
    uses.extend(
        _use(name, ConfigMapWay.VOLUME, None)
        for volume, name in volumes.items()
        if volume not in mounted
    )
    return tuple(uses)


def _use(
    config_map: str, way: ConfigMapWay, container: str | None, key: str | None = None
) -> ConfigMapUse:
    return ConfigMapUse(config_map=config_map, way=way, container=container, key=key)
