"""What the timeline says when recovery takes over a transaction: the real reason, read from
the lease as storage last saw it — never "a restart" when nothing restarted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agents.tnr.records import LeaseRecord
from agents.tnr.recovery import process_of, takeover_reason

T = datetime(2026, 1, 5, 9, 0, 0, tzinfo=UTC)
TTL_S = 30.0


def lease(holder: str, *, released_after_s: float | None = None) -> LeaseRecord:
    expires = T + timedelta(seconds=TTL_S if released_after_s is None else released_after_s)
    return LeaseRecord(holder=holder, token=7, renewed_at=T, expires_at=expires)


def test_the_process_part_of_a_holder_name() -> None:
    assert process_of("stratus/host-a/41#1f2e3d4c") == "stratus/host-a/41"
    assert process_of("stratus/host-a/41/recovery#99aa") == "stratus/host-a/41"
    assert process_of("test-engine") == "test-engine"


def test_a_lease_that_lapsed_in_this_very_process_is_not_called_a_restart() -> None:
    why = takeover_reason(
        lease("stratus/host-a/41#run1"), me="stratus/host-a/41/recovery#run2", ttl_s=TTL_S
    )
    assert why == (
        "the writer's lease expired (holder stratus/host-a/41#run1 last renewed at "
        "2026-01-05T09:00:00+00:00) while this process kept running"
    )
    assert "restart" not in why


def test_an_earlier_process_on_this_host_is_a_restart() -> None:
    why = takeover_reason(
        lease("stratus/host-a/41#run1"), me="stratus/host-a/77/recovery#run2", ttl_s=TTL_S
    )
    assert why.startswith("the bot restarted: the writer stratus/host-a/41#run1")
    assert "last renewed its lease at 2026-01-05T09:00:00+00:00" in why


def test_another_replica_whose_lease_ran_out() -> None:
    why = takeover_reason(
        lease("stratus/host-b/12#run1"), me="stratus/host-a/41/recovery#run2", ttl_s=TTL_S
    )
    assert why == (
        "the writer's lease expired (holder stratus/host-b/12#run1 last renewed at "
        "2026-01-05T09:00:00+00:00)"
    )


def test_a_writer_that_gave_the_lease_back_unfinished() -> None:
    why = takeover_reason(
        lease("stratus/host-a/41#run1", released_after_s=4),
        me="stratus/host-a/41/recovery#run2",
        ttl_s=TTL_S,
    )
    assert why == (
        "its writer stratus/host-a/41#run1 gave the writer lock back at "
        "2026-01-05T09:00:04+00:00 without finishing the transaction"
    )


def test_no_lease_at_all() -> None:
    assert takeover_reason(None, me="x", ttl_s=TTL_S) == "its writer held no lease on the scope"
