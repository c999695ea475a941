"""The incident loop end to end on the lab, headless: detection, diagnosis, planning, the TNR
transaction, validation, and the closing summary — checked against the fault's ground truth and
its mitigation oracle."""

from __future__ import annotations

from agents.model import IncidentState
from lab.faults import check_mitigation, fault
from tests.agents.incident.conftest import HOTEL, MakeLoop


def test_a_wrong_target_port_is_detected_diagnosed_fixed_and_closed(make_loop: MakeLoop) -> None:
    lab = make_loop(HOTEL)
    injection = fault("wrong-target-port").inject(lab.world, app=HOTEL)
    incident = lab.run_until_ended()
    states = [state for state, _ in lab.timeline(incident.id)]
    assert states[:5] == ["detected", "diagnosing", "diagnosed", "planning", "executing"], states
    assert "resolved" in states and states[-1] == "closed", lab.timeline(incident.id)
    diagnosis = lab.brain.machine.diagnosis(incident.id)
    assert diagnosis is not None
    assert diagnosis.root_cause_service in injection.truth.root_causes
    assert str(diagnosis.category) == str(injection.truth.category)
    assert check_mitigation(lab.world, injection).mitigated
    closed = lab.store.incidents.get(incident.id)
    assert closed.resolution and closed.root_cause_service == diagnosis.root_cause_service
    assert lab.brain.machine.incident(incident.id).state is IncidentState.CLOSED
