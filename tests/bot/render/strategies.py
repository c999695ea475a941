"""Hypothesis strategies for the renderers' inputs, biased towards what breaks limits: huge
texts made of characters that grow when escaped (`&`, `<`, `>`), backticks that would close a
code block, newlines, emoji; long lists; long names."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st

from agents.actions import PatchService, ScaleWorkload, SetContainerEnv, SetImage
from agents.detection.events import AlertsUpdated
from agents.model import (
    Alert,
    AlertStatus,
    Category,
    Diagnosis,
    Evidence,
    EvidenceKind,
    FaultLevel,
    FaultType,
    Hypothesis,
    Incident,
    IncidentId,
    IncidentState,
    ObjectRef,
    PlanId,
    PlanStatus,
    Scope,
    SimilarIncident,
    TimelineEvent,
    TransactionId,
    TransactionStatus,
)
from agents.planning.plan import Plan
from agents.tnr import Progress, Step, UndoResult, UndoStatus
from agents.tnr.records import TransactionRecord
from agents.tnr.restore import Drift

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)

_CHUNKS = ["a", "&", "<", ">", "`", "```", "\n", "*", "é", "🔥", "<!channel>", " ", "_", "~"]

#: Short texts, or very long ones built from chunks repeated thousands of times.
huge = st.one_of(
    st.text(max_size=40),
    st.builds(
        "".join,
        st.lists(
            st.builds(lambda c, n: c * n, st.sampled_from(_CHUNKS), st.integers(0, 12_000)),
            max_size=4,
        ),
    ),
)
name = st.one_of(st.from_regex(r"[a-z][a-z0-9-]{0,30}", fullmatch=True), huge)
ident = st.from_regex(r"[A-Za-z0-9-]{1,40}", fullmatch=True)
confidence = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
mu = st.one_of(st.none(), st.floats(min_value=0, max_value=1e9, allow_nan=False))
when = st.builds(lambda s: T0 + timedelta(seconds=s), st.integers(0, 10**6))


@st.composite
def incidents(draw: st.DrawFn) -> Incident:
    return Incident(
        id=IncidentId(f"INC-20260105-{draw(ident)}"),
        title=draw(huge),
        scope=Scope(cluster=draw(name), namespace=draw(name)),
        state=draw(st.sampled_from(IncidentState)),
        mu0=draw(st.floats(min_value=0, max_value=1e9, allow_nan=False)),
        opened_at=draw(when),
        updated_at=draw(when),
        service=draw(st.one_of(st.none(), name)),
        attempt=draw(st.integers(0, 10)),
        mu=draw(mu),
        closed_at=draw(st.one_of(st.none(), when)),
        source=draw(name),
    )


@st.composite
def alerts(draw: st.DrawFn) -> Alert:
    return Alert(
        fingerprint=draw(ident),
        name=draw(name),
        status=draw(st.sampled_from(AlertStatus)),
        labels={"service": draw(name), "severity": draw(name)},
        annotations={"summary": draw(huge), "description": draw(huge)},
        starts_at=draw(when),
    )


category = st.builds(Category, level=st.sampled_from(FaultLevel), type=st.sampled_from(FaultType))


@st.composite
def diagnoses(draw: st.DrawFn, incident_id: str = "INC-1") -> Diagnosis:
    evidence = draw(
        st.lists(
            st.builds(
                Evidence,
                kind=st.sampled_from(EvidenceKind),
                source=huge,
                summary=huge,
                service=st.one_of(st.none(), name),
                detail=huge,
            ),
            max_size=120,
        )
    )
    hypotheses = draw(
        st.lists(
            st.builds(
                Hypothesis,
                service=name,
                category=category,
                confidence=confidence,
                explanation=huge,
                evidence=st.lists(st.integers(0, 130), max_size=20).map(tuple),
            ),
            min_size=1,
            max_size=8,
        )
    )
    similar = draw(
        st.lists(
            st.builds(
                SimilarIncident,
                incident_id=ident.map(IncidentId),
                title=huge,
                score=confidence,
                root_cause_service=st.one_of(st.none(), name),
                category=st.one_of(st.none(), name),
                resolution=st.one_of(st.none(), huge),
            ),
            max_size=6,
        )
    )
    return Diagnosis(
        incident_id=IncidentId(incident_id),
        hypotheses=tuple(hypotheses),
        evidence=tuple(evidence),
        reasoner=draw(name),
        summary=draw(huge),
        tokens=draw(st.integers(0, 10**7)),
        fallback_reason=draw(st.one_of(st.none(), huge)),
        similar=tuple(similar),
    )


def _ref(draw: st.DrawFn) -> ObjectRef:
    return ObjectRef(
        api_version="apps/v1", kind="Deployment", name=draw(name), namespace=draw(name)
    )


@st.composite
def actions(draw: st.DrawFn) -> object:
    target = _ref(draw)
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return ScaleWorkload(target=target, replicas=draw(st.integers(0, 100)), from_replicas=3)
    if kind == 1:
        return SetImage(target=target, container=draw(name), image=draw(huge))
    if kind == 2:
        env = draw(st.dictionaries(name, st.one_of(st.none(), huge), max_size=5))
        return SetContainerEnv(target=target, container=draw(name), env=env)
    service = ObjectRef(api_version="v1", kind="Service", name=draw(name), namespace="ns")
    return PatchService(target=service, ports=({"port": 80, "targetPort": draw(name)},))


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    chosen = tuple(draw(st.lists(actions(), min_size=1, max_size=20)))
    return Plan(
        id=PlanId(f"plan-{draw(ident)}"),
        incident_id=IncidentId("INC-1"),
        attempt=draw(st.integers(1, 10)),
        rank=0,
        actions=chosen,  # type: ignore[arg-type]
        rationale=draw(huge),
        hypothesis=draw(huge),
        status=draw(st.sampled_from(PlanStatus)),
        created_at=draw(when),
        expires_at=draw(st.one_of(st.none(), when)),
        diffs=tuple(draw(st.lists(huge, max_size=len(chosen)))),
        decided_by=draw(st.one_of(st.none(), st.just("engine"), st.just("U0ALICE01"), huge)),
        reject_reason=draw(st.one_of(st.none(), huge)),
        reflection=draw(huge),
    )


@st.composite
def transactions(draw: st.DrawFn) -> TransactionRecord:
    validation = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "mu_before": st.floats(0, 1e9),
                "mu_after": st.floats(0, 1e9),
                "settle_s": st.floats(0, 1e6),
                "pending": st.lists(huge, max_size=30),
                "severity": st.dictionaries(huge, st.floats(0, 1e6), max_size=10),
            },
        )
    )
    return TransactionRecord(
        id=TransactionId(f"tx-{draw(ident)}"),
        scope=Scope(cluster=draw(name), namespace=draw(name)),
        status=draw(st.sampled_from(TransactionStatus)),
        incident_id=IncidentId("INC-1"),
        plan_id=PlanId("plan-1"),
        fencing_token=1,
        mu0=draw(st.floats(0, 1e9)),
        mu_before=draw(st.floats(0, 1e9)),
        mu_after=draw(mu),
        started_at=draw(when),
        deadline_at=draw(when),
        holder="stratus",
        validation=validation,
        reason=draw(st.one_of(st.none(), huge)),
    )


progress = st.builds(
    Progress,
    transaction_id=ident.map(TransactionId),
    step=st.sampled_from(Step),
    message=huge,
    done=st.integers(0, 50),
    total=st.integers(0, 50),
    mu=mu,
)

timeline = st.lists(
    st.builds(
        TimelineEvent,
        incident_id=st.just(IncidentId("INC-1")),
        at=when,
        state=st.sampled_from(IncidentState),
        kind=st.just("transition"),
        message=huge,
    ),
    max_size=60,
)

drifts = st.lists(
    st.builds(
        Drift,
        target=st.builds(
            ObjectRef,
            api_version=st.just("v1"),
            kind=st.just("Service"),
            name=name,
            namespace=name,
        ),
        changes=st.dictionaries(huge, st.lists(huge, min_size=2, max_size=2), max_size=8),
    ),
    max_size=40,
)

undo_results = st.builds(
    UndoResult,
    transaction_id=ident.map(TransactionId),
    status=st.sampled_from(UndoStatus),
    message=huge,
    drift=drifts.map(tuple),
    blocked_by=st.lists(ident.map(TransactionId), max_size=40).map(tuple),
)

alerts_updated = st.builds(
    AlertsUpdated,
    incident_id=ident.map(IncidentId),
    at=when,
    new=st.lists(alerts(), max_size=30).map(tuple),
    resolved=st.lists(alerts(), max_size=30).map(tuple),
)
