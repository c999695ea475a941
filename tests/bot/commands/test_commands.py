"""`/stratus` end to end: real Bolt in Socket Mode against the local workspace, the brain on
the lab, SQLite. Assertions are on what the workspace shows and what storage holds."""

from __future__ import annotations

from datetime import timedelta

from agents.model import IncidentState
from tests.bot.commands.stand import HOTEL, TIMEOUT, Stand


def test_help_is_the_acknowledgement_itself(bot: Stand) -> None:
    delivery = bot.command("carol", "help")
    assert delivery.ack_payload is not None
    text = str(delivery.ack_payload["blocks"])
    for verb in ("status", "incidents", "diagnose", "undo", "digest", "policy", "declare"):
        assert f"/stratus {verb}" in text
    assert bot.ws.messages("incidents") == []


def test_a_wrong_command_gets_an_ephemeral_usage_message(bot: Stand) -> None:
    delivery = bot.command("carol", "restart everything")
    assert delivery.ack_payload is not None
    assert "Unknown command `restart`" in str(delivery.ack_payload["blocks"])
    shown = bot.ephemeral("incidents", "carol", "Unknown command")
    assert shown["ephemeral_to"] == "U0CAROL03"
    assert bot.ws.ephemerals("incidents", "alice") == []
    assert bot.ws.messages("incidents") == []


def test_status_shows_health_open_incidents_and_pending_approvals(bot: Stand) -> None:
    incident = bot.seed_incident(state=IncidentState.AWAITING_APPROVAL)
    bot.seed_plan(incident)
    bot.command("alice", "status")
    shown = bot.ephemeral("incidents", "alice", "Health by namespace")
    text = str(shown["blocks"])
    assert f"*{HOTEL}*" in text
    assert "healthy, μ 0" in text  # the lab's hotel app is healthy now
    assert "Open incidents: 1 · pending approvals: 1" in text
    assert incident.id in text
    assert bot.ws.messages("incidents") == []  # only alice sees it


def test_status_of_a_namespace_stratus_does_not_cover(bot: Stand) -> None:
    bot.command("alice", "status kube-system")
    shown = bot.ephemeral("incidents", "alice", "does not cover")
    assert "`hotel-reservation`" in str(shown["blocks"])


def test_incidents_lists_open_ones_with_their_state(bot: Stand) -> None:
    first = bot.seed_incident(state=IncidentState.AWAITING_APPROVAL, suffix="a1")
    second = bot.seed_incident(state=IncidentState.EXECUTING, suffix="b2", title="frontend slow")
    bot.command("bob", "incidents")
    shown = bot.ephemeral("incidents", "bob", "Open incidents (2)")
    text = str(shown["blocks"])
    assert first.id in text and "Awaiting approval" in text
    assert second.id in text and "Executing" in text and "frontend slow" in text


def test_another_clusters_incidents_are_listed_from_the_shared_database(bot: Stand) -> None:
    here = bot.seed_incident(state=IncidentState.AWAITING_APPROVAL, suffix="a1")
    there = bot.seed_incident(state=IncidentState.EXECUTING, suffix="w1", cluster="west")
    bot.command("bob", "incidents --cluster west")
    shown = bot.ephemeral("incidents", "bob", "Open incidents (1)")
    text = str(shown["blocks"])
    assert there.id in text and "Cluster `west`" in text
    assert here.id not in text

    bot.command("bob", f"status west/{HOTEL}")
    shown = bot.ephemeral("incidents", "bob", f"west/{HOTEL}: open incidents (1)")
    text = str(shown["blocks"])
    assert there.id in text and here.id not in text
    assert "measured by the Stratus deployment in `west`" in text  # not here: no μ made up


def test_incident_shows_its_summary_and_timeline(bot: Stand) -> None:
    incident = bot.seed_incident(state=IncidentState.AWAITING_APPROVAL)
    plan = bot.seed_plan(incident)
    bot.command("alice", f"incident {incident.id.lower()}")
    shown = bot.ephemeral("incidents", "alice", "*Timeline*")
    text = str(shown["blocks"])
    assert incident.title in text
    assert plan.id in text and "Scale Deployment/hotel-reservation/geo" in text
    assert "Now awaiting_approval" in text


def test_an_unknown_incident_is_said_so(bot: Stand) -> None:
    bot.command("alice", "incident INC-20990101-nope-0000")
    shown = bot.ephemeral("incidents", "alice", "Not found")
    assert "INC-20990101-nope-0000" in str(shown["blocks"])


def test_policy_in_a_namespace_channel_shows_that_namespace(bot: Stand) -> None:
    bot.command("carol", "policy", channel="hotel-reservation-oncall")
    shown = bot.ephemeral("hotel-reservation-oncall", "carol", "Policy in force")
    text = str(shown["blocks"])
    assert f"*{HOTEL}* — autonomy `propose`" in text
    assert "`@sre-approvers`" in text
    assert "K = 3 actions" in text
    assert "*defaults*" not in text
    assert str(bot.policy_file) in text


def test_policy_all_shows_the_defaults_and_every_namespace(bot: Stand) -> None:
    bot.command("carol", "policy all")
    text = str(bot.ephemeral("incidents", "carol", "Policy in force")["blocks"])
    assert "*defaults*" in text and "K = 5 actions" in text
    assert f"*{HOTEL}*" in text and "K = 3 actions" in text


def test_declare_opens_an_incident_that_the_core_announces(bot: Stand) -> None:
    bot.command("carol", "declare checkout answers 502 namespace=hotel-reservation")
    shown = bot.ws.wait_for_message(
        "incidents", lambda m: "declared incident" in str(m.get("blocks")), timeout=TIMEOUT
    )
    [row] = bot.store.incidents.list_by_state(*[s.value for s in IncidentState])
    assert row.source == "declared" and row.namespace == HOTEL
    assert "checkout answers 502" in row.title
    assert row.id in str(shown["blocks"])
    assert "<@U0CAROL03>" in str(shown["blocks"])
    [alert] = bot.store.incidents.alerts(row.id)
    assert alert.labels["declared_by"] == "U0CAROL03"
    # The core's hook announced it (its own messages) and drove it out of DETECTED.
    bot.wait("its messages", lambda: bot.store.slack_messages.find(incident_id=row.id))
    bot.wait(
        "a drive", lambda: bot.brain.machine.incident(row.id).state is not IncidentState.DETECTED
    )


def test_declare_joins_the_open_incident_of_its_namespace(bot: Stand) -> None:
    incident = bot.seed_incident(state=IncidentState.AWAITING_APPROVAL)
    bot.command("bob", "declare payments too", channel="hotel-reservation-oncall")
    joined = bot.ws.wait_for_message(
        "hotel-reservation-oncall", lambda m: "joins the open incident" in str(m.get("blocks"))
    )
    assert incident.id in str(joined["blocks"])
    assert [r.id for r in bot.store.incidents.list_open()] == [incident.id]
    assert len(bot.store.incidents.alerts(incident.id)) == 1


def test_declare_in_an_unrelated_channel_uses_the_only_covered_namespace(bot: Stand) -> None:
    bot.command("alice", "declare something is off", channel="general")
    bot.ws.wait_for_message("general", lambda m: "declared incident" in str(m.get("blocks")))
    [row] = bot.store.incidents.list_open()
    assert row.namespace == HOTEL


def test_declare_in_a_namespace_stratus_does_not_cover(bot: Stand) -> None:
    bot.command("alice", "declare broken namespace=kube-system")
    bot.ephemeral("incidents", "alice", "does not cover `kube-system`")
    assert bot.store.incidents.list_open() == []


def test_diagnose_is_read_only_and_posts_for_everyone_with_a_chart(bot: Stand) -> None:
    bot.world.advance(30)  # some history for the chart
    journal_before = len(bot.store.audit.query())
    delivery = bot.command("alice", "diagnose hotel-reservation/geo")
    assert "Diagnosing hotel-reservation/geo" in str(delivery.ack_payload)
    shown = bot.ws.wait_for_message(
        "incidents", lambda m: "Diagnosis of hotel-reservation/geo" in str(m.get("blocks"))
    )
    text = str(shown["blocks"])
    assert "Root cause" in text and "read-only" in text
    assert bot.store.incidents.list_open() == []  # no incident was opened
    assert len(bot.store.audit.query()) == journal_before  # nothing was written
    files = bot.ws.wait_until(bot.ws.files, TIMEOUT)
    assert files[0]["name"] == "diagnosis-hotel-reservation.png"
    assert bot.ws.file_bytes(files[0]["id"]).startswith(b"\x89PNG")


def test_undo_by_an_approver_restores_the_cluster(bot: Stand) -> None:
    before = bot.replicas("frontend")
    tx = bot.commit_scale("frontend", before + 2)
    assert bot.replicas("frontend") == before + 2
    bot.command("alice", f"undo {tx}")
    view = bot.modal("alice", "*Undone*")
    assert tx in str(view["blocks"])
    assert bot.replicas("frontend") == before
    assert bot.store.transactions.get(tx).status == "undone"


def test_undo_by_someone_who_may_not_is_refused_and_audited(bot: Stand) -> None:
    before = bot.replicas("frontend")
    tx = bot.commit_scale("frontend", before + 1)
    bot.command("carol", f"undo {tx}")
    view = bot.modal("carol", "*Refused*")
    assert "Only approvers of this change may undo it" in str(view["blocks"])
    assert bot.replicas("frontend") == before + 1
    assert bot.store.transactions.get(tx).status == "committed"
    [refusal] = bot.store.audit.query(verb="refuse", actor="U0CAROL03")
    assert refusal.detail["transaction"] == tx


def test_undo_after_drift_asks_in_the_drift_modal_and_writes_nothing(bot: Stand) -> None:
    tx = bot.commit_scale("frontend", 4)
    bot.world.api.patch(
        "Deployment",
        HOTEL,
        "frontend",
        {"spec": {"replicas": 5}},
        patch_type="merge",
        field_manager="kubectl-scale",
    )
    bot.world.advance(1)
    bot.command("bob", f"undo {tx}")
    view = bot.modal("bob", "stratus_undo_drift")
    assert "spec.replicas" in str(view["blocks"])
    assert view["private_metadata"].startswith(f"{tx}|")
    assert bot.replicas("frontend") == 5
    assert bot.store.transactions.get(tx).status == "committed"


def test_undo_of_an_unknown_transaction(bot: Stand) -> None:
    bot.command("alice", "undo tx-000000000000")
    bot.modal("alice", "There is no transaction tx-000000000000")


def test_digest_posts_in_the_channel_with_its_chart(bot: Stand) -> None:
    bot.seed_incident(state=IncidentState.AWAITING_APPROVAL, opened_at=bot.now - timedelta(hours=1))
    delivery = bot.command("alice", "digest")
    assert "Preparing the digest" in str(delivery.ack_payload)
    posted = bot.ws.wait_for_message("incidents", lambda m: "Stratus digest" in m["text"])
    assert "1 incident opened" in posted["text"]
    files = bot.ws.wait_until(bot.ws.files, TIMEOUT)
    assert files[0]["name"] == "stratus-digest.png"
    bot.ephemeral("incidents", "alice", "Digest posted")


def test_digest_where_the_bot_is_not_a_member(bot: Stand) -> None:
    bot.command("alice", "digest", channel="elsewhere")
    bot.ephemeral("elsewhere", "alice", "invite it")
    assert bot.ws.messages("elsewhere") == []
