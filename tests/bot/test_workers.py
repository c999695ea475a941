"""`Lanes`: one task at a time per key, in order; keys in parallel; a failing task is
reported and the lane goes on; a task that must wait (`RunLater`) parks its lane without
holding a worker and runs again first in its lane."""

from __future__ import annotations

import threading
import time

from bot.errors import RunLater
from bot.workers import Lanes, Origin
from tests.bot.fake_timers import FakeTimers


def test_tasks_of_one_key_run_in_order_and_never_overlap() -> None:
    lanes = Lanes(workers=4, name="test-lanes")
    running = 0
    overlap = False
    seen: list[int] = []
    lock = threading.Lock()

    def task(n: int) -> None:
        nonlocal running, overlap
        with lock:
            running += 1
            overlap = overlap or running > 1
        time.sleep(0.005)
        seen.append(n)
        with lock:
            running -= 1

    for n in range(30):
        lanes.submit("plan:1", lambda n=n: task(n), Origin(what=f"task {n}"))  # type: ignore[misc]
    assert lanes.wait_idle(10)
    assert seen == list(range(30)) and not overlap
    lanes.close()


def test_different_keys_run_in_parallel() -> None:
    lanes = Lanes(workers=2, name="test-lanes")
    both = threading.Barrier(2, timeout=5)
    done: list[str] = []

    def meet(key: str) -> None:
        both.wait()  # only returns when the other key's task runs at the same time
        done.append(key)

    lanes.submit("a", lambda: meet("a"), Origin(what="a"))
    lanes.submit("b", lambda: meet("b"), Origin(what="b"))
    assert lanes.wait_idle(10)
    assert sorted(done) == ["a", "b"]
    lanes.close()


def test_a_failing_task_is_reported_and_the_lane_goes_on() -> None:
    reported: list[tuple[str, str]] = []
    lanes = Lanes(
        workers=1, name="test-lanes", on_error=lambda e, o: reported.append((str(e), o.what))
    )
    after: list[str] = []

    def fail() -> None:
        raise RuntimeError("boom")

    lanes.submit("k", fail, Origin(what="failing", user="U1", channel="C1"))
    lanes.submit("k", lambda: after.append("ran"), Origin(what="next"))
    assert lanes.wait_idle(10)
    assert reported == [("boom", "failing")] and after == ["ran"]
    lanes.close()


def test_closed_lanes_take_no_more_work() -> None:
    lanes = Lanes(workers=1, name="test-lanes")
    lanes.close()
    ran: list[int] = []
    lanes.submit("k", lambda: ran.append(1), Origin(what="late"))
    time.sleep(0.05)
    assert ran == []


def test_a_task_that_must_wait_gives_its_worker_to_other_keys_and_keeps_its_place() -> None:
    timers = FakeTimers()
    lanes = Lanes(workers=1, name="test-lanes", timer=timers)
    ran: list[str] = []
    ready = {"a": False}

    def first_of_a() -> None:
        if not ready["a"]:
            raise RunLater("a's slot", 1.0)
        ran.append("a1")

    lanes.submit("a", first_of_a, Origin(what="a1"))
    lanes.submit("a", lambda: ran.append("a2"), Origin(what="a2"))
    assert lanes.wait_settled(10)
    assert lanes.parked() == 1 and timers.pending() == [1.0]
    # The only worker is free: another key's task runs at once.
    lanes.submit("b", lambda: ran.append("b1"), Origin(what="b1"))
    assert lanes.wait_settled(10)
    assert ran == ["b1"]
    lanes.submit("a", lambda: ran.append("a3"), Origin(what="a3"))  # joins the parked lane
    ready["a"] = True
    timers.advance(1.0)
    assert lanes.wait_idle(10)
    assert ran == ["b1", "a1", "a2", "a3"]  # a's tasks in order, the parked one first
    lanes.close()


def test_closing_drops_parked_lanes_at_once() -> None:
    timers = FakeTimers()
    lanes = Lanes(workers=1, name="test-lanes", timer=timers)
    ran: list[str] = []

    def later() -> None:
        raise RunLater("slot", 60.0)

    lanes.submit("a", later, Origin(what="a1"))
    lanes.submit("a", lambda: ran.append("a2"), Origin(what="a2"))
    assert lanes.wait_settled(10) and lanes.parked() == 1
    lanes.close(timeout_s=10)  # returns without waiting for the timer
    assert not lanes.busy() and timers.pending() == []
    assert ran == []


def test_a_request_while_one_waits_is_dropped_and_one_while_it_runs_is_queued() -> None:
    lanes = Lanes(workers=2, name="test-lanes")
    gate = threading.Event()
    started = threading.Event()
    runs: list[str] = []

    def hold() -> None:  # keeps the lane busy so the next task waits its turn
        started.set()
        gate.wait(5)

    def sync(n: int) -> None:
        runs.append(f"sync {n}")

    lanes.submit("incident:1", hold, Origin(what="hold"))
    assert started.wait(5)
    assert lanes.submit_once("incident:1", lambda: sync(1), Origin(what="s1"), once="sync 1")
    assert lanes.waiting("sync 1")
    # The waiting sync will read storage when it runs: these add nothing.
    assert not lanes.submit_once("incident:1", lambda: sync(2), Origin(what="s2"), once="sync 1")
    assert not lanes.submit_once("incident:1", lambda: sync(3), Origin(what="s3"), once="sync 1")
    # Another name is another request.
    assert lanes.submit_once("incident:1", lambda: sync(9), Origin(what="d"), once="drive 1")
    gate.set()
    assert lanes.wait_idle(10)
    assert runs == ["sync 1", "sync 9"] and not lanes.waiting("sync 1")

    # Once it has started, a new request queues one more (it may have read storage already).
    inside = threading.Event()
    release = threading.Event()

    def slow_sync() -> None:
        runs.append("slow")
        inside.set()
        release.wait(5)

    assert lanes.submit_once("incident:1", slow_sync, Origin(what="slow"), once="sync 1")
    assert inside.wait(5)
    assert lanes.submit_once("incident:1", lambda: sync(4), Origin(what="s4"), once="sync 1")
    release.set()
    assert lanes.wait_idle(10)
    assert runs[-2:] == ["slow", "sync 4"]
    lanes.close()
