"""The stand the `/stratus`, App Home and digest tests run on: the bot as it runs in
production (`build_services` + `BotRuntime`, which registers these surfaces through
`bot.app.register_surfaces`) pointed at stand-ins — the local Slack workspace granting exactly
the app manifest's scopes, a stepped lab world served over HTTP, SQLite.

Incidents in a given state are seeded through storage (the rows the state machine writes);
transactions are committed by the real TNR engine on the lab. Housekeeping is slowed down so
that the bot does not drive a seeded incident while a test looks at it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from agents.actions import ScaleWorkload
from agents.incident.codec import plan_record
from agents.model import (
    Incident,
    IncidentId,
    IncidentState,
    ObjectRef,
    OutcomeKind,
    PlanId,
    PlanStatus,
    Scope,
    TransactionId,
)
from agents.planning.plan import Plan
from agents.tnr import TnrLimits, TransactionRequest
from agents.wiring import Brain
from bot.config import load_settings
from bot.doctor import SLACK_BOT_SCOPES
from bot.runtime import BotRuntime
from bot.services import Options, Services, build_services
from lab.sim.world import LabWorld, WorldConfig
from lab.slack import ChannelSpec, Delivery, SlackWorkspace, WorkspaceConfig
from storage import Store
from storage.records import StoredIncident, StoredTimelineEvent

T = TypeVar("T")

HOTEL = "hotel-reservation"
CLUSTER = "lab"
FAST = TnrLimits(
    sustain_s=30, poll_s=5, settle_min_s=5, settle_timeout_s=120, lock_ttl_s=30, deadline_s=600
)
#: alice and bob are in @sre-approvers; carol is not.
POLICY = """\
defaults:
  autonomy: propose
  approvers:
    low: ["@sre-approvers"]
    medium: ["@sre-approvers"]
    high: ["@sre-approvers"]
namespaces:
  hotel-reservation:
    max_actions: 3
"""
CHANNELS = (
    ChannelSpec(name="general", members=("*",), is_general=True),
    ChannelSpec(name="incidents", members=("*",)),
    ChannelSpec(name="hotel-reservation-oncall", members=("*",)),
    ChannelSpec(name="elsewhere", members=("*",), bot_member=False),
)
TIMEOUT = 10.0


def deployment(name: str) -> ObjectRef:
    return ObjectRef(api_version="apps/v1", kind="Deployment", name=name, namespace=HOTEL)


@dataclass
class Stand:
    world: LabWorld
    ws: SlackWorkspace
    runtime: BotRuntime
    policy_file: Path

    @property
    def services(self) -> Services:
        return self.runtime.services

    @property
    def brain(self) -> Brain:
        return self.services.brain

    @property
    def store(self) -> Store:
        return self.services.store

    @property
    def now(self) -> datetime:
        return self.world.clock.now()

    def wait(self, what: str, predicate: Callable[[], T | None], timeout: float = TIMEOUT) -> T:
        """Poll `predicate` (for conditions on storage or the cluster) until it is truthy."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() >= deadline:
                raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
            time.sleep(0.05)

    def command(self, user: str, text: str, channel: str = "incidents") -> Delivery:
        delivery = self.ws.slash_command(user, "/stratus", text, channel=channel)
        assert delivery.acked, delivery.error
        return delivery

    def ephemeral(self, channel: str, user: str, needle: str) -> dict[str, Any]:
        """The newest ephemeral message to `user` whose text or blocks contain `needle`."""

        def found() -> dict[str, Any] | None:
            for message in reversed(self.ws.ephemerals(channel, user)):
                if needle in str(message.get("text", "")) + str(message.get("blocks", "")):
                    return message
            return None

        return self.ws.wait_until(found, TIMEOUT)

    def modal(self, user: str, needle: str) -> dict[str, Any]:
        """The user's open modal once it shows `needle`."""

        def found() -> dict[str, Any] | None:
            return next((v for v in self.ws.views(user) if needle in str(v)), None)

        return self.ws.wait_until(found, TIMEOUT)

    # ------------------------------------------------------------------------ seeding

    def seed_incident(
        self,
        *,
        state: IncidentState = IncidentState.DIAGNOSED,
        title: str = "geo: error ratio above SLO",
        namespace: str = HOTEL,
        suffix: str = "a1",
        mu: float = 4.0,
        opened_at: datetime | None = None,
        group_key: str | None = None,
        cluster: str = CLUSTER,
    ) -> Incident:
        """`group_key` defaults to the scope's, as the detector writes it: a declaration or an
        alert in this namespace then joins this incident."""
        at = opened_at or self.now
        iid = f"INC-{at:%Y%m%d}-geo-{suffix}"
        self.store.incidents.create(
            StoredIncident(
                id=iid,
                title=title,
                cluster=cluster,
                namespace=namespace,
                state=state.value,
                service="geo",
                mu0=6.0,
                mu=mu,
                opened_at=at,
                updated_at=at,
                group_key=group_key or f"{cluster}/{namespace}",
            ),
            events=[
                StoredTimelineEvent(
                    incident_id=iid, at=at, state="detected", kind="transition", message="Detected"
                ),
                StoredTimelineEvent(
                    incident_id=iid,
                    at=at + timedelta(seconds=1),
                    state=state.value,
                    kind="transition",
                    message=f"Now {state.value}",
                ),
            ],
        )
        return self.brain.machine.incident(iid)

    def seed_plan(
        self, incident: Incident, *, replicas: int = 3, ttl: timedelta = timedelta(minutes=15)
    ) -> Plan:
        plan = Plan(
            id=PlanId(f"plan-{incident.id[-2:]}-{replicas}"),
            incident_id=IncidentId(incident.id),
            attempt=1,
            rank=0,
            actions=(ScaleWorkload(target=deployment("geo"), replicas=replicas, from_replicas=1),),
            rationale="more replicas of geo",
            hypothesis="geo: application/misconfiguration",
            status=PlanStatus.PROPOSED,
            created_at=self.now,
            expires_at=self.now + ttl,
        )
        self.store.plans.create(plan_record(plan))
        # As the machine records it: the move that put the incident to people names the plan.
        self.store.incidents.add_event(
            StoredTimelineEvent(
                incident_id=incident.id,
                at=self.now + timedelta(seconds=2),  # after seed_incident's own moves
                state=incident.state.value,
                kind="transition",
                message=f"Plan waiting for approval: {plan.describe()}",
                data={"plan": plan.id},
            )
        )
        return plan

    def commit_scale(self, name: str, replicas: int) -> TransactionId:
        """A committed transaction of the bot's own engine on the lab."""
        outcome = self.brain.engine.run(
            TransactionRequest(
                scope=Scope(cluster=CLUSTER, namespace=HOTEL),
                actions=(ScaleWorkload(target=deployment(name), replicas=replicas),),
                mu0=0.0,
                actor="U0ALICE01",
            )
        )
        assert outcome.kind is OutcomeKind.COMMITTED, outcome.reason
        return outcome.transaction_id

    def replicas(self, name: str) -> int:
        found = self.world.api.get("Deployment", HOTEL, name)
        assert found is not None
        return int(found["spec"]["replicas"])


@contextmanager
def make_stand(
    tmp_path: Path,
    *,
    workspace: WorkspaceConfig | None = None,
    settings: dict[str, str] | None = None,
    mode: str = "socket",
) -> Iterator[Stand]:
    """`mode`: "socket" (Socket Mode) or "http" (signed requests to the bot's endpoint)."""
    config = WorldConfig(
        apps=(HOTEL,), seed=5, serve_api=True, kubeconfig=tmp_path / "lab.kubeconfig"
    )
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    # By default the bot token has exactly the scopes of the app manifest.
    workspace = workspace or WorkspaceConfig(channels=CHANNELS, bot_scopes=tuple(SLACK_BOT_SCOPES))
    # Ack latency is measured by benchmarks/ack_latency.py; a loaded CI machine must not turn
    # Slack's 3 s budget into a flaky assertion here.
    workspace = replace(workspace, ack_timeout_s=15.0)
    with LabWorld(config) as world, SlackWorkspace(workspace) as ws:
        world.wait_healthy()
        values = {
            "SLACK_BOT_TOKEN": ws.config.bot_token,
            "SLACK_APP_TOKEN": ws.config.app_token,
            "SLACK_SIGNING_SECRET": ws.config.signing_secret,
            "SLACK_API_URL": ws.api_url,
            "STRATUS_SLACK_MODE": mode,
            "STRATUS_HTTP_HOST": "127.0.0.1",
            "STRATUS_HTTP_PORT": "0",
            "STRATUS_DATABASE_URL": f"sqlite:///{tmp_path / 'stratus.db'}",
            "KUBECONFIG": str(config.kubeconfig),
            "STRATUS_CLUSTER_NAME": CLUSTER,
            "STRATUS_NAMESPACES": HOTEL,
            "STRATUS_POLICY_FILE": str(policy),
            "STRATUS_SCAN_INTERVAL_S": "0",
            **(settings or {}),
        }
        services = build_services(
            load_settings(values),
            Options(
                clock=world.clock,
                metrics_source=world.metrics,
                limits=FAST,
                housekeeping_interval_s=3600.0,
                journal=False,
                slack_post_interval_s=0.0,
                slack_update_interval_s=0.0,
            ),
        )
        runtime = BotRuntime(services)
        try:
            runtime.start()
            if mode == "http":
                ws.use_http(f"{runtime.http_url}/slack/events")
            else:
                ws.wait_until(lambda: ws.socket_connections, TIMEOUT)
            yield Stand(world=world, ws=ws, runtime=runtime, policy_file=policy)
        finally:
            runtime.stop()
