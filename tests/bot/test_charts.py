"""Charts are real PNGs: decoded with matplotlib's reader, checked for size, for ink, for the
marker colours, and for being the same bytes for the same input."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from matplotlib import image

from agents.model import Series, SeriesPoint
from bot.charts import (
    DPI,
    HEIGHT_IN,
    WIDTH_IN,
    Marker,
    MarkerKind,
    NamespaceFigures,
    render_digest_chart,
    render_signal_chart,
)

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def _decode(png: bytes) -> np.ndarray:
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    return np.asarray(image.imread(io.BytesIO(png), format="png"))


def _series(name: str, values: list[float], **labels: str) -> Series:
    points = tuple(
        SeriesPoint(at=T0 + timedelta(seconds=15 * i), value=v) for i, v in enumerate(values)
    )
    return Series(name=name, labels=labels, points=points)


def _has_colour(pixels: np.ndarray, hex_colour: str, tolerance: float = 0.02) -> bool:
    rgb = np.array([int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)])
    return bool((np.abs(pixels[..., :3] - rgb).max(axis=-1) < tolerance).any())


def _ink(pixels: np.ndarray) -> float:
    """Share of pixels that are not white."""
    return float((pixels[..., :3].min(axis=-1) < 0.95).mean())


def test_signal_chart_is_a_png_of_the_fixed_size_with_lines_and_markers() -> None:
    series = [
        _series("error_ratio", [0.0, 0.01, 0.6, 0.8, 0.7, 0.02, 0.0], service="geo"),
        _series("error_ratio", [0.0, 0.0, 0.3, 0.4, 0.3, 0.01, 0.0], service="frontend"),
    ]
    markers = [
        Marker(at=T0 + timedelta(seconds=30), label="detected", kind=MarkerKind.DETECTION),
        Marker(at=T0 + timedelta(seconds=70), label="committed", kind=MarkerKind.COMMIT),
    ]
    pixels = _decode(
        render_signal_chart(series, title="hotel-reservation errors", markers=markers, unit="ratio")
    )
    assert pixels.shape[:2] == (int(HEIGHT_IN * DPI), int(WIDTH_IN * DPI))
    assert _ink(pixels) > 0.01
    assert _has_colour(pixels, "#d62728")  # the detection line
    assert _has_colour(pixels, "#2ca02c")  # the commit line


def test_markers_change_the_image() -> None:
    series = [_series("request_rate", [10, 11, 12, 11, 10])]
    plain = render_signal_chart(series, title="rate")
    marked = render_signal_chart(
        series,
        title="rate",
        markers=[Marker(at=T0 + timedelta(seconds=20), label="undo", kind=MarkerKind.UNDO)],
    )
    assert not _has_colour(_decode(plain), "#9467bd")
    assert _has_colour(_decode(marked), "#9467bd")


def test_same_input_same_bytes() -> None:
    series = [_series("latency_p99_ms", [120, 130, 900, 950, 140])]
    markers = [Marker(at=T0, label="approved", kind=MarkerKind.APPROVAL)]
    first = render_signal_chart(series, title="p99", markers=markers, unit="ms")
    second = render_signal_chart(series, title="p99", markers=markers, unit="ms")
    assert first == second
    assert b"Software" not in first
    assert b"Creation Time" not in first


def test_empty_series_render_a_no_data_chart() -> None:
    empty = render_signal_chart([Series(name="x", labels={}, points=())], title="nothing")
    pixels = _decode(empty)
    assert pixels.shape[:2] == (600, 1200)
    assert 0 < _ink(pixels) < 0.05  # the title and the "no data" text only


def test_naive_timestamps_are_taken_as_utc() -> None:
    naive = Series(
        name="s",
        labels={},
        points=tuple(SeriesPoint(at=datetime(2025, 3, 1, 12, i), value=float(i)) for i in range(5)),
    )
    aware = Series(
        name="s",
        labels={},
        points=tuple(SeriesPoint(at=T0 + timedelta(minutes=i), value=float(i)) for i in range(5)),
    )
    assert render_signal_chart([naive], title="t") == render_signal_chart([aware], title="t")


def test_digest_chart_draws_bars_per_namespace() -> None:
    rows = [
        NamespaceFigures(
            namespace="hotel-reservation", opened=3, resolved=2, mttd_s=45, mttm_s=600
        ),
        NamespaceFigures(namespace="online-shop", opened=1, resolved=1, mttd_s=30, mttm_s=None),
    ]
    png = render_digest_chart(rows, title="Digest")
    pixels = _decode(png)
    assert pixels.shape[:2] == (600, 1200)
    assert _has_colour(pixels, "#d62728")  # opened bars
    assert _has_colour(pixels, "#2ca02c")  # resolved bars
    assert png == render_digest_chart(rows, title="Digest")


def test_digest_chart_without_incidents() -> None:
    pixels = _decode(render_digest_chart([], title="Quiet week"))
    assert pixels.shape[:2] == (600, 1200)
    assert not _has_colour(pixels, "#d62728")


@pytest.mark.parametrize("count", [1, 12])
def test_many_series_are_capped_without_warnings(count: int) -> None:
    series = [_series("rate", [float(i), float(i + 1)], service=f"s{i}") for i in range(count)]
    assert _ink(_decode(render_signal_chart(series, title="many"))) > 0.01


def test_charts_drawn_from_several_threads_at_once_are_identical() -> None:
    from concurrent.futures import ThreadPoolExecutor

    series = [_series("rate", [1.0, 3.0, 2.0, 5.0])]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: render_signal_chart(series, title="t"), range(8)))
    assert len(set(results)) == 1
