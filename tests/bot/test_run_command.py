"""`stratus run`: one line and exit 2 for a bad setting or policy, and a real process that
serves, connects to Slack in Socket Mode, logs no secret, and stops cleanly on SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli.run import run
from lab.sim.world import LabWorld, WorldConfig
from lab.slack import SlackWorkspace

HOTEL = "hotel-reservation"


def test_a_bad_setting_is_one_line_and_exit_2() -> None:
    result = CliRunner().invoke(run, [], env={"STRATUS_SLACK_MODE": "carrier-pigeon"})
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert result.output.startswith("stratus: invalid setting STRATUS_SLACK_MODE: must be one of")


def test_a_missing_token_is_one_line_and_exit_2() -> None:
    result = CliRunner().invoke(
        run, [], env={"SLACK_BOT_TOKEN": "", "STRATUS_SETTINGS_FILE": "", "STRATUS_SLACK_MODE": ""}
    )
    assert result.exit_code == 2
    assert result.output == "stratus: invalid setting SLACK_BOT_TOKEN: is required\n"


def test_an_invalid_policy_is_one_line_and_exit_2(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("defaults:\n  autonomy: reckless\n")
    env = {
        "SLACK_BOT_TOKEN": "xoxb-test",
        "SLACK_APP_TOKEN": "xapp-test",
        "STRATUS_POLICY_FILE": str(policy),
        "STRATUS_DATABASE_URL": f"sqlite:///{tmp_path / 'never-created.db'}",
    }
    result = CliRunner().invoke(run, [], env=env)
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert result.output.startswith(f"stratus: invalid policy: {policy}:2: defaults.autonomy:")
    assert not (tmp_path / "never-created.db").exists()


def test_a_missing_kubeconfig_is_one_line_and_exit_2_before_any_migration(tmp_path: Path) -> None:
    env = {
        "SLACK_BOT_TOKEN": "xoxb-test",
        "SLACK_APP_TOKEN": "xapp-test",
        "KUBECONFIG": str(tmp_path / "no-such-kubeconfig"),
        "STRATUS_DATABASE_URL": f"sqlite:///{tmp_path / 'never-created.db'}",
        "STRATUS_SETTINGS_FILE": "",
    }
    result = CliRunner().invoke(run, [], env=env)
    assert result.exit_code == 2
    assert result.output == (
        f"stratus: invalid setting KUBECONFIG: {tmp_path / 'no-such-kubeconfig'} is not a file\n"
    )
    assert not (tmp_path / "never-created.db").exists()


@pytest.fixture
def world(tmp_path: Path) -> Iterator[LabWorld]:
    config = WorldConfig(
        apps=(HOTEL,), stepped=False, speed=10, serve_api=True, kubeconfig=tmp_path / "kc"
    )
    with LabWorld(config) as world:
        yield world


def test_the_bot_serves_and_stops_cleanly_on_sigterm(tmp_path: Path, world: LabWorld) -> None:
    with SlackWorkspace() as ws:
        cfg = ws.config
        env = {
            k: v
            for k, v in os.environ.items()
            if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")
        }
        env.update(
            SLACK_BOT_TOKEN=cfg.bot_token,
            SLACK_APP_TOKEN=cfg.app_token,
            SLACK_API_URL=ws.api_url,
            STRATUS_HTTP_PORT="0",
            STRATUS_DATABASE_URL=f"sqlite:///{tmp_path / 'stratus.db'}",
            KUBECONFIG=str(tmp_path / "kc"),
            STRATUS_NAMESPACES=HOTEL,
            STRATUS_LOG_LEVEL="DEBUG",
            NO_PROXY="127.0.0.1,localhost",
        )
        process = subprocess.Popen(
            [sys.executable, "-c", "from bot.cli.run import run; run()"],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        lines: list[str] = []
        try:
            assert process.stderr is not None
            url = None
            deadline = time.monotonic() + 60
            while url is None and time.monotonic() < deadline:
                line = process.stderr.readline()
                if not line:
                    break
                lines.append(line)
                found = re.search(r"endpoints at (http://127\.0\.0\.1:\d+)", line)
                url = found.group(1) if found else None
            assert url is not None, "".join(lines[-30:])
            with urllib.request.urlopen(f"{url}/healthz", timeout=10) as response:
                assert response.status == 200
            ws.wait_until(lambda: ws.socket_connections, timeout=10)
            process.send_signal(signal.SIGTERM)
            _, rest = process.communicate(timeout=30)
            lines.append(rest)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(10)
        output = "".join(lines)
        assert process.returncode == 0, output[-3000:]
        assert "stratus: stopped" in output
        for secret in (cfg.bot_token, cfg.app_token):
            assert secret not in output
        ws.wait_until(lambda: ws.socket_connections == 0, timeout=10)
