"""Requests the engine never executes, because nothing can undo them.

They exist so a planner, a person or a language model can *ask* for them and get a clear,
recorded refusal — the incident then escalates with the runbook text these carry. Their
`desired` raises `Inadmissible` as a last line of defence; admission refuses them first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from agents.actions.base import Write, register
from agents.errors import Inadmissible
from agents.model import KubeObject, ObjectRef, Risk
from agents.ports import ClusterReader

#: Kinds whose deletion loses data or everything in them.
UNDELETABLE_KINDS = frozenset({"Namespace", "PersistentVolumeClaim", "PersistentVolume"})


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class ExecInContainer:
    kind: ClassVar[str] = "exec"
    target_kinds: ClassVar[frozenset[str]] = frozenset({"Pod"})
    has_inverse: ClassVar[bool] = False

    target: ObjectRef
    command: str
    container: str | None = None

    @property
    def risk(self) -> Risk:
        return Risk.HIGH

    def describe(self) -> str:
        return f"Run `{self.command}` in {self.target}"

    def desired(self, live: KubeObject, reader: ClusterReader) -> Write:
        raise Inadmissible("exec into a container has no inverse")


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteObject:
    """Deleting anything but a controller-owned pod (see `DeletePod`)."""

    kind: ClassVar[str] = "delete"
    target_kinds: ClassVar[frozenset[str]] = frozenset()
    has_inverse: ClassVar[bool] = False

    target: ObjectRef

    @property
    def risk(self) -> Risk:
        return Risk.HIGH

    def describe(self) -> str:
        return f"Delete {self.target}"

    def desired(self, live: KubeObject, reader: ClusterReader) -> Write:
        raise Inadmissible(f"deleting a {self.target.kind} cannot be undone")


@register
@dataclass(frozen=True, slots=True, kw_only=True)
class DataChange:
    """A change inside an application's data (a database user, a row, a cache): no snapshot of
    a Kubernetes object can undo it."""

    kind: ClassVar[str] = "data_change"
    target_kinds: ClassVar[frozenset[str]] = frozenset()
    has_inverse: ClassVar[bool] = False

    target: ObjectRef
    description: str

    @property
    def risk(self) -> Risk:
        return Risk.HIGH

    def describe(self) -> str:
        return f"Data change on {self.target}: {self.description}"

    def desired(self, live: KubeObject, reader: ClusterReader) -> Write:
        raise Inadmissible("data changes are outside what a transaction can undo")
