"""A Prometheus exposition endpoint for the simulator's current metric values.

`MetricsExporter(store).start()` serves `GET /metrics` (text format 0.0.4) on 127.0.0.1 and a
port the OS picks, from an aiohttp server running in its own thread and event loop, so a real
Prometheus (and the bot's Prometheus adapter through it) can scrape the lab. Metric names and
labels are listed in `lab.sim.metrics`; with `signals=` another convention's names (Istio,
Linkerd, OTel, Micrometer, ingress-nginx: `lab.sim.conventions`) are served instead, from the
same store.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
from collections import defaultdict

from aiohttp import web

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
        self._host = host
        self._port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    async def _metrics(self, request: web.Request) -> web.Response:
        body = render(self._store, self._signals)
        return web.Response(body=body.encode(), headers={"Content-Type": CONTENT_TYPE})

    def start(self) -> str:
        """Serve in a background thread; returns the base URL (`http://127.0.0.1:PORT`)."""
        if self._thread is not None:
            return self.url
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._serve())
            except OSError as e:  # the bind failed: report it to start()
                failure.append(e)
                ready.set()
                loop.close()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name="lab-metrics-exporter", daemon=True)
        self._thread.start()
        ready.wait(10)
        if failure:
            self._thread = None
            raise failure[0]
        logger.info("lab metrics exporter at %s/metrics", self.url)
        return self.url

    async def _serve(self) -> None:
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self._host, self._port)
        await site.start()
        self._runner = runner
        server = site._server
        assert server is not None
        sockets = getattr(server, "sockets", None) or []
        port = sockets[0].getsockname()[1] if sockets else self._port
        self.url = f"http://{self._host}:{port}"

    async def _cleanup(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def stop(self) -> None:
        if self._thread is None or self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._thread = None
