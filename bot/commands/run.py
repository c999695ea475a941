"""What each `/stratus` subcommand does: agents and storage in, a `Reply` out.

No Slack here — the listener acknowledges, calls `CommandRunner.run` after the ack, and posts
the reply. Everything that can be refused is answered with a message, never an exception: an
unknown incident, a namespace Stratus does not cover, a declaration without a namespace.
(`undo` runs in the Undo button's modal instead: `bot.commands.undo`.)
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta

from agents.errors import MetricsError, SourcesUnavailable
from agents.model import (
    Alert,
    AlertStatus,
    Diagnosis,
    Incident,
    IncidentId,
    IncidentState,
    Series,
)
from bot.chart_process import charts
from bot.commands import reads
from bot.commands.context import CommandContext, DetectionHook
from bot.commands.parse import (
    Command,
    Declare,
    Diagnose,
    Digest,
    Help,
    Incidents,
    ShowIncident,
    ShowPolicy,
    Status,
    Undo,
    Usage,
)
from bot.commands.render import (
    render_adhoc_diagnosis,
    render_declared,
    render_done,
    render_elsewhere,
    render_error,
    render_help,
    render_incident,
    render_incidents,
    render_policy,
    render_status,
    render_usage,
    render_working,
)
from bot.errors import ChartFailed
from bot.render.blocks import Message
from storage import NotFound

logger = logging.getLogger(__name__)

#: How far back the chart of an on-demand diagnosis looks.
CHART_WINDOW = timedelta(minutes=30)


@dataclass(frozen=True, slots=True, kw_only=True)
class Invocation:
    """Who typed the command, and where."""

    user_id: str
    channel_id: str
    channel_name: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Chart:
    png: bytes
    title: str
    filename: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    message: Message
    in_channel: bool = False  # a report for everyone; otherwise only the person sees it
    chart: Chart | None = None  # uploaded to the channel after the reply


def _reply(message: Message, *, in_channel: bool = False) -> Reply:
    return Reply(message=message, in_channel=in_channel)


def immediate(command: Command | Usage) -> Reply | None:
    """What the acknowledgement itself carries: the whole answer when it needs no I/O, a
    "working…" note for the slow commands, else nothing (the answer follows at once)."""
    if isinstance(command, Usage):
        return _reply(render_usage(command))
    if isinstance(command, Help):
        return _reply(render_help())
    if isinstance(command, Diagnose):
        target = f"{command.namespace}/{command.service}" if command.service else command.namespace
        return _reply(render_working(f"Diagnosing {target}"))
    if isinstance(command, Digest):
        return _reply(render_working("Preparing the digest"))
    return None


class CommandRunner:
    def __init__(
        self,
        ctx: CommandContext,
        *,
        post_digest: Callable[[str], object],
        after_detection: DetectionHook,
    ) -> None:
        """`post_digest` posts a digest to a channel id (the listener's `DigestPoster.post`);
        `after_detection` announces and drives what `declare` opened."""
        self._ctx = ctx
        self._post_digest = post_digest
        self._after_detection = after_detection

    def run(self, command: Command | Usage, invocation: Invocation) -> Reply:
        ready = immediate(command)
        if isinstance(command, Usage | Help):
            assert ready is not None
            return ready
        try:
            return self._run(command, invocation)
        except NotFound as e:
            return _reply(render_error(f"Not found: {e}."))
        except SourcesUnavailable as e:
            return _reply(render_error(f"Cannot diagnose now: the cluster did not answer ({e})."))

    def _run(self, command: Command, invocation: Invocation) -> Reply:
        match command:
            case Status():
                return self._status(command)
            case Incidents():
                return self._incidents(command.cluster)
            case ShowIncident():
                return self._incident(command.incident_id)
            case ShowPolicy():
                return self._policy(command, invocation)
            case Diagnose():
                return self._diagnose(command, invocation)
            case Undo():
                raise ValueError("undo runs in a modal: see bot.commands.undo.undo_in_modal")
            case Declare():
                return self._declare(command, invocation)
            case Digest():
                self._post_digest(invocation.channel_id)
                return _reply(render_done("Digest posted in this channel"))
            case _:
                return _reply(render_help())

    # ----------------------------------------------------------------------------- checks

    def _uncovered(self, namespace: str) -> Reply | None:
        covered = self._ctx.namespaces
        if namespace in covered:
            return None
        known = ", ".join(f"`{n}`" for n in covered) or "none"
        return _reply(render_error(f"Stratus does not cover `{namespace}` (it covers: {known})."))

    # --------------------------------------------------------------------------- commands

    def _status(self, command: Status) -> Reply:
        ctx = self._ctx
        if command.cluster not in (None, ctx.brain.cluster) and command.namespace is not None:
            cluster = command.cluster
            found = reads.open_incidents(ctx, command.namespace, cluster=cluster)
            cards = reads.incident_cards(ctx, found)
            return _reply(render_elsewhere(cluster, command.namespace, ctx.brain.cluster, cards))
        if command.namespace is not None:
            refused = self._uncovered(command.namespace)
            if refused is not None:
                return refused
            names: Sequence[str] = (command.namespace,)
        else:
            names = self._ctx.namespaces
        return _reply(render_status([reads.namespace_health(self._ctx, ns) for ns in names]))

    def _incidents(self, cluster: str | None) -> Reply:
        cluster = cluster or self._ctx.brain.cluster
        found = reads.open_incidents(self._ctx, cluster=cluster)
        cards = reads.incident_cards(self._ctx, found)
        closed = reads.recently_closed(self._ctx, cluster=cluster)
        return _reply(render_incidents(cards, closed, cluster=cluster))

    def _incident(self, incident_id: str) -> Reply:
        machine = self._ctx.brain.machine
        incident = machine.incident(incident_id)
        plans = machine.plans(incident.id)
        message = render_incident(
            incident,
            diagnosis=machine.diagnosis(incident.id),
            plan=machine.current_plan(incident.id) or (plans[-1] if plans else None),
            transactions=machine.transactions(incident.id),
            events=reads.timeline(self._ctx, incident.id),
        )
        return _reply(message)

    def _policy(self, command: ShowPolicy, invocation: Invocation) -> Reply:
        policy = self._ctx.brain.policy
        namespace = command.namespace
        if namespace is None and not command.all:
            namespace = reads.channel_namespace(
                self._ctx, invocation.channel_id, invocation.channel_name
            )
        if namespace is not None:
            chosen = [policy.for_namespace(namespace)]
        else:
            chosen = [policy.defaults, *(policy.for_namespace(n) for n in self._ctx.namespaces)]
        return _reply(render_policy(chosen, source=policy.source))

    def _declare(self, command: Declare, invocation: Invocation) -> Reply:
        namespace = command.namespace or reads.channel_namespace(
            self._ctx, invocation.channel_id, invocation.channel_name
        )
        if namespace is None and len(self._ctx.namespaces) == 1:
            namespace = self._ctx.namespaces[0]
        if namespace is None:
            return _reply(render_error("Which namespace? Add `namespace=<name>` to the command."))
        refused = self._uncovered(namespace)
        if refused is not None:
            return refused
        now = self._ctx.brain.clock.now()
        alert = Alert(
            fingerprint=f"declared-{uuid.uuid4().hex[:16]}",
            name="DeclaredIncident",
            status=AlertStatus.FIRING,
            labels={
                "alertname": "DeclaredIncident",
                "namespace": namespace,
                "severity": "warning",
                "declared_by": invocation.user_id,
            },
            annotations={"summary": command.title, "description": command.title},
            starts_at=now,
            source="declared",
        )
        detection = self._ctx.brain.detector.ingest([alert])
        self._after_detection(detection)
        [disposition] = [d for d in detection.dispositions if d.fingerprint == alert.fingerprint]
        if disposition.incident_id is None:
            return _reply(
                render_error(f"Recorded, but it opened nothing ({disposition.disposition}).")
            )
        incident = self._ctx.brain.machine.incident(disposition.incident_id)
        joined = incident.id not in {i.id for i in detection.opened}
        declared = render_declared(incident, joined=joined, user=invocation.user_id)
        return _reply(declared, in_channel=True)

    def _diagnose(self, command: Diagnose, invocation: Invocation) -> Reply:
        refused = self._uncovered(command.namespace)
        if refused is not None:
            return refused
        diagnosis = self._diagnosis(command.namespace, command.service)
        message = render_adhoc_diagnosis(
            diagnosis, namespace=command.namespace, service=command.service, user=invocation.user_id
        )
        return Reply(
            message=message,
            in_channel=True,
            chart=self._chart(command.namespace, diagnosis, command.service),
        )

    def _diagnosis(self, namespace: str, service: str | None) -> Diagnosis:
        """Diagnose the namespace as it is now, without opening an incident: the diagnoser is
        read-only, and the incident it is given exists only for this call."""
        ctx = self._ctx
        now = ctx.brain.clock.now()
        firing: list[Alert] = []
        if ctx.brain.metrics is not None:
            try:
                firing = list(ctx.brain.metrics.firing_alerts(namespace))
            except MetricsError as e:
                logger.warning("on-demand diagnosis of %s without alerts: %s", namespace, e)
        if service is not None:
            firing = [a for a in firing if a.service == service]
        if not firing:
            labels = {"alertname": "OnDemandDiagnosis", "namespace": namespace}
            if service is not None:
                labels["service"] = service
            firing = [
                Alert(
                    fingerprint=f"on-demand-{namespace}-{service or ''}",
                    name="OnDemandDiagnosis",
                    status=AlertStatus.FIRING,
                    labels=labels,
                    annotations={"summary": "Diagnosis asked for with /stratus diagnose"},
                    starts_at=now,
                    source="declared",
                )
            ]
        incident = Incident(
            id=IncidentId(f"adhoc-{namespace}"),
            title=f"On-demand diagnosis of {namespace}" + (f"/{service}" if service else ""),
            scope=ctx.scope(namespace),
            state=IncidentState.DIAGNOSING,
            mu0=0.0,
            opened_at=now,
            updated_at=now,
            service=service,
            source="declared",
        )
        return ctx.brain.diagnoser.diagnose(incident, firing)

    def _chart(self, namespace: str, diagnosis: Diagnosis, service: str | None) -> Chart | None:
        metrics = self._ctx.brain.metrics
        if metrics is None:
            return None
        end = self._ctx.brain.clock.now()
        services = list(
            dict.fromkeys([diagnosis.root_cause_service, *([service] if service else [])])
        )
        series: list[Series] = []
        try:
            for name in services:
                series.extend(
                    metrics.series(
                        namespace, name, "error_ratio", start=end - CHART_WINDOW, end=end
                    )
                )
        except MetricsError as e:
            logger.warning("no chart for the diagnosis of %s: %s", namespace, e)
            return None
        if not any(s.points for s in series):
            return None
        title = f"Error ratio in {namespace}, last {int(CHART_WINDOW.total_seconds() // 60)} min"
        try:
            png = charts().signal_chart(series, title=title, unit="error ratio")
        except ChartFailed as e:
            logger.warning("no chart for the diagnosis of %s: %s", namespace, e)
            return None
        return Chart(png=png, title=title, filename=f"diagnosis-{namespace}.png")
