"""Render every kind of Stratus message into the local workspace and screenshot it.

    .venv/bin/python docs/gallery/make_gallery.py --text          # docs/gallery/*.txt
    .venv/bin/python docs/gallery/make_gallery.py --screenshots   # docs/gallery/*.png (Chromium)

The messages are `tests/bot/render/gallery.py`'s: the renderers fed three demo incidents. Each
is posted by the app into the local workspace (channel messages in #gallery, modals opened for
Alice, the App Home published for her), and Playwright drives Debian's Chromium to screenshot
each one as the page renders it. `tests/bot/render/test_gallery.py` checks the text.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from slack_sdk import WebClient  # noqa: E402

from bot.render import Message, View  # noqa: E402
from lab.slack import ChannelSpec, SlackWorkspace, WorkspaceConfig  # noqa: E402
from tests.bot.render.gallery import golden_text, items  # noqa: E402

HERE = Path(__file__).resolve().parent
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]


def write_text() -> None:
    for name, item in items().items():
        (HERE / f"{name}.txt").write_text(golden_text(item))


def screenshots() -> None:
    from playwright.sync_api import sync_playwright

    config = WorkspaceConfig(channels=(*WorkspaceConfig().channels, ChannelSpec(name="gallery")))
    ws = SlackWorkspace(config)
    ws.start()
    try:
        client = WebClient(token=config.bot_token, base_url=ws.api_url)
        channel = ws.channel("gallery")["id"]
        client.conversations_join(channel=channel)
        ws.join_channel("U0ALICE01", channel)
        posted: dict[str, str] = {}
        for name, item in items().items():
            if isinstance(item, Message):
                text, blocks = item.payload()
                posted[name] = client.chat_postMessage(channel=channel, text=text, blocks=blocks)[
                    "ts"
                ]
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path="/usr/bin/chromium", args=FLAGS, headless=True
            )
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.goto(ws.url)
            page.get_by_test_id("user-picker").select_option(label="Alice Approver")
            page.locator(f'[data-testid="channel-link"][data-channel-id="{channel}"]').click()
            for name, ts in posted.items():
                message = page.locator(f'[data-testid="message"][data-ts="{ts}"]')
                message.scroll_into_view_if_needed()
                message.screenshot(path=str(HERE / f"{name}.png"))
            for name, item in items().items():
                if isinstance(item, View):
                    trigger = ws.slash_command("alice", "/stratus", "undo").payload["trigger_id"]
                    client.views_open(trigger_id=trigger, view=item.payload())
                    page.reload()
                    modal = page.get_by_test_id("modal")
                    # A reload closes modals (as in Slack): open it again after the reload.
                    trigger = ws.slash_command("alice", "/stratus", "undo").payload["trigger_id"]
                    client.views_open(trigger_id=trigger, view=item.payload())
                    modal.wait_for(state="visible")
                    modal.screenshot(path=str(HERE / f"{name}.png"))
                elif not isinstance(item, Message):
                    client.views_publish(user_id="U0ALICE01", view=item)
                    page.get_by_test_id("app-home-link").click()
                    home = page.locator("#home")
                    home.wait_for(state="visible")
                    page.wait_for_timeout(500)
                    home.screenshot(path=str(HERE / f"{name}.png"))
            browser.close()
    finally:
        ws.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", action="store_true", help="Write the golden text files.")
    parser.add_argument("--screenshots", action="store_true", help="Take the screenshots.")
    args = parser.parse_args()
    if args.text or not args.screenshots:
        write_text()
    if args.screenshots:
        screenshots()
    return 0


if __name__ == "__main__":
    sys.exit(main())
