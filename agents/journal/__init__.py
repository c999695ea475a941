"""The change journal: who changed which Deployment, StatefulSet, Service or ConfigMap, what
changed (field-level, redacted) and when — and the last known-good state to put back.

`ChangeJournal.sync(reader)` records the differences on demand (the headless driver);
`JournalWatcher` keeps it current from watches (the bot). Diagnosis asks
`ChangeJournal.changes(scope, since, until)` and planning `ChangeJournal.last_known_good(...)`.
"""

from agents.journal.journal import ChangeJournal, change_from_record
from agents.journal.kinds import (
    CONFIG_MAP,
    DEPLOYMENT,
    SERVICE,
    STATEFUL_SET,
    WATCHED_KINDS,
    WatchedKind,
)
from agents.journal.managed import UNKNOWN_MANAGER, Attribution, attribute
from agents.journal.watcher import JournalWatcher

__all__ = [
    "CONFIG_MAP",
    "DEPLOYMENT",
    "SERVICE",
    "STATEFUL_SET",
    "UNKNOWN_MANAGER",
    "WATCHED_KINDS",
    "Attribution",
    "ChangeJournal",
    "JournalWatcher",
    "WatchedKind",
    "attribute",
    "change_from_record",
]
