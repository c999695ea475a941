from __future__ import annotations

import pytest

from agents.diagnosis.suspect import Suspect, suspects_of
from agents.model import (
    Category,
    Diagnosis,
    EvidenceKind,
    FaultLevel,
    FaultType,
    Hypothesis,
    IncidentId,
)
from agents.redact import REDACTED as MASK
from agents.redact import redact_entries as redact_mapping
from agents.redact import redact_text as basic_redact


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("password=hunter2 and more", "hunter2"),
        ('{"db_password": "s3cr3t"}', "s3cr3t"),
        ("mongodb://admin:rootpw@mongo:27017/db", "rootpw"),
        ("Authorization: Bearer abcdefghijklmnop", "abcdefghijklmnop"),
        ("token xoxb-1111-2222-abcdefgh", "xoxb-1111-2222-abcdefgh"),
        ("key sk-ant-api03-abcdefghijkl", "sk-ant-api03-abcdefghijkl"),
        ("AKIAABCDEFGHIJKLMNOP", "AKIAABCDEFGHIJKLMNOP"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "MIIE"),
    ],
)
def test_basic_redact_removes_known_secret_shapes(text: str, secret: str) -> None:
    out = basic_redact(text)
    assert secret not in out and MASK in out


def test_ordinary_text_is_untouched() -> None:
    line = "error calling geo: dial tcp 10.96.0.12:8083: connect: connection refused"
    assert basic_redact(line) == line


def test_mapping_keys_that_name_secrets_are_masked_whole() -> None:
    out = redact_mapping(
        {"DB_PASSWORD": "plain", "API_TOKEN": "t", "DB_ADDR": "mongo:27017"}, basic_redact
    )
    assert out == {"DB_PASSWORD": MASK, "API_TOKEN": MASK, "DB_ADDR": "mongo:27017"}


def test_suspect_round_trips_through_evidence() -> None:
    s = Suspect(
        kind="Service",
        namespace="hotel",
        name="geo",
        field="spec.ports[0].targetPort",
        current="9999",
        last_known_good="8083",
        reason="targetPort matches no containerPort",
    )
    ev = s.to_evidence(service="geo")
    assert ev.source == "object:Service/hotel/geo#spec.ports[0].targetPort"
    assert ev.kind is EvidenceKind.SERVICE
    assert Suspect.from_evidence(ev) == s
    node = Suspect(kind="Node", name="node-1", field="spec.taints")
    assert node.source == "object:Node/node-1#spec.taints"
    assert Suspect.from_evidence(node.to_evidence(service=None)) == node
    d = Diagnosis(
        incident_id=IncidentId("i"),
        evidence=(node.to_evidence(service=None), ev),
        reasoner="offline",
        summary="",
        hypotheses=(
            Hypothesis(
                service="geo",
                category=Category(level=FaultLevel.VIRTUALIZATION, type=FaultType.MISCONFIGURATION),
                confidence=0.9,
                explanation="",
                evidence=(1, 0, 7),
            ),
        ),
    )
    assert [x.name for x in suspects_of(d)] == ["geo", "node-1"]
