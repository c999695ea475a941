"""`compute_digest` on a seeded store: each figure by its definition."""

from __future__ import annotations

from datetime import timedelta

from bot.digest import compute_digest, digest_figures, render_digest
from lab.slack.blocks import check_message_blocks
from storage import Store
from tests.bot.digest.conftest import END, HOTEL, SHOP, T0


def test_figures_per_namespace(seeded: Store) -> None:
    digest = compute_digest(seeded, cluster="lab", namespaces=[HOTEL], start=T0, end=END)
    assert [n.namespace for n in digest.namespaces] == [HOTEL, SHOP]
    hotel, shop = digest.namespaces

    assert hotel.opened == 3  # A, C, D (B opened the day before)
    assert hotel.resolved == 2  # A and B
    assert hotel.mttd_s == (60 + 120 + 60) / 3  # A, C and D after their first alert
    assert hotel.mttm_s == (10 * 60 + 30 * 60) / 2
    assert (hotel.open_incidents, hotel.worst_mu) == (2, 5.0)
    assert (hotel.committed, hotel.aborted, hotel.undone) == (1, 1, 1)
    assert hotel.pending_approvals == 1
    assert hotel.escalated == 0

    assert (shop.opened, shop.resolved, shop.escalated) == (1, 0, 1)
    assert shop.mttd_s is None  # declared by a person
    assert shop.mttm_s is None
    assert (shop.committed, shop.aborted, shop.undone) == (0, 1, 0)
    assert shop.healthy and not shop.quiet


def test_a_quiet_period(seeded: Store) -> None:
    later = END + timedelta(days=3)
    digest = compute_digest(
        seeded, cluster="lab", namespaces=[HOTEL, SHOP], start=later, end=later + timedelta(days=1)
    )
    hotel, shop = digest.namespaces
    assert (hotel.opened, hotel.resolved, hotel.committed) == (0, 0, 0)
    assert hotel.open_incidents == 2  # still open now
    assert shop.quiet
    assert digest_figures(digest) == []


def test_rendering_is_valid_and_names_quiet_namespaces(seeded: Store) -> None:
    digest = compute_digest(
        seeded, cluster="lab", namespaces=[HOTEL, SHOP, "payments"], start=T0, end=END
    )
    message = render_digest(digest)
    text, blocks = message.payload()
    assert check_message_blocks(blocks) == []
    assert text.startswith("Stratus digest: 4 incidents opened, 2 resolved")
    shown = str(blocks)
    assert "Quiet, nothing open: `payments`" in shown
    assert "3 opened · 2 resolved · 0 escalated" in shown
    assert "1 committed · 1 aborted · 1 undone" in shown
    assert [f.namespace for f in digest_figures(digest)] == [HOTEL, SHOP]
