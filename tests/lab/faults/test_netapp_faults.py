"""Faults that show only with time (a leaking release, a ConfigMap edit waiting for the next
restart): each is injected into a running lab, is latent at first, shows its symptoms in pod
states, events, logs and metrics once time has done its part, and is then fixed by kubectl —
never by the injector — after which the symptoms clear and the mitigation oracle passes."""

from __future__ import annotations

from collections.abc import Callable

from lab.faults import fault
from tests.lab.faults.conftest import HOTEL, SHOP, Lab, error_ratio, healthy

MakeLab = Callable[..., Lab]


def _ns(lab: Lab) -> str:
    return f'namespace="{lab.namespace}"'


def _working_set(lab: Lab, workload: str) -> float:
    series = lab.metric(f"container_memory_working_set_bytes{{{_ns(lab)}}}")
    values = [v for pod, v in series.items() if pod.startswith(f"{workload}-")]
    assert values, series
    return max(values)


def _last_terminated(lab: Lab, workload: str) -> set[str]:
    return {
        cs["lastState"]["terminated"].get("reason", "")
        for cs in lab.container_states(workload)
        if "terminated" in (cs.get("lastState") or {})
    }


def _restarts(lab: Lab, workload: str) -> int:
    return sum(cs.get("restartCount", 0) for cs in lab.container_states(workload))


def _waiting(lab: Lab, workload: str) -> set[str]:
    return {
        cs["state"]["waiting"].get("reason", "")
        for cs in lab.container_states(workload)
        if "waiting" in cs["state"]
    }


def test_slow_memory_leak(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL)
    limit_before = lab.kubectl(
        "get", "deployment/rate", "-o", "jsonpath={.spec.template.spec.containers[0].resources}"
    )
    injection = fault("slow-memory-leak").inject(lab.world, app=HOTEL)
    assert injection.target == "rate" and injection.params == {"tag": "1.1.1"}
    assert str(injection.truth.category) == "application/code_defect"

    # Latent at first: the new pod serves, but its working set climbs with uptime.
    lab.advance(30)
    early = _working_set(lab, "rate")
    lab.advance(60)
    later = _working_set(lab, "rate")
    assert later > early + 30 * 2**20, (early, later)
    assert _restarts(lab, "rate") == 0 and error_ratio(lab, "search") == 0.0

    # Minutes later it reaches the (unchanged) limit and the kernel kills it; then again.
    lab.advance(240)
    assert "OOMKilled" in _last_terminated(lab, "rate")
    assert _restarts(lab, "rate") >= 1
    oom = lab.metric(
        f'kube_pod_container_status_last_terminated_reason{{{_ns(lab)},reason="OOMKilled"}}'
    )
    assert any(pod.startswith("rate-") for pod in oom), oom
    assert "Starting server at :8084" in lab.logs("rate", previous=True)
    assert (
        lab.kubectl(
            "get", "deployment/rate", "-o", "jsonpath={.spec.template.spec.containers[0].resources}"
        )
        == limit_before
    )
    assert not lab.check(injection).mitigated

    assert "rolled back" in lab.kubectl("rollout", "undo", "deployment/rate")
    verdict = lab.settle(injection)
    assert verdict.mitigated, verdict.problems
    healthy(lab, "rate", "search")
    # The old build holds steady: no kill in the next five minutes.
    restarts = _restarts(lab, "rate")
    lab.advance(300)
    assert _restarts(lab, "rate") == restarts
    assert _working_set(lab, "rate") < 128 * 2**20


def test_configmap_without_restart(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL)
    injection = fault("configmap-without-restart").inject(lab.world, app=HOTEL)
    assert injection.target == "reservation"
    assert injection.params == {"address": "mongodb-reservation-v2:27017", "restart_after_s": 60.0}
    old_pod = {p["metadata"]["name"] for p in lab.pods("reservation")}

    # The running pod read its env at start: the edit changes nothing yet.
    lab.advance(40)
    assert {p["metadata"]["name"] for p in lab.pods("reservation")} == old_pod
    assert all(cs["ready"] for cs in lab.container_states("reservation"))
    assert error_ratio(lab, "reservation") == 0.0

    # A node recycle replaces the pod; the new one reads the new address and cannot start.
    lab.advance(40)
    assert {p["metadata"]["name"] for p in lab.pods("reservation")}.isdisjoint(old_pod)
    assert _waiting(lab, "reservation") & {"CrashLoopBackOff"} or "Error" in _last_terminated(
        lab, "reservation"
    )
    previous = lab.logs("reservation", previous=True)
    assert "Read database URL: mongodb-reservation-v2:27017" in previous
    assert "no reachable servers" in previous
    assert error_ratio(lab, "frontend") > 0.1
    assert not lab.check(injection).mitigated

    # The fix: put the value back and restart, so the pods read it again.
    lab.kubectl(
        "patch",
        "configmap/hotel-config",
        "--type=merge",
        "-p",
        '{"data": {"RESERVATION_MONGO_ADDR": "mongodb-reservation:27017"}}',
    )
    lab.kubectl("rollout", "restart", "deployment/reservation")
    verdict = lab.settle(injection)
    assert verdict.mitigated, verdict.problems
    healthy(lab, "reservation", "frontend")


def test_configmap_without_restart_shop(make_lab: MakeLab) -> None:
    lab = make_lab(SHOP)
    injection = fault("configmap-without-restart").inject(
        lab.world, app=SHOP, params={"restart_after_s": 20}
    )
    assert injection.target == "cart"
    assert injection.params["address"] == "valkey-cart-v2:6379"
    lab.advance(10)
    assert error_ratio(lab, "cart") == 0.0
    lab.advance(30)
    # The replacement starts (the cache is dialled per request) and fails its requests.
    assert error_ratio(lab, "cart") > 0.5
    assert "valkey-cart-v2" in lab.logs("cart")

    lab.kubectl(
        "patch",
        "configmap/shop-config",
        "--type=merge",
        "-p",
        '{"data": {"VALKEY_ADDR": "valkey-cart:6379"}}',
    )
    # Putting the value back alone is not enough: the running pod keeps what it read.
    lab.advance(20)
    assert error_ratio(lab, "cart") > 0.5
    lab.kubectl("rollout", "restart", "deployment/cart")
    verdict = lab.settle(injection)
    assert verdict.mitigated, verdict.problems
    healthy(lab, "cart", "checkout")


def test_network_policy_deny(make_lab: MakeLab) -> None:
    lab = make_lab(HOTEL)
    injection = fault("network-policy-deny").inject(lab.world, app=HOTEL)
    assert injection.target == "geo" and not injection.truth.undoable_fix
    assert str(injection.truth.category) == "virtualization/network"
    lab.advance(10)
    assert "allow-web-to-geo" in lab.kubectl("get", "networkpolicies")
    # The callee is healthy; its caller's dials are dropped and time out.
    assert all(cs["ready"] for cs in lab.container_states("geo"))
    assert "i/o timeout" in lab.logs("search") or "deadline exceeded" in lab.logs("search")
    timeouts = lab.metric(
        f'sum by (peer) (rate(http_client_requests_total{{{_ns(lab)},peer="geo",code="504"}}[10s]))'
    )
    assert timeouts and next(iter(timeouts.values())) > 1.0
    assert error_ratio(lab, "search") > 0.9
    assert not lab.check(injection).mitigated

    # A rule for the missed caller is the person's fix (deleting the policy would do too).
    policy = lab.world.api.get("NetworkPolicy", HOTEL, "allow-web-to-geo")
    assert policy is not None
    label = next(iter(policy["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"]))
    lab.kubectl(
        "patch",
        "networkpolicy/allow-web-to-geo",
        "--type=json",
        "-p",
        '[{"op": "add", "path": "/spec/ingress/0/from/-", "value": '
        f'{{"podSelector": {{"matchLabels": {{"{label}": "search"}}}}}}}}]',
    )
    verdict = lab.settle(injection)
    assert verdict.mitigated, verdict.problems
    healthy(lab, "geo", "search")


def test_network_policy_semantics(make_lab: MakeLab) -> None:
    """A policy selecting no pod changes nothing; one with no ingress rules denies all."""
    lab = make_lab(SHOP, kubectl=False)
    injection = fault("network-policy-deny").inject(lab.world, app=SHOP, params={"allow": "none"})
    lab.advance(10)
    assert error_ratio(lab, "checkout") > 0.9
    # frontend is denied too now: its currency calls fail (they are optional for the page).
    sel = f'{_ns(lab)},peer="currency",code="504"'
    failed = lab.metric(f"sum by (service) (rate(http_client_requests_total{{{sel}}}[10s]))")
    assert failed.get("frontend", 0.0) > 0.1 and failed.get("checkout", 0.0) > 0.1, failed
    lab.world.api.patch(
        "NetworkPolicy",
        SHOP,
        "allow-web-to-currency",
        {"spec": {"podSelector": {"matchLabels": {"no-such": "pod"}}}},
        patch_type="merge",
        field_manager="kubectl",
    )
    verdict = lab.settle(injection)
    assert verdict.mitigated, verdict.problems


def test_cluster_dns_failing(make_lab: MakeLab) -> None:
    lab = make_lab(SHOP)
    injection = fault("cluster-dns-failing").inject(lab.world, app=SHOP)
    assert injection.target == "coredns" and injection.truth.root_causes == ("coredns",)
    assert not injection.truth.undoable_fix
    lab.advance(10)
    assert not [
        p for p in lab.world.api.list("Pod", "kube-system") if "coredns" in p["metadata"]["name"]
    ]
    assert lab.world.api.get("Endpoints", "kube-system", "kube-dns").get("subsets") in (None, [])  # type: ignore[union-attr]
    # Every app pod stays Ready; only lookups of Service names fail.
    assert all(
        cs["ready"] for p in ("frontend", "cart", "currency") for cs in lab.container_states(p)
    )
    logs = lab.logs("frontend")
    assert "on 10.96.0.10:53" in logs and "i/o timeout" in logs
    assert error_ratio(lab, "frontend-proxy") > 0.5  # the entry: it cannot find frontend
    assert not lab.check(injection).mitigated

    out = lab.kubectl("-n", "kube-system", "scale", "deployment/coredns", "--replicas=2")
    assert "scaled" in out
    verdict = lab.settle(injection)
    assert verdict.mitigated, verdict.problems
    healthy(lab, "frontend", "checkout", "currency")
