"""Drive `make demo`'s live loop as an on-call engineer would: Alice approves every plan, and
undoes the first scenario's transaction; record how each scenario ended and whether the lab
was ever put back while an incident was open. Used by `tests/demo/test_cycles.py` (one cycle)
and `benchmarks/demo_cycles.py` (three).

Nothing is patched: the demo runs as `stratus demo` runs it, its progress lines go to `say`,
and this driver reads the workspace and the store and clicks: in the workspace's API, or (with
`browser=`) as a person does, in the workspace's web page in a real Chromium.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agents.model import IncidentState, TransactionStatus
from bot.cli.demo_live import LiveDemo, LiveOptions, default_cycle
from bot.ids import ActionId, MessageKind
from lab.bench import SUITE_DIR, load_suite
from lab.slack.lint import message_problems, texts
from lab.slack.store import SLACKBOT

#: What the README says each demo scenario ends as.
EXPECTED = {
    "hotel-wrong-target-port-geo": "committed, undone",
    "hotel-crashing-image-recommendation": "committed",
    "hotel-revoked-credentials-mongodb-geo": "escalated with a runbook, no write",
}
UNDO_IN = "hotel-wrong-target-port-geo"
ALICE = "U0ALICE01"


@dataclass(kw_only=True)
class Ended:
    scenario: str
    incident: str
    outcome: str
    wall_s: float


@dataclass(kw_only=True)
class Run:
    ended: list[Ended] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    resets_under_open: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    transcript: str = ""


def _buttons(message: dict[str, Any]) -> set[str]:
    return {
        str(e.get("action_id"))
        for b in message.get("blocks") or []
        if b.get("type") == "actions"
        for e in b.get("elements", [])
    }


class Clicks(Protocol):
    def click(self, channel: str, ts: str, action_id: str) -> None: ...


class ApiClicks:
    """Alice's clicks through the workspace's API (what the page sends, without the page)."""

    def __init__(self, demo: LiveDemo) -> None:
        self.demo = demo

    def click(self, channel: str, ts: str, action_id: str) -> None:
        assert self.demo.ws is not None
        self.demo.ws.click(ALICE, channel, ts, action_id)


class BrowserClicks:
    """Alice's clicks in the workspace's web page, in a real browser: open the channel, find
    the message by its timestamp, press the button, confirm when asked, and close the Undo
    modal once it shows its result."""

    def __init__(self, demo: LiveDemo, page: Any) -> None:
        from playwright.sync_api import TimeoutError as NotShown
        from playwright.sync_api import expect

        assert demo.ws is not None
        self.page = page
        self.expect = expect
        self.not_shown = NotShown
        page.goto(demo.ws.url)
        page.get_by_test_id("user-picker").select_option(label="Alice Approver")

    def click(self, channel: str, ts: str, action_id: str) -> None:
        page, expect = self.page, self.expect
        link = page.locator(f'[data-testid="channel-link"][data-channel-id="{channel}"]')
        expect(link).to_be_visible(timeout=60_000)
        link.click()
        message = page.locator(f'[data-testid="message"][data-ts="{ts}"]')
        button = message.get_by_test_id(f"button-{action_id}")
        expect(button).to_be_visible(timeout=60_000)
        button.click()
        confirm = page.get_by_test_id("confirm-ok")
        try:
            confirm.wait_for(timeout=2_000)
            confirm.click()
        except self.not_shown:
            pass  # this button asks for no confirmation
        if action_id == ActionId.UNDO:
            modal = page.get_by_test_id("modal")
            expect(modal).to_contain_text("Undone", timeout=120_000)
            page.get_by_test_id("modal-cancel").click()
            expect(modal).to_be_hidden(timeout=30_000)


class Driver:
    """Watches the demo's incidents and acts as Alice."""

    def __init__(self, demo: LiveDemo, run: Run, clicks: Clicks | None = None) -> None:
        self.demo = demo
        self.run = run
        self.clicks = clicks or ApiClicks(demo)
        self._acted: set[tuple[str, str]] = set()

    @property
    def services(self) -> Any:
        assert self.demo.runtime is not None
        return self.demo.runtime.services

    def incidents(self) -> list[Any]:
        store = self.services.store
        return list(store.incidents.list_by_state(*[s.value for s in IncidentState]))

    def open_incidents(self) -> list[str]:
        """Incidents the bot is still working on. An escalation stays open while its alerts
        fire, in a person's hands: putting the lab back is what that person does here."""
        done = (IncidentState.CLOSED.value, IncidentState.ESCALATED.value)
        return [r.id for r in self.incidents() if r.state not in done]

    def step(self, undo: set[str]) -> None:
        """One look: approve every plan that waits; undo what `undo`'s incidents committed."""
        ws = self.demo.ws
        assert ws is not None
        store = self.services.store
        for row in self.incidents():
            for ref in store.slack_messages.find(incident_id=row.id, kind=MessageKind.PLAN.value):
                message = ws.message(ref.channel, ref.ts)
                key = ("approve", ref.ref or "")
                if message and ActionId.APPROVE in _buttons(message) and key not in self._acted:
                    self._acted.add(key)
                    self.clicks.click(ref.channel, ref.ts, ActionId.APPROVE)
            if row.id not in undo:
                continue
            for ref in store.slack_messages.find(
                incident_id=row.id, kind=MessageKind.OUTCOME.value
            ):
                message = ws.message(ref.channel, ref.ts)
                key = ("undo", ref.ref or "")
                if message and ActionId.UNDO in _buttons(message) and key not in self._acted:
                    self._acted.add(key)
                    self.clicks.click(ref.channel, ref.ts, ActionId.UNDO)

    def outcome(self, incident_id: str) -> str:
        machine = self.services.brain.machine
        txs = machine.transactions(incident_id)
        timeline = self.services.store.incidents.timeline(incident_id)
        runbook = any(
            e.state == IncidentState.ESCALATED.value and (e.data or {}).get("runbook")
            for e in timeline
        )
        if not txs:
            return "escalated with a runbook, no write" if runbook else "closed, no write"
        statuses = [tx.status for tx in txs]
        if statuses[-1] is TransactionStatus.UNDONE:
            return "committed, undone"
        if statuses[-1] is TransactionStatus.COMMITTED:
            return "committed"
        return ", ".join(s.value for s in statuses)

    def transcript(self) -> str:
        """What every channel shows, as text (blocks' texts, one message after another)."""
        ws = self.demo.ws
        assert ws is not None
        with ws.state.lock:
            channels = list(ws.state.channels.values())
        out: list[str] = []
        for channel in channels:
            out.append(f"===== #{channel.name}")
            for message in ws.messages(channel.id) + ws.ephemerals(channel.id):
                if message.get("bot_id"):
                    out.append("----- " + ("(ephemeral) " if message.get("ephemeral_to") else ""))
                    out.extend(list(texts(message.get("blocks"))) or [str(message.get("text"))])
        return "\n".join(out)

    def lint(self) -> list[str]:
        """Every problem in every message, ephemeral message, DM, modal and Home view."""
        ws = self.demo.ws
        assert ws is not None
        found: list[str] = []
        with ws.state.lock:
            channels = list(ws.state.channels.values())
            users = [u.id for u in ws.state.users.values() if not u.is_bot and u.id != SLACKBOT]
        for channel in channels:
            seen: list[dict[str, Any]] = list(ws.messages(channel.id))
            for top in list(seen):
                if top.get("reply_count"):
                    seen.extend(ws.messages(channel.id, str(top["ts"]))[1:])
            seen.extend(ws.ephemerals(channel.id))
            for message in seen:
                if not message.get("bot_id"):
                    continue
                for problem in message_problems(message):
                    found.append(f"#{channel.name} {str(message.get('text'))[:60]!r}: {problem}")
        for user in users:
            home = ws.home_view(user)
            for problem in message_problems(home or {}):
                found.append(f"App Home of {user}: {problem}")
            for view in ws.views(user):
                for problem in message_problems(view):
                    found.append(f"modal of {user}: {problem}")
        return sorted(set(found))


@contextmanager
def live_demo(
    home: Path, *, speed: float, linger_s: float, settle_s: float
) -> Iterator[tuple[LiveDemo, Run]]:
    suite = load_suite(SUITE_DIR).scenarios
    run = Run()
    holder: dict[str, Driver] = {}

    def say(text: str) -> None:
        run.lines.append(text)
        driver = holder.get("driver")
        if driver is not None and "putting the lab back" in text:
            still_open = driver.open_incidents()
            if still_open:
                run.resets_under_open.append(f"{text} while {still_open} open")

    demo = LiveDemo(
        LiveOptions(
            scenarios=default_cycle(suite),
            home=home,
            workspace_port=0,
            speed=speed,
            prometheus=False,
            pause_s=0.5,
            linger_s=linger_s,
            settle_s=settle_s,
        ),
        say=say,
    )
    try:
        demo.start()
        holder["driver"] = Driver(demo, run)
        yield demo, run
    finally:
        demo.stop()
        demo.close()


def play(
    home: Path,
    *,
    cycles: int,
    speed: float = 10.0,
    linger_s: float = 15.0,
    settle_s: float = 5.0,
    chromium: str | None = None,
) -> Run:
    """Run the demo for `cycles` rounds of its scenarios, Alice approving (in Chromium's page
    when `chromium` is the browser's path); return how the first incident of each scenario
    played ended. (Alice's Undo brings the fault back; the incident is hers then, escalated,
    and the demo puts the lab back.)"""
    with ExitStack() as stack:
        demo, run = stack.enter_context(
            live_demo(home, speed=speed, linger_s=linger_s, settle_s=settle_s)
        )
        clicks: Clicks = ApiClicks(demo)
        if chromium is not None:
            from playwright.sync_api import sync_playwright

            from tests.conftest import CHROMIUM_FLAGS

            p = stack.enter_context(sync_playwright())
            browser = p.chromium.launch(
                executable_path=chromium, args=CHROMIUM_FLAGS, headless=True
            )
            stack.callback(browser.close)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            clicks = BrowserClicks(demo, page)
        return _play(demo, run, cycles=cycles, clicks=clicks)
    raise AssertionError("unreachable: ExitStack swallows no exception")


def _play(demo: LiveDemo, run: Run, *, cycles: int, clicks: Clicks) -> Run:
    driver = Driver(demo, run, clicks)
    wanted = cycles * len(demo.scenario_ids)
    play_of: dict[str, int] = {}  # incident → the number of the play that opened it
    first: dict[int, str] = {}  # play → its first incident
    plays: list[str] = []
    started: dict[str, float] = {}
    thread = threading.Thread(target=demo.run, name="demo-scenarios", daemon=True)
    thread.start()
    while len(run.ended) < wanted:
        if not thread.is_alive():
            raise AssertionError("the demo loop stopped:\n" + "\n".join(run.lines[-20:]))
        plays = [ln.split()[2].rstrip(":") for ln in run.lines if ln.startswith("Injecting ")]
        rows = sorted(driver.incidents(), key=lambda r: r.opened_at)
        for row in rows:
            if row.id not in play_of and plays:
                play_of[row.id] = len(plays) - 1
                first.setdefault(len(plays) - 1, row.id)
                started[row.id] = time.monotonic()
        undo = {i for p, i in first.items() if plays[p] == UNDO_IN}
        driver.step(undo)
        done = {e.incident for e in run.ended}
        for row in rows:
            if row.id in done or first.get(play_of.get(row.id, -1)) != row.id:
                continue
            if row.state != IncidentState.CLOSED.value:
                continue
            outcome = driver.outcome(row.id)
            if row.id in undo and outcome == "committed":
                continue  # Alice's Undo is on its way
            run.ended.append(
                Ended(
                    scenario=plays[play_of[row.id]],
                    incident=row.id,
                    outcome=outcome,
                    wall_s=time.monotonic() - started[row.id],
                )
            )
        time.sleep(0.5)
    run.problems = driver.lint()
    run.transcript = driver.transcript()
    run.lines.extend(f"ended: {e}" for e in run.ended)
    return run
