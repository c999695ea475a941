"""The Claude reasoner's read-only tools (DESIGN section 5's reads), scoped to the incident's
namespace and bounded.

Every result carries an explicit status — `success`, `no_data` or `error` — and an error quotes
what was asked (the exact PromQL, the pod name) so the model can correct itself. Inputs are
validated with pydantic; a malformed input is an `error` result listing the fields, never an
exception. Every text goes through the redactor; Secret values are never read.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents.diagnosis.answer import schema as answer_schema
from agents.diagnosis.changes import diff_lines
from agents.diagnosis.items import clip
from agents.diagnosis.llm import ToolSpec
from agents.diagnosis.observe import Observations
from agents.diagnosis.ports import JournalView, Redactor
from agents.diagnosis.state import describe_pod
from agents.errors import QueryError, StratusError
from agents.model import JsonObject
from agents.ports import ClusterReader, MetricsSource
from agents.redact import redact_entries as redact_mapping

logger = logging.getLogger(__name__)

SUBMIT = "submit_diagnosis"
_RESULT_CAP = 12_000  # characters of one tool result


class Status(StrEnum):
    SUCCESS = "success"
    NO_DATA = "no_data"
    ERROR = "error"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOutcome:
    status: Status
    data: Any = None
    error: str | None = None

    def render(self, redactor: Redactor) -> str:
        body: JsonObject = {"status": str(self.status)}
        if self.error is not None:
            body["error"] = self.error
        if self.data is not None:
            body["data"] = self.data
        return clip(redactor(json.dumps(body, default=str, ensure_ascii=False)), _RESULT_CAP)


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PodsIn(_In):
    service: str | None = Field(default=None, description="only this service's pods")
    only_unhealthy: bool = False


class EventsIn(_In):
    service: str | None = None
    warnings_only: bool = True
    limit: int = Field(default=30, ge=1, le=100)


class LogsIn(_In):
    pod: str = Field(min_length=1)
    container: str | None = None
    previous: bool = Field(default=False, description="the previous (crashed) container's log")
    tail_lines: int = Field(default=50, ge=1, le=200)


class NoIn(_In):
    pass


class ConfigMapsIn(_In):
    name: str | None = None


class HistoryIn(_In):
    deployment: str = Field(min_length=1)


class ChangesIn(_In):
    since_minutes: int = Field(default=120, ge=1, le=1440)


class SignalsIn(_In):
    services: list[str] | None = None
    window_s: int = Field(default=120, ge=10, le=3600)


class QueryIn(_In):
    query: str = Field(min_length=1, max_length=2000, description="a PromQL instant query")


class Toolbox:
    def __init__(
        self,
        *,
        cluster: ClusterReader,
        metrics: MetricsSource | None,
        journal: JournalView | None,
        redactor: Redactor,
        obs: Observations,
    ) -> None:
        self.cluster = cluster
        self.metrics = metrics
        self.journal = journal
        self.redactor = redactor
        self.obs = obs
        self.ns = obs.scope.namespace
        self._tools: dict[str, tuple[str, type[_In], Callable[[Any], ToolOutcome]]] = {
            "list_pods": (
                "Pods of the namespace (or one service) with container states, "
                "restarts, reasons and readiness.",
                PodsIn,
                self._pods,
            ),
            "get_events": ("Kubernetes events, Warnings first.", EventsIn, self._events),
            "get_logs": (
                "Tail of a pod's log; previous=true for the crashed container.",
                LogsIn,
                self._logs,
            ),
            "list_services": (
                "Services with ports, targetPorts, selectors, ready endpoints and "
                "the containerPorts of the pods they select.",
                NoIn,
                self._services,
            ),
            "get_config_maps": (
                "ConfigMap keys and (redacted) values. Secrets are never shown.",
                ConfigMapsIn,
                self._config_maps,
            ),
            "list_nodes": ("Nodes with readiness, taints and labels.", NoIn, self._nodes),
            "list_quotas": ("ResourceQuotas with used/hard.", NoIn, self._quotas),
            "rollout_history": (
                "A Deployment's revisions and their images.",
                HistoryIn,
                self._history,
            ),
            "recent_changes": (
                "Changes recorded by the change journal (who changed which field).",
                ChangesIn,
                self._changes,
            ),
            "golden_signals": (
                "Request rate, error ratio and latency per service.",
                SignalsIn,
                self._signals,
            ),
            "promql_query": ("An arbitrary PromQL instant query.", QueryIn, self._query),
        }

    def specs(self) -> list[ToolSpec]:
        out = [
            ToolSpec(name=name, description=desc, input_schema=model.model_json_schema())
            for name, (desc, model, _) in self._tools.items()
        ]
        out.append(
            ToolSpec(
                name=SUBMIT,
                description="Submit the final diagnosis (call exactly once, at the end).",
                input_schema=answer_schema(),
            )
        )
        return out

    def call(self, name: str, raw: JsonObject) -> ToolOutcome:
        entry = self._tools.get(name)
        if entry is None:
            return ToolOutcome(
                status=Status.ERROR,
                error=f"unknown tool {name!r}; use one of {', '.join(self._tools)}",
            )
        _, model, fn = entry
        try:
            args = model.model_validate(raw)
        except ValidationError as e:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or '(input)'}: {err['msg']}"
                for err in e.errors()
            )
            return ToolOutcome(status=Status.ERROR, error=f"invalid input for {name}: {problems}")
        try:
            return fn(args)
        except QueryError as e:
            return ToolOutcome(status=Status.ERROR, error=f"query {e.query!r} failed: {e.reason}")
        except StratusError as e:
            return ToolOutcome(
                status=Status.ERROR, error=f"{name}({json.dumps(raw, default=str)}) failed: {e}"
            )
        except Exception as e:  # the LLM tool boundary: never let a tool kill the loop
            logger.exception("tool %s failed", name)
            return ToolOutcome(
                status=Status.ERROR, error=f"{name} failed unexpectedly: {type(e).__name__}"
            )

    # --------------------------------------------------------------------------- tools

    @staticmethod
    def _rows(rows: list[Any]) -> ToolOutcome:
        return ToolOutcome(status=Status.SUCCESS if rows else Status.NO_DATA, data=rows or None)

    def _pods(self, a: PodsIn) -> ToolOutcome:
        rows = []
        for service, pods in sorted(self.obs.pods.items()):
            if a.service and service != a.service:
                continue
            for pod in pods:
                if a.only_unhealthy and pod.ready and pod.restart_count == 0:
                    continue
                rows.append({"service": service, "pod": describe_pod(pod)})
        return self._rows(rows[:80])

    def _events(self, a: EventsIn) -> ToolOutcome:
        events = self.cluster.events(self.ns, limit=300)
        pods = {p.name for p in self.obs.pods.get(a.service or "", ())}
        rows = [
            f"{e.type} {e.reason} {e.object_kind}/{e.object_name} x{e.count}: {e.message}"
            for e in sorted(events, key=lambda e: e.type != "Warning")
            if (not a.warnings_only or e.type == "Warning")
            and (not a.service or e.object_name in pods or e.object_name.startswith(a.service))
        ]
        return self._rows(rows[: a.limit])

    def _logs(self, a: LogsIn) -> ToolOutcome:
        container = a.container or next(
            (
                p.containers[0].name
                for ps in self.obs.pods.values()
                for p in ps
                if p.name == a.pod and p.containers
            ),
            None,
        )
        lines = self.cluster.pod_logs(
            self.ns, a.pod, container=container, tail_lines=a.tail_lines, previous=a.previous
        )
        return self._rows([clip(str(line), 500) for line in list(lines)[-a.tail_lines :]])

    def _services(self, _: NoIn) -> ToolOutcome:
        rows = []
        for svc in self.obs.services.values():
            workload = self.obs.service_for_k8s_service(svc.name)
            spec = self.obs.specs.get(workload or "")
            rows.append(
                {
                    "service": svc.name,
                    "selector": dict(svc.selector),
                    "ports": [f"{p.port}->{p.target_port}" for p in svc.ports],
                    "ready_endpoints": svc.ready_endpoints,
                    "selects_workload": workload,
                    "container_ports": sorted(map(str, spec.container_ports())) if spec else [],
                }
            )
        return self._rows(rows)

    def _config_maps(self, a: ConfigMapsIn) -> ToolOutcome:
        rows = {
            cm.name: {k: clip(v, 600) for k, v in redact_mapping(cm.data, self.redactor).items()}
            for cm in self.cluster.config_maps(self.ns)
            if not a.name or cm.name == a.name
        }
        return ToolOutcome(status=Status.SUCCESS if rows else Status.NO_DATA, data=rows or None)

    def _nodes(self, _: NoIn) -> ToolOutcome:
        return self._rows(
            [
                {
                    "name": n.name,
                    "ready": n.ready,
                    "unschedulable": n.unschedulable,
                    "taints": list(n.taints),
                    "labels": dict(n.labels),
                }
                for n in self.cluster.nodes()[:50]
            ]
        )

    def _quotas(self, _: NoIn) -> ToolOutcome:
        return self._rows(
            [
                {"name": q.name, "hard": dict(q.hard), "used": dict(q.used)}
                for q in self.cluster.quotas(self.ns)
            ]
        )

    def _history(self, a: HistoryIn) -> ToolOutcome:
        return self._rows(
            [
                {
                    "revision": r.revision,
                    "images": dict(r.images),
                    "replica_set": r.replica_set,
                    "created_at": r.created_at,
                }
                for r in self.cluster.rollout_history(self.ns, a.deployment)
            ]
        )

    def _changes(self, a: ChangesIn) -> ToolOutcome:
        if self.journal is None:
            return ToolOutcome(status=Status.NO_DATA, error="no change journal is configured")
        now = self.obs.now
        changes = self.journal.changes(
            self.obs.scope, now - timedelta(minutes=a.since_minutes), now
        )
        return self._rows(
            [
                {
                    "at": c.at,
                    "object": f"{c.kind}/{c.name}",
                    "manager": c.manager,
                    "type": str(c.change_type),
                    "diff": list(diff_lines(c.diff))[:20],
                }
                for c in sorted(changes, key=lambda c: c.at, reverse=True)[:40]
            ]
        )

    def _signals(self, a: SignalsIn) -> ToolOutcome:
        if self.metrics is None:
            return ToolOutcome(status=Status.NO_DATA, error="no metrics source is configured")
        signals = self.metrics.golden_signals(self.ns, a.services, window_s=a.window_s)
        return self._rows(
            [
                {
                    "service": s.service,
                    "rps": round(s.request_rate, 3),
                    "error_ratio": round(s.error_ratio, 4),
                    "p50_ms": round(s.latency_p50_ms, 1),
                    "p99_ms": round(s.latency_p99_ms, 1),
                }
                for s in signals.values()
            ]
        )

    def _query(self, a: QueryIn) -> ToolOutcome:
        if self.metrics is None:
            return ToolOutcome(status=Status.NO_DATA, error="no metrics source is configured")
        series = self.metrics.query(a.query)
        if not series:
            return ToolOutcome(status=Status.NO_DATA, error=f"query {a.query!r} returned no series")
        return ToolOutcome(
            status=Status.SUCCESS,
            data=[
                {"labels": dict(s.labels), "value": s.points[-1].value if s.points else None}
                for s in series[:50]
            ],
        )
