"""The suspect: which object, and which field of it, the diagnosis thinks is wrong.

The planner turns a diagnosis into typed actions, so it needs more than a service name: it
needs `Service/hotel/geo` and `spec.ports[0].targetPort`, and ideally the value to go back
to. A suspect travels inside the diagnosis as one `Evidence` whose `source` is

    object:<Kind>/<namespace>/<name>#<field path>

(`object:Node/node-1#spec.taints` for cluster-scoped kinds) and whose `detail` is a JSON
object with the keys of `Suspect` (`kind`, `namespace`, `name`, `field`, `current`,
`last_known_good`, `container`, `reason`). Field paths are dotted with `[index]` for list
items, as `kubectl explain` spells them: `spec.template.spec.containers[0].image`,
`data.GEO_MONGO_ADDR`. `current` and `last_known_good` are redacted strings (or None when
unknown). The hypothesis that rests on a suspect cites that evidence index first.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from agents.model import Diagnosis, Evidence, EvidenceKind, Hypothesis

PREFIX = "object:"
_SOURCE = re.compile(r"^object:(?P<kind>[A-Za-z]+)/(?P<rest>[^#]+)#(?P<field>.+)$")


@dataclass(frozen=True, slots=True, kw_only=True)
class Suspect:
    kind: str
    name: str
    field: str
    namespace: str | None = None
    current: str | None = None
    last_known_good: str | None = None
    container: str | None = None
    reason: str = ""

    @property
    def source(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{PREFIX}{self.kind}/{where}{self.name}#{self.field}"

    @property
    def object(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}/{where}{self.name}"

    def describe(self) -> str:
        text = f"{self.object} {self.field}"
        if self.current is not None:
            text += f" is {self.current!r}"
        if self.last_known_good is not None:
            text += f" (last known good {self.last_known_good!r})"
        return text

    def to_evidence(self, *, service: str | None, summary: str | None = None) -> Evidence:
        detail = {
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "field": self.field,
            "current": self.current,
            "last_known_good": self.last_known_good,
            "container": self.container,
            "reason": self.reason,
        }
        return Evidence(
            kind=_EVIDENCE_KIND.get(self.kind, EvidenceKind.CONFIG),
            source=self.source,
            summary=summary or f"suspect: {self.describe()}",
            service=service,
            detail=json.dumps(detail, sort_keys=True),
        )

    @classmethod
    def from_evidence(cls, evidence: Evidence) -> Suspect | None:
        match = _SOURCE.match(evidence.source)
        if match is None:
            return None
        rest = match["rest"].split("/")
        namespace, name = (rest[0], rest[1]) if len(rest) == 2 else (None, rest[0])
        detail = evidence.detail_object()
        return cls(
            kind=match["kind"],
            namespace=namespace,
            name=name,
            field=match["field"],
            current=_opt(detail.get("current")),
            last_known_good=_opt(detail.get("last_known_good")),
            container=_opt(detail.get("container")),
            reason=str(detail.get("reason") or ""),
        )


_EVIDENCE_KIND = {
    "Pod": EvidenceKind.POD_STATE,
    "Service": EvidenceKind.SERVICE,
    "Node": EvidenceKind.NODE,
    "ResourceQuota": EvidenceKind.QUOTA,
    "ConfigMap": EvidenceKind.CONFIG,
    "Deployment": EvidenceKind.CONFIG,
    "StatefulSet": EvidenceKind.CONFIG,
}


def _opt(value: object) -> str | None:
    return None if value is None else str(value)


def suspects_of(diagnosis: Diagnosis, hypothesis: Hypothesis | None = None) -> list[Suspect]:
    """The suspects a hypothesis (the top one by default) rests on, in citation order."""
    chosen = hypothesis or diagnosis.top
    found: list[Suspect] = []
    for index in chosen.evidence:
        if 0 <= index < len(diagnosis.evidence):
            suspect = Suspect.from_evidence(diagnosis.evidence[index])
            if suspect is not None:
                found.append(suspect)
    return found
