"""A Prometheus exposition endpoint for the simulator's current metric values.

`MetricsExporter(store).start()` serves `GET /metrics` (text format 0.0.4) on 127.0.0.1 and a
port the OS picks, from an aiohttp server running in its own thread and event loop, so a real
Prometheus (and the bot's Prometheus adapter through it) can scrape the lab. Metric names and
labels are listed in `lab.sim.metrics`; with `signals=` another convention's names (Istio,
Linkerd, OTel, Micrometer, ingress-nginx: `lab.sim.conventions`) are served instead, from the
same store.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict

from aiohttp import web

from lab.serving import ThreadedSite
from lab.sim.conventions import CONVENTIONS, convert, is_request_metric
from lab.sim.metrics import TYPES, LabelSet, MetricStore

logger = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_SUFFIXES = ("_bucket", "_sum", "_count")


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def _family(name: str) -> str:
    for suffix in _SUFFIXES:
        base = name[: -len(suffix)]
        if name.endswith(suffix) and TYPES.get(base, ("",))[0] == "histogram":
            return base
    return name


def render(store: MetricStore, signals: str = "lab") -> str:
    """The store's live values in the Prometheus text exposition format, the request metrics
    named as the `signals` convention names them."""
    with store.lock:
        items = list(store.live.items())
    # Series that fold into one (an OTel service-graph edge has no namespace) are summed.
    values: dict[tuple[str, str, LabelSet], float] = defaultdict(float)
    meta: dict[str, tuple[str, str]] = {}
    for (name, labelset), value in items:
        if signals == "lab" or not is_request_metric(name):
            family = _family(name)
            values[(family, name, labelset)] += value
            continue
        for family, kind, help_text, series, converted, number in convert(
            signals, name, labelset, value
        ):
            meta[family] = (kind, help_text)
            values[(family, series, converted)] += number
    families: dict[str, list[str]] = defaultdict(list)
    for (family, name, labelset), value in sorted(values.items()):
        text = ",".join(f'{k}="{_escape(v)}"' for k, v in labelset)
        families[family].append(f"{name}{{{text}}} {_number(value)}")
    out: list[str] = []
    for family in sorted(families):
        kind, help_text = meta.get(family) or TYPES.get(family, ("untyped", ""))
        out.append(f"# HELP {family} {help_text}")
        out.append(f"# TYPE {family} {kind}")
        out.extend(families[family])
    return "\n".join(out) + "\n"


class MetricsExporter:
    def __init__(
        self, store: MetricStore, *, host: str = "127.0.0.1", port: int = 0, signals: str = "lab"
    ) -> None:
        if signals not in CONVENTIONS:
            raise ValueError(f"unknown signals {signals!r}; use one of {', '.join(CONVENTIONS)}")
        self._store = store
        self._signals = signals
        self._site = ThreadedSite(
            self._application, name="lab-metrics-exporter", host=host, port=port
        )

    @property
    def url(self) -> str:
        return self._site.url

    async def _metrics(self, request: web.Request) -> web.Response:
        body = render(self._store, self._signals)
        return web.Response(body=body.encode(), headers={"Content-Type": CONTENT_TYPE})

    def _application(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        return app

    def start(self) -> str:
        """Serve in a background thread; returns the base URL (`http://127.0.0.1:PORT`)."""
        if not self._site.running:
            self._site.start()
            logger.info("lab metrics exporter at %s/metrics", self.url)
        return self.url

    def stop(self) -> None:
        self._site.stop()
