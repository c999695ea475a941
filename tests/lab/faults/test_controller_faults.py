"""Faults that misconfigure a controller (an HPA, a rollout's strategy and deadline): each is
injected into a running lab, the controllers act on it, and what a user can see — or the
absence of it — is read from cluster state and metrics; then a person's kubectl fix puts the
workload back and the mitigation oracle passes."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable

import pytest

from lab.faults import fault
from tests.lab.faults.conftest import HOTEL, SHOP, Lab, error_ratio, healthy

MakeLab = Callable[..., Lab]


def _ns(lab: Lab) -> str:
    return f'namespace="{lab.namespace}"'


def _replicas(lab: Lab, name: str) -> int:
    dep = lab.world.api.get("Deployment", lab.namespace, name)
    assert dep is not None
    return int(dep["spec"]["replicas"])


@pytest.mark.parametrize("app", [HOTEL, SHOP])
def test_hpa_max_too_low(make_lab: MakeLab, app: str) -> None:
    lab = make_lab(app)
    injection = fault("hpa-max-too-low").inject(lab.world, app=app)
    assert injection.target == "frontend" and injection.params == {"max": 1}
    lab.advance(20)
    # The HPA controller clamps the Deployment to maxReplicas, as a real one does even with
    # no metrics API answering.
    assert _replicas(lab, "frontend") == 1
    dep = lab.world.api.get("Deployment", lab.namespace, "frontend")
    assert dep is not None and dep["status"]["replicas"] == 1
    assert (
        "SuccessfulRescale",
        "New size: 1; reason: Current number of replicas above Spec.MaxReplicas",
    ) in lab.events("frontend")
    assert lab.metric(f'kube_deployment_spec_replicas{{{_ns(lab)},deployment="frontend"}}') == {
        "frontend": 1.0
    }
    # At the lab's load one frontend replica has CPU to spare: spare capacity is gone, but no
    # caller sees an error or a slow answer, so the oracle finds nothing to mitigate.
    assert error_ratio(lab, "frontend") == 0.0
    assert lab.check(injection).mitigated

    lab.kubectl("patch", "hpa/frontend", "-p", '{"spec": {"minReplicas": 2, "maxReplicas": 2}}')
    lab.advance(20)
    assert _replicas(lab, "frontend") == 2
    assert any(
        r == "SuccessfulRescale" and "below Spec.MinReplicas" in m
        for r, m in lab.events("frontend")
    )
    assert lab.settle(injection).mitigated
    healthy(lab, "frontend")


@pytest.mark.parametrize("app", [HOTEL, SHOP])
def test_rollout_stuck_progress_deadline(make_lab: MakeLab, app: str) -> None:
    lab = make_lab(app)
    injection = fault("rollout-stuck-progress-deadline").inject(lab.world, app=app)
    assert injection.params["deadline"] == 60
    port = injection.params["probe_port"]
    lab.advance(75)
    dep = lab.world.api.get("Deployment", lab.namespace, "frontend")
    assert dep is not None
    progressing = {c["type"]: c for c in dep["status"]["conditions"]}["Progressing"]
    assert (progressing["status"], progressing["reason"]) == ("False", "ProgressDeadlineExceeded")
    # What `kubectl rollout status` (and a CI pipeline waiting on it) reports.
    with pytest.raises(AssertionError, match='deployment "frontend" exceeded its progress'):
        lab.kubectl("rollout", "status", "deployment/frontend", "--watch=false")
    # maxUnavailable 1 let one old pod go; the new ones run but never turn Ready.
    assert lab.metric(
        f'kube_deployment_status_replicas_unavailable{{{_ns(lab)},deployment="frontend"}}'
    ) == {"frontend": 1.0}
    unready = [cs for cs in lab.container_states("frontend") if not cs["ready"]]
    assert len(unready) == 2 and all("running" in cs["state"] for cs in unready)
    assert any(
        r == "Unhealthy" and f":{port}: connect: connection refused" in m
        for r, m in lab.events("frontend-")
    )
    assert not lab.check(injection).mitigated

    assert "rolled back" in lab.kubectl("rollout", "undo", "deployment/frontend")
    verdict = lab.settle(injection)
    assert verdict.mitigated, verdict.problems
    healthy(lab, "frontend")
    assert _replicas(lab, "frontend") == 2


def _drain(lab: Lab, node: str, *, timeout_s: int) -> subprocess.CompletedProcess[str]:
    """`kubectl drain` while lab time moves on (it waits for evicted pods to be gone)."""
    assert lab.kubectl_binary is not None
    proc = subprocess.Popen(
        [
            lab.kubectl_binary,
            f"--kubeconfig={lab.kubeconfig}",
            f"--cache-dir={lab.home / 'cache'}",
            "drain",
            node,
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            f"--timeout={timeout_s}s",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(lab.home)},
    )
    while proc.poll() is None:
        lab.advance(1)
        time.sleep(0.2)
    out, err = proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize("app", [HOTEL, SHOP])
def test_pdb_blocks_drain(make_lab: MakeLab, app: str) -> None:
    lab = make_lab(app)
    injection = fault("pdb-blocks-drain").inject(lab.world, app=app)
    node = str(injection.params["node"])
    assert "refused: Cannot evict pod" in injection.changes[-1]
    lab.advance(20)
    pdb = lab.world.api.get("PodDisruptionBudget", lab.namespace, "frontend")
    assert pdb is not None
    assert pdb["status"]["disruptionsAllowed"] == 0
    assert pdb["status"]["currentHealthy"] == pdb["status"]["desiredHealthy"] == 2
    header, row = lab.kubectl("get", "pdb", "frontend").splitlines()
    assert header.split()[:6] == ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED"]
    assert row.split()[:4] == ["frontend", "2", "N/A", "0"], row
    # The drain cannot finish: the budget refuses the frontend pod on the node, every retry.
    stalled = _drain(lab, node, timeout_s=3)
    assert stalled.returncode != 0
    assert "Cannot evict pod as it would violate the pod's disruption budget" in stalled.stderr
    on_node = [
        p["metadata"]["name"]
        for p in lab.world.api.list("Pod", lab.namespace)
        if p["spec"].get("nodeName") == node and not p["metadata"].get("deletionTimestamp")
    ]
    assert on_node and all(n.startswith("frontend-") for n in on_node), on_node
    # Nothing a user sees: the budget only stops voluntary disruptions.
    assert error_ratio(lab, "frontend") == 0.0
    assert lab.check(injection).mitigated

    lab.kubectl("patch", "pdb/frontend", "-p", '{"spec": {"minAvailable": 1}}')
    lab.advance(5)
    done = _drain(lab, node, timeout_s=60)
    assert done.returncode == 0, done.stderr
    assert f"node/{node} drained" in done.stdout
    assert not [
        p
        for p in lab.world.api.list("Pod", lab.namespace)
        if p["spec"].get("nodeName") == node and not p["metadata"].get("deletionTimestamp")
    ]
    lab.kubectl("uncordon", node)
    verdict = lab.settle(injection)
    assert verdict.mitigated, verdict.problems
    healthy(lab, "frontend")


def _job_pods(lab: Lab, job: str) -> list[dict[str, object]]:
    return [
        p
        for p in lab.world.api.list("Pod", lab.namespace, label_selector=f"job-name={job}")
        if not p["metadata"].get("deletionTimestamp")
    ]


@pytest.mark.parametrize(("app", "service"), [(HOTEL, "geo"), (SHOP, "cart")])
def test_job_keeps_failing(make_lab: MakeLab, app: str, service: str) -> None:
    lab = make_lab(app)
    injection = fault("job-keeps-failing").inject(lab.world, app=app)
    assert injection.target == service
    job = f"{service}-migrate"
    lab.advance(40)
    # restartPolicy Never: each attempt is a new pod that fails to start, retried after
    # 10 s, then 20 s.
    pods = _job_pods(lab, job)
    assert len(pods) >= 2
    assert all(p["status"]["phase"] == "Failed" for p in pods)  # type: ignore[index]
    terminated = [
        cs["state"]["terminated"]
        for p in pods
        for cs in p["status"]["containerStatuses"]  # type: ignore[index]
    ]
    assert all(t["reason"] == "StartError" and t["exitCode"] == 128 for t in terminated)
    assert 'exec: "migrate": executable file not found in $PATH' in terminated[0]["message"]
    assert sum(1 for r, _ in lab.events(f"{job}") if r == "SuccessfulCreate") >= 2
    assert not lab.check(injection).mitigated  # failed pods in the namespace
    # The services themselves are untouched.
    assert error_ratio(lab, service) == 0.0

    lab.advance(700)  # 10 + 20 + ... + 320 s of back-off: the seventh failure ends it
    status = lab.world.api.get("Job", lab.namespace, job)["status"]  # type: ignore[index]
    assert status["failed"] == 7 and "active" not in status
    failed = {c["type"]: c for c in status["conditions"]}["Failed"]
    assert (failed["status"], failed["reason"]) == ("True", "BackoffLimitExceeded")
    assert ("BackoffLimitExceeded", "Job has reached the specified backoff limit") in lab.events(
        job
    )
    assert "BackoffLimitExceeded" in lab.kubectl("describe", f"job/{job}")
    header, row = lab.kubectl("get", "jobs").splitlines()
    assert header.split()[:3] == ["NAME", "STATUS", "COMPLETIONS"]
    assert row.split()[:3] == [job, "Failed", "0/1"], row

    lab.kubectl("delete", f"job/{job}", "--wait=false")
    verdict = lab.settle(injection)
    assert verdict.mitigated, verdict.problems
    assert _job_pods(lab, job) == []
    healthy(lab, service)
