"""The redaction corpus (tests/agents/redact_corpus.txt) seeded into the lab — a ConfigMap's
data, a Deployment's annotations (its own and its pod template's) and container env, Events,
and the log of the failing service's pods (geo's program writes each text to stdout,
`LabWorld.app_log`) — reaches neither Slack (every Web API call the workspace recorded), nor
the Messages API (every request body the Anthropic stand-in received), nor the database file,
nor the logs, while an incident is detected, diagnosed and planned.

Two runs: the offline reasoner (no Anthropic key), and the Claude reasoner against the
scripted Messages API stand-in (`tests.support.anthropic_standin`), whose "model" first reads
the seeded places with the bot's own tools — config maps, events, recent changes (the env and
the pod template's annotations, as the change journal saw them), the logs of geo's pods —
and then answers. A non-secret marker is seeded beside the corpus in each place and must reach
the Messages API, so an unread place cannot pass for a clean one.

A secret is looked for as it is, JSON-escaped, and, when it spans lines (a PEM block, which a
log splits into lines), by each line of its key material.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agents.model import IncidentState
from bot.ids import MessageKind
from lab.faults import fault
from lab.kube.logs import LogQuery, pod_log
from tests.agents.test_redact import CORPUS
from tests.bot.scenario.conftest import MakeLab
from tests.bot.scenario.harness import GEO_TARGET_PORT_ANSWER, HOTEL, BotLab
from tests.support.anthropic_standin import MessagesStandIn, Turn, messages_standin, tool_use

#: One non-secret marker per seeded place.
MARKERS = {
    "configmap": "marker-configmap-5b1e",
    "annotation": "marker-annotation-9c2d",
    "env": "marker-env-3a7f",
    "event": "marker-event-6d4b",
    "log": "marker-log-8e1c",
}
GEO = "io.kompose.service=geo"


def seed(lab: BotLab) -> list[str]:
    """Seed the corpus and the markers; return the names of geo's pods whose logs hold them."""
    api = lab.world.api
    texts = [text for text, _ in CORPUS]
    api.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "geo-notes", "namespace": HOTEL, "labels": {"app": "geo"}},
            "data": {
                "marker": MARKERS["configmap"],
                **{f"note-{i}": text for i, text in enumerate(texts)},
            },
        },
        field_manager="test",
    )
    deployment = api.get("Deployment", HOTEL, "geo")
    assert deployment is not None
    containers: list[dict[str, Any]] = deployment["spec"]["template"]["spec"]["containers"]
    containers[0].setdefault("env", []).extend(
        [
            {"name": "MARKER", "value": MARKERS["env"]},
            *({"name": f"NOTE_{i}", "value": text} for i, text in enumerate(texts)),
        ]
    )
    annotations = {
        "example.com/marker": MARKERS["annotation"],
        **{f"example.com/note-{i}": t for i, t in enumerate(texts)},
    }
    api.patch(
        "Deployment",
        HOTEL,
        "geo",
        {
            "metadata": {"annotations": annotations},
            "spec": {
                "template": {
                    "metadata": {"annotations": annotations},
                    "spec": {"containers": containers},
                }
            },
        },
        patch_type="merge",
        field_manager="test",
    )
    geo_pods = seed_logs(lab, texts)
    # The events go in last, once the rollout's own events are out: the model reads the
    # namespace's newest events, and a busy rollout could push older notes out of them.
    for i, text in enumerate([MARKERS["event"], *texts]):
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
    return geo_pods


def seed_logs(lab: BotLab, texts: list[str]) -> list[str]:
    """Once the env change has rolled out (its new pods run), geo's program writes the corpus
    to its log; wait until the kubelet has collected it in every pod."""
    world = lab.world

    def rolled_out() -> list[str] | None:
        dep = world.api.get("Deployment", HOTEL, "geo")
        assert dep is not None
        spec, status = dep["spec"], dep.get("status") or {}
        want = spec.get("replicas", 1)
        done = (
            status.get("observedGeneration", 0) >= dep["metadata"]["generation"]
            and status.get("updatedReplicas") == want
            and status.get("availableReplicas") == want
            and status.get("replicas") == want
        )
        pods = [
            p["metadata"]["name"]
            for p in world.api.list("Pod", HOTEL, GEO)
            if not p["metadata"].get("deletionTimestamp")
        ]
        return pods if done and len(pods) == want else None

    pods = lab.wait("geo's rollout of the seeded env", rolled_out, timeout=60)
    for text in texts:
        assert world.app_log(HOTEL, "geo", text)
    assert world.app_log(HOTEL, "geo", f"note: {MARKERS['log']}")

    def collected() -> bool:
        cluster = world.cluster
        return all(
            MARKERS["log"] in pod_log(cluster.api, cluster.logs, HOTEL, name, LogQuery())
            for name in pods
        )

    lab.wait("the seeded lines in geo's pod logs", collected, timeout=30)
    return pods


def database_text(lab: BotLab) -> str:
    """Every value of every table, as text (what a database dump would show)."""
    with sqlite3.connect(lab.tmp / "stratus.db") as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return "\n".join(
            repr(row) for table in tables for row in db.execute(f'SELECT * FROM "{table}"')
        )


def forms(secret: str) -> set[str]:
    found = {secret, json.dumps(secret)[1:-1]}
    for part in re.split(r"\n|\\n", secret):
        if len(part) >= 16 and not part.startswith("-----"):
            found |= {part, json.dumps(part)[1:-1]}
    return found


def leaks(haystack: str) -> list[str]:
    return [s for _, s in CORPUS if any(form in haystack for form in forms(s))]


def run_incident(lab: BotLab) -> None:
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


def assert_no_leak_to_slack_the_database_or_the_logs(
    lab: BotLab, caplog: pytest.LogCaptureFixture
) -> None:
    sent = "\n".join(json.dumps(call.args, default=str) for call in lab.ws.calls())
    assert "geo" in sent
    assert leaks(sent) == []
    stored = database_text(lab)
    # The seeded ConfigMap, env and pod-template annotations reached the database (the change
    # journal); what of the events and logs the evidence keeps depends on what it selects.
    assert "NOTE_" in stored
    assert all(MARKERS[p] in stored for p in ("configmap", "env", "annotation"))
    assert leaks(stored) == []
    logged = "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records)
    assert leaks(logged) == []


def test_no_seeded_secret_reaches_slack_the_database_or_the_logs(
    make_lab: MakeLab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    lab = make_lab()
    seed(lab)
    run_incident(lab)
    assert_no_leak_to_slack_the_database_or_the_logs(lab, caplog)


def reading_model(geo_pods: list[str]) -> Callable[[dict[str, Any]], Turn]:
    """A model that first reads every seeded place with the bot's tools, then answers."""
    reads: list[tuple[str, dict[str, Any]]] = [
        ("get_config_maps", {}),
        ("get_events", {"warnings_only": False, "limit": 100}),
        ("recent_changes", {"since_minutes": 1440}),
        *(("get_logs", {"pod": pod, "tail_lines": 200}) for pod in geo_pods),
    ]

    def turn(body: dict[str, Any]) -> Turn:
        content = body["messages"][-1].get("content")
        answered = isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        )
        if answered:
            return tool_use("submit_diagnosis", GEO_TARGET_PORT_ANSWER)
        blocks = [tool_use(name, args).content[0] for name, args in reads]
        return Turn(content=blocks, stop_reason="tool_use")

    return turn


@pytest.fixture
def model() -> Iterator[MessagesStandIn]:
    with messages_standin() as server:
        yield server


def test_no_seeded_secret_reaches_the_messages_api_slack_the_database_or_the_logs(
    model: MessagesStandIn, make_lab: MakeLab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    lab = make_lab(
        settings={
            "ANTHROPIC_API_KEY": "sk-ant-test-key-000000",
            "ANTHROPIC_BASE_URL": model.base_url,
        }
    )
    geo_pods = seed(lab)
    model.add(*[reading_model(geo_pods)] * 40)
    run_incident(lab)

    assert [r for r in model.requests if r.tool_results()], "the model's reads came back to it"
    prompts = model.prompts_text()
    assert {m: m in prompts for m in MARKERS.values()} == dict.fromkeys(MARKERS.values(), True)
    assert leaks(prompts) == []
    assert_no_leak_to_slack_the_database_or_the_logs(lab, caplog)
