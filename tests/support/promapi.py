"""Prometheus's HTTP query API over the lab's telemetry, so the real `PrometheusMetrics`
adapter (prometheus-api-client, requests, urllib3) can be pointed at the lab through a
fault-injecting proxy.

The lab evaluates its metrics in process (`lab.sim.promql`, the PromQL subset the adapter's
queries use, and `lab.alerts` for the alert rules); this server answers
`/api/v1/query` and `/api/v1/query_range` with them, in lab time, in Prometheus's JSON shape.
`/api/v1/label/__name__/values` lists the store's metric names (how the adapter's `auto`
signal profile finds the lab's convention). `ALERTS{...}` and `ALERTS_FOR_STATE{...}` come
from the lab's alert evaluator: the value of `ALERTS_FOR_STATE` is the alert's start as
`SimMetrics` reports it (when it fired), so the bot sees the same alerts through this API as
in process. A query the subset cannot evaluate answers 400 `bad_data`, as Prometheus does.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from agents.errors import QueryError
from lab.alerts import LabAlerts
from lab.sim.promql import Evaluator, Vector
from lab.sim.world import LabWorld

_ALERTS = re.compile(r"^(ALERTS|ALERTS_FOR_STATE)\{(.*)\}$")
_MATCHER = re.compile(r'(\w+)\s*=\s*"([^"]*)"')


class PromApi:
    def __init__(self, world: LabWorld, alerts: LabAlerts) -> None:
        self._world = world
        self._alerts = alerts
        self._eval = Evaluator(world.sim.store)
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._answer(parse_qs(urlparse(self.path).query))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = parse_qs(self.rfile.read(length).decode())
                self._answer({**parse_qs(urlparse(self.path).query), **form})

            def _answer(self, params: dict[str, list[str]]) -> None:
                path = urlparse(self.path).path
                status, body = api.answer(path, {k: v[0] for k, v in params.items()})
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return  # quiet: the proxy counts the requests

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> PromApi:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # ------------------------------------------------------------------ answers

    def answer(self, path: str, params: dict[str, str]) -> tuple[int, dict[str, Any]]:
        query = params.get("query", "")
        try:
            if path.endswith("/api/v1/label/__name__/values"):
                names = sorted(self._world.sim.store.names() | {"ALERTS", "ALERTS_FOR_STATE"})
                return 200, {"status": "success", "data": names}
            if path.endswith("/api/v1/query"):
                at = float(params.get("time") or self._world.clock.now().timestamp())
                samples = self._instant(query, at)
                result = [{"metric": m, "value": [at, _num(v)]} for m, v in samples]
                return 200, {
                    "status": "success",
                    "data": {"resultType": "vector", "result": result},
                }
            if path.endswith("/api/v1/query_range"):
                start, end = float(params["start"]), float(params["end"])
                step = max(1.0, float(params.get("step", "15").rstrip("s")))
                series: dict[str, tuple[dict[str, str], list[list[Any]]]] = {}
                at = start
                while at <= end:
                    for metric, value in self._instant(query, at):
                        key = json.dumps(metric, sort_keys=True)
                        series.setdefault(key, (metric, []))[1].append([at, _num(value)])
                    at += step
                result = [{"metric": m, "values": v} for m, v in series.values()]
                return 200, {
                    "status": "success",
                    "data": {"resultType": "matrix", "result": result},
                }
        except QueryError as e:
            return 400, {"status": "error", "errorType": "bad_data", "error": str(e)}
        return 404, {"status": "error", "errorType": "not_found", "error": path}

    def _instant(self, query: str, at: float) -> list[tuple[dict[str, str], float]]:
        if query.strip() == "vector(1)":  # the bot's start-up probe
            return [({}, 1.0)]
        alerts = _ALERTS.match(query.strip())
        if alerts is not None:
            wanted = dict(_MATCHER.findall(alerts.group(2)))
            wanted.pop("alertstate", None)
            found = []
            for alert in self._alerts.evaluator.firing():
                labels = {**alert.labels, "alertname": alert.rule}
                if any(labels.get(k) != v for k, v in wanted.items()):
                    continue
                if alerts.group(1) == "ALERTS":
                    found.append(({"__name__": "ALERTS", "alertstate": "firing", **labels}, 1.0))
                else:
                    started = (alert.fired_at or alert.active_at).timestamp()
                    found.append(({"__name__": "ALERTS_FOR_STATE", **labels}, started))
            return found
        value = self._eval.evaluate(query, at)
        if isinstance(value, Vector):
            return [(dict(labels), v) for labels, v in value.samples]
        return [({}, value)]


def _num(value: float) -> str:
    return "NaN" if value != value else repr(float(value))
