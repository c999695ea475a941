"""The demo in a real browser: Playwright drives Debian's Chromium through the local Slack
workspace while the real bot handles an incident on the lab cluster.

It sees the incident and its diagnosis, is refused as someone without approval rights,
approves as an approver, sees the outcome with Undo, undoes it and sees the object restored.
Screenshots go to the test's directory, and to `$STRATUS_SCREENSHOTS` when that is set (how the
README's image is refreshed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.cli.demo_live import LiveDemo, LiveOptions
from lab.bench import SUITE_DIR, load_suite
from tests.conftest import CHROMIUM_FLAGS, require_binary

SCENARIO = "hotel-wrong-target-port-geo"


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[LiveDemo]:
    [loaded] = [s for s in load_suite(SUITE_DIR).scenarios if s.scenario.id == SCENARIO]
    live = LiveDemo(
        LiveOptions(
            scenarios=(loaded,),
            home=tmp_path / "demo",
            workspace_port=0,
            speed=8.0,
            prometheus=False,
            pause_s=1.0,
            # The lab stays as the incident left it for the whole test: the demo's reset
            # would otherwise race the Undo this test checks.
            linger_s=3600.0,
        ),
        say=lambda _text: None,
    )
    try:
        live.start()
        thread = threading.Thread(target=live.run, name="demo-scenarios", daemon=True)
        thread.start()
        yield live
    finally:
        live.stop()
        live.close()


def target_port(demo: LiveDemo) -> object:
    assert demo.world is not None
    service = demo.world.api.get("Service", "hotel-reservation", "geo")
    assert service is not None
    return service["spec"]["ports"][0]["targetPort"]


def shot(page: object, tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)  # type: ignore[attr-defined]
    target = os.environ.get("STRATUS_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(target) / path.name)


@pytest.mark.timeout(600)
def test_approve_refuse_and_undo_in_the_browser(demo: LiveDemo, tmp_path: Path) -> None:
    chromium = require_binary("chromium")
    kubectl = require_binary("kubectl")
    from playwright.sync_api import expect, sync_playwright

    assert demo.ws is not None and demo.world is not None
    kubeconfig = demo.world.config.kubeconfig
    listed = subprocess.run(
        [kubectl, "--kubeconfig", str(kubeconfig), "get", "pods", "-A"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "hotel-reservation" in listed.stdout and "frontend-" in listed.stdout

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(demo.ws.url)
        page.get_by_test_id("user-picker").select_option(label="Alice Approver")
        incident = page.locator('[data-testid="channel-link"][data-channel-name^="inc-"]')
        expect(incident.first).to_be_visible(timeout=180_000)
        incident.first.click()
        approve = page.get_by_test_id("button-stratus_approve").last
        expect(approve).to_be_visible(timeout=180_000)
        expect(page.get_by_text("Root cause").first).to_be_visible()
        shot(page, tmp_path, "demo-diagnosis-and-plan")

        # Someone without approval rights who is not in the channel tries: Slack cannot show
        # her an ephemeral message there, so the refusal comes as a direct message.
        channel_id = incident.first.get_attribute("data-channel-id")
        assert channel_id is not None
        page.get_by_test_id("user-picker").select_option(label="Carol Viewer")
        page.locator(f'[data-testid="channel-link"][data-channel-id="{channel_id}"]').click()
        page.get_by_test_id("button-stratus_approve").last.click()
        toast = page.get_by_test_id("toast").filter(has_text="not an approver")
        expect(toast.first).to_be_visible(timeout=60_000)
        expect(page.get_by_test_id("app-dm-count")).to_have_text("1")
        shot(page, tmp_path, "demo-refused-dm")

        # In the channel, the refusal is an ephemeral message.
        demo.ws.join_channel("U0CAROL03", channel_id)
        page.get_by_test_id("button-stratus_approve").last.click()
        refusal = page.locator('[data-testid="message"][data-ephemeral="true"]')
        expect(refusal.last).to_contain_text("not an approver", timeout=60_000)
        shot(page, tmp_path, "demo-refused")

        # An approver approves: the transaction runs and the outcome offers Undo.
        page.get_by_test_id("user-picker").select_option(label="Alice Approver")
        page.locator(f'[data-testid="channel-link"][data-channel-id="{channel_id}"]').click()
        page.get_by_test_id("button-stratus_approve").last.click()
        dialog = page.get_by_test_id("confirm-ok")
        if dialog.count():
            dialog.click()
        undo = page.get_by_test_id("button-stratus_undo").last
        expect(undo).to_be_visible(timeout=240_000)
        shot(page, tmp_path, "demo-committed")
        assert target_port(demo) == 8083
        # mrkdwn as Slack renders it: the outcome's "*Committed `tx-…`*" is bold around code.
        assert page.locator('[data-testid="message"] b code').count() >= 1

        # Undo asks for confirmation, then opens a modal that follows the undo ("Undoing…",
        # then its result). Nobody else touched the Service, so no drift question is asked.
        undo.click()
        page.get_by_test_id("confirm-ok").click()
        modal = page.get_by_test_id("modal")
        expect(modal).to_be_visible(timeout=60_000)
        expect(modal).to_have_attribute("data-callback-id", "stratus_undo_status")
        expect(modal).to_contain_text("Undone", timeout=120_000)
        shot(page, tmp_path, "demo-undo-modal")
        # A reload is a fresh client: the modal does not come back.
        page.reload()
        expect(page.get_by_test_id("channel-link").first).to_be_visible(timeout=30_000)
        expect(page.get_by_test_id("modal")).to_be_hidden(timeout=30_000)
        assert demo.ws.views("U0ALICE01") == []
        deadline = time.monotonic() + 120
        while target_port(demo) != 9999 and time.monotonic() < deadline:
            page.wait_for_timeout(250)
        assert target_port(demo) == 9999, page.locator("body").inner_text()[-3000:]
        expect(page.get_by_text("Undone").first).to_be_visible(timeout=60_000)
        shot(page, tmp_path, "demo-undone")
        browser.close()
