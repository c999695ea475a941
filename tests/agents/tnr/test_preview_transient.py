"""A plan's preview (read + server-side dry run) is retried on a transient fault: it writes
nothing, and one 503 used to make the action inadmissible, so the incident escalated to a
person (the transient-fault matrix, issue 14). Real client, lab API behind a FaultProxy."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

from agents.actions import ScaleWorkload
from agents.adapters.kubernetes_cluster import KubernetesCluster
from agents.tnr.preview import PREVIEW_TRIES, preview
from lab.sim.world import LabWorld
from tests.agents.tnr.conftest import SCOPE, deployment
from tests.support.faultproxy import Action, FaultProxy, Injection

UNAVAILABLE = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    b"Connection: close\r\nContent-Length: 2\r\n\r\n{}"
)


def _put(first: bytes) -> bool:
    return first.startswith(b"PUT ")


@pytest.fixture
def proxied(world: LabWorld, tmp_path: Path) -> Iterator[tuple[KubernetesCluster, FaultProxy]]:
    assert world.config.kubeconfig is not None
    upstream = urlparse(world.cluster.url)
    proxy = FaultProxy((upstream.hostname or "127.0.0.1", upstream.port or 80)).start()
    config = yaml.safe_load(world.config.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = proxy.url
    kubeconfig = tmp_path / "kubeconfig-proxied"
    kubeconfig.write_text(yaml.safe_dump(config))
    cluster = KubernetesCluster.connect(kubeconfig=kubeconfig, cluster_name="lab")
    try:
        yield cluster, proxy
    finally:
        cluster.close()
        proxy.stop()


def _scale() -> ScaleWorkload:
    return ScaleWorkload(target=deployment("frontend"), replicas=3, from_replicas=1)


def test_a_dry_run_that_meets_two_503s_is_previewed_on_the_third_try(
    proxied: tuple[KubernetesCluster, FaultProxy],
) -> None:
    cluster, proxy = proxied
    fault = Injection(match=_put, action=Action.RESPOND, response=UNAVAILABLE, count=2)
    proxy.injections.append(fault)
    slept: list[float] = []
    [result] = preview(cluster, cluster, SCOPE, [_scale()], sleep=slept.append)
    assert result.admitted, result.error
    assert "replicas" in result.diff
    assert (len(fault.faulted), len(fault.passed)) == (2, 1)
    assert len(slept) == 2


def test_a_dry_run_that_keeps_failing_is_refused_after_bounded_tries(
    proxied: tuple[KubernetesCluster, FaultProxy],
) -> None:
    cluster, proxy = proxied
    fault = Injection(match=_put, action=Action.RESPOND, response=UNAVAILABLE, count=10)
    proxy.injections.append(fault)
    [result] = preview(cluster, cluster, SCOPE, [_scale()], sleep=lambda _: None)
    assert not result.admitted and result.error is not None
    assert len(fault.faulted) == PREVIEW_TRIES
    assert "Service Unavailable" in result.error  # the planner gets the error
