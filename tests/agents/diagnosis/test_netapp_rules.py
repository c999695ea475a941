"""The offline reasoner on the principles of rules_netapp: an OOMKill that began with a new
image (the limit untouched) is a defect of the new version; callers timing out on a healthy
service that a NetworkPolicy guards without admitting them are dropped by that policy."""

from __future__ import annotations

from agents.diagnosis import suspects_of
from agents.model import Diagnosis
from tests.agents.diagnosis import faults
from tests.agents.diagnosis.conftest import Run
from tests.agents.diagnosis.world import World, hotel, shop


def top(d: Diagnosis) -> tuple[str, str]:
    return d.top.service, str(d.top.category)


def _oom_after_release(w: World, service: str) -> None:
    w.snapshot("Deployment", service)
    c = w.spec_container(service)
    old, new = c["image"], c["image"].rsplit(":", 1)[0] + ":2.0.3"
    c["image"] = new
    w.change("Deployment", service, {"spec.template.spec.containers[0].image": (old, new)})
    w.set_pod(
        service,
        ready=False,
        state="waiting",
        reason="CrashLoopBackOff",
        restart_count=2,
        last_terminated_reason="OOMKilled",
        last_exit_code=137,
    )


def test_oom_after_an_image_change_with_the_limit_untouched_is_a_code_defect(run: Run) -> None:
    w = shop()
    _oom_after_release(w, "recommendation")
    d = run(w, "recommendation", "KubePodCrashLooping")
    assert top(d) == ("recommendation", "application/code_defect")
    found = suspects_of(d)
    assert found and found[0].source.endswith("#spec.template.spec.containers[0].image")
    assert "unchanged" in d.top.explanation


def test_oom_after_a_limit_change_is_still_the_limit(run: Run) -> None:
    """A release on top of a lowered limit: the limit moved, so it is the suspect."""
    w = shop()
    faults.oom(w, "recommendation")
    c = w.spec_container("recommendation")
    old, new = c["image"], c["image"].rsplit(":", 1)[0] + ":2.0.3"
    c["image"] = new
    w.change(
        "Deployment",
        "recommendation",
        {"spec.template.spec.containers[0].image": (old, new)},
        minutes_before=1.0,
    )
    d = run(w, "recommendation", "KubePodCrashLooping")
    assert top(d) == ("recommendation", "virtualization/misconfiguration")


def _policy(w: World, name: str, guards: str, admits: str) -> None:
    w.network_policies.append(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": w.namespace},
            "spec": {
                "podSelector": {"matchLabels": {w.label: guards}},
                "policyTypes": ["Ingress"],
                "ingress": [{"from": [{"podSelector": {"matchLabels": {w.label: admits}}}]}],
            },
        }
    )


def test_timeouts_to_a_service_a_policy_guards_without_admitting_the_caller(run: Run) -> None:
    w = hotel()
    faults.network_delay(w, "geo", caller="search")
    _policy(w, "allow-web-to-geo", guards="geo", admits="frontend")
    d = run(w, "search", "HighLatency")
    assert top(d) == ("geo", "virtualization/network")
    assert "NetworkPolicy allow-web-to-geo" in d.top.explanation
    assert d.top.confidence >= 0.85
    assert any(e.source.endswith("/allow-web-to-geo") for e in d.evidence)


def test_a_policy_that_admits_the_caller_is_not_blamed(run: Run) -> None:
    w = hotel()
    faults.network_delay(w, "geo", caller="search")
    _policy(w, "allow-search-to-geo", guards="geo", admits="search")
    d = run(w, "search", "HighLatency")
    assert top(d) == ("geo", "virtualization/network")
    assert "NetworkPolicy" not in d.top.explanation


def test_lookups_the_cluster_nameserver_does_not_answer_are_cluster_dns(run: Run) -> None:
    w = hotel()
    for callee in ("search", "user", "profile"):
        w.log(
            "frontend",
            f"error calling {callee}: rpc error: code = Unavailable desc = connection error: "
            f'desc = "transport: Error while dialing: dial tcp: lookup {callee} on '
            '10.96.0.10:53: read udp 10.244.0.1:53421->10.96.0.10:53: i/o timeout"',
        )
    w.sick("frontend", errors=0.99, p99=5000.0)
    d = run(w, "frontend", "HighErrorRate")
    assert top(d) == ("coredns", "virtualization/network")
    assert "10.96.0.10" in d.top.explanation


def test_a_name_that_does_not_exist_is_not_cluster_dns(run: Run) -> None:
    w = hotel()
    w.log(
        "frontend",
        "error calling search: dial tcp: lookup search-v2 on 10.96.0.10:53: no such host",
    )
    w.sick("frontend", errors=0.99)
    d = run(w, "frontend", "HighErrorRate")
    assert d.top.service != "coredns"
