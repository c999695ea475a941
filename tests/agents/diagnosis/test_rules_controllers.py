"""The offline reasoner on a rollout whose readiness probe dials a port the container does not
declare: the probe is named as the cause (virtualization misconfiguration) even when the same
rollout also changed the image, and a probe on a declared port is left to other rules. The rule
is `probe-misaimed` (agents/diagnosis/rules_startup.py), the same whether the probe was changed
alone or in a rollout that stalls past its progress deadline."""

from __future__ import annotations

from agents.diagnosis import suspects_of
from tests.agents.diagnosis.conftest import Run
from tests.agents.diagnosis.world import World, hotel

_PROBE = "spec.template.spec.containers[0].readinessProbe"


def _probe_rollout(w: World, service: str, port: int) -> None:
    w.snapshot("Deployment", service)
    container = w.deployments[service]["spec"]["template"]["spec"]["containers"][0]
    probe = {"tcpSocket": {"port": port}, "periodSeconds": 5}
    container["readinessProbe"] = probe
    image = str(container["image"])
    w.change(
        "Deployment",
        service,
        {
            _PROBE: (None, probe),
            "spec.template.spec.containers[0].image": (image, image.replace("1.0", "1.1")),
        },
    )
    w.set_pod(service, ready=False, state="running")
    w.event(
        "Pod",
        f"{service}-7d9f8-0",
        "Unhealthy",
        f"Readiness probe failed: dial tcp 10.244.1.7:{port}: connect: connection refused",
        count=12,
    )


def test_probe_on_an_undeclared_port_is_the_cause(run: Run) -> None:
    w = hotel()
    _probe_rollout(w, "frontend", 5001)  # frontend listens on 5000
    d = run(w, "frontend", "WorkloadReplicasUnavailable")
    assert (d.top.service, str(d.top.category)) == ("frontend", "virtualization/misconfiguration")
    assert "readiness probe dials port 5001" in d.top.explanation
    assert suspects_of(d)[0].source.endswith(f"Deployment/hotel-reservation/frontend#{_PROBE}")


def test_probe_on_the_declared_port_is_not_this_rule(run: Run) -> None:
    w = hotel()
    _probe_rollout(w, "frontend", 5000)  # refused on its own port: the process, not the probe
    d = run(w, "frontend", "WorkloadReplicasUnavailable")
    assert all("readiness probe dials" not in h.explanation for h in d.hypotheses)
