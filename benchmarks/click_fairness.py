"""Click-fairness benchmark: does one person clicking Approve over and over delay another
person's decision?

Decisions on a plan run one at a time in the plan's lane (`bot.operations`), and each answer
is an ephemeral message paced at Slack's ~1 message/s per channel. Without coalescing, 50
clicks of Alice queue 50 decisions, and Bob's click waits behind all of them (about a second
each). With coalescing, Alice's repeats collapse into the decision already waiting.

This runs the production wiring (`build_services` + `BotRuntime`, Socket Mode, default Slack
pacing) against the local Slack workspace and the lab, and measures, per run, the time from
Bob's click to his answer in the channel:

* `alone` — Bob clicks Approve on a fresh plan;
* `after 50` — Alice clicks Approve 50 times on a fresh plan, then Bob clicks once;
* `after 50, coalescing off` — the same with every click made a decision (answers still
  leave the plan's lane), for comparison.

Writes `docs/benchmarks/click-fairness.md`. Run: `.venv/bin/python benchmarks/click_fairness.py
[--runs N]`. A measurement, not a test.
"""

from __future__ import annotations

import argparse
import logging
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.model import IncidentState  # noqa: E402
from bot.config import load_settings  # noqa: E402
from bot.doctor import SLACK_BOT_SCOPES  # noqa: E402
from bot.ids import ActionId  # noqa: E402
from bot.runtime import BotRuntime  # noqa: E402
from bot.services import Options, build_services  # noqa: E402
from lab.sim.world import LabWorld, WorldConfig  # noqa: E402
from lab.slack import SlackWorkspace, WorkspaceConfig  # noqa: E402
from tests.bot.commands.stand import CHANNELS, CLUSTER, FAST, HOTEL, POLICY, Stand  # noqa: E402

CLICKS = 50
CHANNEL = "incidents"
OUT = ROOT / "docs" / "benchmarks" / "click-fairness.md"


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    case: str
    bob_delay_s: float
    alice_clicks_s: float  # how long Alice's clicks took to send (each waits for its ack)
    alice_answers: int


def wait(predicate: Callable[[], bool], timeout_s: float = 300.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("timed out")
        time.sleep(0.01)


def one_run(stand: Stand, index: int, case: str, alice_clicks: int) -> Run:
    ws = stand.ws
    incident = stand.seed_incident(state=IncidentState.AWAITING_APPROVAL, suffix=f"{index:02d}")
    plan = stand.seed_plan(incident, replicas=2 + index)
    button = {
        "type": "button",
        "action_id": ActionId.APPROVE.value,
        "value": f"{plan.id}:{plan.content_hash}",
        "text": {"type": "plain_text", "text": "Approve"},
    }
    posted = stand.services.slack.client.chat_postMessage(
        channel=CHANNEL, text=f"plan {plan.id}", blocks=[{"type": "actions", "elements": [button]}]
    )
    ts = str(posted["ts"])
    alice_before = len(ws.ephemerals(CHANNEL, "alice"))
    bob_before = len(ws.ephemerals(CHANNEL, "bob"))
    started = time.monotonic()
    for _ in range(alice_clicks):
        assert ws.click("alice", CHANNEL, ts, ActionId.APPROVE).acked
    alice_clicks_s = time.monotonic() - started
    clicked = time.monotonic()
    assert ws.click("bob", CHANNEL, ts, ActionId.APPROVE).acked
    wait(lambda: len(ws.ephemerals(CHANNEL, "bob")) > bob_before)
    bob_delay_s = time.monotonic() - clicked
    wait(lambda: not stand.services.work.busy())
    return Run(
        case=case,
        bob_delay_s=bob_delay_s,
        alice_clicks_s=alice_clicks_s,
        alice_answers=len(ws.ephemerals(CHANNEL, "alice")) - alice_before,
    )


def measure(runs: int) -> list[Run]:
    results: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="stratus-click-fairness-") as tmp:
        home = Path(tmp)
        config = WorldConfig(apps=(HOTEL,), seed=5, serve_api=True, kubeconfig=home / "kc")
        policy = home / "policy.yaml"
        policy.write_text(POLICY)
        workspace = WorkspaceConfig(
            channels=CHANNELS, bot_scopes=tuple(SLACK_BOT_SCOPES), ack_timeout_s=15.0
        )
        with LabWorld(config) as world, SlackWorkspace(workspace) as ws:
            world.wait_healthy()
            values = {
                "SLACK_BOT_TOKEN": ws.config.bot_token,
                "SLACK_APP_TOKEN": ws.config.app_token,
                "SLACK_SIGNING_SECRET": ws.config.signing_secret,
                "SLACK_API_URL": ws.api_url,
                "STRATUS_SLACK_MODE": "socket",
                "STRATUS_HTTP_HOST": "127.0.0.1",
                "STRATUS_HTTP_PORT": "0",
                "STRATUS_DATABASE_URL": f"sqlite:///{home / 'stratus.db'}",
                "KUBECONFIG": str(config.kubeconfig),
                "STRATUS_CLUSTER_NAME": CLUSTER,
                "STRATUS_NAMESPACES": HOTEL,
                "STRATUS_POLICY_FILE": str(policy),
                "STRATUS_SCAN_INTERVAL_S": "0",
                "STRATUS_LOG_LEVEL": "WARNING",
            }
            services = build_services(
                load_settings(values),
                Options(
                    clock=world.clock,
                    metrics_source=world.metrics,
                    limits=FAST,
                    housekeeping_interval_s=3600.0,
                    journal=False,
                ),  # Slack pacing as in production: 1 message/s per channel
            )
            runtime = BotRuntime(services)
            runtime.start()
            try:
                wait(lambda: ws.socket_connections > 0, 30)
                stand = Stand(world=world, ws=ws, runtime=runtime, policy_file=policy)
                index = 0
                cases: list[tuple[str, int, bool]] = [
                    ("alone", 0, True),
                    (f"after {CLICKS}", CLICKS, True),
                    (f"after {CLICKS}, coalescing off", CLICKS, False),
                ]
                for case, clicks, coalesce in cases:
                    ops = services.incidents
                    if not coalesce:  # every click becomes a decision
                        ops._claim = lambda _key: True  # type: ignore[method-assign]
                    for _ in range(runs):
                        result = one_run(stand, index, case, clicks)
                        index += 1
                        results.append(result)
                        print(
                            f"{case:40s} Bob waited {result.bob_delay_s:6.2f} s; "
                            f"Alice: {result.alice_answers} answer(s)",
                            flush=True,
                        )
            finally:
                runtime.stop()
    return results


def report(results: list[Run], runs: int) -> str:
    lines = [
        "# Click fairness",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `benchmarks/click_fairness.py` "
        f"({runs} run(s) per case; Python {platform.python_version()}, "
        f"{platform.machine()}, shared 2-core machine). Socket Mode, production Slack pacing "
        "(1 message/s per channel). Bob's delay: from his Approve click to his answer in the "
        "channel; Alice's answers: how many decisions her clicks became.",
        "",
        "| Case | Bob's delay, median (s) | max (s) | Alice's answers | Alice's clicks took (s) |",
        "|---|---|---|---|---|",
    ]
    for case in dict.fromkeys(r.case for r in results):
        mine = [r for r in results if r.case == case]
        delays = [r.bob_delay_s for r in mine]
        answers = sorted({r.alice_answers for r in mine})
        clicks = statistics.median(r.alice_clicks_s for r in mine)
        lines.append(
            f"| {case} | {statistics.median(delays):.2f} | {max(delays):.2f} | "
            f"{', '.join(map(str, answers))} | {clicks:.2f} |"
        )
    lines += [
        "",
        "Target (issue 14): 50 clicks of one person delay another person's click by no more "
        "than one second. Repeats of a decision waiting, running or made in the last 2 s are "
        "coalesced (`bot.operations`), answers leave the plan's lane (a lane per person), and "
        "ephemeral answers are paced per person, not per channel.",
        "",
        "Before (the same script on the code before issue 14, once): Bob waited 51.27 s behind "
        "Alice's 50 decisions, each holding the plan's lane while its answer waited for the "
        "channel's one-message-per-second slot.",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    results = measure(args.runs)
    OUT.write_text(report(results, args.runs), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
