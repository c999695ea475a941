"""The redaction corpus (tests/agents/redact_corpus.txt) seeded into the lab — a ConfigMap's
data, a Deployment's annotations and container env, and Events — reaches neither Slack (every
Web API call the workspace recorded), nor the database file, nor the logs, while an incident
is detected, diagnosed and planned. (The Messages API is covered by
tests/agents/diagnosis/test_claude.py's prompt checks with the same redactor; pod logs are
not seeded here: the lab's containers write their own.)"""

from __future__ import annotations

import json
import logging
import sqlite3
from typing import Any

import pytest

from agents.model import IncidentState
from bot.ids import MessageKind
from lab.faults import fault
from tests.agents.test_redact import CORPUS
from tests.bot.scenario.conftest import MakeLab
from tests.bot.scenario.harness import HOTEL, BotLab


def seed(lab: BotLab) -> None:
    api = lab.world.api
    texts = [text for text, _ in CORPUS]
    api.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "geo-notes", "namespace": HOTEL, "labels": {"app": "geo"}},
            "data": {f"note-{i}": text for i, text in enumerate(texts)},
        },
        field_manager="test",
    )
    deployment = api.get("Deployment", HOTEL, "geo")
    assert deployment is not None
    containers: list[dict[str, Any]] = deployment["spec"]["template"]["spec"]["containers"]
    containers[0].setdefault("env", []).extend(
        {"name": f"NOTE_{i}", "value": text} for i, text in enumerate(texts)
    )
    api.patch(
        "Deployment",
        HOTEL,
        "geo",
        {
            "metadata": {"annotations": {f"example.com/note-{i}": t for i, t in enumerate(texts)}},
            "spec": {"template": {"spec": {"containers": containers}}},
        },
        patch_type="merge",
        field_manager="test",
    )
    for i, text in enumerate(texts):
        api.create(
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": f"geo.note-{i}", "namespace": HOTEL},
                "involvedObject": {"kind": "Deployment", "name": "geo", "namespace": HOTEL},
                "reason": "Note",
                "message": text,
                "type": "Warning",
            },
            field_manager="test",
        )


def database_text(lab: BotLab) -> str:
    """Every value of every table, as text (what a database dump would show)."""
    with sqlite3.connect(lab.tmp / "stratus.db") as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return "\n".join(
            repr(row) for table in tables for row in db.execute(f'SELECT * FROM "{table}"')
        )


def leaks(haystack: str) -> list[str]:
    found = []
    for _, secret in CORPUS:
        forms = {secret, json.dumps(secret)[1:-1]}
        if any(form in haystack for form in forms):
            found.append(secret)
    return found


def test_no_seeded_secret_reaches_slack_the_database_or_the_logs(
    make_lab: MakeLab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    lab = make_lab()
    seed(lab)
    journal = lab.services.store.journal
    recorded = lab.wait(
        "the journal's record of the seeded Deployment, read back from storage",
        lambda: [e for e in journal.query("lab", HOTEL, kind="Deployment") if "NOTE_" in str(e)],
        timeout=30,
    )
    assert leaks(str(recorded)) == []
    fault("wrong-target-port").inject(lab.world, app=HOTEL)
    incident = lab.incident()
    lab.wait_state(incident.id, IncidentState.AWAITING_APPROVAL, IncidentState.ESCALATED)
    lab.wait_message(incident.id, MessageKind.DIAGNOSIS)
    lab.services.wait_idle(30)

    sent = "\n".join(json.dumps(call.args, default=str) for call in lab.ws.calls())
    assert "geo" in sent
    assert leaks(sent) == []
    stored = database_text(lab)
    assert "NOTE_" in stored  # the seeded env reached the database (the change journal)
    assert leaks(stored) == []
    logged = "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records)
    assert leaks(logged) == []
