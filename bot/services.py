"""`build_services(settings) -> Services`: the production wiring, and the contract every Slack
surface codes against.

    services = build_services(load_settings())     # migrates the database first
    runtime = BotRuntime(services); runtime.start() # Bolt + HTTP + services.start()
    ...
    runtime.stop()                                 # services.close() included

`Services` is what a running bot is made of, built once from settings. What a surface (a
listener, `/stratus`, the App Home, the digests) uses:

* `brain` — the agents (`agents.wiring.Brain`): read incidents, plans, diagnoses and
  transactions with `brain.machine.incident/plans/plan/diagnosis/transactions`, the policy
  with `brain.policy`, the covered namespaces with `namespaces`.
* `incidents` — `bot.operations.IncidentOps`, the only way to *act*. Each call returns at once,
  runs in a lane and tells the person the outcome (ephemeral, or a DM without a channel):
  - `approve(plan_id=, content_hash=, user=, channel=)`
  - `reject(plan_id=, content_hash=, user=, channel=, reason=)`
  - `undo(transaction_id=, user=, channel=, view_id=, confirm_drift=False)` — with a modal
    open (`view_id`, e.g. `render_undo_checking` opened on the click's trigger), the modal
    becomes the result, or the drift with an "Overwrite & undo" submit handled by the core;
  - `drive(incident_id)`, `ingest(alerts) -> Detection`, `after_detection(detection)` (announce
    and drive what a detection opened — the hook for `/stratus declare`).
  Never call `brain.machine.drive`, `brain.approvals.*` or `brain.undoer` from a listener
  thread: a writer must run in its scope's lane, which is what keeps an Undo from writing
  next to a running transaction of the same process.
* `directory.person(user_id) -> Person` — the clicker as the policy sees them (user groups
  resolved, cached a minute); `directory.members(approvers)` resolves `@groups` to user ids.
* `slack` — `bot.slack_io.SlackIO`: paced, retried Web API calls (`post`, `update`, `tell`,
  `ephemeral`, `open_view`, `update_view`, `upload`...), raising `SlackCallFailed`;
  `slack.client` is the raw `WebClient` (retry handlers included) for anything else.
* `notifier` — `SlackNotifier`; `notifier.sync_later(incident_id)` re-renders an incident's
  messages from storage. `channels.locate(incident_id)` says where an incident lives.
* `scheduler` — apscheduler 3 `BackgroundScheduler`, started in `start()`: job store
  `default` is the database (persistent jobs: a module-level function and picklable
  arguments), `memory` holds the process's own periodic jobs.
* `store`, `settings`, `clock`, `metrics` (the bot's Prometheus counters), `failures`
  (`report(error, Origin(...))`: log with traceback + one mapped sentence to the person).

`Options` are for an embedding composition root (the demo and tests on the lab): its clock,
its metrics source, shorter transaction limits and intervals. Production passes none.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from apscheduler.schedulers.background import BackgroundScheduler

from agents.adapters.kubernetes_cluster import KubernetesCluster
from agents.cache.cluster_cache import ClusterCache
from agents.clock import SystemClock
from agents.detection.inbox import AlertInbox
from agents.diagnosis import ClaudeSettings, LanguageModel
from agents.errors import ClusterError, MetricsError
from agents.journal import JournalWatcher
from agents.leadership import LeaderElector, Leadership, LeaseConfig
from agents.model import IncidentId
from agents.policy import Policy, default_policy, load_policy
from agents.ports import Clock, MetricsSource
from agents.tnr import TnrLimits, TransactionEngine
from agents.tnr.ledger import StorageLedger
from agents.wiring import Brain, build_brain
from bot.channels import IncidentChannels
from bot.chart_process import close_charts
from bot.config import (
    AnthropicSettings,
    KubernetesSettings,
    Settings,
    SettingsError,
    SlackMode,
    check_deadlines,
)
from bot.digest import register_digests
from bot.directory import Directory
from bot.errors import SlackCallFailed, StartupError
from bot.failures import FailureReporter
from bot.messages import IncidentMessages, signal_chart
from bot.metrics import BotMetrics
from bot.notifier import SlackNotifier
from bot.operations import IncidentOps
from bot.scheduler import build_scheduler, every
from bot.slack_io import SlackIO, web_client
from bot.workers import Lanes
from storage import StorageError, Store
from storage.migrations import upgrade

if TYPE_CHECKING:
    from agents.adapters.signal_profiles import SignalProfile

logger = logging.getLogger(__name__)

SYSTEM_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Options:
    """What an embedding composition root may supply instead of the settings' defaults."""

    clock: Clock | None = None  # default: the wall clock
    metrics_source: MetricsSource | None = None  # instead of STRATUS_PROMETHEUS_URL
    limits: TnrLimits | None = None  # instead of the policy's transaction limits
    workers: int = 8  # threads for incident work (drives, decisions, undos)
    slack_workers: int = 4  # threads that post and update messages
    housekeeping_interval_s: float = 30.0  # recovery, approval expiry, Slack retries
    journal: bool = True  # watch the covered namespaces for the change journal
    #: Serve the scan, detection, diagnosis and planning from watch-fed caches (one list and
    #: one watch per kind and covered namespace) instead of listing the API server each time.
    cache: bool = True
    slack_post_interval_s: float = 1.0
    slack_update_interval_s: float = 1.0
    holder: str | None = None  # the writer-lock holder name (default: host and pid)
    #: Seconds Bolt waits for a listener's ack() (Slack allows 3). Only a harness whose
    #: workspace waits longer raises it, so a starved CI thread does not lose a click.
    ack_timeout_s: int = 3
    #: Called once when this replica stops leading (`stratus run` exits then, so that its
    #: restart starts clean); the singleton work has already stopped.
    on_lost_leadership: Callable[[], None] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Services:
    settings: Settings
    options: Options
    clock: Clock
    store: Store
    cluster: KubernetesCluster
    cache: ClusterCache | None
    metrics_source: MetricsSource | None
    model: LanguageModel | None
    policy: Policy
    brain: Brain
    metrics: BotMetrics
    slack: SlackIO
    bot_user_id: str
    directory: Directory
    channels: IncidentChannels
    notifier: SlackNotifier
    incidents: IncidentOps
    failures: FailureReporter
    work: Lanes
    slack_lanes: Lanes
    scheduler: BackgroundScheduler
    journal_watcher: JournalWatcher | None
    inbox: AlertInbox
    leader: LeaderElector | None = None  # None: leader election off, this process leads
    _state: dict[str, bool] = field(default_factory=dict)

    @property
    def namespaces(self) -> tuple[str, ...]:
        return self.brain.namespaces

    def start(self) -> None:
        """Start the background work. With leader election, campaign first (synchronously
        once, so a lone replica leads before `start` returns) and run the singleton work —
        the scheduler's jobs, the journal's watches, the cache, the resumption of every open
        incident — only while leading; every replica serves Slack and the webhook."""
        if self._state.get("started"):
            return
        self._state["started"] = True
        if self.leader is None:
            self._lead(0)
        else:
            self.leader.start()
        logger.info(
            "stratus started: cluster %s, namespaces %s, %s mode, %s%s",
            self.cluster.cluster_name,
            ", ".join(self.namespaces) or "(none)",
            self.settings.slack.mode.value,
            self.settings.slack.channel_mode.value,
            ""
            if self.leader is None
            else f", {self.leadership().identity} {'leads' if self.leads() else 'follows'}",
        )

    def leads(self) -> bool:
        return self.leader is None or self.leader.leading

    def leadership(self) -> Leadership:
        if self.leader is None:
            holder = self.options.holder or "this process"
            return Leadership(identity=holder, leading=True, holder=holder, token=None)
        return self.leader.status()

    def _lead(self, token: int) -> None:
        """Become the leader: start the singleton work."""
        if self._state.get("closed") or self._state.get("leading"):
            return
        self._state["leading"] = True
        ops, options = self.incidents, self.options
        self.metrics.leader.set(1)
        self.scheduler.start(paused=True)
        if self.settings.scan_interval_s > 0:
            self._every("scan", self.settings.scan_interval_s, ops.scan)
        else:
            self._every("detector-tick", options.housekeeping_interval_s, ops.tick)
        self._every("housekeeping", options.housekeeping_interval_s, ops.housekeeping)
        if self.leader is not None:
            self._every("pickup", self.leader.config.retry_s, ops.pickup)
            logger.info("leading with fencing token %d: starting the singleton work", token)
        self._schedule_digests()
        if self.journal_watcher is not None:
            self.journal_watcher.start()  # first: it follows the cache's watches from their list
        if self.cache is not None:
            self.cache.start(self.namespaces)  # warm: the first scan finds them synced
        ops.resume()
        self.scheduler.resume()

    def _every(self, name: str, seconds: float, job: Callable[[], object]) -> None:
        """A leader-only periodic job: fenced (a leader whose renewal is overdue skips the
        pass) and counted (`stratus_singleton_runs`)."""
        gate = self._gate(name)

        def fenced() -> None:
            if gate():
                job()

        every(self.scheduler, name, seconds, fenced)

    def _gate(self, name: str) -> Callable[[], bool]:
        """Whether a run of singleton job `name` may go ahead now; counts the runs it lets
        through, so two replicas' `stratus_singleton_runs` show any job that ran on both."""
        leader, runs = self.leader, self.metrics.singleton_runs.labels(job=name)

        def gate() -> bool:
            if leader is not None and not leader.fenced():
                logger.info("%s skipped: this replica no longer surely leads", name)
                return False
            runs.inc()
            return True

        return gate

    def _step_down(self) -> None:
        """No longer the leader: stop the singleton work at once (a follower may take over
        after the lease), then tell the process."""
        self.metrics.leader.set(0)
        if self._state.pop("leading", False):
            if self.scheduler.running:
                self.scheduler.shutdown(wait=False)
            if self.journal_watcher is not None:
                self.journal_watcher.signal_stop()
        hook = self.options.on_lost_leadership
        if hook is not None and not self._state.get("closed"):
            hook()

    def _schedule_digests(self) -> None:
        """Digest jobs live in the persistent job store."""
        register_digests(self, gate=self._gate("digest"))

    def database_ready(self) -> bool:
        try:
            self.store.incidents.list_open()
        except StorageError as e:
            logger.warning("readiness: database unavailable: %s", e)
            return False
        return True

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until no incident work and no Slack sync is queued or running (tests)."""
        return self.work.wait_idle(timeout_s) and self.notifier.wait_idle(timeout_s)

    def close(self) -> None:
        """Stop everything started, then release connections. Idempotent."""
        if self._state.get("closed"):
            return
        self._state["closed"] = True
        if self.leader is not None:
            self.leader.stop()  # releases the lease: a follower takes over within its retry
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)
        if self.journal_watcher is not None:
            # Not joined: a watch thread sits in a long-poll until its next event or the
            # watch's timeout, and returns then without writing (it checks the flag first).
            # The threads are daemons, so none holds the process; waiting only printed
            # "still running" on every Ctrl-C.
            self.journal_watcher.signal_stop()
        if self.cache is not None:
            self.cache.close(timeout_s=1.0)
        # Messages are re-rendered from storage at the next start: stop talking to Slack
        # first, so queued syncs end at once, then let running work finish for a while.
        self.slack.close()
        self.notifier.close()
        self.slack_lanes.close(timeout_s=2.0)
        self.work.close(timeout_s=10.0)
        close_charts()  # the chart worker, if a chart started one; reaped
        self.cluster.close()
        close = getattr(self.metrics_source, "close", None)
        if callable(close):
            close()
        close_model = getattr(self.model, "close", None)
        if callable(close_model):
            close_model()
        self.store.close()


def _check_slack(settings: Settings) -> None:
    slack = settings.slack
    if not slack.bot_token:
        raise SettingsError("SLACK_BOT_TOKEN", "is required")
    if slack.mode is SlackMode.SOCKET and not slack.app_token:
        raise SettingsError("SLACK_APP_TOKEN", "is required in socket mode (STRATUS_SLACK_MODE)")
    if slack.mode is SlackMode.HTTP and not slack.signing_secret:
        raise SettingsError("SLACK_SIGNING_SECRET", "is required in http mode")


def _policy(settings: Settings) -> Policy:
    if settings.policy_file is None:
        logger.info("no STRATUS_POLICY_FILE: every plan needs one approval from anyone")
        return default_policy()
    return load_policy(settings.policy_file)  # PolicyError: one line, exit 2


def _metrics_source(settings: Settings, options: Options) -> MetricsSource | None:
    if options.metrics_source is not None:
        return options.metrics_source
    url = settings.prometheus.url
    if url is None:
        logger.warning(
            "STRATUS_PROMETHEUS_URL is not set: severity and diagnosis use cluster state only"
        )
        return None
    from agents.adapters.prometheus_metrics import PrometheusMetrics

    metrics = PrometheusMetrics(
        url, profile=signal_profile(settings), deadline=settings.prometheus.deadline
    )
    try:
        metrics.query("vector(1)")
    except MetricsError as e:
        logger.warning("Prometheus at %s does not answer yet (%s); will keep trying", url, e)
    return metrics


def signal_profile(settings: Settings) -> SignalProfile | Literal["auto"]:
    """The profile the settings name: a file's, a built-in one, or `auto`. A bad file is a
    `SettingsError` naming the setting, the file, the line and the field (exit 2)."""
    from agents.adapters.signal_profiles import AUTO, PROFILES, load_profile
    from agents.errors import SignalProfileError

    prometheus = settings.prometheus
    if prometheus.signal_profile_file is not None:
        try:
            return load_profile(prometheus.signal_profile_file)
        except SignalProfileError as e:
            raise SettingsError("STRATUS_SIGNAL_PROFILE_FILE", str(e)) from e
    if prometheus.signal_profile == AUTO:
        return AUTO
    return PROFILES[prometheus.signal_profile]


def _limits(settings: Settings, options: Options, policy: Policy) -> TnrLimits:
    """The transaction limits with the writer lease of the settings (unless the embedding root
    brings its own), refused (exit 2) when a cluster or metrics call could outlast a third of
    that lease."""
    limits = options.limits or replace(policy.defaults.limits, lock_ttl_s=settings.lock_lease_s)
    check_deadlines(
        settings.kubernetes.deadline,
        settings.prometheus.deadline,
        limits.lock_ttl_s,
        lease_name="STRATUS_LOCK_LEASE_S" if options.limits is None else "the limits' lease",
    )
    return limits


def _model(settings: Settings) -> LanguageModel | None:
    if not settings.anthropic.api_key:
        logger.info("ANTHROPIC_API_KEY is not set: the offline reasoner diagnoses")
        return None
    return claude_model(settings.anthropic)


def connect_cluster(kubernetes: KubernetesSettings) -> KubernetesCluster:
    """The Kubernetes adapter the settings describe. Raises `ClusterError`."""
    return KubernetesCluster.connect(
        kubeconfig=kubernetes.kubeconfig,
        context=kubernetes.context,
        cluster_name=kubernetes.cluster_name,
        deadline=kubernetes.deadline,
    )


def claude_model(anthropic: AnthropicSettings) -> LanguageModel:
    """Claude through the Messages API, as the settings describe it."""
    from agents.adapters.anthropic_model import AnthropicModel

    if anthropic.api_key is None:
        raise SettingsError("ANTHROPIC_API_KEY", "Claude needs an API key")

    return AnthropicModel(
        api_key=anthropic.api_key,
        model=anthropic.model,
        base_url=anthropic.base_url,
        timeout_s=anthropic.timeout_s,
        max_retries=anthropic.max_retries,
    )


def _namespaces(settings: Settings, policy: Policy, cluster: KubernetesCluster) -> tuple[str, ...]:
    chosen = settings.kubernetes.namespaces or policy.covered_namespaces
    if chosen:
        return tuple(chosen)
    try:
        found = tuple(sorted(n for n in cluster.namespaces() if n not in SYSTEM_NAMESPACES))
    except ClusterError as e:
        raise StartupError(f"cannot list the cluster's namespaces: {e}") from e
    logger.warning(
        "neither STRATUS_NAMESPACES nor the policy names namespaces; covering %s",
        ", ".join(found) or "(none)",
    )
    return found


def build_services(settings: Settings, options: Options | None = None) -> Services:
    """Wire everything from `settings`. Raises `SettingsError` or `PolicyError` (bad
    configuration: exit 2), `StartupError` or `StorageError` (cannot start: exit 1)."""
    options = options or Options()
    _check_slack(settings)
    policy = _policy(settings)
    limits = _limits(settings, options, policy)
    upgrade(settings.database.url)
    store = Store.connect(settings.database.url)
    clock: Clock = options.clock or SystemClock()
    try:
        cluster = connect_cluster(settings.kubernetes)
    except ClusterError as e:
        store.close()
        raise StartupError(str(e)) from e
    metrics = BotMetrics()
    slack = SlackIO(
        web_client(
            token=settings.slack.bot_token, base_url=settings.slack.api_url, metrics=metrics
        ),
        metrics=metrics,
        post_interval_s=options.slack_post_interval_s,
        update_interval_s=options.slack_update_interval_s,
    )
    try:
        bot_user_id = slack.bot_user_id()
    except SlackCallFailed as e:
        cluster.close()
        store.close()
        raise StartupError(
            f"Slack at {settings.slack.api_url} refused the bot token: {e.error}"
        ) from e
    failures = FailureReporter(slack)
    work = Lanes(workers=options.workers, name="stratus-work", on_error=failures.report)
    slack_lanes = Lanes(
        workers=options.slack_workers, name="stratus-slack", on_error=failures.report
    )
    source = _metrics_source(settings, options)
    namespaces = _namespaces(settings, policy, cluster)
    directory = Directory(slack)
    channels = IncidentChannels(
        slack=slack,
        store=store,
        settings=settings.slack,
        directory=directory,
        policy=policy,
        clock=clock,
        bot_user_id=bot_user_id,
    )
    ledger = StorageLedger(store)
    messages = IncidentMessages(
        store=store,
        policy=policy,
        clock=clock,
        transactions=lambda incident_id: list(ledger.for_incident(IncidentId(incident_id))),
        chart=signal_chart(source, clock) if source is not None else None,
    )
    notifier = SlackNotifier(
        store=store,
        messages=messages,
        channels=channels,
        slack=slack,
        lanes=slack_lanes,
        metrics=metrics,
        clock=clock,
    )
    holder = options.holder or f"stratus/{socket.gethostname()}/{os.getpid()}"
    model = _model(settings)
    cache = ClusterCache(cluster, sink_errors=(StorageError,)) if options.cache else None
    brain = build_brain(
        store=store,
        reader=cluster,
        cached=cache,
        writer=cluster,
        metrics=source,
        clock=clock,
        namespaces=namespaces,
        policy=policy,
        notifier=notifier,
        holder=holder,
        model=model,
        claude=ClaudeSettings(
            max_steps=settings.anthropic.max_steps, token_budget=settings.anthropic.token_budget
        ),
        evidence_token_budget=settings.evidence_token_budget,
        limits=limits,
    )
    recovery_engine = TransactionEngine(
        reader=cluster,
        writer=cluster,
        meter=brain.meter,
        ledger=StorageLedger(store),
        clock=clock,
        holder=f"{holder}/recovery",
        limits=brain.engine.limits,
    )
    journal_watcher = (
        JournalWatcher(journal=brain.journal, watcher=cluster, timeout_s=30, cache=cache)
        if options.journal and namespaces
        else None
    )
    inbox = AlertInbox(store, cluster=cluster.cluster_name, clock=clock)
    services_ref: list[Services] = []
    leader = _elector(settings, cluster, holder, services_ref)
    incidents = IncidentOps(
        brain=brain,
        notifier=notifier,
        lanes=work,
        directory=directory,
        slack=slack,
        metrics=metrics,
        recovery_engine=recovery_engine,
        leads=(lambda: leader.leading) if leader is not None else (lambda: True),
        inbox=inbox,
    )
    services = Services(
        settings=settings,
        options=options,
        clock=clock,
        store=store,
        cluster=cluster,
        cache=cache,
        metrics_source=source,
        model=model,
        policy=policy,
        brain=brain,
        metrics=metrics,
        slack=slack,
        bot_user_id=bot_user_id,
        directory=directory,
        channels=channels,
        notifier=notifier,
        incidents=incidents,
        failures=failures,
        work=work,
        slack_lanes=slack_lanes,
        scheduler=build_scheduler(store),
        journal_watcher=journal_watcher,
        inbox=inbox,
        leader=leader,
    )
    services_ref.append(services)
    return services


def _elector(
    settings: Settings, cluster: KubernetesCluster, holder: str, services: list[Services]
) -> LeaderElector | None:
    """The elector, its callbacks bound to the `Services` built after it (`services[0]`)."""
    leader = settings.leader
    if leader is None:
        return None

    def started(token: int) -> None:
        services[0]._lead(token)

    def stopped() -> None:
        services[0]._step_down()

    return LeaderElector(
        cluster,
        LeaseConfig(
            namespace=leader.namespace,
            name=leader.lease_name,
            lease_s=leader.lease_s,
            renew_deadline_s=leader.renew_deadline_s,
            retry_s=leader.retry_s,
        ),
        identity=holder,
        on_started=started,
        on_stopped=stopped,
    )


__all__ = ["Options", "Services", "SlackCallFailed", "build_services"]
