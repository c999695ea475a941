"""Every cluster and metrics call has a deadline, retries included (DESIGN section 3, rule 8).

A stand-in server on 127.0.0.1 that accepts connections and never answers (an API server
stalled behind a proxy) records every request it receives. The adapters must give up with
their transient error after exactly the tries their `CallDeadline` allows — reads tried again,
writes not (a write whose answer was lost may have happened) — so the worst case of one call
is the known figure the start-up check compares with the writer lease. Assertions are on what
the server saw and on the error types, not on how long anything took.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from agents.adapters.kubernetes_cluster import KubernetesCluster
from agents.adapters.prometheus_metrics import PrometheusMetrics
from agents.deadlines import CallDeadline, below_lease
from agents.errors import ClusterError, MetricsError, NotFound, TransientError
from agents.model import KubeObject, ObjectRef

DEADLINE = CallDeadline(timeout_s=0.6, attempts=3)
REF = ObjectRef(api_version="apps/v1", kind="Deployment", name="search", namespace="hotel")


class StalledServer:
    """Accepts, reads the request line, and then says nothing until it is closed."""

    def __init__(self) -> None:
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.port = self._listener.getsockname()[1]
        self.requests: list[str] = []
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self._open.append(conn)
            threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _read(self, conn: socket.socket) -> None:
        data = b""
        try:
            while b"\r\n" not in data:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                data += chunk
        except OSError:
            return
        with self._lock:
            self.requests.append(data.split(b"\r\n", 1)[0].decode(errors="replace"))

    def seen(self) -> list[str]:
        with self._lock:
            return [line.split(" ", 1)[0] for line in self.requests]

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            for conn in self._open:
                conn.close()


@pytest.fixture
def stalled() -> Iterator[StalledServer]:
    server = StalledServer()
    try:
        yield server
    finally:
        server.close()


def kubeconfig(tmp_path: Path, server: str) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "stalled", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "stalled", "context": {"cluster": "stalled", "user": "u"}}],
                "current-context": "stalled",
            }
        )
    )
    return path


def cluster(tmp_path: Path, server: str) -> KubernetesCluster:
    return KubernetesCluster.connect(
        kubeconfig=kubeconfig(tmp_path, server), cluster_name="stalled", deadline=DEADLINE
    )


@pytest.mark.timeout(60)
def test_a_stalled_read_is_tried_exactly_attempts_times_then_transient(
    tmp_path: Path, stalled: StalledServer
) -> None:
    kube = cluster(tmp_path, stalled.url)
    try:
        with pytest.raises(TransientError, match=r"no answer within the deadline \(3 × 0.6s\)"):
            kube.get(REF)
        assert stalled.seen() == ["GET"] * DEADLINE.attempts
    finally:
        kube.close()


@pytest.mark.timeout(60)
def test_a_stalled_write_is_not_tried_again(tmp_path: Path, stalled: StalledServer) -> None:
    kube = cluster(tmp_path, stalled.url)
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "search", "namespace": "hotel", "resourceVersion": "7"},
        "spec": {"replicas": 2},
    }
    try:
        with pytest.raises(TransientError) as error:
            kube.replace(KubeObject(body))
        assert not isinstance(error.value, NotFound)
        # One PUT: a second one could meet our own first write and look like a conflict.
        assert stalled.seen() == ["PUT"]
        with pytest.raises(TransientError):
            kube.delete(REF, resource_version="7")
        assert stalled.seen() == ["PUT", "DELETE"]
    finally:
        kube.close()


@pytest.mark.timeout(60)
def test_a_refused_connection_is_transient_not_missing(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    kube = cluster(tmp_path, f"http://127.0.0.1:{port}")
    try:
        with pytest.raises(TransientError, match="cannot reach the API server") as error:
            kube.pods("hotel")
        assert isinstance(error.value, ClusterError) and not isinstance(error.value, NotFound)
    finally:
        kube.close()


@pytest.mark.timeout(60)
def test_a_stalled_prometheus_is_tried_exactly_attempts_times(stalled: StalledServer) -> None:
    metrics = PrometheusMetrics(stalled.url, deadline=DEADLINE)
    try:
        with pytest.raises(MetricsError, match=r"no answer within the deadline \(3 tries"):
            metrics.query("vector(1)")
        assert stalled.seen() == ["GET"] * DEADLINE.attempts
    finally:
        metrics.close()


def test_the_worst_case_of_one_call_is_compared_with_the_lease() -> None:
    assert CallDeadline(timeout_s=5, attempts=2).worst_case_s == 10
    assert below_lease(CallDeadline(timeout_s=5, attempts=2), 30) is None
    problem = below_lease(CallDeadline(timeout_s=15, attempts=4), 30)
    assert problem == ("one call may block 4 × 15s = 60s, more than the writer lease 30s / 3 = 10s")
    with pytest.raises(ValueError):
        CallDeadline(timeout_s=5, attempts=0)
