"""Incident burst (issue 21, the Slack half): twenty incidents at once, how soon is each
diagnosis in Slack, and how much memory does the bot hold?

The lab's emulated cluster (2,000 pods: twenty namespaces `burst-00` … `burst-19`, each with
an `api` Deployment of 2 replicas and a `crowd` Deployment of 98) is served over HTTP, and the
lab Slack workspace runs beside it, both in this process. The bot runs as a **separate
process**, `stratus run`, configured through its environment against those endpoints (Socket
Mode, SQLite, the default channel mode and Slack pacing, the periodic scan every 5 s), so the
memory read from `/proc/<pid>/status` is the bot's alone.

Once the bot is connected, every `api` Deployment gets an image the registry lacks at once;
the scan opens twenty incidents and the bot diagnoses them. For each incident this measures
the time from its diagnosis being stored (`diagnoses.created_at`, read from the bot's
database) to its diagnosis message appearing in the workspace (the message's `ts`, the
workspace's clock: both are the machine's wall clock). Goal: every diagnosis posted within
5 s of being ready. Then VmRSS and VmHWM of the bot process. Goal: ≤ 200 MB.

Run: `.venv/bin/python benchmarks/incident_burst.py [--label NAME] [--write PATH]
[--bot-source CHECKOUT]` (two to four minutes). Prints a markdown section; `--write` appends
it to PATH. A measurement, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.adapters.signal_profiles import PROFILES  # noqa: E402
from bot.doctor import SLACK_BOT_SCOPES  # noqa: E402
from lab.clock import LabClock  # noqa: E402
from lab.kube.bootstrap import NodeSpec  # noqa: E402
from lab.kube.cluster import LabCluster  # noqa: E402
from lab.kube.server.counting import CountingServer  # noqa: E402
from lab.kube.server.thread import ServerThread  # noqa: E402
from lab.slack import SlackWorkspace, WorkspaceConfig  # noqa: E402
from tests.bot.commands.stand import CHANNELS, POLICY  # noqa: E402

INCIDENTS = 20
APP_REPLICAS = 2
CROWD_REPLICAS = 98  # 20 × (2 + 98) = 2,000 pods
GOOD_IMAGE = "lab/app:1.0"
BAD_IMAGE = "lab/missing:1.0"  # a repository the lab registry lacks
STRATUS = ROOT / ".venv" / "bin" / "stratus"
BURST_TIMEOUT_S = 300.0
PROFILE = "lab"  # the signal profile the chart stand-in answers for


class _ChartSource(BaseHTTPRequestHandler):
    """A stand-in Prometheus that only draws charts: every range query answers one rising
    series (so the diagnosis chart is rendered, as with a real Prometheus), the metric names
    are those the `lab` signal profile is identified by, and every instant query answers
    nothing."""

    def do_GET(self) -> None:
        url = urlparse(self.path)
        self._answer(url.path, parse_qs(url.query))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode()
        self._answer(urlparse(self.path).path, parse_qs(body))

    def _answer(self, path: str, query: dict[str, list[str]]) -> None:
        data: Any
        if path.endswith("/query_range"):
            start, end = float(query["start"][0]), float(query["end"][0])
            step = float(query.get("step", ["15s"])[0].rstrip("s"))
            n = max(2, int((end - start) // step) + 1)
            values = [[start + i * step, f"{0.5 * i / n:.4f}"] for i in range(n)]
            data = {"resultType": "matrix", "result": [{"metric": {}, "values": values}]}
        elif path.endswith("/query"):
            data = {"resultType": "vector", "result": []}
        elif path.endswith("/label/__name__/values"):
            data = sorted(PROFILES[PROFILE].identify)  # what the bot checks the profile by
        else:
            data = []
        body = json.dumps({"status": "success", "data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def chart_source() -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChartSource)
    threading.Thread(target=server.serve_forever, name="chart-source", daemon=True).start()
    return server


def namespaces() -> list[str]:
    return [f"burst-{i:02d}" for i in range(INCIDENTS)]


def _deployment(ns: str, name: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": GOOD_IMAGE,
                            "ports": [{"containerPort": 8080, "name": "http"}],
                            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                        }
                    ]
                },
            },
        },
    }


def manifests() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for ns in namespaces():
        docs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        docs.append(_deployment(ns, "api", APP_REPLICAS))
        docs.append(_deployment(ns, "crowd", CROWD_REPLICAS))
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "api", "namespace": ns, "labels": {"app": "api"}},
                "spec": {"selector": {"app": "api"}, "ports": [{"port": 80, "targetPort": "http"}]},
            }
        )
    return docs


def running(cluster: LabCluster) -> int:
    count = 0
    for pod in cluster.store.iter_objects("Pod"):
        status = pod.get("status") or {}
        statuses = status.get("containerStatuses") or []
        if status.get("phase") == "Running" and statuses and statuses[0].get("ready"):
            count += 1
    return count


def wait(predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.2)


def memory(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in kB."""
    found: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0])
    return found


def _utc(text: str) -> datetime:
    at = datetime.fromisoformat(text)
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def timeline(db: Path, incident_id: str) -> list[tuple[str, float]]:
    """(kind, ts) of an incident's messages as the bot recorded them, in posting order."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10) as conn:
        rows = conn.execute(
            "SELECT kind, CAST(ts AS REAL) FROM slack_messages WHERE incident_id = ? "
            "ORDER BY CAST(ts AS REAL)",
            (incident_id,),
        ).fetchall()
    return [(str(kind), float(ts)) for kind, ts in rows]


@dataclass(frozen=True, slots=True, kw_only=True)
class Posted:
    incident_id: str
    namespace: str
    ready: datetime  # diagnosis stored
    posted: datetime | None  # diagnosis message's ts in the workspace

    @property
    def delay_s(self) -> float | None:
        return None if self.posted is None else (self.posted - self.ready).total_seconds()


def read_results(db: Path) -> list[Posted]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10) as conn:
        rows = conn.execute(
            """
            SELECT i.id, i.namespace, MIN(d.created_at),
                   (SELECT MIN(CAST(m.ts AS REAL)) FROM slack_messages m
                     WHERE m.incident_id = i.id AND m.kind = 'diagnosis')
            FROM incidents i JOIN diagnoses d ON d.incident_id = i.id
            GROUP BY i.id ORDER BY MIN(d.created_at)
            """
        ).fetchall()
    return [
        Posted(
            incident_id=str(r[0]),
            namespace=str(r[1]),
            ready=_utc(str(r[2])),
            posted=None if r[3] is None else datetime.fromtimestamp(float(r[3]), UTC),
        )
        for r in rows
    ]


def bot_env(
    ws: SlackWorkspace, home: Path, kubeconfig: Path, source: Path | None, prometheus: str | None
) -> dict[str, str]:
    policy = home / "policy.yaml"
    policy.write_text(POLICY)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STRATUS_", "SLACK_"))}
    env.update(
        {
            "SLACK_BOT_TOKEN": ws.config.bot_token,
            "SLACK_APP_TOKEN": ws.config.app_token,
            "SLACK_SIGNING_SECRET": ws.config.signing_secret,
            "SLACK_API_URL": ws.api_url,
            "STRATUS_SLACK_MODE": "socket",
            "STRATUS_HTTP_HOST": "127.0.0.1",
            "STRATUS_HTTP_PORT": "0",
            "STRATUS_DATABASE_URL": f"sqlite:///{home / 'stratus.db'}",
            "KUBECONFIG": str(kubeconfig),
            "STRATUS_CLUSTER_NAME": "lab",
            "STRATUS_NAMESPACES": ",".join(namespaces()),
            "STRATUS_POLICY_FILE": str(policy),
            "STRATUS_SCAN_INTERVAL_S": "5",
            "STRATUS_LOG_LEVEL": "WARNING",
        }
    )
    if prometheus is not None:
        env["STRATUS_PROMETHEUS_URL"] = prometheus
        env["STRATUS_SIGNAL_PROFILE"] = PROFILE
    if source is not None:  # the bot's code from another checkout (a before/after run)
        env["PYTHONPATH"] = str(source)
    return env


def measure(
    source: Path | None, charts: bool
) -> tuple[list[Posted], dict[str, int], dict[str, float]]:
    nodes = [
        NodeSpec(name=f"lab-node-{i + 1}", pods="250", cpu="64", memory="256Gi")
        for i in range(INCIDENTS * (APP_REPLICAS + CROWD_REPLICAS) // 200 + 2)
    ]
    cluster = LabCluster(clock=LabClock(speed=1.0), seed=0, nodes=nodes, history_limit=100_000)
    timings: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="stratus-burst-") as tmp:
        home = Path(tmp)
        cluster.start()
        server = ServerThread(CountingServer(cluster))
        try:
            began = time.monotonic()
            cluster.apply_manifests(manifests(), field_manager="helm")
            total = INCIDENTS * (APP_REPLICAS + CROWD_REPLICAS)
            wait(lambda: running(cluster) >= total, 600, "the pods to run")
            timings["lab start (s)"] = time.monotonic() - began
            print(f"{total} pods running after {timings['lab start (s)']:.0f} s", flush=True)
            url = server.start()
            kubeconfig = home / "kubeconfig"
            kubeconfig.write_text(
                "apiVersion: v1\nkind: Config\ncurrent-context: lab\n"
                f"clusters: [{{name: lab, cluster: {{server: '{url}'}}}}]\n"
                "users: [{name: admin, user: {token: lab-token}}]\n"
                "contexts: [{name: lab, context: {cluster: lab, user: admin}}]\n"
            )
            config = WorkspaceConfig(
                channels=CHANNELS, bot_scopes=tuple(SLACK_BOT_SCOPES), ack_timeout_s=15.0
            )
            prom = chart_source() if charts else None
            prometheus = None if prom is None else f"http://127.0.0.1:{prom.server_address[1]}"
            with SlackWorkspace(config) as ws:
                log = (home / "bot.log").open("w")
                bot = subprocess.Popen(
                    [str(STRATUS), "run"],
                    env=bot_env(ws, home, kubeconfig, source, prometheus),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
                try:
                    wait(lambda: ws.socket_connections > 0, 120, "the bot to connect")
                    time.sleep(10)  # the first scans of a healthy cluster
                    timings["bot RSS before the burst (MB)"] = memory(bot.pid)["VmRSS"] / 1024
                    broken = _deployment("", "api", 0)["spec"]["template"]["spec"]["containers"][0]
                    broken = {**broken, "image": BAD_IMAGE}
                    started = time.monotonic()
                    for ns in namespaces():
                        cluster.api.patch(
                            "Deployment",
                            ns,
                            "api",
                            {"spec": {"template": {"spec": {"containers": [broken]}}}},
                            patch_type="merge",
                            field_manager="kubectl-set",
                        )
                    db = home / "stratus.db"

                    def all_posted() -> bool:
                        if bot.poll() is not None:
                            raise RuntimeError(f"the bot exited ({bot.returncode})")
                        found = read_results(db)
                        return len(found) >= INCIDENTS and all(p.posted for p in found)

                    try:
                        wait(all_posted, BURST_TIMEOUT_S, "twenty diagnoses in Slack")
                    except TimeoutError as e:
                        print(f"{e}; reporting what there is", flush=True)
                    timings["fault → last diagnosis message (s)"] = time.monotonic() - started
                    time.sleep(5)  # whatever follows the diagnoses (plans, charts) settles
                    mem = memory(bot.pid)
                    results = read_results(db)
                    if results:
                        first = results[0]
                        ready = first.ready.timestamp()
                        timings.update(
                            {
                                f"first incident, message {i + 1} ({kind}), posted at "
                                "(s after its diagnosis was ready)": ts - ready
                                for i, (kind, ts) in enumerate(timeline(db, first.incident_id))
                            }
                        )
                    names = [str(f.get("name", "")) for f in ws.files()]
                    timings["files uploaded"] = float(len(names))
                    timings["of which diagnosis charts"] = float(
                        sum(n.endswith("-signals.png") for n in names)
                    )
                finally:
                    bot.send_signal(signal.SIGTERM)
                    try:
                        bot.wait(30)
                    except subprocess.TimeoutExpired:
                        bot.kill()
                        bot.wait()
                    log.close()
                    logged = (home / "bot.log").read_text().splitlines()
                    tail = logged[-15:]
                    warned = [x for x in logged if "WARNING" in x or "ERROR" in x]
                    for line in warned[3:13]:  # past the start-up notes
                        print(f"bot log: {line[:300]}", flush=True)
                    if bot.returncode not in (0, -signal.SIGTERM):
                        print("\n".join(tail), flush=True)
            if prom is not None:
                prom.shutdown()
        finally:
            server.stop()
            cluster.stop()
    return results, mem, timings


def report(
    label: str,
    results: list[Posted],
    mem: dict[str, int],
    timings: dict[str, float],
    charts: bool,
) -> str:
    delays = [p.delay_s for p in results if p.delay_s is not None]
    first = min((p.ready for p in results), default=None)
    worst = max(delays, default=float("nan"))
    within = sum(1 for d in delays if d <= 5.0)
    lines = [
        f"## {label}",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `benchmarks/incident_burst.py` "
        f"(Python {platform.python_version()}, {platform.machine()}, 2 cores shared with "
        "other work).",
        "",
        f"- charts: {'on (stand-in Prometheus)' if charts else 'off (no Prometheus)'}",
        f"- incidents diagnosed: {len(results)}; diagnosis messages posted: {len(delays)}",
        f"- **max ready → posted: {worst:.2f} s** ({within} of {len(results)} within 5 s)",
        f"- bot VmRSS after the burst: **{mem.get('VmRSS', 0) / 1024:.0f} MB**, "
        f"VmHWM (peak): {mem.get('VmHWM', 0) / 1024:.0f} MB",
    ]
    lines += [f"- {k}: {v:.1f}" for k, v in timings.items()]
    lines += [
        "",
        "| Incident | Namespace | Diagnosis ready (s after the first) | Posted (s after ready) |",
        "|---|---|---|---|",
    ]
    for p in results:
        at = (p.ready - first).total_seconds() if first else 0.0
        delay = "not posted" if p.delay_s is None else f"{p.delay_s:.2f}"
        lines.append(f"| `{p.incident_id}` | {p.namespace} | {at:.2f} | {delay} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="Run")
    parser.add_argument("--write", type=Path, help="append the section to this file")
    parser.add_argument(
        "--bot-source",
        type=Path,
        help="run the bot process from this checkout's code (PYTHONPATH), e.g. the code "
        "before a change; the lab and this script stay this checkout's",
    )
    parser.add_argument(
        "--charts",
        action="store_true",
        help="point the bot at a stand-in Prometheus that answers range queries, so every "
        "diagnosis carries a chart (matplotlib in the bot's process)",
    )
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop the bot process on the way out
    results, mem, timings = measure(args.bot_source, args.charts)
    text = report(args.label, results, mem, timings, args.charts)
    print(text)
    if args.write:
        with args.write.open("a", encoding="utf-8") as out:
            out.write("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
