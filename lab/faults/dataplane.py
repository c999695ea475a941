"""Faults outside Kubernetes objects: a database user's roles revoked, a slow or lossy network.

No Kubernetes write heals them — restarting the clients or the database, rolling back, scaling:
the user stays revoked (its data outlives the pods) and `tc netem` rules sit below the pod. They
test that Stratus escalates with a runbook instead of acting. The network faults are
time-bounded like a chaos experiment: they lift by themselves at `expires_at`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, ClassVar

from agents.model import Category, FaultLevel, FaultType
from lab.faults.base import Fault, FaultContext, targets
from lab.faults.errors import BadParameter
from lab.faults.model import DURATION, Injection, Param

if TYPE_CHECKING:
    from lab.sim.world import LabWorld

AUTH = Category(level=FaultLevel.APPLICATION, type=FaultType.AUTHENTICATION)
NETWORK = Category(level=FaultLevel.VIRTUALIZATION, type=FaultType.NETWORK)


class RevokedCredentials(Fault):
    id = "revoked-db-credentials"
    description = "revoke a database user's roles inside the database (no undoable fix)"
    category = AUTH
    undoable_fix = False
    params = (
        Param(
            name="user",
            kind=str,
            help="the database user to revoke",
            default="the user the app's service connects as",
        ),
    )
    default_targets = targets({"hotel-reservation": "mongodb-geo"})

    def apply(self, ctx: FaultContext) -> None:
        plane = ctx.world.dataplane
        users = plane.users(ctx.namespace, ctx.target)
        if not users:
            raise BadParameter(f"{self.id}: {ctx.target} is not a database with users")
        if "user" not in ctx.params:
            service_users = [u for u in sorted(users) if "root" not in users[u].roles]
            if not service_users:
                raise BadParameter(f"{self.id}: {ctx.target} has no service user")
            ctx.params["user"] = service_users[0]
        user = str(ctx.params["user"])
        if user not in users:
            raise BadParameter(
                f"parameter user: {ctx.target} has no user {user!r} (users: {', '.join(users)})"
            )
        roles = users[user].roles
        if not roles:
            raise BadParameter(f"{self.id}: {user} on {ctx.target} already has no roles")
        # Kept as a parameter so that `recover` can grant exactly these back.
        ctx.params["roles"] = ",".join(roles)
        plane.revoke_roles(ctx.namespace, ctx.target, user)
        ctx.changes.append(
            f"database {ctx.target}: db.revokeRolesFromUser({user!r}, [{', '.join(roles)}])"
        )

    def blockers(self, world: LabWorld, injection: Injection) -> list[str]:
        user = str(injection.params["user"])
        known = world.dataplane.users(injection.namespace, injection.target).get(user)
        if known is None:
            return [f"database user {user} on {injection.target} no longer exists"]
        if not known.roles:
            return [f"database user {user} on {injection.target} still has no roles"]
        return []

    def recover(self, world: LabWorld, injection: Injection) -> tuple[str, ...]:
        user = str(injection.params["user"])
        roles = [r for r in str(injection.params["roles"]).split(",") if r]
        world.dataplane.grant_roles(injection.namespace, injection.target, user, roles)
        return (f"database {injection.target}: granted {user} roles {', '.join(roles)}",)


class _Network(Fault):
    category = NETWORK
    undoable_fix = False

    def _set(self, ctx: FaultContext, *, delay_ms: float, loss: float, what: str) -> None:
        duration = float(ctx.params.setdefault(DURATION.name, 300.0))
        ctx.expires_at = ctx.now + timedelta(seconds=duration)
        ctx.world.dataplane.set_network(
            ctx.namespace, ctx.target, delay_ms=delay_ms, loss=loss, until=ctx.expires_at
        )
        ctx.changes.append(
            f"network into {ctx.target}'s pods: {what} for {duration:g}s "
            f"(until {ctx.expires_at:%H:%M:%S})"
        )

    def blockers(self, world: LabWorld, injection: Injection) -> list[str]:
        now = world.clock.now()
        condition = world.dataplane.network(injection.namespace, injection.target, now)
        if condition is None:
            return []
        until = f" until {condition.until:%H:%M:%S}" if condition.until else ""
        return [f"network condition on {injection.target} still in force{until}"]

    def recover(self, world: LabWorld, injection: Injection) -> tuple[str, ...]:
        world.dataplane.clear_network(injection.namespace, injection.target)
        return (f"network into {injection.target}'s pods: cleared",)


class NetworkDelay(_Network):
    id = "network-delay"
    description = "delay packets into a service's pods for a while (tc netem; no undoable fix)"
    params = (
        Param(
            name="delay_ms",
            kind=float,
            help="added latency per call",
            default="600 (hotel-reservation), 1000 (online-shop)",
            minimum=1,
            maximum=60_000,
        ),
        DURATION,
    )
    default_targets = targets({"hotel-reservation": "rate", "online-shop": "currency"})
    _defaults: ClassVar[Mapping[str, float]] = {"hotel-reservation": 600.0, "online-shop": 1000.0}

    def apply(self, ctx: FaultContext) -> None:
        delay = float(ctx.params.setdefault("delay_ms", self._defaults.get(ctx.bundle.name, 600)))
        self._set(ctx, delay_ms=delay, loss=0.0, what=f"+{delay:g} ms delay")


class NetworkLoss(_Network):
    id = "network-loss"
    description = "drop a share of packets into a service's pods for a while (no undoable fix)"
    params = (
        Param(
            name="loss",
            kind=float,
            help="share of calls lost (0..1)",
            default="0.3",
            minimum=0.01,
            maximum=1.0,
        ),
        DURATION,
    )
    default_targets = targets({"hotel-reservation": "geo", "online-shop": "product-catalog"})

    def apply(self, ctx: FaultContext) -> None:
        loss = float(ctx.params.setdefault("loss", 0.3))
        self._set(ctx, delay_ms=0.0, loss=loss, what=f"{loss:.0%} loss")
