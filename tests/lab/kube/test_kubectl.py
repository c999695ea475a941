"""Conformance with kubectl: get (server-side columns), apply, describe, logs, scale, set
image, rollout status/history/undo/restart, delete."""

from __future__ import annotations

import json
import textwrap

from kubernetes import client

from tests.lab.kube.conftest import Kubectl, Target, eventually, wait_rolled_out


def _manifest(ns: str, image: str = "nginx:1.25", replicas: int = 2) -> str:
    return textwrap.dedent(f"""\
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: web
          namespace: {ns}
        spec:
          replicas: {replicas}
          selector:
            matchLabels: {{app: web}}
          template:
            metadata:
              labels: {{app: web}}
            spec:
              containers:
              - name: web
                image: {image}
                ports: [{{containerPort: 80, name: http}}]
        ---
        apiVersion: v1
        kind: Service
        metadata:
          name: web
          namespace: {ns}
        spec:
          selector: {{app: web}}
          ports: [{{port: 80, targetPort: http}}]
        """)


def _header(output: str) -> list[str]:
    return output.splitlines()[0].split()


def test_apply_creates_then_configures(
    kubectl: Kubectl, apps: client.AppsV1Api, target: Target, ns: str
) -> None:
    first = kubectl("apply", "-f", "-", stdin=_manifest(ns)).stdout
    assert "deployment.apps/web created" in first and "service/web created" in first
    wait_rolled_out(apps, ns, "web", target.timeout_s)
    again = kubectl("apply", "-f", "-", stdin=_manifest(ns, replicas=3)).stdout
    assert "deployment.apps/web configured" in again and "service/web unchanged" in again
    assert apps.read_namespaced_deployment("web", ns).spec.replicas == 3


def test_apply_refuses_unknown_fields_like_a_real_server(kubectl: Kubectl, ns: str) -> None:
    bad = _manifest(ns).replace("replicas: 2", "replicas: 2\n  replicaz: 3")
    result = kubectl("apply", "-f", "-", stdin=bad, check=False)
    assert result.returncode != 0
    assert 'unknown field "spec.replicaz"' in result.stderr


def test_get_prints_the_usual_columns(
    kubectl: Kubectl, apps: client.AppsV1Api, target: Target, ns: str
) -> None:
    kubectl("apply", "-f", "-", stdin=_manifest(ns))
    wait_rolled_out(apps, ns, "web", target.timeout_s)
    pods = kubectl("get", "pods", "-n", ns).stdout
    assert _header(pods) == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    rows = pods.splitlines()[1:]
    assert len(rows) == 2 and all(r.split()[1:4] == ["1/1", "Running", "0"] for r in rows)
    deploy = kubectl("get", "deploy", "-n", ns).stdout
    assert _header(deploy) == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert deploy.splitlines()[1].split()[:4] == ["web", "2/2", "2", "2"]
    svc = kubectl("get", "svc", "-n", ns).stdout
    assert _header(svc) == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    assert "80/TCP" in svc
    wide = kubectl("get", "pods", "-n", ns, "-o", "wide").stdout
    assert "NODE" in _header(wide) and "IP" in _header(wide)
    assert _header(kubectl("get", "nodes").stdout)[:3] == ["NAME", "STATUS", "ROLES"]
    events = kubectl("get", "events", "-n", ns).stdout
    assert _header(events) == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert "deployment/web" in events
    cms = kubectl("get", "cm", "-n", ns).stdout
    assert _header(cms) == ["NAME", "DATA", "AGE"]
    everything = kubectl("get", "all", "-n", ns).stdout
    assert "deployment.apps/web" in everything and "service/web" in everything


def test_get_json_and_jsonpath(kubectl: Kubectl, ns: str) -> None:
    kubectl("apply", "-f", "-", stdin=_manifest(ns))
    doc = json.loads(kubectl("get", "deploy", "web", "-n", ns, "-o", "json").stdout)
    assert doc["kind"] == "Deployment" and doc["spec"]["replicas"] == 2
    image = kubectl(
        "get", "deploy", "web", "-n", ns, "-o", "jsonpath={.spec.template.spec.containers[0].image}"
    ).stdout
    assert image == "nginx:1.25"


def test_rollout_status_history_undo_restart(
    kubectl: Kubectl, apps: client.AppsV1Api, core: client.CoreV1Api, target: Target, ns: str
) -> None:
    kubectl("apply", "-f", "-", stdin=_manifest(ns))
    timeout = f"--timeout={int(target.timeout_s)}s"
    assert (
        "successfully rolled out"
        in kubectl("rollout", "status", "deploy/web", "-n", ns, timeout).stdout
    )
    assert (
        "image updated" in kubectl("set", "image", "deploy/web", "web=nginx:1.26", "-n", ns).stdout
    )
    assert (
        "successfully rolled out"
        in kubectl("rollout", "status", "deploy/web", "-n", ns, timeout).stdout
    )
    history = kubectl("rollout", "history", "deploy/web", "-n", ns).stdout
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"]
    detail = kubectl("rollout", "history", "deploy/web", "-n", ns, "--revision=1").stdout
    assert "nginx:1.25" in detail
    assert "rolled back" in kubectl("rollout", "undo", "deploy/web", "-n", ns).stdout
    kubectl("rollout", "status", "deploy/web", "-n", ns, timeout)
    deployment = apps.read_namespaced_deployment("web", ns)
    assert deployment.spec.template.spec.containers[0].image == "nginx:1.25"
    assert deployment.metadata.annotations["deployment.kubernetes.io/revision"] == "3"
    history = kubectl("rollout", "history", "deploy/web", "-n", ns).stdout
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["2", "3"]
    before = {p.metadata.name for p in core.list_namespaced_pod(ns).items}
    assert "restarted" in kubectl("rollout", "restart", "deploy/web", "-n", ns).stdout
    kubectl("rollout", "status", "deploy/web", "-n", ns, timeout)
    wait_rolled_out(apps, ns, "web", target.timeout_s)
    after = eventually(
        lambda: (
            {
                p.metadata.name
                for p in core.list_namespaced_pod(ns).items
                if not p.metadata.deletion_timestamp
            }
            or None
        ),
        timeout_s=target.timeout_s,
        what="restarted pods",
    )
    assert not before & after


def test_scale_describe_logs_and_delete(
    kubectl: Kubectl, apps: client.AppsV1Api, core: client.CoreV1Api, target: Target, ns: str
) -> None:
    kubectl("apply", "-f", "-", stdin=_manifest(ns))
    assert "scaled" in kubectl("scale", "deploy/web", "--replicas=1", "-n", ns).stdout
    wait_rolled_out(apps, ns, "web", target.timeout_s)

    def one_pod() -> list[str] | None:
        names = [
            p.metadata.name
            for p in core.list_namespaced_pod(ns).items
            if not p.metadata.deletion_timestamp
        ]
        return names if len(names) == 1 else None

    name = eventually(one_pod, timeout_s=target.timeout_s, what="one pod")[0]
    described = kubectl("describe", "deploy", "web", "-n", ns).stdout
    assert "Replicas:" in described and "ScalingReplicaSet" in described
    described_pod = kubectl("describe", "pod", name, "-n", ns).stdout
    assert "Controlled By:  ReplicaSet/web-" in described_pod and "Started" in described_pod
    described_svc = kubectl("describe", "svc", "web", "-n", ns).stdout
    assert "Endpoints:" in described_svc and ":80" in described_svc
    logs = kubectl("logs", name, "-n", ns)
    assert logs.returncode == 0
    kubectl("logs", "deploy/web", "-n", ns, "--tail=1")
    assert f'pod "{name}" deleted' in kubectl("delete", "pod", name, "-n", ns).stdout
    assert 'deployment.apps "web" deleted' in kubectl("delete", "deploy", "web", "-n", ns).stdout


def test_get_works_for_every_served_resource(
    kubectl: Kubectl, apps: client.AppsV1Api, core: client.CoreV1Api, target: Target, ns: str
) -> None:
    kubectl("apply", "-f", "-", stdin=_manifest(ns))
    core.create_namespaced_resource_quota(
        ns, {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "10"}}}
    )
    client.AutoscalingV2Api(target.api_client).create_namespaced_horizontal_pod_autoscaler(
        ns,
        {
            "metadata": {"name": "web"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1,
                "maxReplicas": 3,
            },
        },
    )
    core.create_namespaced_persistent_volume_claim(
        ns,
        {
            "metadata": {"name": "data"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    )
    wait_rolled_out(apps, ns, "web", target.timeout_s)
    for plural in (
        "pods",
        "deployments",
        "replicasets",
        "statefulsets",
        "services",
        "endpoints",
        "endpointslices",
        "configmaps",
        "secrets",
        "serviceaccounts",
        "events",
        "resourcequotas",
        "persistentvolumeclaims",
        "horizontalpodautoscalers",
        "leases",
        "limitranges",
    ):
        result = kubectl("get", plural, "-n", ns, "-o", "wide", check=False)
        assert result.returncode == 0, (plural, result.stderr)
    assert "Ready" in kubectl("get", "nodes", "-o", "wide").stdout
    assert "Active" in kubectl("get", "namespaces").stdout
    quota = kubectl("get", "quota", "q", "-n", ns).stdout
    assert "pods: " in quota
    hpa = kubectl("get", "hpa", "web", "-n", ns).stdout
    assert "Deployment/web" in hpa
