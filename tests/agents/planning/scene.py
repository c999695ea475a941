"""A scene for planner tests: the diagnosis tests' realistic namespaces (hotel-reservation and
online-shop, with their faults), plus what a planner reads that diagnosis does not — rollout
history as ReplicaSets, HPAs, quotas and pods as objects — and a change journal that answers
`last_known_good(before=...)` the way `agents.journal` does.

`Scene.apply(actions)` runs each action's own `desired` against the scene and writes the
result back, the way the engine would: tests assert on the state a plan leaves behind, and a
second planning call sees the cluster (and the journal) as the first plan left them.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from agents.actions import Action, Delete, Replace
from agents.actions.snapshot import field_changes
from agents.diagnosis import Diagnoser
from agents.diagnosis.suspect import Suspect
from agents.errors import NotFound
from agents.kubeparse import pod_spec_digest
from agents.model import (
    Alert,
    Category,
    Change,
    ChangeType,
    Diagnosis,
    Evidence,
    Hypothesis,
    Incident,
    IncidentId,
    JsonObject,
    KubeObject,
    ObjectRef,
    Outcome,
    OutcomeKind,
    PlanId,
    PlanStatus,
    QuotaInfo,
    RevisionInfo,
    Scope,
    TransactionId,
)
from agents.planning import Attempt, CandidatePlan, Plan, Proposal, RulePlanner
from agents.redact import redact_at_path, redact_value
from tests.agents.diagnosis.world import (
    T0,
    FakeCluster,
    FakeMetrics,
    FixedClock,
    World,
    alert,
    incident,
)

NOW = T0 + timedelta(minutes=2)  # when the planner runs
STRATUS = "stratus"


def tracked(kind: str, body: JsonObject) -> JsonObject:
    """The part of an object the change journal keeps (agents.journal.kinds)."""
    if kind == "ConfigMap":
        return {"data": dict(body.get("data") or {})}
    return {"spec": copy.deepcopy(body.get("spec") or {})}


@dataclass(frozen=True, slots=True)
class Entry:
    at: datetime
    kind: str
    name: str
    manager: str
    diff: dict[str, tuple[Any, Any]]
    state: JsonObject
    baseline: bool = False
    created: bool = False


class Journal:
    """JournalView with `agents.journal`'s semantics: baselines are not changes, and the last
    known good before `t` is the state before the first change at or after `t` (else the
    newest state before `t`)."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []

    def record(
        self,
        at: datetime,
        kind: str,
        name: str,
        manager: str,
        diff: dict[str, tuple[Any, Any]],
        state: JsonObject,
        *,
        baseline: bool = False,
        created: bool = False,
    ) -> None:
        # Stored redacted, as agents.journal stores them.
        redacted = {
            path: (redact_at_path(path, a), redact_at_path(path, b))
            for path, (a, b) in diff.items()
        }
        self.entries.append(
            Entry(at, kind, name, manager, redacted, redact_value(state), baseline, created)
        )
        self.entries.sort(key=lambda e: e.at)  # stable: recording order breaks ties

    def changes(
        self, scope: Scope, since: datetime, until: datetime, kinds: Sequence[str] | None = None
    ) -> list[Change]:
        return [
            Change(
                at=e.at,
                cluster=scope.cluster,
                namespace=scope.namespace,
                kind=e.kind,
                name=e.name,
                manager=e.manager,
                change_type=ChangeType.ADDED if e.created else ChangeType.MODIFIED,
                diff=dict(e.diff),
            )
            for e in self.entries
            if not e.baseline and since <= e.at <= until and (not kinds or e.kind in kinds)
        ]

    def last_known_good(
        self, scope: Scope, kind: str, name: str, before: datetime
    ) -> JsonObject | None:
        rows = [e for e in self.entries if e.kind == kind and e.name == name]
        end = next((i for i, e in enumerate(rows) if e.at >= before and not e.baseline), None)
        if end is None:
            end = next((i for i, e in enumerate(rows) if e.at >= before), len(rows))
        for e in reversed(rows[:end]):
            return copy.deepcopy(e.state)
        return None


class PlanCluster(FakeCluster):
    """The diagnosis fake plus the reads a planner and `Action.desired` make."""

    def __init__(self, scene: Scene) -> None:
        super().__init__(scene.world)
        self.scene = scene

    def get(self, ref: ObjectRef) -> KubeObject:
        w = self.w
        body: JsonObject | None = None
        if ref.kind in ("Deployment", "StatefulSet"):
            found = w.deployments.get(ref.name)
            body = found if found is not None and found["kind"] == ref.kind else None
        elif ref.kind == "Service":
            body = w.services.get(ref.name)
        elif ref.kind == "ConfigMap" and ref.name in w.config_maps:
            body = self.scene.config_map(ref.name)
        elif ref.kind == "ResourceQuota":
            body = next((self.scene.quota(q) for q in w.quotas if q.name == ref.name), None)
        elif ref.kind == "Pod":
            body = next(
                (b for b in self.scene.pod_bodies() if b["metadata"]["name"] == ref.name), None
            )
        elif ref.kind == "Node":
            node = next((n for n in w.nodes if n.name == ref.name), None)
            if node is not None:
                spec = {"unschedulable": True} if node.unschedulable else {}
                body = {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": node.name},
                    "spec": spec,
                }
        elif ref.kind == "HorizontalPodAutoscaler":
            body = next((h for h in self.scene.hpas if h["metadata"]["name"] == ref.name), None)
        if body is None:
            raise NotFound(str(ref))
        return KubeObject(copy.deepcopy(body))

    def list_objects(
        self, *, api_version: str, kind: str, namespace: str | None, label_selector: str = ""
    ) -> Sequence[KubeObject]:
        if kind == "ReplicaSet":
            # The revisions, and the ReplicaSet the world's pods name as their owner (made
            # from the current template; not a revision of the rollout history).
            owners = [KubeObject(self.w.replica_set(name)) for name in self.w.deployments]
            return [*self.scene.replica_sets(), *owners]
        if kind == "HorizontalPodAutoscaler":
            return [KubeObject(copy.deepcopy(h)) for h in self.scene.hpas]
        if kind == "ConfigMap":
            return [KubeObject(self.scene.config_map(n)) for n in self.w.config_maps]
        if kind == "PodMetrics" and self.w.pod_metrics is None:
            return []
        return super().list_objects(
            api_version=api_version, kind=kind, namespace=namespace, label_selector=label_selector
        )

    def rollout_history(self, namespace: str, deployment: str) -> Sequence[RevisionInfo]:
        if deployment not in self.w.deployments:
            raise NotFound(f"Deployment/{namespace}/{deployment}")
        return [
            RevisionInfo(
                revision=number,
                images={c["name"]: c["image"] for c in template["spec"]["containers"]},
                replica_set=f"{deployment}-r{number}",
                pod_spec=pod_spec_digest(template["spec"]),
            )
            for number, template in self.scene.revisions.get(deployment, [])
        ]


@dataclass
class Scene:
    world: World
    journal: Journal = field(default_factory=Journal)
    revisions: dict[str, list[tuple[int, JsonObject]]] = field(default_factory=dict)
    hpas: list[JsonObject] = field(default_factory=list)
    history: bool = True  # rollout history and ReplicaSets are readable

    @classmethod
    def of(cls, world: World, *faults: Callable[[World], object]) -> Scene:
        """The world as it is, journalled; then each fault; then the controllers' view of it
        (revisions for changed pod templates, the journal's record of each change)."""
        scene = cls(world=world)
        before = T0 - timedelta(hours=1)
        for name, body in world.deployments.items():
            body["metadata"]["uid"] = f"uid-{name}"
            scene.revisions[name] = [(1, copy.deepcopy(body["spec"]["template"]))]
            scene.journal.record(
                before, body["kind"], name, "helm", {}, tracked(body["kind"], body), baseline=True
            )
        for name, body in world.services.items():
            scene.journal.record(
                before, "Service", name, "helm", {}, tracked("Service", body), baseline=True
            )
        for name in world.config_maps:
            scene.journal.record(
                before,
                "ConfigMap",
                name,
                "helm",
                {},
                {"data": dict(world.config_maps[name])},
                baseline=True,
            )
        seen = len(world.changes)
        for fault in faults:
            fault(world)
        for recorded in world.changes[seen:]:
            # The faults record every workload change as a Deployment's; the journal records
            # the object's real kind.
            change = recorded
            workload = world.deployments.get(change.name) if change.kind == "Deployment" else None
            if workload is not None and workload["kind"] != change.kind:
                change = replace(change, kind=workload["kind"])
            state = scene.state(change.kind, change.name)
            if state is not None:
                scene.journal.record(
                    change.at, change.kind, change.name, change.manager, dict(change.diff), state
                )
        for name, body in world.deployments.items():
            scene._bump_revision(name, body)
        return scene

    # ------------------------------------------------------------------------- reads

    @property
    def cluster(self) -> PlanCluster:
        return PlanCluster(self)

    def incident(self, service: str | None) -> Incident:
        return incident(self.world, service)

    def state(self, kind: str, name: str) -> JsonObject | None:
        w = self.world
        if kind == "ConfigMap":
            return {"data": dict(w.config_maps[name])} if name in w.config_maps else None
        source = w.services if kind == "Service" else w.deployments
        body = source.get(name)
        return tracked(kind, body) if body is not None else None

    def config_map(self, name: str) -> JsonObject:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": self.world.namespace},
            "data": dict(self.world.config_maps[name]),
        }

    def quota(self, q: QuotaInfo) -> JsonObject:
        return {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": q.name, "namespace": q.namespace},
            "spec": {"hard": dict(q.hard)},
            "status": {"hard": dict(q.hard), "used": dict(q.used)},
        }

    def pod_bodies(self) -> list[JsonObject]:
        return [self.world.pod_body(p) for pods in self.world.pods.values() for p in pods]

    def replica_sets(self) -> list[KubeObject]:
        out = []
        for name, revisions in self.revisions.items() if self.history else ():
            body = self.world.deployments[name]
            for number, template in revisions:
                out.append(
                    KubeObject(
                        {
                            "apiVersion": "apps/v1",
                            "kind": "ReplicaSet",
                            "metadata": {
                                "name": f"{name}-r{number}",
                                "namespace": self.world.namespace,
                                "annotations": {"deployment.kubernetes.io/revision": str(number)},
                                "ownerReferences": [
                                    {
                                        "kind": body["kind"],
                                        "name": name,
                                        "uid": body["metadata"]["uid"],
                                        "controller": True,
                                    }
                                ],
                            },
                            "spec": {"template": copy.deepcopy(template)},
                        }
                    )
                )
        return out

    # ------------------------------------------------------------------------ writes

    def _bump_revision(self, name: str, body: JsonObject) -> None:
        """The Deployment controller: a new pod template is a new revision."""
        if body["kind"] != "Deployment":
            return
        revisions = self.revisions.setdefault(name, [])
        template = copy.deepcopy(body["spec"]["template"])
        same = [n for n, t in revisions if _comparable(t) == _comparable(template)]
        if same and revisions and _comparable(revisions[-1][1]) == _comparable(template):
            number = revisions[-1][0]
        else:
            number = max((n for n, _ in revisions), default=0) + 1
            revisions[:] = [(n, t) for n, t in revisions if n not in same] + [(number, template)]
        body["metadata"].setdefault("annotations", {})["deployment.kubernetes.io/revision"] = str(
            number
        )

    def apply(self, actions: Sequence[Action], *, at: datetime = NOW) -> None:
        """Run each action the way the engine does (read, `desired`, write) and record the
        write in the journal as Stratus's."""
        cluster = self.cluster
        for action in actions:
            live = cluster.get(action.target)
            write = action.desired(live, cluster)
            if isinstance(write, Delete):
                self._delete_pod(write.ref.name)
                continue
            assert isinstance(write, Replace)
            self._replace(write.obj.body, at)

    def _replace(self, body: JsonObject, at: datetime) -> None:
        w = self.world
        kind, name = body["kind"], body["metadata"]["name"]
        before = self.state(kind, name)
        if kind in ("Deployment", "StatefulSet"):
            w.deployments[name] = body
            self._bump_revision(name, body)
            if body["spec"].get("replicas", 1) > 0 and not w.pods.get(name):
                w.pods[name] = [w._pod(w.apps[name], 0)]
        elif kind == "Service":
            w.services[name] = body
        elif kind == "ConfigMap":
            w.config_maps[name] = dict(body.get("data") or {})
        elif kind == "ResourceQuota":
            w.quotas = [
                QuotaInfo(
                    name=q.name,
                    namespace=q.namespace,
                    hard=dict(body["spec"]["hard"]),
                    used=dict(q.used),
                )
                if q.name == name
                else q
                for q in w.quotas
            ]
            return
        else:
            raise AssertionError(f"the scene cannot write {kind}")
        after = self.state(kind, name)
        assert after is not None
        diff = {k: (v[0], v[1]) for k, v in field_changes(before, after).items()}
        if diff:
            self.journal.record(at, kind, name, STRATUS, diff, after)

    def _delete_pod(self, name: str) -> None:
        for service, pods in self.world.pods.items():
            if any(p.name == name for p in pods):
                fresh = self.world._pod(self.world.apps[service], 9)
                self.world.pods[service] = [p for p in pods if p.name != name] + [
                    replace(fresh, created_at=NOW)
                ]
                return
        raise NotFound(f"Pod {name}")

    # --------------------------------------------------------------------- diagnosis

    def diagnose(
        self,
        service: str | None,
        alertname: str = "HighErrorRate",
        *,
        journal: bool = True,
        alerts: list[Alert] | None = None,
    ) -> Diagnosis:
        """The real offline Diagnoser over this scene: the contract end to end."""
        return Diagnoser(
            cluster=self.cluster,
            metrics=FakeMetrics(self.world),
            journal=self.journal if journal else None,
            clock=FixedClock(NOW),
        ).diagnose(self.incident(service), alerts or [alert(self.world, alertname, service)])


def _comparable(template: JsonObject) -> JsonObject:
    t = copy.deepcopy(template)
    (t.get("metadata") or {}).pop("annotations", None)
    return t


# ----------------------------------------------------------------------------- helpers


def propose(
    scene: Scene,
    service: str | None,
    alertname: str = "HighErrorRate",
    *,
    attempts: Sequence[Attempt] = (),
    journal: bool = True,
    max_actions: int = 5,
    diagnosis: Diagnosis | None = None,
    now: datetime = NOW,
) -> tuple[Diagnosis, Proposal]:
    """Diagnose the scene with the real Diagnoser (unless a diagnosis is given), then plan."""
    found = diagnosis or scene.diagnose(service, alertname, journal=journal)
    planner = RulePlanner(
        scene.cluster, scene.journal if journal else None, max_actions=max_actions
    )
    return found, planner.plan(scene.incident(service), found, attempts, now=now)


def diagnosis_of(*hypotheses: tuple[str, str, float, Suspect | None]) -> Diagnosis:
    """A diagnosis as a reasoner hands it over: each suspect travels as the documented
    `object:<Kind>/<ns>/<name>#<field>` evidence, cited first by its hypothesis."""
    evidence: list[Evidence] = []
    built = []
    for service, category, confidence, suspect in hypotheses:
        cited: tuple[int, ...] = ()
        if suspect is not None:
            evidence.append(suspect.to_evidence(service=service))
            cited = (len(evidence) - 1,)
        built.append(
            Hypothesis(
                service=service,
                category=Category.parse(category),
                confidence=confidence,
                explanation=f"{service} looks like {category}",
                evidence=cited,
            )
        )
    return Diagnosis(
        incident_id=IncidentId("inc-1"),
        hypotheses=tuple(built),
        evidence=tuple(evidence),
        reasoner="test",
        summary="hand-built",
    )


def attempt(
    candidate: CandidatePlan,
    kind: OutcomeKind,
    *,
    mu_before: float = 4.0,
    mu_after: float | None = 4.0,
    reason: str = "",
    findings: Sequence[str] = (),
    per_service: dict[str, float] | None = None,
    number: int = 1,
) -> Attempt:
    """A plan that ran (or was refused) with the outcome and validation figures the
    transaction engine records."""
    plan = Plan(
        id=PlanId(f"plan-{number}"),
        incident_id=IncidentId("inc-1"),
        attempt=number,
        rank=0,
        actions=candidate.actions,
        rationale=candidate.rationale,
        hypothesis=candidate.hypothesis,
        status=PlanStatus.EXECUTED,
        created_at=NOW,
    )
    healthy = mu_after is not None and mu_after <= 0
    outcome = Outcome(
        transaction_id=TransactionId(f"tx-{number}"),
        kind=kind,
        mu_before=mu_before,
        mu_after=mu_after,
        healthy=healthy,
        reason=reason,
    )
    validation: dict[str, Any] = {}
    if mu_after is not None:
        validation = {
            "passed": kind is OutcomeKind.COMMITTED,
            "reason": reason,
            "mu_before": mu_before,
            "mu_after": mu_after,
            "severity": {
                "mu": mu_after,
                "findings": list(findings),
                "per_service": dict(per_service or {}),
            },
        }
    return Attempt(plan=plan, outcome=outcome, validation=validation)
