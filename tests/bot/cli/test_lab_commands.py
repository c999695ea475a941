"""`stratus lab`: listing faults and command-line errors through click's runner; `lab up` in
a subprocess, driven by `lab inject` and kubectl, and stopped by SIGINT or SIGTERM."""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli.lab_commands import lab, state_file
from lab.faults import faults
from tests.conftest import require_binary

ROOT = Path(__file__).resolve().parents[3]


def test_faults_are_listed_one_per_line() -> None:
    result = CliRunner().invoke(lab, ["faults"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) == len(faults()) >= 14
    for line, f in zip(lines, faults(), strict=True):
        ident, _, description = line.partition("  ")
        assert ident == f.id and description.strip() == f.description


def test_inject_without_a_running_lab_is_one_line_and_exit_1(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        lab, ["inject", "scale-to-zero", "--kubeconfig", str(tmp_path / "kc")]
    )
    assert result.exit_code == 1
    assert result.output.count("\n") == 1
    assert result.output.startswith("stratus: no running lab found")


def test_a_malformed_param_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        lab, ["inject", "scale-to-zero", "--param", "replicas", "--kubeconfig", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "expected NAME=VALUE, got 'replicas'" in result.output


def test_an_unknown_app_is_a_usage_error(tmp_path: Path) -> None:
    for args in (["up", "--app", "nope"], ["inject", "scale-to-zero", "--app", "nope"]):
        result = CliRunner().invoke(lab, [*args, "--kubeconfig", str(tmp_path / "kc")])
        assert result.exit_code == 2
        assert "unknown app 'nope'; apps: hotel-reservation, online-shop" in result.output


def test_up_on_a_port_in_use_fails_with_one_line(tmp_path: Path) -> None:
    before = signal.getsignal(signal.SIGINT)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(
            lab,
            [
                "up",
                "--app",
                "hotel-reservation",
                "--port",
                str(port),
                "--kubeconfig",
                str(tmp_path / "kc"),
            ],
        )
    assert result.exit_code == 1, result.output
    assert "stratus: cannot listen: " in result.output
    assert not state_file(tmp_path / "kc").exists()
    assert signal.getsignal(signal.SIGINT) is before  # the handlers are put back


@dataclass
class RunningLab:
    proc: subprocess.Popen[str]
    kubeconfig: Path
    lines: queue.Queue[str]


def _start_lab(tmp_path: Path, *extra: str) -> RunningLab:
    kubeconfig = tmp_path / "lab" / "kubeconfig"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bot.cli.lab_commands",
            "up",
            "--app",
            "hotel-reservation",
            "--speed",
            "20",
            "--kubeconfig",
            str(kubeconfig),
            *extra,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + 60
    seen = []
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            if proc.poll() is not None:
                break
            continue
        seen.append(line)
        if line == "Ctrl-C to stop.":
            return RunningLab(proc=proc, kubeconfig=kubeconfig, lines=lines)
    proc.kill()
    stderr = proc.stderr.read() if proc.stderr else ""
    raise AssertionError(f"lab up did not start:\n{seen}\n{stderr}")


def _stop(running: RunningLab, signum: int) -> tuple[int, str]:
    running.proc.send_signal(signum)
    try:
        _, stderr = running.proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        running.proc.kill()
        raise
    return running.proc.returncode, stderr


def test_up_exports_the_chosen_signal_convention(tmp_path: Path) -> None:
    running = _start_lab(tmp_path, "--signals", "istio")
    try:
        state = json.loads(state_file(running.kubeconfig).read_text())
        deadline = time.monotonic() + 60
        text = ""
        wanted = ("istio_requests_total{", "istio_request_duration_milliseconds_bucket{")
        while not all(w in text for w in wanted) and time.monotonic() < deadline:
            # Until the pods are ready and serve traffic: the counters appear with the first
            # requests, the latency histogram with the first request that was timed.
            time.sleep(0.5)
            with urllib.request.urlopen(state["metrics_url"], timeout=10) as answer:
                text = answer.read().decode()
        assert "istio_requests_total{" in text, text[-2000:]
        assert "istio_request_duration_milliseconds_bucket{" in text
        assert "http_server_requests_total" not in text
        assert "kube_deployment_status_replicas_available{" in text  # the same in every one
    finally:
        code, _ = _stop(running, signal.SIGTERM)
    assert code == 0


@pytest.fixture
def running_lab(tmp_path: Path) -> Iterator[RunningLab]:
    running = _start_lab(tmp_path)
    try:
        yield running
    finally:
        if running.proc.poll() is None:
            running.proc.kill()
            running.proc.wait(10)


def test_up_inject_and_kubectl(running_lab: RunningLab, tmp_path: Path) -> None:
    kubectl = require_binary("kubectl")
    kubeconfig = running_lab.kubeconfig
    state = json.loads(state_file(kubeconfig).read_text())
    assert state["apps"] == ["hotel-reservation"] and state["pid"] == running_lab.proc.pid
    assert state["control_url"].startswith("http://127.0.0.1:")

    runner = CliRunner()
    result = runner.invoke(
        lab,
        ["inject", "wrong-target-port", "--param", "port=9090", "--kubeconfig", str(kubeconfig)],
    )
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "injected wrong-target-port into hotel-reservation/geo",
        "  Service/geo: spec.ports[0].targetPort 8083 → 9090",
        "ground truth: geo; virtualization/misconfiguration",
    ]

    bad = runner.invoke(
        lab,
        ["inject", "wrong-target-port", "--param", "port=http", "--kubeconfig", str(kubeconfig)],
    )
    assert bad.exit_code == 2
    assert bad.output.strip() == "stratus: parameter port: expected an integer, got 'http'"
    unknown = runner.invoke(lab, ["inject", "nope", "--kubeconfig", str(kubeconfig)])
    assert unknown.exit_code == 2 and unknown.output.startswith("stratus: unknown fault 'nope'")

    def kube(*args: str) -> str:
        done = subprocess.run(
            [kubectl, f"--kubeconfig={kubeconfig}", f"--cache-dir={tmp_path / 'cache'}", *args],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)},
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    deadline = time.monotonic() + 30
    while True:  # the lab's controllers create the pods in the background
        pods = kube("get", "pods", "-n", "hotel-reservation").splitlines()
        if len(pods) == 1 + 18 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert pods[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert len(pods) == 1 + 18, pods
    port = kube(
        "get",
        "service",
        "geo",
        "-n",
        "hotel-reservation",
        "-o",
        "jsonpath={.spec.ports[0].targetPort}",
    )
    assert port == "9090"

    code, stderr = _stop(running_lab, signal.SIGINT)
    assert code == 0, stderr
    assert "stopping the lab (SIGINT)" in stderr and "lab stopped" in stderr
    assert not state_file(kubeconfig).exists()
    assert "Traceback" not in stderr


def test_sigterm_stops_the_lab_cleanly(running_lab: RunningLab) -> None:
    code, stderr = _stop(running_lab, signal.SIGTERM)
    assert code == 0, stderr
    assert "stopping the lab (SIGTERM)" in stderr
    assert not state_file(running_lab.kubeconfig).exists()
