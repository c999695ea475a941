"""Log evidence is bounded in time: lines written long before the incident started (a service's
start-up complaints) support no hypothesis; lines around and after the start do."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agents.diagnosis.logtime import line_time, since
from tests.agents.diagnosis import faults
from tests.agents.diagnosis.conftest import Run
from tests.agents.diagnosis.world import T0, hotel, shop, stamp

STARTUP = T0 - timedelta(minutes=6)  # the app started; its databases were not up yet


def test_start_up_errors_from_minutes_ago_make_no_hypothesis(run: Run) -> None:
    w = hotel()
    for service, db in (("rate", "mongodb-rate"), ("reservation", "mongodb-reservation")):
        # At start-up the database was not ready: one restart, and the complaint in the log.
        w.set_pod(service, restart_count=1, last_terminated_reason="Error", last_exit_code=1)
        complaint = (
            f"{stamp(STARTUP)} ERR cmd/{service}/main.go > error calling {db}: no reachable servers"
        )
        w.raw_log(service, complaint, previous=True)
        w.logs[(f"{service}-7d9f8-0", w.container(service), False)].insert(0, complaint)
    faults.target_port(w, "geo", 9999, caller="search", top="frontend")
    d = run(w, "frontend")
    assert (d.top.service, str(d.top.category)) == ("geo", "virtualization/misconfiguration")
    services = {h.service for h in d.hypotheses}
    assert not services & {"mongodb-rate", "mongodb-reservation"}, d.hypotheses
    logs = {e.source: e.summary for e in d.evidence if e.kind == "log"}
    # The caller's own line from the incident is evidence; the start-up lines are not.
    assert any("error calling geo" in s for s in logs.values())
    assert not any("no reachable servers" in s for s in logs.values())


def test_the_same_complaint_inside_the_window_is_evidence(run: Run) -> None:
    w = hotel()
    w.raw_log(
        "rate",
        f"{stamp(T0 - timedelta(seconds=40))} ERR cmd/rate/main.go > error calling "
        "mongodb-rate: rpc error: code = DeadlineExceeded desc = context deadline exceeded",
    )
    w.sick("rate", errors=0.2, p99=1500.0)
    d = run(w, "rate")
    assert "mongodb-rate" in {h.service for h in d.hypotheses}


def test_old_json_lines_of_the_shop_are_dropped_too(run: Run) -> None:
    w = shop()
    old = STARTUP.isoformat().replace("+00:00", "Z")
    w.set_pod("cart", restart_count=1, last_terminated_reason="Error", last_exit_code=1)
    w.raw_log(
        "cart",
        f'{{"time":"{old}","level":"error","msg":"error calling valkey-cart: dial tcp '
        f'{w.ips["valkey-cart"]}:6379: i/o timeout"}}',
    )
    faults.image_pull(w, "currency", "frontend")
    d = run(w, "frontend", "KubePodNotReady")
    assert d.top.service == "currency"
    assert "valkey-cart" not in {h.service for h in d.hypotheses}


def test_line_times_in_the_formats_runtimes_write() -> None:
    at = datetime(2026, 1, 5, 9, 0, 3, tzinfo=UTC)
    assert line_time("2026-01-05T09:00:03.000Z ERR cmd/geo/main.go > boom") == at
    assert line_time("2026-01-05T09:00:03.123456789Z boom") == at.replace(microsecond=123456)
    assert line_time("2026-01-05T10:00:03+01:00 boom") == at
    assert line_time("[2026-01-05 09:00:03,000] ERROR boom") == at
    assert line_time('{"level":"error","ts":"2026-01-05T09:00:03Z","msg":"boom"}') == at
    assert line_time('{"t":{"$date":"2026-01-05T09:00:03.000+00:00"},"s":"E"}') == at
    assert line_time("2026-01-05T09:00:03 naive stamps are UTC") == at
    assert line_time("goroutine 1 [running]:") is None
    assert line_time("panic: 2026-01-05T09:00:03Z is not at the start") is None


def test_unstamped_lines_follow_their_record_and_leading_ones_are_kept() -> None:
    cutoff = datetime(2026, 1, 5, 9, 5, tzinfo=UTC)
    lines = [
        "Starting (no stamp yet)",
        "2026-01-05T09:00:03Z ERR old failure",
        "goroutine 1 [running]:",
        "main.main()",
        "2026-01-05T09:05:30Z ERR new failure",
        "goroutine 7 [running]:",
    ]
    kept, dropped = since(lines, cutoff)
    assert kept == [lines[0], lines[4], lines[5]]
    assert dropped == 3
