"""The rules are declared once: the committed Prometheus rules file is what they generate,
real promtool accepts it, and every rule runs in-process."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from lab.alerts.evaluator import AlertEvaluator, evaluate_expr
from lab.alerts.promfile import RULES_FILE, default_groups, render_rules
from lab.alerts.rules import POD_OWNER_REGEX, AlertRule, ServiceFrom, Severity, all_rules
from lab.sim.promql import Evaluator
from lab.sim.world import LabWorld, WorldConfig
from tests.conftest import require_binary

ROOT = Path(__file__).resolve().parents[3]


def test_committed_rules_file_is_the_generated_one() -> None:
    committed = (ROOT / RULES_FILE).read_text(encoding="utf-8")
    assert committed == render_rules(default_groups()), (
        "manifests/prometheus/stratus-lab-rules.yml is stale: "
        "run `python -m lab.alerts > manifests/prometheus/stratus-lab-rules.yml`"
    )


def test_promtool_accepts_the_rules_file() -> None:
    promtool = require_binary("promtool")
    result = subprocess.run(
        [promtool, "check", "rules", str(ROOT / RULES_FILE)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 13 rules found" in result.stdout


def test_the_example_configs_are_valid() -> None:
    promtool = require_binary("promtool")
    amtool = require_binary("amtool")
    prom = subprocess.run(
        [promtool, "check", "config", str(ROOT / "manifests/prometheus/prometheus.yml")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert prom.returncode == 0, prom.stdout + prom.stderr
    assert "SUCCESS: 13 rules found" in prom.stdout  # it loads the generated rules file
    am = subprocess.run(
        [amtool, "check-config", str(ROOT / "manifests/alertmanager/alertmanager.yml")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert am.returncode == 0, am.stdout + am.stderr
    config = yaml.safe_load((ROOT / "manifests/alertmanager/alertmanager.yml").read_text())
    assert config["route"]["group_by"] == ["namespace"]
    hook = config["receivers"][0]["webhook_configs"][0]
    assert hook["url"].endswith("/alerts/alertmanager") and hook["send_resolved"] is True
    assert hook["http_config"]["authorization"]["type"] == "Bearer"
    assert hook["http_config"]["authorization"]["credentials_file"]


def test_every_alert_carries_namespace_service_and_severity() -> None:
    doc = yaml.safe_load((ROOT / RULES_FILE).read_text(encoding="utf-8"))
    names = [r["alert"] for g in doc["groups"] for r in g["rules"]]
    assert {
        "ServiceHighErrorRatio",
        "ServiceCallErrors",
        "ServiceHighLatency",
        "ContainerCrashLooping",
        "ContainerImagePullFailing",
        "ContainerOOMKilled",
        "PodNotReady",
        "PodUnschedulable",
        "WorkloadReplicasUnavailable",
    } <= set(names)
    for group in doc["groups"]:
        for rule in group["rules"]:
            assert rule["labels"]["severity"] in ("critical", "warning")
            expr = rule["expr"]
            # `service` is either grouped by or derived; `namespace` is always kept.
            assert "by (namespace" in expr, rule["alert"]
            assert "service" in expr, rule["alert"]


def test_every_rule_runs_in_process_and_yields_the_labels() -> None:
    rules = all_rules(default_groups())
    with LabWorld(WorldConfig(apps=("hotel-reservation", "online-shop"), seed=0)) as world:
        world.wait_healthy(timeout_s=120)
        world.advance(30)
        evaluator = Evaluator(world.sim.store)
        at = world.clock.now().timestamp()
        for rule in rules:
            evaluate_expr(rule, evaluator, at)  # raises QueryError if the subset cannot
        # An always-true variant of each Kubernetes rule shows the labels they produce.
        probe = AlertRule(
            name="Probe",
            expr="max by (namespace, pod, container) (kube_pod_container_status_ready) >= 0",
            for_s=0,
            severity=Severity.WARNING,
            summary="",
            description="",
            service_from=ServiceFrom(label="pod", regex=POD_OWNER_REGEX),
        )
        samples = evaluate_expr(probe, evaluator, at)
        services = {lbls["service"] for lbls, _ in samples if lbls["namespace"] == "online-shop"}
        assert services == set(world.bundles[1].model.services)
        AlertEvaluator(world.sim.store, rules).evaluate(world.clock.now())
