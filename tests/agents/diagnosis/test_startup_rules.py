"""rules_startup on the principles it applies, without the change journal (so the recent-change
rule cannot carry the answer): a pull refused for credentials is a misconfiguration, not a
missing tag; a failing init container is an application misconfiguration; a readiness probe
dialling a port the container does not declare is a workload misconfiguration."""

from __future__ import annotations

from dataclasses import replace

from agents.model import ContainerState, Diagnosis
from tests.agents.diagnosis.conftest import Run
from tests.agents.diagnosis.world import hotel, shop


def top(d: Diagnosis) -> tuple[str, str]:
    return d.top.service, str(d.top.category)


def test_pull_refused_for_credentials_is_a_misconfiguration(run: Run) -> None:
    w = shop()
    image = "registry.lab.internal/lab/shop/shipping:2.0.2"
    w.spec_container("shipping")["image"] = image
    w.set_pod(
        "shipping",
        ready=False,
        state="waiting",
        reason="ImagePullBackOff",
        message=f'Back-off pulling image "{image}"',
        image=image,
    )
    w.event(
        "Pod",
        "shipping-7d9f8-0",
        "Failed",
        f'Failed to pull image "{image}": rpc error: code = Unknown desc = failed to pull and '
        f'unpack image "{image}": failed to resolve reference "{image}": unexpected status from '
        "HEAD request to https://registry.lab.internal/v2/lab/shop/shipping/manifests/2.0.2: "
        "401 Unauthorized",
    )
    d = run(w, "shipping", journal=False)
    assert top(d) == ("shipping", "virtualization/misconfiguration")
    assert d.top.confidence >= 0.85


def test_pull_of_a_missing_tag_stays_an_operation_error(run: Run) -> None:
    w = shop()
    image = "ghcr.io/lab/shop/shipping:9.9.9"
    w.set_pod("shipping", ready=False, state="waiting", reason="ErrImagePull", image=image)
    w.event(
        "Pod",
        "shipping-7d9f8-0",
        "Failed",
        f'Failed to pull image "{image}": rpc error: code = NotFound desc = failed to pull and '
        f'unpack image "{image}": failed to resolve reference "{image}": {image}: not found',
    )
    d = run(w, "shipping", journal=False)
    assert top(d) == ("shipping", "virtualization/operation_error")


def test_failing_init_container_is_an_application_misconfiguration(run: Run) -> None:
    w = hotel()
    pod = w.set_pod("profile", ready=False, state="waiting", reason="PodInitializing")
    gate = ContainerState(
        name="wait-for-mongodb-profile",
        image="busybox:1.36",
        ready=False,
        restart_count=3,
        state="waiting",
        reason="CrashLoopBackOff",
        message="back-off 40s restarting failed container=wait-for-mongodb-profile",
        last_terminated_reason="Error",
        last_exit_code=1,
    )
    w.pods["profile"] = [replace(pod, phase="Pending", init_containers=(gate,))]
    w.event(
        "Pod",
        pod.name,
        "BackOff",
        f"Back-off restarting failed container wait-for-mongodb-profile in pod {pod.name}",
    )
    d = run(w, "profile", journal=False)
    assert top(d) == ("profile", "application/misconfiguration")
    assert "init container wait-for-mongodb-profile keeps failing (exit 1)" in d.top.explanation


def test_readiness_probe_on_an_undeclared_port_is_a_misconfiguration(run: Run) -> None:
    w = hotel()
    w.set_pod("search", ready=False, state="running")
    w.event(
        "Pod",
        "search-7d9f8-0",
        "Unhealthy",
        "Readiness probe failed: dial tcp 10.244.1.9:8080: connect: connection refused",
    )
    d = run(w, "search", journal=False)
    assert top(d) == ("search", "virtualization/misconfiguration")
    assert "readiness probe dials port 8080" in d.top.explanation


def test_readiness_failing_on_the_served_port_is_not_a_misaimed_probe(run: Run) -> None:
    w = hotel()
    port = w.apps["search"].port
    w.set_pod("search", ready=False, state="running")
    w.event(
        "Pod",
        "search-7d9f8-0",
        "Unhealthy",
        f"Readiness probe failed: dial tcp 10.244.1.9:{port}: connect: connection refused",
    )
    d = run(w, "search", journal=False)
    assert not any("readiness probe dials" in h.explanation for h in d.hypotheses)
