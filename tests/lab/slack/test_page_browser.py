"""The workspace page in a real browser (Playwright on Debian's Chromium): what a viewer does
is not undone by an answer the page asked for before they did it."""

from __future__ import annotations

import pytest
from slack_sdk import WebClient

from lab.slack import SlackWorkspace
from tests.conftest import CHROMIUM_FLAGS, require_binary


@pytest.mark.timeout(180)
def test_a_late_answer_for_the_old_channel_does_not_take_the_viewer_back(
    workspace: SlackWorkspace, client: WebClient
) -> None:
    chromium = require_binary("chromium")
    from playwright.sync_api import Route, expect, sync_playwright

    client.chat_postMessage(channel="general", text="in general")
    war_room = client.conversations_create(name="war-room")["channel"]["id"]
    client.conversations_invite(channel=war_room, users="U0ALICE01")
    client.chat_postMessage(channel=war_room, text="in the war room")

    held: list[Route] = []
    hold = {"on": False}

    def state(route: Route) -> None:
        # While `hold` is on, answers to the page's state requests wait: the viewer acts in
        # between, exactly as on a slow connection.
        if hold["on"]:
            held.append(route)
        else:
            route.continue_()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS, headless=True)
        page = browser.new_page()
        page.route("**/ui/state?*", state)
        page.goto(f"{workspace.url}/#/C0LAB00001")
        page.get_by_test_id("user-picker").select_option(label="Alice Approver")
        title = page.get_by_test_id("channel-title")
        expect(title).to_contain_text("general")
        expect(page.get_by_text("in general")).to_be_visible()

        hold["on"] = True
        page.evaluate("() => { refresh(); }")  # a refresh for #general is on its way
        page.wait_for_function("S.fetching === true")
        # The route handler runs when Playwright next pumps its events, not when the page sets
        # `S.fetching`; a refresh already in flight also sends its request only once it ends.
        for _ in range(200):
            if held:
                break
            page.wait_for_timeout(50)
        assert held, "the page asked for its state"
        page.locator(f'[data-testid="channel-link"][data-channel-id="{war_room}"]').click()
        hold["on"] = False
        for route in held:
            route.continue_()

        expect(title).to_contain_text("war-room")
        expect(page.get_by_text("in the war room")).to_be_visible()
        page.wait_for_function("S.fetching === false && S.again === false")  # nothing pending
        expect(title).to_contain_text("war-room")
        assert page.evaluate("S.channel") == war_room
        browser.close()
