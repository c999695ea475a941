"""Ack-latency benchmark: how fast the real bot acknowledges Slack, under concurrency.

Slack gives an app 3 seconds to acknowledge a slash command or an interaction; Stratus's
target is p99 ≤ 100 ms, so that a busy bot (diagnoses and transactions running in its lanes)
never comes near the limit. This runs the production wiring (`build_services` +
`BotRuntime`, with `/stratus` and the App Home registered by `bot.app`) against the local
Slack workspace and a stepped lab world, in Socket Mode and in HTTP mode, and fires requests
from 20 threads at once:

* slash commands — `/stratus help` (the ack carries the answer) and `/stratus incidents`
  (empty ack, the answer follows through the response URL), alternately;
* button clicks — Reject on a plan message (the core's listener: ack, then a modal) and
  Refresh in the App Home (ack, then `views.publish`), alternately.

The workspace records each delivery's ack latency (`Delivery.latency_s`, from sending the
envelope to receiving the ack). Writes `docs/benchmarks/ack-latency.md`.

Run: `.venv/bin/python benchmarks/ack_latency.py [--requests N]` (about a minute). A
measurement, not a test.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agents.actions import ScaleWorkload
from agents.incident.codec import plan_row
from agents.model import IncidentId, IncidentState, ObjectRef, PlanId, PlanStatus
from agents.planning.plan import Plan
from bot.doctor import SLACK_BOT_SCOPES
from bot.home import HomeAction
from bot.ids import ActionId
from lab.sim.world import LabWorld, WorldConfig
from lab.slack import ChannelSpec, Delivery, SlackWorkspace, WorkspaceConfig
from storage import Store
from storage.migrations import upgrade
from storage.tables import IncidentRow, TimelineEventRow

HOTEL = "hotel-reservation"
CONCURRENCY = 20
TARGET_P99_MS = 100.0
SETTLE_S = 1.0
RUN = "from bot.cli.run import run; run()"
#: The bot with a second `gc.freeze()` a few seconds after start (`stratus run` already
#: freezes its start-up objects once the bot is up): what freezing later adds.
FROZEN_RUN = """
import gc, threading, time
def freeze():
    time.sleep(3)
    gc.collect()
    gc.freeze()
threading.Thread(target=freeze, daemon=True).start()
from bot.cli.run import run
run()
"""
REPORT = Path(__file__).resolve().parents[1] / "docs" / "benchmarks" / "ack-latency.md"
POLICY = """\
defaults:
  autonomy: propose
  approvers: {low: ["@sre-approvers"], medium: ["@sre-approvers"], high: ["@sre-approvers"]}
"""
USERS = ("alice", "bob", "carol", "dana")


@dataclass(frozen=True, slots=True)
class Result:
    mode: str
    kind: str
    latencies_ms: list[float]
    failures: int

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies_ms)
        if not ordered:
            return float("nan")
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    @property
    def met(self) -> bool:
        return self.percentile(0.99) <= TARGET_P99_MS and not self.failures


def _what(delivery: Delivery) -> str:
    """Which request of the mixed batch a delivery was."""
    payload = delivery.payload
    if "command" in payload:
        return f"`{payload['command']} {payload.get('text', '')}`"
    action = str((payload.get("actions") or [{}])[0].get("action_id", ""))
    return {
        ActionId.REJECT.value: "Reject on a plan message (core)",
        HomeAction.REFRESH.value: "Refresh in the App Home",
    }.get(action, action)


class Bench:
    """The bot in its own process (`stratus run`, as in production), talking to the local
    Slack workspace and a lab world served by this process."""

    def __init__(self, mode: str, tmp: Path, *, freeze: bool = False) -> None:
        self.mode = mode
        self.tmp = tmp
        config = WorkspaceConfig(
            bot_scopes=tuple(SLACK_BOT_SCOPES),
            channels=(ChannelSpec(name="incidents", members=("*",)),),
        )
        self.ws = SlackWorkspace(config)
        self.ws.start()
        # Stepped and never stepped: the cluster answers reads but nothing ticks in this
        # process (a simulator tick holds the GIL for tens of ms and would stall the
        # workspace, which is what measures the latencies).
        world_config = WorldConfig(apps=(HOTEL,), seed=5, serve_api=True, kubeconfig=tmp / "kc")
        self.world = LabWorld(world_config).start()
        self.world.wait_healthy()
        (tmp / "policy.yaml").write_text(POLICY)
        self.database = f"sqlite:///{tmp / 'stratus.db'}"
        upgrade(self.database)
        self.store = Store.connect(self.database)
        self.plan_incident = self._seed()
        self.port = _free_port()
        env = {
            **os.environ,
            "SLACK_BOT_TOKEN": self.ws.config.bot_token,
            "SLACK_APP_TOKEN": self.ws.config.app_token,
            "SLACK_SIGNING_SECRET": self.ws.config.signing_secret,
            "SLACK_API_URL": self.ws.api_url,
            "STRATUS_SLACK_MODE": mode,
            "STRATUS_HTTP_HOST": "127.0.0.1",
            "STRATUS_HTTP_PORT": str(self.port),
            "STRATUS_DATABASE_URL": self.database,
            "KUBECONFIG": str(tmp / "kc"),
            "STRATUS_CLUSTER_NAME": "lab",
            "STRATUS_NAMESPACES": HOTEL,
            "STRATUS_POLICY_FILE": str(tmp / "policy.yaml"),
            "STRATUS_SCAN_INTERVAL_S": "0",
            "STRATUS_LOG_LEVEL": "WARNING",
            "NO_PROXY": "127.0.0.1,localhost",
        }
        self.log = (tmp / "bot.log").open("w")
        self.bot = subprocess.Popen(
            [sys.executable, "-c", FROZEN_RUN if freeze else RUN],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        if mode == "http":
            self.ws.use_http(f"http://127.0.0.1:{self.port}/slack/events")
        self._wait("the bot to be ready", self._ready, 60)

    def _ready(self) -> bool:
        if self.bot.poll() is not None:
            raise RuntimeError(f"the bot exited; see {self.tmp / 'bot.log'}")
        try:
            ready = f"http://127.0.0.1:{self.port}/readyz"
            with urllib.request.urlopen(ready, timeout=2) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False

    @staticmethod
    def _wait(what: str, predicate: Callable[[], object], timeout: float) -> object:
        deadline = time.monotonic() + timeout
        while not (found := predicate()):
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out waiting for {what}")
            time.sleep(0.05)
        return found

    def close(self) -> None:
        self.bot.send_signal(signal.SIGTERM)
        try:
            self.bot.wait(30)
        except subprocess.TimeoutExpired:
            self.bot.kill()
            self.bot.wait(10)
        self.log.close()
        self.store.close()
        self.world.stop()
        self.ws.stop()

    def _seed(self) -> str:
        """An incident waiting for approval of a plan: at start the bot's resumption posts its
        messages, among them the plan with Approve / Reject."""
        now = datetime.now(UTC)
        iid = f"INC-{now:%Y%m%d}-geo-bench"
        self.store.incidents.create(
            IncidentRow(
                id=iid,
                title="geo: error ratio above SLO",
                cluster="lab",
                namespace=HOTEL,
                state=IncidentState.AWAITING_APPROVAL.value,
                service="geo",
                mu0=4.0,
                mu=4.0,
                opened_at=now,
                updated_at=now,
                group_key=f"lab/{HOTEL}",
            ),
            events=[
                TimelineEventRow(
                    incident_id=iid,
                    at=now,
                    state="awaiting_approval",
                    kind="transition",
                    message="Plan waiting for approval",
                )
            ],
        )
        target = ObjectRef(api_version="apps/v1", kind="Deployment", name="geo", namespace=HOTEL)
        plan = Plan(
            id=PlanId("plan-bench"),
            incident_id=IncidentId(iid),
            attempt=1,
            rank=0,
            actions=(ScaleWorkload(target=target, replicas=2, from_replicas=1),),
            rationale="more replicas",
            hypothesis="geo",
            status=PlanStatus.PROPOSED,
            created_at=now,
            expires_at=now + timedelta(days=1),
        )
        self.store.plans.create(plan_row(plan))
        return iid

    def plan_message(self) -> tuple[str, str]:
        def posted() -> tuple[str, str] | None:
            rows = self.store.slack_messages.find(incident_id=self.plan_incident, kind="plan")
            return (rows[-1].channel, rows[-1].ts) if rows else None

        found = self._wait("the plan message", posted, 60)
        assert isinstance(found, tuple)
        return found

    def home_views(self) -> dict[str, str]:
        for user in USERS:
            self.ws.open_app_home(user)
        views = {}
        for user in USERS:
            view = self.ws.wait_until(lambda u=user: self.ws.home_view(u), 10)  # type: ignore[misc]
            views[user] = str(view["id"])
        return views


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _fire(requests: list[Callable[[], Delivery]]) -> list[Delivery]:
    """Send `requests` from CONCURRENCY threads. Starts from a quiet bot (the previous batch's
    work after its acks has drained) and without this process's garbage collector: the
    workspace that measures lives here, and a collection of the lab's objects would stall it
    for 50-120 ms — a pause of the stand-in, not of the bot (whose own collections count)."""
    time.sleep(SETTLE_S)
    gc.collect()
    gc.disable()
    try:
        with ThreadPoolExecutor(CONCURRENCY) as pool:
            return list(pool.map(lambda request: request(), requests))
    finally:
        gc.enable()


def _results(mode: str, kind: str, deliveries: list[Delivery]) -> list[Result]:
    """The kind's row, then one row per request of the mix."""
    groups: dict[str, list[Delivery]] = {kind: deliveries}
    for delivery in deliveries:
        groups.setdefault(_what(delivery), []).append(delivery)
    return [
        Result(
            mode,
            name,
            [d.latency_s * 1000 for d in group if d.acked and d.latency_s is not None],
            sum(1 for d in group if not d.acked),
        )
        for name, group in groups.items()
    ]


def measure(mode: str, requests: int, *, freeze: bool = False) -> list[Result]:
    with tempfile.TemporaryDirectory(prefix="stratus-ack-") as tmp:
        bench = Bench(mode, Path(tmp), freeze=freeze)
        time.sleep(4 if freeze else 0)  # until the bot has frozen its start-up objects
        try:
            channel, ts = bench.plan_message()
            views = bench.home_views()
            ws = bench.ws

            def command(i: int) -> Callable[[], Delivery]:
                text = "help" if i % 2 == 0 else "incidents"
                return lambda: ws.slash_command(USERS[i % 4], "/stratus", text, channel="incidents")

            def click(i: int) -> Callable[[], Delivery]:
                user = USERS[i % 4]
                if i % 2 == 0:
                    return lambda: ws.click(user, channel, ts, ActionId.REJECT)
                return lambda: ws.click_in_view(user, views[user], HomeAction.REFRESH)

            _fire([command(i) for i in range(CONCURRENCY)])  # warm up both paths
            _fire([click(i) for i in range(CONCURRENCY)])
            results = []
            for kind, make in (("slash command", command), ("button click", click)):
                results += _results(mode, kind, _fire([make(i) for i in range(requests)]))
            return results
        finally:
            bench.close()


KINDS = ("slash command", "button click")


def _row(r: Result) -> str:
    name = f"**{r.kind}**" if r.kind in KINDS else f"&nbsp;&nbsp;{r.kind}"
    return (
        f"| {r.mode} | {name} | {len(r.latencies_ms)} | {r.failures} | "
        f"{r.percentile(0.50):.1f} | {r.percentile(0.95):.1f} | {r.percentile(0.99):.1f} | "
        f"{max(r.latencies_ms, default=float('nan')):.1f} | {'yes' if r.met else '**no**'} |"
    )


def _table(results: list[Result]) -> list[str]:
    return [
        "| mode | kind | acked | not acked | p50 ms | p95 ms | p99 ms | max ms | p99 ≤ target |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
        *(_row(r) for r in results),
    ]


def _report(results: list[Result], frozen: list[Result], requests: int, seconds: float) -> str:
    everything = [x for r in results if r.kind in KINDS for x in r.latencies_ms]
    median = statistics.median(everything) if everything else float("nan")
    return "\n".join(
        [
            "# Ack latency",
            "",
            "How fast the bot acknowledges Slack (which allows 3 s) with "
            f"{CONCURRENCY} requests in flight.",
            f"Target: p99 ≤ {TARGET_P99_MS:.0f} ms. Produced by `benchmarks/ack_latency.py`: the",
            "bot runs as in production (`stratus run` in its own process: `build_services` +",
            "`BotRuntime`, `/stratus` and the App Home registered through `bot.app`) against the",
            "local Slack workspace and a lab cluster served by the benchmark's process; latency is",
            "the workspace's `Delivery.latency_s` (envelope sent → ack received).",
            "",
            f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {platform.machine()}, "
            f"{os.cpu_count()} CPUs, Python {platform.python_version()}; {requests} requests per",
            f"kind and mode after a warm-up, {seconds:.0f} s in all; median of the bot as shipped "
            f"{median:.1f} ms.",
            "",
            "## The bot as shipped",
            "",
            *_table(results),
            "",
            "## With a second `gc.freeze()` a few seconds after start-up",
            "",
            *_table(frozen),
            "",
            "## How to read it",
            "",
            "Each **kind** is one batch of mixed requests (bold row), broken down below it:",
            "*slash command* alternates `/stratus help` (the ack carries the answer) and",
            "`/stratus incidents` (empty ack; the answer follows through the response URL);",
            "*button click* alternates Reject on a plan message (the core's listener acks, then",
            "opens a modal) and Refresh in the App Home (ack, then a coalesced `views.publish`).",
            "",
            "Method. Each batch starts once the bot is quiet (1 s after the previous one) and runs",
            "with the garbage collector of the benchmark's process off: the workspace that",
            "measures lives there with the lab, and one of its collections stalled it for",
            "50-120 ms — a pause of the stand-in, not of the bot. The bot's own collections count.",
            "",
            "At one request at a time every kind acks in ~11 ms: Bolt runs a listener in its",
            "executor and polls for its `ack()` every 10 ms. At 20 in flight the figures are",
            "queueing (Bolt's listener threads, Socket Mode's receiving thread) and work done",
            "after the ack: `/stratus` and the Home do theirs on their own threads so Bolt's stay",
            "free to ack (the Home publish first ran in Bolt's threads: ~140 ms at p50).",
            "",
            "Without freezing, the tail was the bot's own garbage collector: a full (gen 2)",
            "collection of its long-lived start-up objects every ~10 s under this load took",
            "75-120 ms and stalled every request in flight (p99 110-125 ms in one row or two).",
            "`stratus run` therefore freezes its start-up objects (`gc.collect(); gc.freeze()`",
            "once the bot is up); the second table freezes again later, to show whether objects",
            "created after start-up still matter. The workspace, its load threads and the lab",
            "share the machine's CPUs with the bot, so all figures are an upper bound for the bot.",
            "",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200, help="requests per mode and kind")
    parser.add_argument("--no-report", action="store_true", help="print only")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    started = time.perf_counter()
    results = measure("socket", args.requests) + measure("http", args.requests)
    frozen = measure("socket", args.requests, freeze=True) + measure(
        "http", args.requests, freeze=True
    )
    report = _report(results, frozen, args.requests, time.perf_counter() - started)
    sys.stdout.write(report + "\n")
    if not args.no_report:
        REPORT.parent.mkdir(parents=True, exist_ok=True)
        REPORT.write_text(report, encoding="utf-8")
    met = all(r.met for r in results if r.kind in KINDS)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
