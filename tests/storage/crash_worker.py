"""A process that performs one repository write and stops dead in the middle of it.

An SQLAlchemy event hook on the engine (not a patch of our code) counts the INSERT/UPDATE
statements the write sends; after the `pause_after`-th one — or once the write committed, with
`pause_after=0` — it tells the test and sleeps, and the test kills it with SIGKILL.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import event
from sqlmodel import Session

from storage import Store
from tests.storage import rows
from tests.storage.conftest import at


def run(url: str, scenario: str, pause_after: int, paused: Any) -> None:
    store = Store.connect(url)
    writes = 0

    def after_execute(*args: Any) -> None:
        nonlocal writes
        statement = str(args[2]).lstrip().upper()
        if statement.startswith(("INSERT", "UPDATE")):
            writes += 1
            if writes == pause_after:
                paused.set()
                time.sleep(600)

    def after_commit(_session: Session) -> None:
        paused.set()
        time.sleep(600)

    event.listen(store.db.engine, "after_cursor_execute", after_execute)
    if pause_after == 0:
        event.listen(Session, "after_commit", after_commit)

    if scenario == "create":
        store.incidents.create(
            rows.incident("inc-crash"),
            alerts=[rows.alert("inc-crash", f"fp-{n}") for n in range(5)],
            events=[rows.event("inc-crash"), rows.event("inc-crash", message="channel opened")],
        )
    elif scenario == "transition":
        store.incidents.transition(
            "inc-crash", "diagnosing", at=at(5), message="diagnosing", expected="detected"
        )
    else:  # pragma: no cover
        raise ValueError(scenario)
