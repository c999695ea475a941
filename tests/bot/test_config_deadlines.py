"""Start-up refuses call deadlines that could outlast a third of the writer lease: one line
naming the settings, exit 2 (DESIGN section 3, rule 8)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agents.deadlines import CallDeadline
from bot.config import SettingsError, load_settings


def test_the_defaults_fit_under_the_default_lease() -> None:
    settings = load_settings({})
    assert settings.kubernetes.deadline == CallDeadline(timeout_s=5, attempts=2)
    assert settings.prometheus.deadline == CallDeadline(timeout_s=5, attempts=2)
    assert settings.lock_lease_s == 30
    assert settings.kubernetes.deadline.worst_case_s <= settings.lock_lease_s / 3


def test_a_longer_lease_admits_longer_calls() -> None:
    settings = load_settings(
        {"STRATUS_KUBE_TIMEOUT_S": "10", "STRATUS_KUBE_ATTEMPTS": "3", "STRATUS_LOCK_LEASE_S": "90"}
    )
    assert settings.kubernetes.deadline.worst_case_s == 30
    assert settings.lock_lease_s == 90


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"STRATUS_KUBE_TIMEOUT_S": "15", "STRATUS_KUBE_ATTEMPTS": "4"}, "STRATUS_KUBE_"),
        ({"STRATUS_PROMETHEUS_ATTEMPTS": "3"}, "STRATUS_PROMETHEUS_"),
        ({"STRATUS_LOCK_LEASE_S": "20"}, "STRATUS_KUBE_"),
    ],
)
def test_a_call_that_could_outlast_a_third_of_the_lease_is_refused(
    values: dict[str, str], named: str
) -> None:
    with pytest.raises(SettingsError) as error:
        load_settings(values)
    assert error.value.name == f"{named}TIMEOUT_S × {named}ATTEMPTS"
    assert "more than the writer lease" in error.value.problem


def test_stratus_run_refuses_it_in_one_line_with_exit_2(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bot.cli.main", "run"],
        capture_output=True,
        text=True,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "STRATUS_KUBE_TIMEOUT_S": "15",
            "STRATUS_KUBE_ATTEMPTS": "4",
        },
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "STRATUS_KUBE_TIMEOUT_S × STRATUS_KUBE_ATTEMPTS" in lines[0]
    assert "60s" in lines[0] and "STRATUS_LOCK_LEASE_S" in lines[0]
