"""The policy file: merged per namespace, and refused as a whole with file, line, field and
reason when anything is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.errors import PolicyError
from agents.model import Autonomy, Risk
from agents.policy import default_policy, load_policy, parse_duration

GOOD = """\
defaults:
  autonomy: propose
  approvers:
    low: ["@sre-oncall"]
    medium: ["@sre-oncall"]
    high: ["@sre-leads", U0LEAD01]
  two_person_rule: high
  approval_ttl: 15m
  max_actions: 4
  deadline: 10m
  sustain: 45s
  attempts: 3
  slo: {error_ratio: 0.02}
  weights: {lost_replica: 2}
namespaces:
  hotel-reservation:
    autonomy: auto-low-risk
    approvers:
      high: [U0BOSS01]
  payments:
    autonomy: observe
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return path


def test_namespaces_override_defaults_field_by_field(tmp_path: Path) -> None:
    policy = load_policy(write(tmp_path, GOOD))
    hotel = policy.for_namespace("hotel-reservation")
    assert hotel.autonomy is Autonomy.AUTO_LOW_RISK
    assert hotel.approvers_for(Risk.HIGH) == ("U0BOSS01",)
    assert hotel.approvers_for(Risk.LOW) == ("@sre-oncall",)
    assert hotel.approval_ttl_s == 900
    assert hotel.limits.max_actions == 4
    assert hotel.limits.deadline_s == 600
    assert hotel.limits.sustain_s == 45
    assert hotel.slo.error_ratio == 0.02
    assert hotel.slo.latency_p99_ms == 800
    assert hotel.weights.lost_replica == 2
    assert hotel.weights.error_slo == 2
    other = policy.for_namespace("unlisted")
    assert other.autonomy is Autonomy.PROPOSE
    assert other.namespace == "unlisted"
    assert policy.covered_namespaces == ("hotel-reservation", "payments")


def test_autonomy_levels_decide_what_runs_without_approval(tmp_path: Path) -> None:
    policy = load_policy(write(tmp_path, GOOD))
    hotel = policy.for_namespace("hotel-reservation")
    assert hotel.runs_without_approval(Risk.LOW)
    assert not hotel.runs_without_approval(Risk.MEDIUM)
    assert not policy.for_namespace("payments").may_act
    assert hotel.approvals_needed(Risk.HIGH) == 2
    assert hotel.approvals_needed(Risk.MEDIUM) == 1


def test_bounds_ground_new_values_with_sensible_defaults(tmp_path: Path) -> None:
    text = GOOD.replace(
        "  weights: {lost_replica: 2}\n",
        "  weights: {lost_replica: 2}\n  max_replicas: 12\n"
        "  image_registries: [registry.example.com, ghcr.io]\n",
    ).replace("    autonomy: observe\n", "    autonomy: observe\n    image_registries: []\n")
    policy = load_policy(write(tmp_path, text))
    hotel = policy.for_namespace("hotel-reservation").bounds
    assert hotel.max_replicas == 12 and hotel.scale_factor == 3
    assert hotel.image_registries == ("registry.example.com", "ghcr.io")
    assert policy.for_namespace("payments").bounds.image_registries == ()
    default = default_policy().for_namespace("x").bounds
    assert default.max_replicas == 20 and default.image_registries == ()


def test_default_policy_proposes_everything() -> None:
    ns = default_policy().for_namespace("x")
    assert ns.autonomy is Autonomy.PROPOSE
    assert not ns.runs_without_approval(Risk.LOW)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("defaults:\n  autonomy: yolo\n", r"policy.yaml:2: defaults.autonomy: Input should be"),
        (
            "defaults:\n  approvers:\n    low: [bob]\n",
            r"policy.yaml:3: defaults.approvers.low: .*'bob' is neither a Slack user id",
        ),
        (
            "namespaces:\n  shop:\n    approval_ttl: soon\n",
            r"policy.yaml:3: namespaces.shop.approval_ttl: expected a duration",
        ),
        (
            "defaults:\n  max_actions: 0\n",
            r"policy.yaml:2: defaults.max_actions: Input should be greater",
        ),
        (
            "defaults:\n  autonmy: propose\n",
            r"policy.yaml:2: defaults.autonmy: Extra inputs are not permitted",
        ),
        (
            "defaults:\n  image_registries: [evil.example.com/backdoor]\n",
            r"policy.yaml:2: defaults.image_registries: .*is not a registry host",
        ),
        (
            "defaults:\n  max_replicas: 0\n",
            r"policy.yaml:2: defaults.max_replicas: Input should be greater",
        ),
        ("defaults: [1, 2\n", r"policy.yaml:2: \(yaml\)"),
        ("- just a list\n", r"policy.yaml:1: \(top level\): expected a mapping"),
    ],
)
def test_invalid_files_name_file_line_field_and_reason(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(PolicyError, match=message):
        load_policy(write(tmp_path, text))


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match=r"nope\.yaml: cannot read"):
        load_policy(tmp_path / "nope.yaml")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90), ("90s", 90), ("15m", 900), ("1h", 3600), ("500ms", 0.5), (30, 30)],
)
def test_durations(text: str | int, seconds: float) -> None:
    assert parse_duration(text) == seconds
