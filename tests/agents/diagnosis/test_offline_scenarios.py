"""The offline reasoner on each principle of docs/taxonomy.md, for both app shapes: the
root-cause service and category at the top, the suspect object and field named, the
callers' symptoms not mistaken for the cause."""

from __future__ import annotations

import pytest

from agents.diagnosis import suspects_of
from agents.model import Diagnosis
from tests.agents.diagnosis import faults
from tests.agents.diagnosis.conftest import Run
from tests.agents.diagnosis.world import hotel, shop


def top(d: Diagnosis) -> tuple[str, str]:
    return d.top.service, str(d.top.category)


def suspect_field(d: Diagnosis) -> str:
    found = suspects_of(d)
    assert found, f"no suspect evidence cited by {d.top}"
    return found[0].source


def test_target_port_on_a_callee_is_the_cause_not_the_alerting_frontend(run: Run) -> None:
    w = hotel()
    faults.target_port(w, "geo", 9999, caller="search", top="frontend")
    d = run(w, "frontend")
    assert top(d) == ("geo", "virtualization/misconfiguration")
    assert suspect_field(d) == "object:Service/hotel-reservation/geo#spec.ports[0].targetPort"
    s = suspects_of(d)[0]
    assert (s.current, s.last_known_good) == ("9999", "8083")
    assert d.top.confidence >= 0.8
    assert {"search", "frontend"} <= {h.service for h in d.hypotheses[1:]}


def test_target_port_without_journal_or_call_graph_still_localises(run: Run) -> None:
    w = shop()
    w.show_call_graph = False
    faults.target_port(w, "cart", 7071, caller="frontend", top="frontend-proxy")
    d = run(w, "frontend-proxy", journal=False)
    assert top(d) == ("cart", "virtualization/misconfiguration")
    assert suspect_field(d) == "object:Service/online-shop/cart#spec.ports[0].targetPort"


def test_service_selector_matching_no_pods(run: Run) -> None:
    w = hotel()
    faults.selector(w, "rate", caller="search")
    d = run(w, "search")
    assert top(d) == ("rate", "virtualization/misconfiguration")
    assert suspect_field(d).endswith("Service/hotel-reservation/rate#spec.selector")


@pytest.mark.parametrize("make", [hotel, shop])
def test_image_pull_after_an_image_change_is_an_operation_error(run: Run, make: object) -> None:
    w = make()  # type: ignore[operator]
    service, caller = (
        ("geo", "search") if w.namespace.startswith("hotel") else ("currency", "frontend")
    )
    faults.image_pull(w, service, caller)
    d = run(w, caller, "KubePodNotReady")
    assert top(d) == (service, "virtualization/operation_error")
    assert d.top.reason in {"ErrImagePull", "ImagePullBackOff"}
    assert suspect_field(d).endswith(f"/{service}#spec.template.spec.containers[0].image")
    assert suspects_of(d)[0].last_known_good is not None


def test_new_image_panicking_at_start_is_a_code_defect(run: Run) -> None:
    w = hotel()
    faults.bad_build(w, "rate", caller="search")
    d = run(w, "search", "KubePodCrashLooping")
    assert top(d) == ("rate", "application/code_defect")
    assert d.top.reason == "CrashLoopBackOff"
    assert suspect_field(d).endswith("/rate#spec.template.spec.containers[0].image")
    panic_logs = [e for e in d.evidence if "panic" in e.detail and "previous" in e.source]
    assert panic_logs, "the previous container's panic is part of the evidence"


def test_command_naming_a_missing_binary_is_an_application_misconfiguration(run: Run) -> None:
    w = shop()
    faults.missing_binary(w, "shipping")
    d = run(w, "shipping", "KubePodCrashLooping")
    assert top(d) == ("shipping", "application/misconfiguration")
    assert suspect_field(d).endswith("/shipping#spec.template.spec.containers[0].command")


def test_database_address_in_a_config_map_that_resolves_nowhere(run: Run) -> None:
    w = hotel()
    faults.db_address(w, "geo", "hotel-config", "GEO_MONGO_ADDR", "mongodb-gep:27017")
    d = run(w, "geo", "KubePodCrashLooping")
    assert top(d) == ("geo", "application/misconfiguration")
    assert suspect_field(d) == "object:ConfigMap/hotel-reservation/hotel-config#data.GEO_MONGO_ADDR"
    s = suspects_of(d)[0]
    assert (s.current, s.last_known_good) == ("mongodb-gep:27017", "mongodb-geo:27017")


def test_address_typo_at_runtime_blames_the_caller_setting(run: Run) -> None:
    w = shop()
    faults.runtime_address(w, "frontend", "shop-config", "CURRENCY_ADDR", "currencyy:7001")
    d = run(w, "frontend")
    assert top(d) == ("frontend", "application/misconfiguration")
    assert suspect_field(d) == "object:ConfigMap/online-shop/shop-config#data.CURRENCY_ADDR"


def test_database_refusing_credentials_is_authentication_on_the_database(run: Run) -> None:
    w = hotel()
    faults.revoke_auth(w, "geo", "mongodb-geo", "geo-db")
    w.log("search", "error calling geo: rpc error: code = Unknown desc = not authorized on geo-db")
    w.sick("search", errors=0.5)
    d = run(w, "search")
    assert top(d) == ("mongodb-geo", "application/authentication")
    assert "geo" in [h.service for h in d.hypotheses[:3]]


def test_credentials_changed_on_the_client_blames_the_client(run: Run) -> None:
    w = hotel()
    faults.revoke_auth(w, "geo", "mongodb-geo", "geo-db")
    w.change(
        "Deployment",
        "geo",
        {"spec.template.spec.containers[0].env[2].value": ("[REDACTED]", "[REDACTED]")},
    )
    w.change("Deployment", "geo", {"spec.template.spec.containers[0].env[DB_PASSWORD]": ("a", "b")})
    d = run(w, "geo")
    assert top(d) == ("geo", "application/authentication")
    assert d.hypotheses[1].service == "mongodb-geo"


@pytest.mark.parametrize(
    ("make", "service", "caller"),
    [(hotel, "mongodb-rate", "rate"), (shop, "product-catalog", "frontend")],
)
def test_replicas_lowered_by_a_person_is_an_operation_error(
    run: Run, make: object, service: str, caller: str
) -> None:
    w = make()  # type: ignore[operator]
    w.show_call_graph = False
    faults.scale_down(w, service, caller)
    d = run(w, caller)
    assert top(d) == (service, "virtualization/operation_error")
    assert suspect_field(d).endswith(f"/{service}#spec.replicas")
    assert suspects_of(d)[0].last_known_good == "1"


def test_replicas_lowered_by_the_autoscaler_is_not_an_operation(run: Run) -> None:
    w = hotel()
    w.deployments["mongodb-rate"]["spec"]["replicas"] = 2
    w.change(
        "Deployment", "mongodb-rate", {"spec.replicas": (3, 2)}, manager="kube-controller-manager"
    )
    d = run(w, "rate")
    assert d.top.category.type != "operation_error" or d.top.service != "mongodb-rate"


def test_timeouts_to_a_healthy_unchanged_service_are_the_network(run: Run) -> None:
    w = hotel()
    faults.network_delay(w, "geo", caller="search")
    d = run(w, "search", "HighLatency")
    assert top(d) == ("geo", "virtualization/network")
    assert d.top.reason is None  # the cluster prints no reason for a slow network path


def test_latency_with_cpu_at_a_lowered_limit_is_cpu_limit_misconfiguration(run: Run) -> None:
    w = hotel()
    faults.cpu_limit(w, "geo", caller="search")
    d = run(w, "search", "HighLatency")
    assert top(d) == ("geo", "virtualization/misconfiguration")
    assert suspect_field(d).endswith("/geo#spec.template.spec.containers[0].resources.limits.cpu")
    assert any(e.source.startswith("cpu-saturation/") for e in d.evidence)


def test_oom_killed_below_the_working_set_is_memory_limit_misconfiguration(run: Run) -> None:
    w = shop()
    faults.oom(w, "recommendation")
    d = run(w, "recommendation", "KubePodCrashLooping")
    assert top(d) == ("recommendation", "virtualization/misconfiguration")
    assert d.top.reason == "OOMKilled"
    assert suspect_field(d).endswith("#spec.template.spec.containers[0].resources.limits.memory")


def test_node_selector_matching_no_node_is_virtualization_misconfiguration(run: Run) -> None:
    w = shop()
    faults.node_selector(w, "checkout")
    d = run(w, "checkout", "KubePodNotScheduled")
    assert top(d) == ("checkout", "virtualization/misconfiguration")
    assert d.top.reason == "FailedScheduling"
    assert suspect_field(d).endswith("/checkout#spec.template.spec.nodeSelector")


def test_quota_refusing_pods_is_a_quota_misconfiguration(run: Run) -> None:
    w = hotel()
    faults.quota(w, "reservation")
    d = run(w, "reservation", "KubeDeploymentReplicasMismatch")
    assert top(d) == ("reservation", "virtualization/misconfiguration")
    assert d.top.reason == "FailedCreate"
    assert suspect_field(d) == "object:ResourceQuota/hotel-reservation/compute#spec.hard.pods"


@pytest.mark.parametrize(
    ("flag_name", "variant", "service", "message", "errors"),
    [
        (
            "adFailure",
            "on",
            "ad",
            "GetAds Failed with status UNAVAILABLE: ad service failure flag enabled",
            0.1,
        ),
        (
            "paymentFailure",
            "50%",
            "payment",
            "Payment request failed. Invalid token. app.loyalty.level=gold",
            0.5,
        ),
    ],
)
def test_feature_flag_turned_on_is_an_application_misconfiguration(
    run: Run, flag_name: str, variant: str, service: str, message: str, errors: float
) -> None:
    w = shop()
    caller = "frontend" if service == "ad" else "checkout"
    faults.flag(w, flag_name, variant, service, caller, message, errors)
    d = run(w, caller)
    assert top(d) == (service, "application/misconfiguration")
    s = suspects_of(d)[0]
    assert s.source == "object:ConfigMap/online-shop/flagd-config#data.demo.flagd.json"
    assert flag_name in s.reason


def test_pods_killed_without_a_spec_change_is_an_operation_error(run: Run) -> None:
    w = hotel()
    faults.pod_kill(w, "profile", caller="frontend")
    d = run(w, "frontend")
    assert top(d) == ("profile", "virtualization/operation_error")


def test_without_metrics_pod_level_faults_are_still_found(run: Run) -> None:
    w = shop()
    faults.oom(w, "cart")
    d = run(w, "cart", "KubePodCrashLooping", metrics=False)
    assert top(d) == ("cart", "virtualization/misconfiguration")
    assert any("no metrics source" in e.detail for e in d.evidence)


def test_a_healthy_namespace_yields_a_low_confidence_no_fault(run: Run) -> None:
    d = run(hotel(), "frontend")
    assert str(d.top.category) == "application/none"
    assert d.top.confidence <= 0.2


def test_every_hypothesis_cites_evidence_in_range_and_the_result_is_offline(run: Run) -> None:
    w = hotel()
    faults.bad_build(w, "geo", caller="search")
    d = run(w, "search")
    assert d.reasoner == "offline" and d.fallback_reason is None and d.tokens == 0
    assert len(d.hypotheses) >= 3
    for h in d.hypotheses:
        assert all(0 <= i < len(d.evidence) for i in h.evidence)
    assert d.top.evidence, "the top hypothesis rests on evidence"
    assert 0 < d.evidence_tokens <= 24_000


def test_a_flag_that_leaks_memory_is_the_flag_not_the_memory_limit(run: Run) -> None:
    w = shop()
    faults.oom(w, "recommendation")
    w.changes.clear()  # the memory limit did not change: the flag did
    w.deployments["recommendation"] = w.lkg.pop(("Deployment", "recommendation"))
    faults.flag(
        w,
        "recommendationCacheFailure",
        "on",
        "recommendation",
        "frontend",
        "cache miss: growing the product cache",
        0.0,
    )
    d = run(w, "recommendation", "KubePodCrashLooping")
    assert top(d) == ("recommendation", "application/misconfiguration")
    assert "recommendationCacheFailure" in suspects_of(d)[0].reason
    assert "flagd" in [h.service for h in d.hypotheses]


def test_pods_deleted_and_replaced_without_a_spec_change_is_an_operation_error(run: Run) -> None:
    w = shop()
    faults.pods_deleted(w, "email", caller="checkout")
    d = run(w, "checkout")
    assert top(d) == ("email", "virtualization/operation_error")


def test_cpu_saturation_from_a_promql_query_without_a_journal(run: Run) -> None:
    from agents.diagnosis.handlers import SaturationStep
    from agents.model import Series, SeriesPoint
    from tests.agents.diagnosis.world import T0

    w = hotel()
    w.sick("rate", p99=950.0)
    w.sick("search", p99=1200.0)
    promql = (SaturationStep().cpu_ratio_promql or "").replace("{namespace}", w.namespace)
    w.queries[promql] = [
        Series(
            name="ratio", labels={"pod": "rate-7d9f8-0"}, points=(SeriesPoint(at=T0, value=0.99),)
        )
    ]
    d = run(w, "search", "HighLatency", journal=False)
    assert top(d) == ("rate", "virtualization/misconfiguration")
    assert suspect_field(d).endswith("/rate#spec.template.spec.containers[0].resources.limits.cpu")
