"""Application settings gone wrong: a database host in a ConfigMap, a feature flag turned on.

The wrong host is read only when a process starts (env from `configMapKeyRef`), so the
injector also runs `kubectl rollout restart`, as the operator who edited the ConfigMap would to
"apply" it. A flag is read live by flagd from its ConfigMap, so editing it is enough.
"""

from __future__ import annotations

import json
from typing import Any

from agents.model import Category, FaultLevel, FaultType
from lab.faults.base import Fault, FaultContext, targets
from lab.faults.errors import BadParameter
from lab.faults.kubeops import deployment_of, main_container, rollout_restart
from lab.faults.model import GroundTruth, Param
from lab.sim.kubeobj import parse_address
from lab.sim.model import Wire

APP_MISCONFIG = Category(level=FaultLevel.APPLICATION, type=FaultType.MISCONFIGURATION)

_DATABASES = (Wire.MONGODB, Wire.REDIS, Wire.MEMCACHED)


class WrongDatabaseHost(Fault):
    id = "wrong-database-host"
    description = "edit a ConfigMap's database address to a host that does not resolve, restart"
    category = APP_MISCONFIG
    params = (
        Param(
            name="address",
            kind=str,
            help="the new host:port",
            default="the database's Service name with '-primary' appended",
        ),
    )
    default_targets = targets({"hotel-reservation": "geo", "online-shop": "cart"})

    def apply(self, ctx: FaultContext) -> None:
        program = ctx.bundle.model.services[ctx.target]
        call = next((c for c in program.calls if c.protocol in _DATABASES and c.address_env), None)
        if call is None or call.address_env is None:
            raise BadParameter(f"{self.id}: {ctx.target} reads no database address from its env")
        dep = deployment_of(ctx)
        container = main_container(dep)
        env: dict[str, Any] = next(
            (e for e in container.get("env") or [] if e.get("name") == call.address_env), {}
        )
        ref = ((env.get("valueFrom") or {}).get("configMapKeyRef")) or {}
        if not ref.get("name") or not ref.get("key"):
            raise BadParameter(
                f"{self.id}: {ctx.target} does not take ${call.address_env} from a ConfigMap"
            )
        cm_name, key = str(ref["name"]), str(ref["key"])
        old = str((ctx.get("ConfigMap", cm_name).get("data") or {}).get(key, ""))
        if "address" not in ctx.params:
            host, _, port = parse_address(old or f"{call.target}:{call.port}")
            ctx.params["address"] = f"{host}-primary:{port or call.port}"
        address = str(ctx.params["address"])
        if address == old:
            raise BadParameter(f"{self.id}: {key} is already {address}")
        ctx.patch(
            "ConfigMap",
            cm_name,
            {"data": {key: address}},
            patch_type="merge",
            change=f"ConfigMap/{cm_name}: data.{key} {old} → {address}",
        )
        rollout_restart(ctx, dep["metadata"]["name"])


class FeatureFlag(Fault):
    id = "feature-flag"
    description = "turn on a failure feature flag in flagd's ConfigMap"
    category = APP_MISCONFIG
    params = (
        Param(
            name="flag",
            kind=str,
            help="the flag to turn on (sets the target to the service it breaks)",
            default="the flag that breaks the target",
        ),
        Param(
            name="variant",
            kind=str,
            help="the variant to make default",
            default="'on', else the strongest variant",
        ),
    )
    default_targets = targets({"online-shop": "cart"})

    def apply(self, ctx: FaultContext) -> None:
        flags = ctx.bundle.model.flags
        if flags is None:
            raise BadParameter(f"{self.id}: {ctx.bundle.name} has no feature flags")
        if "flag" in ctx.params:
            flag = str(ctx.params["flag"])
            if flag not in flags.effects:
                known = ", ".join(sorted(flags.effects))
                raise BadParameter(f"parameter flag: unknown flag {flag!r} (flags: {known})")
            ctx.target = flags.effects[flag].service
        else:
            found = [f for f, e in sorted(flags.effects.items()) if e.service == ctx.target]
            if not found:
                raise BadParameter(f"{self.id}: no flag breaks {ctx.target}")
            flag = ctx.params["flag"] = found[0]
        cm = ctx.get("ConfigMap", flags.source.configmap)
        text = str((cm.get("data") or {}).get(flags.source.key, ""))
        try:
            doc: dict[str, Any] = json.loads(text)
            spec: dict[str, Any] = doc["flags"][flag]
        except (ValueError, KeyError, TypeError) as e:
            raise BadParameter(f"{self.id}: {flags.source.key} has no flag {flag!r}: {e}") from e
        variants = spec.get("variants") or {}
        variant = str(ctx.params.get("variant") or _strongest(variants))
        if variant not in variants:
            raise BadParameter(
                f"parameter variant: {flag} has no variant {variant!r} "
                f"(variants: {', '.join(variants)})"
            )
        ctx.params["variant"] = variant
        old = spec.get("defaultVariant")
        spec["defaultVariant"] = variant
        spec["state"] = "ENABLED"
        ctx.patch(
            "ConfigMap",
            flags.source.configmap,
            {"data": {flags.source.key: json.dumps(doc, indent=2) + "\n"}},
            patch_type="merge",
            change=f"ConfigMap/{flags.source.configmap}: flag {flag} defaultVariant "
            f"{old} → {variant}",
        )

    def truth(self, ctx: FaultContext) -> GroundTruth:
        flags = ctx.bundle.model.flags
        daemon = flags.source.service if flags is not None else ""
        return GroundTruth(
            namespace=ctx.namespace,
            root_causes=(ctx.target, daemon) if daemon else (ctx.target,),
            category=APP_MISCONFIG,
            undoable_fix=True,
        )


def _strongest(variants: dict[str, Any]) -> str:
    if "on" in variants:
        return "on"
    numeric = {k: v for k, v in variants.items() if isinstance(v, int | float) and k != "off"}
    if numeric:
        return max(numeric, key=lambda k: numeric[k])
    return next((k for k in variants if k != "off"), "on")
