"""The chart worker: the same PNG bytes as drawing in-process, a new child after one is killed,
a chart that fails (not in time, a child that exits) raises `ChartFailed` and leaves no child
behind, and `close()` reaps the child. Timeouts here are safety nets or meet a child that
never answers: no assertion depends on how fast the machine is."""

from __future__ import annotations

import io
import json
import os
import signal
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agents.model import Series, SeriesPoint
from bot.chart_process import (
    ChartProcess,
    InProcessCharts,
    charts,
    close_charts,
    use_charts,
)
from bot.chart_worker import FAILED, OK, draw, frame, read_frame, serve, signal_request
from bot.charts import (
    Marker,
    MarkerKind,
    NamespaceFigures,
    render_digest_chart,
    render_signal_chart,
)
from bot.errors import ChartFailed

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
SAFETY_S = 120.0  # a loaded machine's first chart takes seconds; this only stops a hang


def _series(name: str, values: list[float], **labels: str) -> Series:
    points = tuple(
        SeriesPoint(at=T0 + timedelta(seconds=15 * i), value=v) for i, v in enumerate(values)
    )
    return Series(name=name, labels=labels, points=points)


SERIES = [
    _series("error_ratio", [0.0, 0.01, 0.6, 0.8, 0.7, 0.02, 0.0], service="geo"),
    _series("error_ratio", [0.0, 0.0, 0.3, 0.4, 0.3, 0.01, 0.0], service="frontend"),
    Series(name="empty", labels={}, points=()),
]
MARKERS = [
    Marker(at=T0 + timedelta(seconds=30), label="detected", kind=MarkerKind.DETECTION),
    Marker(at=T0 + timedelta(seconds=70), label="committed", kind=MarkerKind.COMMIT),
]
ROWS = [
    NamespaceFigures(namespace="hotel-reservation", opened=3, resolved=2, mttd_s=45, mttm_s=600),
    NamespaceFigures(namespace="online-shop", opened=1, resolved=1, mttd_s=30.5, mttm_s=None),
]


def _reaped(pid: int) -> bool:
    """True when `pid` is no child of ours any more: exited *and* waited for (no zombie)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def _recording_child(tmp_path: Path) -> list[str]:
    """A child that records its argv and environment, then exits without an answer."""
    script = (
        "import json, os, sys\n"
        "with open(sys.argv[1], 'w') as f:\n"
        "    json.dump({'argv': sys.argv, 'env': dict(os.environ)}, f)\n"
    )
    return [sys.executable, "-c", script, str(tmp_path / "child.json")]


@pytest.fixture(scope="module")
def worker() -> Iterator[ChartProcess]:
    """One worker for the module's tests, as in the bot (a child's start costs seconds)."""
    process = ChartProcess(timeout_s=SAFETY_S)
    yield process
    process.close()


def test_the_worker_draws_the_same_bytes_as_the_bot_process(worker: ChartProcess) -> None:
    png = worker.signal_chart(SERIES, title="INC-1: error ratio", markers=MARKERS, unit="ratio")
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert png == render_signal_chart(
        SERIES, title="INC-1: error ratio", markers=MARKERS, unit="ratio"
    )
    assert worker.digest_chart(ROWS, title="Digest") == render_digest_chart(ROWS, title="Digest")
    assert worker.digest_chart([], title="Quiet") == render_digest_chart([], title="Quiet")
    assert worker.signal_chart([], title="nothing") == render_signal_chart([], title="nothing")
    in_process = InProcessCharts()
    assert in_process.digest_chart(ROWS, title="Digest") == render_digest_chart(
        ROWS, title="Digest"
    )


def test_naive_times_and_odd_values_cross_the_wire_unchanged(worker: ChartProcess) -> None:
    naive = Series(
        name="s",
        labels={"pod": 'a\u00e9"b'},
        points=tuple(
            SeriesPoint(at=datetime(2025, 3, 1, 12, i), value=v)
            for i, v in enumerate([0.1 + 0.2, 1e-300, float("nan"), 3.0, -2.5])
        ),
    )
    marker = Marker(at=datetime(2025, 3, 1, 12, 2), label="undo", kind=MarkerKind.UNDO)
    assert worker.signal_chart([naive], title="t", markers=[marker]) == render_signal_chart(
        [naive], title="t", markers=[marker]
    )


def test_one_child_serves_every_chart_and_close_reaps_it() -> None:
    worker = ChartProcess(timeout_s=SAFETY_S)
    assert worker.pid is None  # nothing is spawned before the first chart
    worker.signal_chart(SERIES, title="a")
    pid = worker.pid
    assert pid is not None
    worker.digest_chart(ROWS, title="b")
    assert worker.pid == pid
    worker.close()
    assert worker.pid is None
    assert _reaped(pid)
    worker.close()  # idempotent


def test_a_killed_child_is_replaced_by_the_next_chart(worker: ChartProcess) -> None:
    first = worker.signal_chart(SERIES, title="a")
    pid = worker.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert worker.signal_chart(SERIES, title="a") == first
    assert worker.pid not in (None, pid)
    assert _reaped(pid)


def test_a_child_that_does_not_answer_in_time_fails_the_chart_and_is_reaped(
    worker: ChartProcess,
) -> None:
    worker.signal_chart(SERIES, title="a")  # started, under the generous deadline
    pid = worker.pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # a hung child: it will never answer
    worker.timeout_s = 1.0
    # More than a pipe's buffer of request: the write, too, is under the deadline.
    big = [_series("rate", [float(i % 7) for i in range(3000)], service=f"s{k}") for k in range(8)]
    with pytest.raises(ChartFailed, match="in time"):
        worker.signal_chart(big, title="never")
    assert worker.pid is None
    assert _reaped(pid)
    worker.timeout_s = SAFETY_S
    assert worker.signal_chart(SERIES, title="a") == render_signal_chart(SERIES, title="a")


def test_a_child_that_exits_mid_chart_fails_it_and_saw_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-not-for-the-child")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-not-for-the-child")
    monkeypatch.setenv("STRATUS_DATABASE_URL", "postgresql://user:secret@db/stratus")
    quitting = ChartProcess(timeout_s=SAFETY_S, command=_recording_child(tmp_path))
    with pytest.raises(ChartFailed, match="exited"):
        quitting.signal_chart(SERIES, title="never")
    assert quitting.pid is None
    quitting.close()
    seen = json.loads((tmp_path / "child.json").read_text())
    assert not {"SLACK_BOT_TOKEN", "ANTHROPIC_API_KEY", "STRATUS_DATABASE_URL"} & set(seen["env"])
    assert not any("secret" in a or "xoxb" in a for a in seen["argv"])
    assert "PATH" in seen["env"]


def test_the_worker_answers_a_request_it_cannot_draw_with_an_error_and_goes_on() -> None:
    good = signal_request(SERIES, title="ok", markers=(), unit="")
    requests = io.BytesIO(frame(b'{"kind": "pie"}') + frame(b"not json") + frame(good))
    answers = io.BytesIO()
    serve(requests, answers)
    answers.seek(0)
    unknown, broken, drawn = (read_frame(answers) for _ in range(3))
    assert unknown is not None and unknown.startswith(FAILED) and b"pie" in unknown
    assert broken is not None and broken.startswith(FAILED)
    assert drawn == OK + render_signal_chart(SERIES, title="ok")
    assert read_frame(answers) is None
    with pytest.raises(ValueError, match="pie"):
        draw(b'{"kind": "pie"}')


def test_the_process_renderer_is_swappable_and_closed_with_the_bot() -> None:
    worker = ChartProcess(timeout_s=SAFETY_S)
    previous = use_charts(worker)
    try:
        assert charts() is worker
        worker.digest_chart(ROWS, title="x")
        pid = worker.pid
        assert pid is not None
        close_charts()  # what Services.close() calls
        assert _reaped(pid)
    finally:
        use_charts(previous)
        worker.close()
