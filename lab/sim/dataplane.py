"""State that lives outside Kubernetes objects: database user tables and network conditions.

These are what no Kubernetes write can change. A Mongo user whose roles were revoked stays
revoked however often its clients restart; only a data-plane change (`grant_roles`) heals it.
That is how the lab tests that the bot escalates instead of acting when no undoable action can
help. Network conditions model `tc netem` on a workload's pods: bounded in lab time.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime

from lab.sim.model import AppModel

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class DbUser:
    user: str
    password: str
    roles: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class NetworkCondition:
    delay_ms: float = 0.0
    loss: float = 0.0  # 0..1 of packets (requests) lost
    until: datetime | None = None  # lab time at which it lifts by itself; None = until cleared


class AuthOutcome:
    """How a Mongo server answers a command, as text its drivers report."""

    OK = "ok"
    AUTH_FAILED = "auth_failed"
    UNAUTHORIZED = "unauthorized"


#: Built-in Mongo roles that allow each kind of command on a database.
_READ_ROLES = frozenset({"read", "readWrite", "dbOwner", "root", "readAnyDatabase"})
_WRITE_ROLES = frozenset({"readWrite", "dbOwner", "root", "readWriteAnyDatabase"})
_WRITE_COMMANDS = frozenset({"insert", "update", "delete", "findAndModify"})


class DataPlane:
    """Database users per (namespace, database instance) and network conditions per
    (namespace, workload). Thread-safe: the fault library writes while the lab ticks."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._dbs: dict[tuple[str, str], tuple[str, dict[str, DbUser]]] = {}
        self._net: dict[tuple[str, str], NetworkCondition] = {}
        self.version = 0  # bumped on every change, so readers can cache what they derive

    @classmethod
    def from_models(cls, models: Iterable[AppModel]) -> DataPlane:
        plane = cls()
        for model in models:
            for instance, db in model.databases.items():
                plane._dbs[(model.namespace, instance)] = (
                    db.database,
                    {
                        u.user: DbUser(user=u.user, password=u.password, roles=tuple(u.roles))
                        for u in db.users
                    },
                )
        return plane

    # ----------------------------------------------------------------------- databases

    def database_name(self, namespace: str, instance: str) -> str | None:
        with self._lock:
            entry = self._dbs.get((namespace, instance))
            return entry[0] if entry else None

    def users(self, namespace: str, instance: str) -> dict[str, DbUser]:
        with self._lock:
            entry = self._dbs.get((namespace, instance))
            return dict(entry[1]) if entry else {}

    def set_user(self, namespace: str, instance: str, user: DbUser) -> None:
        with self._lock:
            self._entry(namespace, instance)[1][user.user] = user
            self.version += 1
        logger.info("data plane: %s/%s user %s set", namespace, instance, user.user)

    def remove_user(self, namespace: str, instance: str, user: str) -> None:
        with self._lock:
            self._entry(namespace, instance)[1].pop(user, None)
            self.version += 1
        logger.info("data plane: %s/%s user %s removed", namespace, instance, user)

    def revoke_roles(self, namespace: str, instance: str, user: str) -> None:
        """`db.revokeRolesFromUser(user, [...all...])`: the user can log in, do nothing."""
        self._set_roles(namespace, instance, user, ())

    def grant_roles(self, namespace: str, instance: str, user: str, roles: Iterable[str]) -> None:
        self._set_roles(namespace, instance, user, tuple(roles))

    def _set_roles(self, namespace: str, instance: str, user: str, roles: tuple[str, ...]) -> None:
        with self._lock:
            users = self._entry(namespace, instance)[1]
            if user not in users:
                raise KeyError(f"{namespace}/{instance} has no user {user!r}")
            users[user] = replace(users[user], roles=roles)
            self.version += 1
        logger.info("data plane: %s/%s user %s roles → %s", namespace, instance, user, roles)

    def _entry(self, namespace: str, instance: str) -> tuple[str, dict[str, DbUser]]:
        entry = self._dbs.get((namespace, instance))
        if entry is None:
            raise KeyError(f"no database instance {namespace}/{instance}")
        return entry

    def authorize(
        self, namespace: str, instance: str, user: str, password: str, command: str
    ) -> str:
        """AuthOutcome of running `command` as `user` on the instance's database."""
        with self._lock:
            entry = self._dbs.get((namespace, instance))
            if entry is None:
                return AuthOutcome.AUTH_FAILED
            known = entry[1].get(user)
        if known is None or known.password != password:
            return AuthOutcome.AUTH_FAILED
        allowed = _WRITE_ROLES if command in _WRITE_COMMANDS else _READ_ROLES
        return AuthOutcome.OK if allowed.intersection(known.roles) else AuthOutcome.UNAUTHORIZED

    # ------------------------------------------------------------------------- network

    def set_network(
        self,
        namespace: str,
        service: str,
        *,
        delay_ms: float = 0.0,
        loss: float = 0.0,
        until: datetime | None = None,
    ) -> None:
        """Delay and/or drop traffic into the pods of `service` (a workload) until `until`."""
        if not 0.0 <= loss <= 1.0:
            raise ValueError("loss must be between 0 and 1")
        if delay_ms < 0:
            raise ValueError("delay_ms must not be negative")
        with self._lock:
            self._net[(namespace, service)] = NetworkCondition(
                delay_ms=delay_ms, loss=loss, until=until
            )
            self.version += 1
        logger.info(
            "data plane: network %s/%s delay=%sms loss=%s until=%s",
            namespace,
            service,
            delay_ms,
            loss,
            until,
        )

    def clear_network(self, namespace: str, service: str) -> None:
        with self._lock:
            self._net.pop((namespace, service), None)
            self.version += 1

    def network(self, namespace: str, service: str, now: datetime) -> NetworkCondition | None:
        with self._lock:
            cond = self._net.get((namespace, service))
            if cond is not None and cond.until is not None and now >= cond.until:
                del self._net[(namespace, service)]
                self.version += 1
                return None
            return cond
