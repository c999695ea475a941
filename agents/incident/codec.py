"""Between the incident loop's values and storage's records: diagnoses and plans as JSON.

Storage hands out records (`storage.records`), never table rows. Decoding is strict where the
value drives a decision (a plan's actions) and lenient where it only informs (an old diagnosis
whose evidence kinds have since grown).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from agents.actions import action_from_json, action_to_json
from agents.model import (
    Category,
    Diagnosis,
    Evidence,
    EvidenceKind,
    Hypothesis,
    IncidentId,
    JsonObject,
    PlanId,
    PlanStatus,
    SimilarIncident,
)
from agents.planning.plan import Plan
from storage.records import StoredDiagnosis, StoredPlan


def diagnosis_to_json(d: Diagnosis) -> JsonObject:
    return {
        "incident_id": d.incident_id,
        "reasoner": d.reasoner,
        "summary": d.summary,
        "tokens": d.tokens,
        "evidence_tokens": d.evidence_tokens,
        "fallback_reason": d.fallback_reason,
        "created_at": d.created_at.isoformat() if d.created_at else None,
        "hypotheses": [
            {
                "service": h.service,
                "category": str(h.category),
                "confidence": h.confidence,
                "explanation": h.explanation,
                "evidence": list(h.evidence),
                "reason": h.reason,
            }
            for h in d.hypotheses
        ],
        "evidence": [
            {
                "kind": e.kind.value,
                "source": e.source,
                "summary": e.summary,
                "service": e.service,
                "detail": e.detail,
            }
            for e in d.evidence
        ],
        "similar": [
            {
                "incident_id": s.incident_id,
                "title": s.title,
                "score": s.score,
                "root_cause_service": s.root_cause_service,
                "category": s.category,
                "resolution": s.resolution,
                "closed_at": s.closed_at.isoformat() if s.closed_at else None,
            }
            for s in d.similar
        ],
    }


def _time(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) and value else None


def _kind(value: Any) -> EvidenceKind:
    try:
        return EvidenceKind(value)
    except ValueError:
        return EvidenceKind.POD_STATE


def diagnosis_from_json(data: JsonObject) -> Diagnosis:
    return Diagnosis(
        incident_id=IncidentId(str(data["incident_id"])),
        reasoner=str(data.get("reasoner", "")),
        summary=str(data.get("summary", "")),
        tokens=int(data.get("tokens", 0)),
        evidence_tokens=int(data.get("evidence_tokens", 0)),
        fallback_reason=data.get("fallback_reason"),
        created_at=_time(data.get("created_at")),
        hypotheses=tuple(
            Hypothesis(
                service=str(h["service"]),
                category=Category.parse(str(h["category"])),
                confidence=float(h["confidence"]),
                explanation=str(h.get("explanation", "")),
                evidence=tuple(int(i) for i in h.get("evidence", [])),
                reason=h.get("reason") or None,
            )
            for h in data.get("hypotheses", [])
        ),
        evidence=tuple(
            Evidence(
                kind=_kind(e.get("kind")),
                source=str(e.get("source", "")),
                summary=str(e.get("summary", "")),
                service=e.get("service"),
                detail=str(e.get("detail", "")),
            )
            for e in data.get("evidence", [])
        ),
        similar=tuple(
            SimilarIncident(
                incident_id=IncidentId(str(s["incident_id"])),
                title=str(s.get("title", "")),
                score=float(s.get("score", 0.0)),
                root_cause_service=s.get("root_cause_service"),
                category=s.get("category"),
                resolution=s.get("resolution"),
                closed_at=_time(s.get("closed_at")),
            )
            for s in data.get("similar", [])
        ),
    )


def diagnosis_record(d: Diagnosis, at: datetime) -> StoredDiagnosis:
    return StoredDiagnosis(
        incident_id=d.incident_id,
        created_at=at,
        reasoner=d.reasoner,
        root_cause_service=d.root_cause_service,
        category=str(d.category),
        confidence=d.confidence,
        summary=d.summary,
        tokens=d.tokens,
        fallback_reason=d.fallback_reason,
        body=diagnosis_to_json(d),
    )


def plan_record(plan: Plan) -> StoredPlan:
    return StoredPlan(
        id=plan.id,
        incident_id=plan.incident_id,
        attempt=plan.attempt,
        rank=plan.rank,
        status=plan.status.value,
        risk=plan.risk.value,
        content_hash=plan.content_hash,
        actions=[action_to_json(a) for a in plan.actions],
        rationale=plan.rationale,
        body={
            "hypothesis": plan.hypothesis,
            "diffs": list(plan.diffs),
            "reflection": plan.reflection,
            "suggestions": list(plan.suggestions),
            "held": list(plan.held),
        },
        created_at=plan.created_at,
        expires_at=plan.expires_at,
    )


def plan_from_record(row: StoredPlan) -> Plan:
    body = row.body or {}
    return Plan(
        id=PlanId(row.id),
        incident_id=IncidentId(row.incident_id),
        attempt=row.attempt,
        rank=row.rank,
        actions=tuple(action_from_json(a) for a in row.actions),
        rationale=row.rationale,
        hypothesis=str(body.get("hypothesis", "")),
        status=PlanStatus(row.status),
        created_at=row.created_at,
        expires_at=row.expires_at,
        diffs=tuple(str(d) for d in body.get("diffs", [])),
        decided_by=row.decided_by,
        reject_reason=row.reject_reason,
        reflection=str(body.get("reflection", "")),
        suggestions=tuple(str(x) for x in body.get("suggestions", [])),
        held=tuple(str(x) for x in body.get("held", [])),
    )
