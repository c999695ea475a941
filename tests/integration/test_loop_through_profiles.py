"""The whole loop with the golden signals read through a signal profile from the real Prometheus.

The bot runs as `stratus run` runs it (`load_settings` → `build_services` → `BotRuntime`),
pointed at the lab's Kubernetes API, the local Slack workspace and a real Prometheus that
scrapes the lab's exporter speaking Istio's names. Alerts come in through the bot's
Alertmanager webhook from the lab's in-process rule evaluator: the rules stay in the lab's
names, as a team's own alerting is independent of how Stratus reads signals. Prometheus here
evaluates no rules, so its `ALERTS` are empty and every μ the bot measures beyond the cluster's
state (capacity) comes from the golden signals the profile reads through Prometheus.

A fault goes in, the plan waits for an approver, Alice approves it in the workspace, and the
test checks the state it leaves: the transaction committed on a complete measurement, the
incident closed, the object fixed in the cluster.

* `auto` against Istio's names: discovery must find `istio`;
* a profile file over names Prometheus renamed at scrape time (`team_` before every metric);
* `lab` forced against Istio's names: the profile reads nothing, which must never pass as
  healthy.

The lab runs in real time (speed 1, its clock started at the wall clock's now, as the demo
does with Prometheus): Prometheus stamps samples with the wall clock and the bot passes its
windows, in lab seconds, straight into PromQL range selectors, so only at speed 1 does a
`[15s]` the validation asks for cover the 15 s it means.

Each case starts its own lab, Prometheus and bot (about 11 s of the 45 s a case takes): the
bots differ in settings, the renamed case's Prometheus must hold no Istio names, and a lab
shared after a fix would still fire the fixed fault's alerts for a minute (the rules read 1m
windows), which the next case's bot would take for a new incident.
"""

from __future__ import annotations

import subprocess
import urllib.parse
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from agents.adapters.prometheus_metrics import PrometheusMetrics
from agents.model import IncidentState, Scope, TransactionStatus
from agents.severity import UNKNOWN_SIGNALS
from agents.tnr import TnrLimits
from bot.config import load_settings
from bot.ids import ActionId, MessageKind
from bot.runtime import BotRuntime
from bot.services import Options, build_services
from lab.alerts import Route, attach_alerts
from lab.alerts.forwarder import AlertForwarder
from lab.faults import fault
from lab.sim.world import LabWorld, WorldConfig
from lab.slack import SlackWorkspace, WorkspaceConfig
from tests.conftest import require_binary
from tests.integration.conftest import _start, _stop, free_port, http_json, wait_until

HOTEL = "hotel-reservation"
ALICE = "U0ALICE01"  # in @sre-approvers
WEBHOOK_TOKEN = "loop-through-profiles-token"
FAULT, TARGET = "wrong-target-port", "geo"
#: Lab seconds are wall seconds here (speed 1), so these are what the test waits for.
LIMITS = TnrLimits(
    sustain_s=15,
    poll_s=2,
    settle_min_s=2,
    settle_timeout_s=60,
    before_window_s=10,
    lock_ttl_s=30,
    deadline_s=300,
)
POLICY = """\
defaults:
  autonomy: propose
  approvers:
    low: ["@sre-approvers"]
    medium: ["@sre-approvers"]
    high: ["@sre-approvers"]
  approval_ttl: 30m
  attempts: 2
"""
#: Every metric renamed at scrape time: a convention no built-in profile knows.
TEAM_RELABEL: list[dict[str, Any]] = [
    {"source_labels": ["__name__"], "regex": "(.+)", "target_label": "__name__",
     "replacement": "team_${1}"},
]  # fmt: skip
#: Istio's queries over the renamed names: what the team writes for its Prometheus.
TEAM_PROFILE = """\
name: team
identify: [team_istio_requests_total]
service_label: destination_workload
request_rate: >-
  sum by (destination_workload) (rate(team_istio_requests_total
  {reporter="destination",destination_workload_namespace="$namespace"}[$window]))
error_rate: >-
  sum by (destination_workload) (rate(team_istio_requests_total
  {reporter="destination",destination_workload_namespace="$namespace",response_code=~"5.."}
  [$window]))
latency_p50: >-
  histogram_quantile(0.5, sum by (destination_workload, le)
  (rate(team_istio_request_duration_milliseconds_bucket
  {reporter="destination",destination_workload_namespace="$namespace"}[$window])))
latency_p99: >-
  histogram_quantile(0.99, sum by (destination_workload, le)
  (rate(team_istio_request_duration_milliseconds_bucket
  {reporter="destination",destination_workload_namespace="$namespace"}[$window])))
latency_unit: ms
call_graph: >-
  sum by (source_workload, destination_workload) (increase(team_istio_requests_total
  {reporter="source",source_workload_namespace="$namespace"}[$window]))
caller_label: source_workload
peer_label: destination_workload
"""


@dataclass
class Loop:
    world: LabWorld
    ws: SlackWorkspace
    runtime: BotRuntime
    prometheus_url: str

    @property
    def metrics(self) -> PrometheusMetrics:
        source = self.runtime.services.metrics_source
        assert isinstance(source, PrometheusMetrics), source
        return source

    def incident_ids(self) -> list[str]:
        store = self.runtime.services.store
        rows = store.incidents.list_by_state(*[s.value for s in IncidentState])
        return [r.id for r in sorted(rows, key=lambda r: r.opened_at)]

    def plan_message(self, incident_id: str) -> tuple[str, str] | None:
        """Channel and ts of the incident's plan message once it offers Approve."""
        store = self.runtime.services.store
        for ref in store.slack_messages.find(incident_id=incident_id, kind=MessageKind.PLAN.value):
            message = self.ws.message(ref.channel, ref.ts) or {}
            if ActionId.APPROVE in _buttons(message):
                return ref.channel, ref.ts
        return None


def _buttons(message: Mapping[str, Any]) -> set[str]:
    return {
        str(element.get("action_id"))
        for block in message.get("blocks") or []
        if block.get("type") == "actions"
        for element in block.get("elements", [])
    }


def _prometheus(home: Path, target: str, relabel: list[dict[str, Any]] | None) -> tuple[str, Any]:
    """A real Prometheus scraping `target` every second (no rules, no Alertmanager)."""
    binary = require_binary("prometheus")
    job: dict[str, Any] = {
        "job_name": "lab",
        "honor_labels": True,
        "static_configs": [{"targets": [target]}],
    }
    if relabel:
        job["metric_relabel_configs"] = relabel
    config = home / "prometheus.yml"
    config.write_text(
        yaml.safe_dump({"global": {"scrape_interval": "1s"}, "scrape_configs": [job]})
    )
    port = free_port()
    proc = _start(
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={home / 'prometheus-data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        home / "prometheus.log",
    )
    return f"http://127.0.0.1:{port}", proc


def _has_series(url: str, metric: str) -> bool:
    query = urllib.parse.quote(f"count({metric})")
    try:
        return bool(http_json(f"{url}/api/v1/query?query={query}")["data"]["result"])
    except OSError:
        return False  # not listening yet


@contextmanager
def loop_lab(
    home: Path, *, settings: Mapping[str, str], relabel: list[dict[str, Any]] | None, probe: str
) -> Iterator[Loop]:
    """The lab (Istio's names on /metrics), Prometheus, the workspace and the running bot."""
    procs: list[subprocess.Popen[bytes]] = []
    ws = SlackWorkspace(WorkspaceConfig(ack_timeout_s=15.0))
    world = LabWorld(
        WorldConfig(
            apps=(HOTEL,),
            seed=5,
            stepped=False,
            speed=1.0,
            serve_api=True,
            serve_metrics=True,
            signals="istio",
            scrape_interval_s=1.0,
            kubeconfig=home / "kubeconfig",
            # Lab time starts now: Prometheus stamps samples with the wall clock.
            start=datetime.now(UTC).replace(microsecond=0),
        )
    )
    forwarder = AlertForwarder(token=WEBHOOK_TOKEN)
    runtime: BotRuntime | None = None
    try:
        ws.start()
        world.start()
        assert world.metrics_url is not None
        url, proc = _prometheus(home, urllib.parse.urlsplit(world.metrics_url).netloc, relabel)
        procs.append(proc)
        world.wait_healthy(timeout_s=120)
        wait_until(
            lambda: _has_series(url, probe),
            timeout_s=60,
            what=f"Prometheus's first scrape of {probe}",
        )
        attach_alerts(world, webhook=forwarder, route=Route(group_wait_s=1, group_interval_s=5))
        (home / "policy.yaml").write_text(POLICY)
        cfg = ws.config
        values = {
            "SLACK_BOT_TOKEN": cfg.bot_token,
            "SLACK_APP_TOKEN": cfg.app_token,
            "SLACK_SIGNING_SECRET": cfg.signing_secret,
            "SLACK_API_URL": ws.api_url,
            "STRATUS_SLACK_MODE": "socket",
            "STRATUS_HTTP_HOST": "127.0.0.1",
            "STRATUS_HTTP_PORT": "0",
            "STRATUS_DATABASE_URL": f"sqlite:///{home / 'stratus.db'}",
            "KUBECONFIG": str(home / "kubeconfig"),
            "STRATUS_CLUSTER_NAME": "lab",
            "STRATUS_NAMESPACES": HOTEL,
            "STRATUS_POLICY_FILE": str(home / "policy.yaml"),
            "STRATUS_SCAN_INTERVAL_S": "0",  # the webhook opens the incident
            "STRATUS_WEBHOOK_TOKEN": WEBHOOK_TOKEN,
            "STRATUS_PROMETHEUS_URL": url,
            **settings,
        }
        # No metrics source in the options: the bot builds its own from the settings.
        options = Options(clock=world.clock, limits=LIMITS, housekeeping_interval_s=2.0)
        runtime = BotRuntime(build_services(load_settings(values), options))
        runtime.start()
        ws.wait_until(lambda: ws.socket_connections, timeout=15)
        forwarder.url = runtime.webhook_url
        # The change journal's baseline, before anything breaks: the fix's value comes from it.
        journal = runtime.services.store.journal
        wait_until(
            lambda: journal.query("lab", HOTEL, kind="Service"),
            timeout_s=30,
            what="the journal's baseline",
        )
        yield Loop(world=world, ws=ws, runtime=runtime, prometheus_url=url)
    finally:
        if runtime is not None:
            runtime.stop()
        forwarder.stop()
        for proc in procs:
            _stop(proc)
        world.stop()
        ws.stop()


def target_port(world: LabWorld) -> object:
    service = world.api.get("Service", HOTEL, TARGET)
    assert service is not None
    return service["spec"]["ports"][0]["targetPort"]


def story(loop: Loop, incident_id: str) -> str:
    """The incident's timeline, for a failure message."""
    events = loop.runtime.services.store.incidents.timeline(incident_id)
    return "\n".join(f"{e.at:%H:%M:%S} {e.state}: {e.message}" for e in events)


def inject_and_approve(loop: Loop) -> str:
    """Break the geo Service; approve the plan as Alice once it waits; the incident's id."""
    before = target_port(loop.world)
    fault(FAULT).inject(loop.world, app=HOTEL, target=TARGET)
    assert target_port(loop.world) != before, "the fault changed nothing"
    incident_id: str = wait_until(
        lambda: next(iter(loop.incident_ids()), None), timeout_s=120, what="an incident"
    )
    machine = loop.runtime.services.brain.machine

    def plan_or_end() -> tuple[str, str] | bool | None:
        if machine.incident(incident_id).state in (IncidentState.CLOSED, IncidentState.ESCALATED):
            return True  # ended without asking: the assertions below say how
        return loop.plan_message(incident_id)

    found = wait_until(plan_or_end, timeout_s=120, what="the plan's Approve button")
    if isinstance(found, tuple):
        channel, ts = found
        loop.ws.click(ALICE, channel, ts, ActionId.APPROVE)
    return incident_id


def assert_healed(loop: Loop, incident_id: str, fixed_port: object) -> None:
    machine = loop.runtime.services.brain.machine
    wait_until(
        lambda: machine.incident(incident_id).state is IncidentState.CLOSED,
        timeout_s=180,
        what=f"{incident_id} to close",
    )
    context = story(loop, incident_id)
    txs = machine.transactions(incident_id)
    assert [tx.status for tx in txs] == [TransactionStatus.COMMITTED], context
    [tx] = txs
    figures = tx.validation
    # Validation measured μ completely: the golden signals were read, not unknown.
    assert figures["complete"] is True and figures["unknown"] == [], figures
    assert tx.mu_after == 0.0 and figures["passed"] is True, figures
    # Prometheus evaluates no rules here and no replica was lost, so a μ above 0 before the
    # fix can only be the SLO term: the profile read the failing calls through Prometheus.
    assert tx.mu_before > 0, figures
    assert "Closed (resolved)" in context, context
    assert target_port(loop.world) == fixed_port
    # And the profile reads the app's traffic now, as the validation did.
    signals = loop.metrics.golden_signals(HOTEL, window_s=int(LIMITS.sustain_s))
    assert signals["frontend"].request_rate > 0, signals
    assert signals[TARGET].request_rate > 0, signals


@pytest.mark.timeout(420)
def test_auto_finds_istio_and_the_loop_heals_a_fault_through_it(tmp_path: Path) -> None:
    with loop_lab(
        tmp_path,
        settings={"STRATUS_SIGNAL_PROFILE": "auto"},
        relabel=None,
        probe="istio_requests_total",
    ) as loop:
        fixed = target_port(loop.world)
        incident_id = inject_and_approve(loop)
        assert_healed(loop, incident_id, fixed)
        assert loop.metrics.configured_profile == "auto"
        assert loop.metrics.profile().name == "istio"


@pytest.mark.timeout(420)
def test_a_profile_file_over_renamed_metrics_heals_a_fault(tmp_path: Path) -> None:
    path = tmp_path / "team-profile.yaml"
    path.write_text(TEAM_PROFILE)
    with loop_lab(
        tmp_path,
        settings={"STRATUS_SIGNAL_PROFILE_FILE": str(path)},
        relabel=TEAM_RELABEL,
        probe="team_istio_requests_total",
    ) as loop:
        # Prometheus holds only the renamed names: nothing a built-in profile reads.
        assert not _has_series(loop.prometheus_url, "istio_requests_total")
        fixed = target_port(loop.world)
        incident_id = inject_and_approve(loop)
        assert_healed(loop, incident_id, fixed)
        assert loop.metrics.profile().name == "team"


@pytest.mark.timeout(420)
def test_a_profile_that_reads_nothing_never_measures_healthy(tmp_path: Path) -> None:
    """`lab` forced on a cluster speaking Istio: every query is valid PromQL and returns no
    series. That is unknown, never healthy (DESIGN section 3, rule 8): the incident must not
    close as transient, nor any transaction commit, while the fault is in place."""
    with loop_lab(
        tmp_path,
        settings={"STRATUS_SIGNAL_PROFILE": "lab"},
        relabel=None,
        probe="istio_requests_total",
    ) as loop:
        broken = fault(FAULT).inject(loop.world, app=HOTEL, target=TARGET)
        incident_id = wait_until(
            lambda: next(iter(loop.incident_ids()), None), timeout_s=120, what="an incident"
        )
        machine = loop.runtime.services.brain.machine
        # Past diagnosis and planning: the first place it could wrongly end is the
        # "Transient: symptoms cleared" check at planning, which measures μ.
        settled = (
            IncidentState.AWAITING_APPROVAL,
            IncidentState.ESCALATED,
            IncidentState.RESOLVED,
            IncidentState.CLOSED,
        )
        wait_until(
            lambda: machine.incident(incident_id).state in settled,
            timeout_s=120,
            what=f"{incident_id} to reach a plan or an end",
        )
        context = story(loop, incident_id)
        assert target_port(loop.world) == broken.params["port"], "the fault is still in place"
        assert machine.incident(incident_id).state is not IncidentState.CLOSED, context
        assert "Transient" not in context, context
        assert all(
            tx.status is not TransactionStatus.COMMITTED for tx in machine.transactions(incident_id)
        )
        severity = loop.runtime.services.brain.engine.measure(Scope(cluster="lab", namespace=HOTEL))
        assert UNKNOWN_SIGNALS in severity.unknown, severity
        assert not severity.healthy, severity
