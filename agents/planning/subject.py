"""The subject of a planning rule: one hypothesis, the suspect it rests on (if any), and the
few questions every rule asks about them — which container, what the value was, how to say
what is wrong."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agents.diagnosis.suspect import Suspect
from agents.model import Evidence, Hypothesis, JsonObject, KubeObject
from agents.planning.context import Context, containers
from agents.planning.drafts import Was
from agents.planning.grounding import NOT_SEEN, Grounding
from agents.planning.paths import FieldRef, classify, hides_secret, literal

#: Returned by an extractor when the last-known-good state does not say (not the same as a
#: field that was absent, which extractors return as None).
UNKNOWN: Any = object()


@dataclass(frozen=True, slots=True, kw_only=True)
class Subject:
    hypothesis: Hypothesis
    suspect: Suspect | None
    evidence: tuple[Evidence, ...] = ()  # what the hypothesis cites, best first

    @property
    def label(self) -> str:
        return f"{self.hypothesis.service}: {self.hypothesis.category}"

    @property
    def field(self) -> FieldRef | None:
        s = self.suspect
        return classify(s.kind, s.field) if s is not None else None

    def statement(self) -> str:
        """What is wrong, in the diagnosis's words: "Service/ns/geo spec.ports[0].targetPort
        is '9999' (targetPort matches no containerPort)"."""
        s = self.suspect
        if s is None:
            return self.hypothesis.explanation.split(". Suspect:")[0]
        text = f"{s.object} {s.field}"
        if s.current is not None:
            text += f" is {s.current!r}"
        return text + (f" ({s.reason})" if s.reason else "")


def container_name(workload: KubeObject, field: FieldRef | None, suspect: Suspect | None) -> str:
    """The container a suspect field points at: by name, by index, else the first one."""
    items = containers(workload.body)
    names = [str(c.get("name")) for c in items]
    if suspect is not None and suspect.container in names:
        return str(suspect.container)
    if field is not None and field.container is not None:
        if field.container in names:
            return field.container
        index = field.container_index
        if index is not None and 0 <= index < len(names):
            return names[index]
    return names[0] if names else ""


def container_of(body: JsonObject, name: str) -> JsonObject | None:
    return next((c for c in containers(body) if c.get("name") == name), None)


def was(
    ctx: Context,
    suspect: Suspect,
    extract: Callable[[JsonObject], Any],
    *,
    from_text: Callable[[str], Any] | None = literal,
) -> Was | None:
    """The suspect field's last known good: from the change journal's state before the
    breaking change when it has one, else from the diagnosis's own record. None when unknown
    or when the value hides a secret (restoring a mask would break it further)."""
    known = ctx.known_good(suspect.kind, suspect.name, suspect.field)
    if known is not None:
        value = extract(known.body)
        if value is not UNKNOWN:
            if hides_secret(value):
                return None
            return Was(value=value, source=f"the change journal ({known.provenance()})")
    if suspect.last_known_good is None or from_text is None:
        return None
    value = from_text(suspect.last_known_good)
    if value is UNKNOWN or hides_secret(value):
        return None
    grounding = grounding_of(ctx, suspect, extract, value)
    if grounding.grounded:
        return Was(
            value=value,
            source=f"the diagnosis's change record ({grounding} has it)",
            grounding=grounding,
        )
    # Only a reasoner named it: a suggestion a person confirms, never run automatically.
    return Was(
        value=value,
        source=f"the diagnosis's change record, {NOT_SEEN}",
        grounding=Grounding.REASONER,
    )


def grounding_of(
    ctx: Context, suspect: Suspect, extract: Callable[[JsonObject], Any], value: Any
) -> Grounding:
    """Where a value the diagnosis names for the suspect field is recorded: the change
    journal (any earlier state of the same object, Stratus's own writes excepted), the
    rollout history (images), the live object itself — else only the reasoner had it."""
    texts = {suspect.last_known_good, str(value)}
    if texts & ctx.recorded_values(suspect.kind, suspect.name, suspect.field):
        return Grounding.JOURNAL
    live = ctx.get(suspect.kind, suspect.name) if suspect.kind != "Pod" else None
    if live is not None:
        try:
            current = extract(live.body)
        except (KeyError, IndexError, TypeError, ValueError):
            current = UNKNOWN
        if current is not UNKNOWN and current == value:
            return Grounding.SNAPSHOT
    if "image" in suspect.field and live is not None:
        for rev in ctx.revisions(live) or ():
            if str(value) in rev.images.values():
                return Grounding.REVISION
    return Grounding.REASONER
