"""The bot as it runs in production (`build_services` + `BotRuntime`), pointed at stand-ins:
the local Slack workspace (`SLACK_API_URL`), a lab world served over HTTP in running mode
(the bot's kubeconfig is the world's), SQLite, and the lab's Alertmanager-style webhook
posting real v4 payloads to the bot's `/alerts/alertmanager`.

The lab runs at `SPEED` lab seconds per wall second and the bot uses the lab's clock (as the
demo does), so a 20 s sustain window takes 2 s. Tests wait for effects on state — the
workspace's messages, the cluster's objects, the store — never for calls.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from agents.model import Incident, IncidentState
from agents.tnr import TnrLimits
from bot.config import load_settings
from bot.ids import ActionId, MessageKind
from bot.runtime import BotRuntime
from bot.services import Options, Services, build_services
from lab.alerts import LabAlerts, Route, WebhookError, attach_alerts
from lab.sim.world import LabWorld, WorldConfig
from lab.slack import SlackWorkspace, WorkspaceConfig

T = TypeVar("T")

HOTEL = "hotel-reservation"
SPEED = 10.0
#: Lab-time limits: 20 s of sustain is 2 s of wall time at SPEED.
LIMITS = TnrLimits(
    sustain_s=20, poll_s=2, settle_min_s=2, settle_timeout_s=90, lock_ttl_s=30, deadline_s=600
)
ROUTE = Route(group_wait_s=5, group_interval_s=30)
ACK_TIMEOUT_S = 15.0
#: Bolt's own wait for a listener's ack(): without it Bolt gives up at Slack's 3 s and never
#: acks, so the workspace's longer wait above would not help a starved thread.
BOLT_ACK_TIMEOUT_S = 12
#: The bot's STRATUS_WEBHOOK_TOKEN in these tests; the forwarder sends it as Alertmanager would.
WEBHOOK_TOKEN = "test-webhook-token"

#: What the scripted Messages API's "model" answers (`submit_diagnosis`) for the lab's
#: wrong-target-port fault on hotel-reservation's geo.
GEO_TARGET_PORT_ANSWER = {
    "root_cause": {
        "service": "geo",
        "category": "virtualization/misconfiguration",
        "confidence": 0.9,
        "explanation": "Service geo targets a port where nothing listens; search is refused.",
        "evidence": [0],
    },
    "alternatives": [],
    "summary": "geo's Service points at the wrong port.",
}
POLICY = """\
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


class AlertForwarder:
    """What Alertmanager does for the bot: POST each notification to its webhook, retrying
    until it is taken. Asynchronous, like a separate Alertmanager process: the lab's ticker
    must not wait for the bot."""

    def __init__(self) -> None:
        self.url: str | None = None
        self.answers: list[int] = []
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="test-alert-forwarder", daemon=True)
        self._thread.start()

    def __call__(self, payload: dict[str, Any]) -> None:
        if self.url is None:
            raise WebhookError("the bot is not listening yet")
        self._queue.put(payload)

    def _run(self) -> None:
        while True:
            payload = self._queue.get()
            if payload is None:
                return
            for _ in range(50):
                if self._post(payload):
                    break
                time.sleep(0.2)

    def _post(self, payload: dict[str, Any]) -> bool:
        assert self.url is not None
        request = urllib.request.Request(
            self.url,
            data=json.dumps(payload).encode(),
            method="POST",
            headers={
                "Content-Type": "application/json",
                "Authorization": f"Bearer {WEBHOOK_TOKEN}",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                self.answers.append(response.status)
                return True
        except urllib.error.HTTPError as e:
            self.answers.append(e.code)
            return e.code < 500
        except OSError:
            return False

    def stop(self) -> None:
        self._queue.put(None)
        self._thread.join(5)


@dataclass
class BotLab:
    ws: SlackWorkspace
    world: LabWorld
    alerts: LabAlerts
    forwarder: AlertForwarder
    tmp: Path
    mode: str
    values: dict[str, str]
    options: Options
    runtime: BotRuntime = field(init=False)

    def start_bot(self) -> BotRuntime:
        """Build the services from the settings, as `stratus run` does, and serve."""
        self.runtime = runtime = BotRuntime(
            build_services(load_settings(self.values), self.options)
        )
        runtime.start()
        if self.mode == "http":
            self.ws.use_http(f"{runtime.http_url}/slack/events")
        else:
            self.ws.wait_until(lambda: self.ws.socket_connections, timeout=10)
        self.forwarder.url = runtime.webhook_url
        return runtime

    def restart_bot(self) -> BotRuntime:
        """Stop the bot (a deploy, a crash) and start a new one on the same database."""
        self.forwarder.url = None
        self.runtime.stop()
        if self.mode != "http":
            self.ws.wait_until(lambda: self.ws.socket_connections == 0, timeout=10)
        return self.start_bot()

    @property
    def services(self) -> Services:
        return self.runtime.services

    # ------------------------------------------------------------------ waiting

    def wait(self, what: str, predicate: Callable[[], T | None], timeout: float = 60.0) -> T:
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() >= deadline:
                raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
            time.sleep(0.05)

    def incident(self, timeout: float = 60.0) -> Incident:
        store = self.services.store

        def found() -> Incident | None:
            rows = store.incidents.list_by_state(*[s.value for s in IncidentState])
            return self.services.brain.machine.incident(rows[0].id) if rows else None

        return self.wait("an incident", found, timeout)

    def state(self, incident_id: str) -> IncidentState:
        return self.services.brain.machine.incident(incident_id).state

    def wait_state(
        self, incident_id: str, *states: IncidentState, timeout: float = 90.0
    ) -> IncidentState:
        def reached() -> IncidentState | None:
            state = self.state(incident_id)
            return state if state in states else None

        return self.wait(f"{incident_id} in {[s.value for s in states]}", reached, timeout)

    def message_ref(
        self, incident_id: str, kind: MessageKind, ref: str | None = None
    ) -> tuple[str, str] | None:
        rows = self.services.store.slack_messages.find(
            incident_id=incident_id, kind=kind.value, ref=ref
        )
        return (rows[-1].channel, rows[-1].ts) if rows else None

    def wait_message(
        self,
        incident_id: str,
        kind: MessageKind,
        ref: str | None = None,
        predicate: Callable[[dict[str, Any]], bool] | None = None,
        timeout: float = 60.0,
    ) -> dict[str, Any]:
        """The message of `kind` as the workspace shows it now, once it satisfies
        `predicate`."""

        def current() -> dict[str, Any] | None:
            found = self.message_ref(incident_id, kind, ref)
            if found is None:
                return None
            message = self.ws.message(*found)
            if message is None or (predicate is not None and not predicate(message)):
                return None
            return message

        return self.wait(f"{kind.value} message of {incident_id}", current, timeout)


def buttons(message: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """action_id → button element of a message's actions blocks."""
    found: dict[str, dict[str, Any]] = {}
    for block in message.get("blocks") or []:
        if block.get("type") == "actions":
            for element in block.get("elements", []):
                found[str(element.get("action_id"))] = element
    return found


def text_of(message: Mapping[str, Any]) -> str:
    """Every text of a message's blocks, joined (for assertions on what a person reads)."""
    parts = [str(message.get("text", ""))]

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("text"), str):
                parts.append(value["text"])
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(message.get("blocks") or [])
    return "\n".join(parts)


def settings_values(
    ws: SlackWorkspace, *, mode: str, tmp: Path, kubeconfig: Path, policy: Path, **extra: str
) -> dict[str, str]:
    cfg = ws.config
    values = {
        "SLACK_BOT_TOKEN": cfg.bot_token,
        "SLACK_APP_TOKEN": cfg.app_token,
        "SLACK_SIGNING_SECRET": cfg.signing_secret,
        "SLACK_API_URL": ws.api_url,
        "STRATUS_SLACK_MODE": mode,
        "STRATUS_HTTP_HOST": "127.0.0.1",
        "STRATUS_HTTP_PORT": "0",
        "STRATUS_DATABASE_URL": f"sqlite:///{tmp / 'stratus.db'}",
        "KUBECONFIG": str(kubeconfig),
        "STRATUS_CLUSTER_NAME": "lab",
        "STRATUS_NAMESPACES": HOTEL,
        "STRATUS_POLICY_FILE": str(policy),
        "STRATUS_SCAN_INTERVAL_S": "0",  # the webhook opens incidents in these tests
        "STRATUS_WEBHOOK_TOKEN": WEBHOOK_TOKEN,
    }
    values.update(extra)
    return values


@contextmanager
def bot_lab(
    tmp: Path,
    *,
    mode: str = "socket",
    approval_ttl: str = "15m",
    housekeeping_s: float = 2.0,
    settings: Mapping[str, str] | None = None,
    workspace: WorkspaceConfig | None = None,
    seed: int = 5,
    holder: str | None = None,
) -> Iterator[BotLab]:
    # Slack gives an ack 3 s; on a loaded CI machine a thread can be starved that long, and
    # ack latency is measured by benchmarks/ack_latency.py, not asserted here.
    ws = SlackWorkspace(replace(workspace or WorkspaceConfig(), ack_timeout_s=ACK_TIMEOUT_S))
    ws.start()
    world = LabWorld(
        WorldConfig(
            apps=(HOTEL,),
            seed=seed,
            stepped=False,
            speed=SPEED,
            serve_api=True,
            kubeconfig=tmp / "kubeconfig",
        )
    )
    forwarder = AlertForwarder()
    lab: BotLab | None = None
    try:
        world.start()
        world.wait_healthy()
        alerts = attach_alerts(world, webhook=forwarder, route=ROUTE)
        policy = tmp / "policy.yaml"
        policy.write_text(POLICY.format(ttl=approval_ttl))
        values = settings_values(
            ws,
            mode=mode,
            tmp=tmp,
            kubeconfig=tmp / "kubeconfig",
            policy=policy,
            **dict(settings or {}),
        )
        options = Options(
            clock=world.clock,
            metrics_source=alerts.metrics,
            limits=LIMITS,
            housekeeping_interval_s=housekeeping_s,
            ack_timeout_s=BOLT_ACK_TIMEOUT_S,
            holder=holder,
        )
        lab = BotLab(
            ws=ws,
            world=world,
            alerts=alerts,
            forwarder=forwarder,
            tmp=tmp,
            mode=mode,
            values=values,
            options=options,
        )
        lab.start_bot()
        # The change journal's baseline, before anything breaks (as a bot running for a
        # while would have it).
        journal = lab.services.store.journal
        cluster = values["STRATUS_CLUSTER_NAME"]
        lab.wait("the journal's baseline", lambda: journal.query(cluster, HOTEL, kind="Service"))
        yield lab
    finally:
        if lab is not None and hasattr(lab, "runtime"):
            lab.runtime.stop()
        forwarder.stop()
        world.stop()
        ws.stop()


__all__ = ["HOTEL", "ActionId", "BotLab", "MessageKind", "bot_lab", "buttons", "text_of"]
