"""Evidence handlers (RCACopilot): per alert type, which evidence to collect and where to widen.

A handler is a YAML file in `agents/diagnosis/handlers/` (or a directory the operator names).
It says which alerts it serves (`match`: alertname patterns and label patterns, shell-style),
how far to look (`widen`: from the alerting service to its callees, its callers, then the
namespace), and how much of each source to read (`collect`: bounded limits and tails). The
handler with the highest `priority` among those matching any of the incident's alerts wins;
the `default` handler (empty `match`) serves everything else. Files are validated when
loaded; an error names the file, the field and the reason.

Handlers decide *what to read*, never what it means: the reasoners interpret the evidence by
principle, so a new alert type needs a handler file, not code.
"""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents.errors import StratusError
from agents.model import Alert

logger = logging.getLogger(__name__)

HANDLER_DIR = Path(__file__).parent / "handlers"


class HandlerError(StratusError):
    """A handler file is invalid. The message names the file, the field and the reason."""


class Widen(StrEnum):
    SERVICE = "service"  # the alerting service itself
    CALLEES = "callees"  # services it calls (transitively), and those its logs blame
    CALLERS = "callers"  # services that call it
    NAMESPACE = "namespace"  # every other anomalous service of the namespace


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Match(_Spec):
    alertnames: tuple[str, ...] = ()
    labels: dict[str, str] = {}

    def matches(self, alert: Alert) -> bool:
        if self.alertnames and not any(fnmatch.fnmatchcase(alert.name, p) for p in self.alertnames):
            return False
        return all(
            fnmatch.fnmatchcase(alert.labels.get(k, ""), pattern)
            for k, pattern in self.labels.items()
        )

    @property
    def is_default(self) -> bool:
        return not self.alertnames and not self.labels


class PodsStep(_Spec):
    limit: int = Field(default=300, ge=1, le=2000)


class EventsStep(_Spec):
    limit: int = Field(default=300, ge=1, le=2000)  # events read from the API
    keep: int = Field(default=30, ge=1, le=200)  # events turned into evidence (Warnings first)


class LogsStep(_Spec):
    tail_lines: int = Field(default=60, ge=1, le=1000)
    previous: bool = True  # also the previous container of restarted pods
    max_pods: int = Field(default=8, ge=0, le=50)
    pods_per_service: int = Field(default=2, ge=1, le=10)
    keep_lines: int = Field(default=20, ge=1, le=200)  # lines of one tail kept in evidence
    #: Lines written longer than this before the incident started are not evidence (a tail
    #: read by count reaches back to start-up); 0 keeps every line.
    since_s: int = Field(default=300, ge=0, le=7 * 86400)


class SignalsStep(_Spec):
    window_s: int = Field(default=120, ge=10, le=3600)
    call_graph_window_s: int = Field(default=600, ge=30, le=86400)


class ChangesStep(_Spec):
    lookback_s: int = Field(default=3600, ge=60, le=7 * 86400)
    kinds: tuple[str, ...] = ("Deployment", "StatefulSet", "Service", "ConfigMap")
    limit: int = Field(default=50, ge=1, le=500)


class SaturationStep(_Spec):
    """CPU use as a fraction of the limit, per pod. The PromQL must yield one series per pod,
    labelled `pod`; when unset or failing, PodMetrics (metrics.k8s.io) is tried."""

    cpu_ratio_promql: str | None = (
        'sum by (pod) (rate(container_cpu_usage_seconds_total{namespace="{namespace}",'
        'container!=""}[2m])) / sum by (pod) (kube_pod_container_resource_limits'
        '{namespace="{namespace}",resource="cpu"})'
    )
    pod_metrics: bool = True


class Collect(_Spec):
    pods: PodsStep = PodsStep()
    events: EventsStep = EventsStep()
    logs: LogsStep = LogsStep()
    signals: SignalsStep = SignalsStep()
    changes: ChangesStep = ChangesStep()
    last_known_good: bool = True
    nodes: bool = True
    quotas: bool = True
    service_ports: bool = True
    saturation: SaturationStep = SaturationStep()


class Thresholds(_Spec):
    error_ratio: float = Field(default=0.05, gt=0, lt=1)
    latency_p99_ms: float = Field(default=500.0, gt=0)
    min_request_rate: float = Field(default=0.05, ge=0)
    cpu_saturation: float = Field(default=0.9, gt=0, le=1.5)


class Handler(_Spec):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    description: str = ""
    match: Match = Match()
    priority: int = 0
    widen: tuple[Widen, ...] = (Widen.SERVICE, Widen.CALLEES, Widen.CALLERS, Widen.NAMESPACE)
    collect: Collect = Collect()
    thresholds: Thresholds = Thresholds()

    def matches(self, alerts: Iterable[Alert]) -> bool:
        return any(self.match.matches(a) for a in alerts)


@dataclass(frozen=True, slots=True)
class HandlerSet:
    """The loaded handlers, highest priority first; exactly one default."""

    handlers: tuple[Handler, ...]

    @property
    def default(self) -> Handler:
        return next(h for h in self.handlers if h.match.is_default)

    def select(self, alerts: Sequence[Alert]) -> Handler:
        for handler in self.handlers:
            if not handler.match.is_default and handler.matches(alerts):
                return handler
        return self.default

    def names(self) -> list[str]:
        return [h.name for h in self.handlers]


def parse_handler(data: Any, *, source: str) -> Handler:
    if not isinstance(data, dict):
        raise HandlerError(f"{source}: (top level): expected a mapping, got {type(data).__name__}")
    try:
        return Handler.model_validate(data)
    except ValidationError as e:
        lines = [
            f"{source}: {'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}"
            for err in e.errors()
        ]
        raise HandlerError("\n".join(lines)) from e


def load_handlers(directory: Path | None = None) -> HandlerSet:
    """Every `*.yaml` of `directory` (the built-in handlers by default)."""
    where = directory or HANDLER_DIR
    handlers: list[Handler] = []
    seen: dict[str, Path] = {}
    files = sorted(where.glob("*.yaml")) + sorted(where.glob("*.yml"))
    if not files:
        raise HandlerError(f"{where}: (directory): no handler files (*.yaml)")
    for path in files:
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError as e:
            raise HandlerError(f"{path}: (file): cannot read: {e.strerror}") from e
        except yaml.YAMLError as e:
            raise HandlerError(f"{path}: (file): not valid YAML: {e}") from e
        handler = parse_handler(data, source=str(path))
        if handler.name in seen:
            raise HandlerError(
                f"{path}: name: {handler.name!r} is also defined in {seen[handler.name]}"
            )
        seen[handler.name] = path
        handlers.append(handler)
    defaults = [h.name for h in handlers if h.match.is_default]
    if len(defaults) != 1:
        raise HandlerError(
            f"{where}: match: exactly one handler must have an empty match (the default), "
            f"found {len(defaults)}: {', '.join(defaults) or 'none'}"
        )
    handlers.sort(key=lambda h: (-h.priority, h.name))
    logger.debug("loaded %d evidence handlers from %s", len(handlers), where)
    return HandlerSet(tuple(handlers))
