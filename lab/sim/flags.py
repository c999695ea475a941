"""Feature flags as flagd serves them: read live from the flag ConfigMap (flagd watches its
file), in the OpenFeature/flagd JSON format of the OpenTelemetry demo's `demo.flagd.json`.

A flag's value is its `defaultVariant`'s entry in `variants` (targeting rules are not
modelled); a DISABLED or missing flag reads as off. When the file stops parsing, flagd keeps
serving the last good configuration and logs why, as the real daemon does.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from lab.kube.runtime import ClusterView
from lab.sim.model import FlagEffect, Flags

logger = logging.getLogger(__name__)


class FlagReader:
    def __init__(self, flags: Flags, namespace: str) -> None:
        self._flags = flags
        self._namespace = namespace
        self._values: dict[str, Any] = {}
        self._seen_version: str | None = None
        self.last_error: str | None = None  # the newest parse error, for flagd's log

    def refresh(self, view: ClusterView) -> None:
        source = self._flags.source
        cm = view.get("ConfigMap", self._namespace, source.configmap)
        version = None if cm is None else str(cm["metadata"].get("resourceVersion", id(cm)))
        if version == self._seen_version and version is not None:
            return
        self._seen_version = version
        if cm is None:
            self._values = {}
            self.last_error = f'configmap "{source.configmap}" not found'
            return
        text = (cm.get("data") or {}).get(source.key)
        if text is None:
            self.last_error = f"{source.key}: no such file in the mounted configmap"
            return
        try:
            doc = json.loads(text)
            flags = doc["flags"]
            if not isinstance(flags, dict):
                raise TypeError("flags is not an object")
        except (ValueError, KeyError, TypeError) as e:
            self.last_error = f"error parsing flag configuration {source.key}: {e}"
            logger.info("flagd: %s (keeping the last good configuration)", self.last_error)
            return
        self.last_error = None
        self._values = {name: _resolve(spec) for name, spec in flags.items()}

    def value(self, flag: str) -> Any:
        return self._values.get(flag)

    def active(self, program: str) -> list[tuple[FlagEffect, float]]:
        """The flag effects on `program` that are on now, with their strength (0..1)."""
        out: list[tuple[FlagEffect, float]] = []
        for name, effect in self._flags.effects.items():
            if effect.service != program:
                continue
            value = self._values.get(name)
            strength = _strength(value, effect)
            if strength > 0:
                out.append((effect, strength))
        return out


def _resolve(spec: Any) -> Any:
    if not isinstance(spec, dict) or spec.get("state", "ENABLED") != "ENABLED":
        return None
    variants = spec.get("variants")
    default = spec.get("defaultVariant")
    if not isinstance(variants, dict) or default not in variants:
        return None
    return variants[default]


def _strength(value: Any, effect: FlagEffect) -> float:
    if value is None or value is False:
        return 0.0
    if value is True:
        return 1.0
    if isinstance(value, int | float):
        if effect.value_is_ratio:
            return max(0.0, min(1.0, float(value)))
        return 1.0 if value else 0.0
    if isinstance(value, str):
        return 1.0 if value.lower() not in ("", "off", "false", "0") else 0.0
    return 0.0
