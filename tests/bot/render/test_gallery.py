"""The gallery's golden text (`docs/gallery/*.txt`) is what the renderers say today, and no
gallery message breaks the message rules. After an intended change of wording:
`.venv/bin/python docs/gallery/make_gallery.py --text` (and `--screenshots` for the images)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.slack.lint import message_problems
from tests.bot.render.gallery import blocks_of, golden_text, items

GALLERY = Path(__file__).resolve().parents[3] / "docs" / "gallery"
ITEMS = items()


@pytest.mark.parametrize("name", sorted(ITEMS))
def test_golden_text(name: str) -> None:
    golden = GALLERY / f"{name}.txt"
    assert golden.exists(), f"{golden} is missing: run docs/gallery/make_gallery.py --text"
    assert golden_text(ITEMS[name]) == golden.read_text()


@pytest.mark.parametrize("name", sorted(ITEMS))
def test_message_rules(name: str) -> None:
    text, blocks = blocks_of(ITEMS[name])
    assert message_problems({"text": text, "blocks": blocks}) == []


def test_every_golden_file_has_its_message() -> None:
    assert {p.stem for p in GALLERY.glob("*.txt")} == set(ITEMS)
