"""Settings: one line naming a bad setting, exit code 2 from the CLI, defaults documented."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bot.config import (
    SETTINGS,
    ChannelMode,
    SettingsError,
    SlackMode,
    load_settings,
    read_settings_file,
)


def test_defaults_are_sane() -> None:
    settings = load_settings({})
    assert settings.slack.mode is SlackMode.SOCKET
    assert settings.slack.channel_mode is ChannelMode.CHANNEL
    assert settings.slack.api_url == "https://slack.com/api/"
    assert settings.database.url == "sqlite:///stratus.db"
    assert settings.http.port == 8080
    assert settings.anthropic.api_key is None
    assert settings.prometheus.url is None
    assert settings.digest_schedules == ()


def test_values_are_parsed_and_grouped() -> None:
    settings = load_settings(
        {
            "SLACK_API_URL": "http://127.0.0.1:9/api",
            "STRATUS_SLACK_MODE": "HTTP",
            "STRATUS_HTTP_PORT": "9000",
            "STRATUS_NAMESPACES": "hotel, shop,,",
            "STRATUS_DIGEST_SCHEDULES": "#team-sre=0 9 * * 1-5; oncall=*/30 * * * *",
            "ANTHROPIC_API_KEY": "sk-ant-secret",
        }
    )
    assert settings.slack.api_url == "http://127.0.0.1:9/api/"
    assert settings.slack.mode is SlackMode.HTTP
    assert settings.http.port == 9000
    assert settings.kubernetes.namespaces == ("hotel", "shop")
    assert settings.digest_schedules == (("team-sre", "0 9 * * 1-5"), ("oncall", "*/30 * * * *"))
    assert "sk-ant-secret" not in repr(settings)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("STRATUS_HTTP_PORT", "eighty", "STRATUS_HTTP_PORT: must be a number, got 'eighty'"),
        ("STRATUS_HTTP_PORT", "70000", "STRATUS_HTTP_PORT: must be between 0 and 65535"),
        ("STRATUS_SLACK_MODE", "carrier-pigeon", "STRATUS_SLACK_MODE: must be one of socket, http"),
        (
            "STRATUS_DATABASE_URL",
            "nonsense://x",
            "STRATUS_DATABASE_URL: unsupported scheme 'nonsense'",
        ),
        (
            "SLACK_API_URL",
            "ftp://x",
            "SLACK_API_URL: must be a URL starting with http://, https://",
        ),
        ("STRATUS_DIGEST_SCHEDULES", "team=every day", "STRATUS_DIGEST_SCHEDULES: expected"),
        ("STRATUS_LOG_LEVEL", "loud", "STRATUS_LOG_LEVEL: must be DEBUG"),
        ("STRATUS_LLM_MAX_STEPS", "0", "STRATUS_LLM_MAX_STEPS: must be between 1 and 100"),
        (
            "STRATUS_SIGNAL_PROFILE",
            "envoy",
            "STRATUS_SIGNAL_PROFILE: must be one of auto, lab, otel, istio, linkerd, micrometer, "
            "ingress-nginx, got 'envoy'",
        ),
    ],
)
def test_a_bad_setting_names_itself(name: str, value: str, message: str) -> None:
    with pytest.raises(SettingsError) as error:
        load_settings({name: value})
    assert str(error.value).startswith(message)
    assert error.value.name == name


def test_settings_file_supplies_defaults_and_reports_its_bad_line(tmp_path: Path) -> None:
    good = tmp_path / "stratus.env"
    good.write_text("# comment\nSTRATUS_HTTP_PORT=9100\n\nSTRATUS_SLACK_MODE='http'\n")
    assert read_settings_file(good) == {"STRATUS_HTTP_PORT": "9100", "STRATUS_SLACK_MODE": "http"}
    bad = tmp_path / "bad.env"
    bad.write_text("STRATUS_HTTP_PORT=1\nNOT_A_SETTING=1\n")
    with pytest.raises(SettingsError, match=r"bad.env:2: expected NAME=value"):
        read_settings_file(bad)


def test_every_setting_is_documented_once() -> None:
    names = [s.name for s in SETTINGS]
    assert len(names) == len(set(names))
    assert all(s.meaning.strip() for s in SETTINGS)


def test_readme_table_lists_every_setting() -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    missing = [s.name for s in SETTINGS if f"`{s.name}`" not in readme]
    assert missing == []


def _stratus(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot.cli.main", *args],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", **env},
        timeout=60,
        check=False,
    )


def test_cli_reports_a_bad_setting_in_one_line_with_exit_2(tmp_path: Path) -> None:
    result = _stratus(
        "db", "upgrade", env={"STRATUS_DATABASE_URL": "nonsense://x", "HOME": str(tmp_path)}
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "STRATUS_DATABASE_URL" in lines[0]
    assert "Traceback" not in result.stderr


def test_cli_help_lists_the_commands() -> None:
    result = _stratus("--help", env={})
    assert result.returncode == 0
    assert "db" in result.stdout
