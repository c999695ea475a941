"""The live demo: the lab cluster, a local Slack workspace in the browser, and the real bot.

Everything runs in this process except Prometheus and Alertmanager (real binaries, when they
are installed and `--prometheus` allows): the lab in running mode, the workspace's web page,
and the production bot (`build_services` + `BotRuntime`) pointed at them. After a short pause a
scenario's faults are injected; a minute after its incident closes (time to try Undo) the lab is
put back and the next scenario follows.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from agents.errors import StratusError
from agents.model import IncidentState, Scope
from agents.tnr import TnrLimits
from bot.config import load_settings
from bot.runtime import BotRuntime
from bot.services import Options, build_services
from lab.alerts import Route, attach_alerts
from lab.alerts.forwarder import AlertForwarder
from lab.alerts.stack import AlertingStack, metrics_target
from lab.bench.suite import LoadedScenario
from lab.faults import Injection, fault
from lab.sim.world import LabWorld, WorldConfig
from lab.slack import SlackWorkspace, WorkspaceConfig

logger = logging.getLogger(__name__)

#: Lab-time windows short enough to watch: a transaction validates in about a minute of lab time.
DEMO_LIMITS = TnrLimits(
    sustain_s=30, poll_s=3, settle_min_s=3, settle_timeout_s=120, lock_ttl_s=30, deadline_s=600
)
POLICY = """\
# The demo's policy: every plan waits for an approver from @sre-approvers (Alice, Bob);
# high-risk plans need both. Carol can watch but not approve.
defaults:
  autonomy: propose
  approvers:
    low: ["@sre-approvers"]
    medium: ["@sre-approvers"]
    high: ["@sre-approvers"]
  two_person_rule: high
  approval_ttl: {ttl}
  attempts: 3
"""
#: How long a plan waits for approval, in real minutes (the policy counts lab time).
APPROVAL_REAL_MIN = 30
#: Wall seconds the demo waits, after putting the lab back, for it to measure healthy.
QUIET_MAX_S = 600.0
CLUSTER = "lab"

Say = Callable[[str], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveOptions:
    scenarios: tuple[LoadedScenario, ...]
    home: Path
    workspace_port: int
    speed: float
    prometheus: bool
    pause_s: float = 5.0  # wall seconds before the first fault
    # Wall seconds a closed incident's end state stays as it is before the lab is put back,
    # so a viewer can press Undo and watch it take effect; the reset would otherwise race it.
    linger_s: float = 60.0
    # Wall seconds after the lab is put back, so its alerts resolve before the next fault.
    settle_s: float = 30.0
    seed: int = 7


class LiveDemo:
    def __init__(self, options: LiveOptions, say: Say) -> None:
        self._o = options
        self._say = say
        self._stop = threading.Event()
        self.world: LabWorld | None = None
        self.ws: SlackWorkspace | None = None
        self.runtime: BotRuntime | None = None
        self._forwarder: AlertForwarder | None = None
        self._stack: AlertingStack | None = None

    @property
    def apps(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.scenario.app for s in self._o.scenarios))

    @property
    def scenario_ids(self) -> tuple[str, ...]:
        return tuple(s.scenario.id for s in self._o.scenarios)

    def stop(self) -> None:
        self._stop.set()

    def start(self) -> None:
        home = self._o.home
        home.mkdir(parents=True, exist_ok=True)
        for stale in home.glob("stratus.db*"):
            stale.unlink()  # a fresh incident history every run
        kubeconfig = home / "kubeconfig"
        self.world = world = LabWorld(
            WorldConfig(
                apps=self.apps,
                seed=self._o.seed,
                stepped=False,
                speed=self._o.speed,
                serve_api=True,
                serve_metrics=self._o.prometheus,
                scrape_interval_s=1.0 if self._o.prometheus else 5.0,
                kubeconfig=kubeconfig,
                # Lab time starts now: Prometheus stamps samples with the wall clock.
                start=datetime.now(UTC).replace(microsecond=0),
            )
        ).start()
        # The workspace runs on the lab's clock, so the times of its messages and the times
        # Stratus writes in them agree, and the page says the clock runs fast.
        self.ws = SlackWorkspace(
            WorkspaceConfig(
                port=self._o.workspace_port,
                clock_note=f"lab time (UTC), {self._o.speed:g}× real time",
            ),
            clock=world.clock.time,
        )
        self.ws.start()
        self._say("Starting the lab cluster and its apps…")
        world.wait_healthy(timeout_s=600)
        (home / "policy.yaml").write_text(
            POLICY.format(ttl=f"{round(APPROVAL_REAL_MIN * self._o.speed)}m")
        )
        values = {
            "SLACK_BOT_TOKEN": self.ws.config.bot_token,
            "SLACK_APP_TOKEN": self.ws.config.app_token,
            "SLACK_SIGNING_SECRET": self.ws.config.signing_secret,
            "SLACK_API_URL": self.ws.api_url,
            "STRATUS_SLACK_MODE": "socket",
            "STRATUS_HTTP_HOST": "127.0.0.1",
            "STRATUS_HTTP_PORT": "0",
            "STRATUS_DATABASE_URL": f"sqlite:///{home / 'stratus.db'}",
            "KUBECONFIG": str(kubeconfig),
            "STRATUS_CLUSTER_NAME": CLUSTER,
            "STRATUS_NAMESPACES": ",".join(self.apps),
            "STRATUS_POLICY_FILE": str(home / "policy.yaml"),
            "STRATUS_SCAN_INTERVAL_S": "10",
            "STRATUS_WEBHOOK_TOKEN": (token := secrets.token_urlsafe(24)),
        }
        self._forwarder = AlertForwarder(token=token)
        metrics_source = None
        if self._o.prometheus:
            assert world.metrics_url is not None
            self._stack = AlertingStack(
                home=home / "alerting",
                metrics_target=metrics_target(world.metrics_url),
                webhook_url="http://127.0.0.1:1/unused",  # set below, once the bot listens
                webhook_token=token,
            )
        else:
            alerts = attach_alerts(
                world, webhook=self._forwarder, route=Route(group_wait_s=5, group_interval_s=30)
            )
            metrics_source = alerts.metrics
        options = Options(
            clock=world.clock,
            metrics_source=metrics_source,
            limits=DEMO_LIMITS,
            housekeeping_interval_s=5.0,
        )
        if self._stack is not None:
            values = self._start_stack_then_bot(values, options)
        else:
            self.runtime = BotRuntime(build_services(load_settings(values), options))
            self.runtime.start()
            self._forwarder.url = self.runtime.webhook_url
        # The bot's settings, for `stratus doctor` (or a second `stratus run`) against the
        # demo: `env $(cat .stratus-demo/stratus.env) stratus doctor`. Lab credentials only.
        (home / "stratus.env").write_text(
            "".join(f"{key}={value}\n" for key, value in sorted(values.items()))
        )

    def _start_stack_then_bot(self, values: dict[str, str], options: Options) -> dict[str, str]:
        assert self._stack is not None
        # The bot needs Prometheus's URL and Alertmanager needs the bot's: start the bot on a
        # fixed free port first, then the stack pointing at it.
        from lab.alerts.stack import free_port

        port = free_port()
        values = {**values, "STRATUS_HTTP_PORT": str(port)}
        self._stack.webhook_url = f"http://127.0.0.1:{port}/alerts/alertmanager"
        self._stack.start()
        values["STRATUS_PROMETHEUS_URL"] = self._stack.prometheus_url
        self.runtime = BotRuntime(build_services(load_settings(values), options))
        self.runtime.start()
        return values

    def banner(self) -> str:
        assert self.ws is not None and self.world is not None and self.runtime is not None
        kubeconfig = self.world.config.kubeconfig
        alerting = (
            f"Prometheus {self._stack.prometheus_url}, Alertmanager {self._stack.alertmanager_url}"
            if self._stack is not None
            else "the lab's in-process metrics and alert rules"
        )
        names = ", ".join(s.scenario.id for s in self._o.scenarios)
        return "\n".join(
            [
                "",
                f"  Slack workspace:  {self.ws.url}   (open it in a browser; pick who you are)",
                f"  kubeconfig:       {kubeconfig}",
                f"  bot settings:     {self._o.home / 'stratus.env'}   "
                f"(env $(cat {self._o.home / 'stratus.env'}) stratus doctor)",
                f"                    kubectl --kubeconfig {kubeconfig} get pods -A",
                f"  bot endpoints:    {self.runtime.http_url}  (/healthz /readyz /metrics)",
                f"  alerting:         {alerting}",
                f"  scenarios:        {names}",
                f"  lab time:         {self._o.speed:g}× real time (the times in the workspace"
                " and in Stratus's messages are lab time; a plan waits "
                f"{APPROVAL_REAL_MIN} real minutes for approval)",
                "",
                "  Ctrl-C stops everything.",
                "",
            ]
        )

    def run(self) -> None:
        """Inject each scenario in turn; wait for its incident to close; reset; repeat."""
        assert self.world is not None
        if self._stop.wait(self._o.pause_s):
            return
        while not self._stop.is_set():
            for loaded in self._o.scenarios:
                if self._stop.is_set():
                    return
                self._play(loaded)

    def _play(self, loaded: LoadedScenario) -> None:
        assert self.world is not None and self.runtime is not None
        scenario = loaded.scenario
        self._say(f"Injecting scenario {scenario.id}: {scenario.description}")
        injections: list[Injection] = []
        # Incidents of earlier scenarios are closed already; the ones open now (one the bot
        # opened on the lab's own start-up, say, which this scenario's alerts then join) and
        # the ones this scenario opens decide when it is over.
        earlier = self._incident_ids(IncidentState.CLOSED)
        started = time.monotonic()
        steps = sorted(scenario.faults, key=lambda f: f.at)
        # The bench leaves room for noise before the first fault; the demo starts with it and
        # keeps the spacing between faults (two-fault scenarios).
        first = steps[0].at if steps else 0.0
        for step in steps:
            wait = (step.at - first) / self._o.speed - (time.monotonic() - started)
            if wait > 0 and self._stop.wait(wait):
                return
            injection = fault(step.fault).inject(
                self.world, app=scenario.app, target=step.target, params=dict(step.params)
            )
            injections.append(injection)
            self._say("  " + "; ".join(injection.changes))
        if not self._wait_closed(earlier):
            return
        self._say(
            f"Scenario {scenario.id}: incident closed; try Undo in its channel. The lab is "
            f"put back in {self._o.linger_s:g}s."
        )
        if self._stop.wait(self._o.linger_s):
            return
        # An Undo during the linger brings the fault back, and with it a new incident: the lab
        # is put back only once that one is closed too (never under an open incident).
        if not self._wait_closed(self._incident_ids(), quiet_ok=True):
            return
        self._say(f"Scenario {scenario.id}: putting the lab back for the next one.")
        for injection in reversed(injections):
            fault(injection.fault_id).recover(self.world, injection)
        self._stop.wait(self._o.settle_s)
        self._wait_healthy()
        self._wait_all_closed()

    def _wait_healthy(self) -> None:
        """Wait until every app measures healthy (μ 0: no alert firing, SLOs met), at most
        `QUIET_MAX_S`. An alert still firing from the scenario just put back would otherwise
        be read as that closed incident's (by design: alerts outlive their failure), and the
        next scenario's failure, showing through the same alert, would open no incident."""
        assert self.runtime is not None
        engine = self.runtime.services.brain.engine
        scopes = [Scope(cluster=CLUSTER, namespace=app) for app in self.apps]
        started = time.monotonic()
        while not self._stop.is_set():
            try:
                if all(engine.measure(scope).mu <= 0 for scope in scopes):
                    return
            except StratusError as e:
                logger.info("demo: the lab's health is unknown yet: %s", e)
            if time.monotonic() - started > QUIET_MAX_S:
                self._say(f"  the lab is still not healthy after {QUIET_MAX_S:g}s; going on")
                return
            self._stop.wait(2)

    def _wait_all_closed(self) -> None:
        """Wait until every incident is closed, at most `QUIET_MAX_S`. An escalation stays open
        until its alerts stop, which is after the lab is healthy again; the next scenario's
        alerts would otherwise join that escalated incident (same namespace) and, since it is
        in a person's hands, no plan would follow."""
        assert self.runtime is not None
        store = self.runtime.services.store
        open_states = [s.value for s in IncidentState if s is not IncidentState.CLOSED]
        started = time.monotonic()
        while not self._stop.is_set():
            still = sorted(row.id for row in store.incidents.list_by_state(*open_states))
            if not still:
                return
            if time.monotonic() - started > QUIET_MAX_S:
                self._say(f"  {', '.join(still)} still open after {QUIET_MAX_S:g}s; going on")
                return
            self._stop.wait(2)

    def _incident_ids(self, *states: IncidentState) -> set[str]:
        """The incidents in `states` (default: all)."""
        assert self.runtime is not None
        store = self.runtime.services.store
        wanted = states or tuple(IncidentState)
        return {row.id for row in store.incidents.list_by_state(*[s.value for s in wanted])}

    def _wait_closed(self, earlier: set[str], *, quiet_ok: bool = False) -> bool:
        """Wait until the incidents this scenario opened are closed and none is open at all
        (`quiet_ok`: also when it opened none).

        No time limit: the lab is never put back under an open incident (a plan may wait for a
        person's approval for as long as they like). False only when the demo is stopping."""
        assert self.runtime is not None
        store = self.runtime.services.store
        seen: set[str] = set()
        reminded = time.monotonic()
        while not self._stop.is_set():
            rows = store.incidents.list_by_state(*[s.value for s in IncidentState])
            for row in rows:
                if row.id not in earlier and row.id not in seen:
                    seen.add(row.id)
                    self._say(f"  incident {row.id}: {row.title}")
            # An escalated incident stays open while its alerts fire: it waits for a person,
            # whom the demo plays by putting the lab back (then its alerts stop and it closes).
            done = (IncidentState.CLOSED.value, IncidentState.ESCALATED.value)
            open_ids = [r.id for r in rows if r.state not in done]
            if (seen or quiet_ok) and not open_ids:
                return True
            if open_ids and time.monotonic() - reminded > 300:
                reminded = time.monotonic()
                waiting = ", ".join(sorted(open_ids))
                self._say(f"  waiting for {waiting} to close (approve or reject its plan)")
            self._stop.wait(2)
        return False

    def close(self) -> None:
        if self.runtime is not None:
            self.runtime.stop()
        if self._forwarder is not None:
            self._forwarder.stop()
        if self._stack is not None:
            self._stack.stop()
        if self.world is not None:
            self.world.stop()
        if self.ws is not None:
            self.ws.stop()


def default_cycle(suite: Sequence[LoadedScenario]) -> tuple[LoadedScenario, ...]:
    """A few scenarios that show the loop well, all on one app (a lighter lab)."""
    wanted = (
        "hotel-wrong-target-port-geo",
        "hotel-crashing-image-recommendation",
        "hotel-revoked-credentials-mongodb-geo",
    )
    by_id = {s.scenario.id: s for s in suite}
    chosen = tuple(by_id[i] for i in wanted if i in by_id)
    return chosen or tuple(suite[:1])
