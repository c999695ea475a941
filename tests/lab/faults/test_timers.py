"""Lab timers fire at their lab time, and never keep a finished world in memory."""

from __future__ import annotations

import gc
import threading
import weakref
from datetime import timedelta

from lab.clock import LabClock
from lab.faults import fault
from lab.faults.timers import timers_for
from lab.sim.world import LabWorld, WorldConfig
from tests.lab.faults.conftest import HOTEL


class _World:
    """What a fault's callback closes over: something that holds the clock."""

    def __init__(self, clock: LabClock) -> None:
        self.clock = clock
        self.fired: list[str] = []

    def fire(self) -> None:
        self.fired.append("fired")


def test_a_stepped_clock_fires_its_timers_in_order_and_keeps_one_registry_entry() -> None:
    clock = LabClock(stepped=True)
    world = _World(clock)
    timers = timers_for(clock)
    assert timers_for(clock) is timers
    start = clock.now()
    timers.call_at(start + timedelta(seconds=20), lambda: world.fired.append("late"), name="b")
    timers.call_at(start + timedelta(seconds=10), lambda: world.fired.append("early"), name="a")
    del timers  # the clock's tick keeps them, not the caller
    clock.advance(15)
    assert world.fired == ["early"]
    clock.advance(10)
    assert world.fired == ["early", "late"]
    assert timers_for(clock).pending() == []


def test_a_clock_with_a_pending_timer_is_freed_with_its_world() -> None:
    clock = LabClock(stepped=True)
    world = _World(clock)
    # The callback reaches the world, and the world its clock: only a registry that held the
    # timers strongly would keep all three alive.
    timers_for(clock).call_at(clock.now() + timedelta(seconds=300), world.fire, name="x")
    clock_ref, world_ref = weakref.ref(clock), weakref.ref(world)
    del clock, world
    gc.collect()
    assert clock_ref() is None
    assert world_ref() is None


def test_a_running_clock_fires_from_its_thread() -> None:
    clock = LabClock(speed=1000.0)
    fired = threading.Event()
    timers_for(clock).call_at(clock.now() + timedelta(seconds=2), fired.set, name="soon")
    assert fired.wait(timeout=30)
    # Once nothing is pending the thread is gone; a new timer still fires.
    again = threading.Event()
    timers_for(clock).call_at(clock.now() + timedelta(seconds=1), again.set, name="again")
    assert again.wait(timeout=30)


def test_a_lab_world_that_injected_a_pod_failure_is_collectable_after_it_stops() -> None:
    world = LabWorld(WorldConfig(apps=(HOTEL,), seed=0, stepped=True)).start()
    try:
        world.wait_healthy(timeout_s=120)
        world.advance(10)
        injection = fault("pod-failure").inject(world, app=HOTEL, params={"duration_s": 300})
        assert injection.expires_at is not None
        assert [name for _, name in timers_for(world.clock).pending()] == [
            f"pod-failure {HOTEL}/geo"
        ]
        world.advance(5)
    finally:
        world.stop()
    world_ref, clock_ref = weakref.ref(world), weakref.ref(world.clock)
    del world, injection
    gc.collect()
    assert world_ref() is None
    assert clock_ref() is None
