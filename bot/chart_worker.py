"""The chart worker: `python -m bot.chart_worker`, the child process that draws the bot's charts.

matplotlib (with numpy, its fonts and its Agg renderer) adds about 50 MB to the process that
draws, and that memory never goes back. The bot only needs PNG bytes, so it sends the chart's
inputs — plain data, as JSON — to this child and gets the PNG back (`bot.chart_process` is
the bot's side). This module is both ends of the wire and the child's loop; it imports
`bot.charts` (whose matplotlib imports are inside its functions), never anything that knows
Slack, the cluster or the database, so the child stays small and holds no secret.

The wire, over the child's stdin and stdout: each frame is a 4-byte big-endian length and that
many bytes. A request is one JSON object (`{"kind": "signal" | "digest", ...}`); an answer is
one status byte (`0` and the PNG, or `1` and a UTF-8 error text). End of stdin ends the child.
The drawing is `bot.charts`' own, so the bytes are the same as drawn in the bot's process.
"""

from __future__ import annotations

import json
import logging
import struct
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import IO, Any

from agents.model import Series, SeriesPoint
from bot.charts import (
    Marker,
    MarkerKind,
    NamespaceFigures,
    render_digest_chart,
    render_signal_chart,
)

logger = logging.getLogger(__name__)

_LENGTH = struct.Struct(">I")
OK, FAILED = b"\x00", b"\x01"

#: A frame larger than this is a broken stream, not a chart (a chart is ~50-150 kB).
MAX_FRAME = 64 * 1024 * 1024


class WireError(Exception):
    """The stream broke: a short read or an impossible length."""


def frame(body: bytes) -> bytes:
    return _LENGTH.pack(len(body)) + body


def read_frame(stream: IO[bytes]) -> bytes | None:
    """The next frame's body, or None at a clean end of the stream."""
    head = stream.read(_LENGTH.size)
    if not head:
        return None
    if len(head) != _LENGTH.size:
        raise WireError("the stream ended inside a frame's length")
    (length,) = _LENGTH.unpack(head)
    if length > MAX_FRAME:
        raise WireError(f"a frame of {length} bytes")
    body = stream.read(length)
    if len(body) != length:
        raise WireError("the stream ended inside a frame")
    return body


def frame_length(head: bytes) -> int:
    (length,) = _LENGTH.unpack(head)
    if length > MAX_FRAME:
        raise WireError(f"a frame of {length} bytes")
    return int(length)


HEADER_SIZE = _LENGTH.size


# Requests. Times travel as ISO 8601, which keeps a naive time naive and an offset its offset;
# floats as JSON numbers, which Python writes and reads back exactly (NaN included).


def _series(series: Series) -> dict[str, Any]:
    return {
        "name": series.name,
        "labels": dict(series.labels),
        "points": [[p.at.isoformat(), p.value] for p in series.points],
    }


def signal_request(
    series: Sequence[Series], *, title: str, markers: Sequence[Marker], unit: str
) -> bytes:
    return json.dumps(
        {
            "kind": "signal",
            "title": title,
            "unit": unit,
            "series": [_series(s) for s in series],
            "markers": [
                {"at": m.at.isoformat(), "label": m.label, "kind": m.kind.value} for m in markers
            ],
        }
    ).encode()


def digest_request(rows: Sequence[NamespaceFigures], *, title: str) -> bytes:
    return json.dumps(
        {
            "kind": "digest",
            "title": title,
            "rows": [
                {
                    "namespace": r.namespace,
                    "opened": r.opened,
                    "resolved": r.resolved,
                    "mttd_s": r.mttd_s,
                    "mttm_s": r.mttm_s,
                }
                for r in rows
            ],
        }
    ).encode()


def draw(request: bytes) -> bytes:
    """Decode a request and draw it in this process. Raises `ValueError` (or matplotlib's
    errors) for a request it cannot draw."""
    data = json.loads(request)
    kind = data.get("kind")
    if kind == "signal":
        return render_signal_chart(
            [
                Series(
                    name=s["name"],
                    labels=dict(s["labels"]),
                    points=tuple(
                        SeriesPoint(at=datetime.fromisoformat(at), value=value)
                        for at, value in s["points"]
                    ),
                )
                for s in data["series"]
            ],
            title=data["title"],
            markers=[
                Marker(
                    at=datetime.fromisoformat(m["at"]), label=m["label"], kind=MarkerKind(m["kind"])
                )
                for m in data["markers"]
            ],
            unit=data["unit"],
        )
    if kind == "digest":
        return render_digest_chart(
            [NamespaceFigures(**row) for row in data["rows"]], title=data["title"]
        )
    raise ValueError(f"unknown chart kind {kind!r}")


def serve(requests: IO[bytes], answers: IO[bytes]) -> None:
    """Answer every request until the end of `requests`."""
    while (request := read_frame(requests)) is not None:
        try:
            answer = OK + draw(request)
        except Exception as e:  # the worker's boundary: one failed chart, not a dead worker
            logger.exception("chart not drawn")
            answer = FAILED + f"{type(e).__name__}: {e}".encode()
        answers.write(frame(answer))
        answers.flush()


def main() -> int:
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="chart worker: %(message)s"
    )
    try:
        serve(sys.stdin.buffer, sys.stdout.buffer)
    except (WireError, BrokenPipeError) as e:
        logger.warning("stopping: %s", e)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover - `python -m bot.chart_worker`, in the child
    sys.exit(main())
