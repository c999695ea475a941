"""What the cluster shows under each fault principle of docs/taxonomy.md: object changes and
the pod states, events, log lines and signals that follow from them (worded as the runtimes
and client libraries word them). Shared by the offline and the Claude reasoner tests."""

from __future__ import annotations

import copy
import json
from datetime import timedelta

from tests.agents.diagnosis.world import FLAGS_OFF, T0, World, stamp


def refused(ip: str, port: int) -> str:
    return (
        'rpc error: code = Unavailable desc = connection error: desc = "transport: Error while '
        f'dialing: dial tcp {ip}:{port}: connect: connection refused"'
    )


def target_port(w: World, service: str, port: int, caller: str, top: str | None = None) -> None:
    w.snapshot("Service", service)
    old = w.services[service]["spec"]["ports"][0]["targetPort"]
    w.services[service]["spec"]["ports"][0]["targetPort"] = port
    w.change("Service", service, {"spec.ports[0].targetPort": (old, port)})
    text = refused(w.ips[service], w.apps[service].port)
    w.log(caller, f"error calling {service}: {text}")
    w.sick(caller, errors=0.6)
    if top:
        w.log(top, f"error calling {caller}: rpc error: code = Unavailable desc = {text}")
        w.sick(top, errors=0.3)


def selector(w: World, service: str, caller: str) -> None:
    w.snapshot("Service", service)
    label = w.label
    w.services[service]["spec"]["selector"] = {label: f"{service}-v2"}
    w.change("Service", service, {f"spec.selector.{label}": (service, f"{service}-v2")})
    w.log(caller, f"error calling {service}: {refused(w.ips[service], w.apps[service].port)}")
    w.sick(caller, errors=0.5)


def image_pull(w: World, service: str, caller: str) -> None:
    w.snapshot("Deployment", service)
    c = w.spec_container(service)
    old, new = c["image"], c["image"].rsplit(":", 1)[0] + ":9.9.9"
    c["image"] = new
    w.change(
        "Deployment",
        service,
        {"spec.template.spec.containers[0].image": (old, new)},
        manager="kubectl-set",
    )
    msg = (
        f'rpc error: code = NotFound desc = failed to pull and unpack image "{new}": failed to '
        f'resolve reference "{new}": {new}: not found'
    )
    w.set_pod(
        service,
        ready=False,
        state="waiting",
        reason="ImagePullBackOff",
        message=f'Back-off pulling image "{new}"',
        image=new,
    )
    w.event("Pod", f"{service}-7d9f8-0", "Failed", f'Failed to pull image "{new}": {msg}')
    w.logs.pop((f"{service}-7d9f8-0", w.container(service), False), None)
    w.log(caller, f"error calling {service}: {refused(w.ips[service], w.apps[service].port)}")
    w.sick(caller, errors=0.5)


def bad_build(w: World, service: str, caller: str) -> None:
    w.snapshot("Deployment", service)
    c = w.spec_container(service)
    old, new = c["image"], c["image"].rsplit(":", 1)[0] + ":1.2-rc1"
    c["image"] = new
    w.change(
        "Deployment",
        service,
        {"spec.template.spec.containers[0].image": (old, new)},
        manager="argocd",
    )
    w.set_pod(
        service,
        ready=False,
        state="waiting",
        reason="CrashLoopBackOff",
        restart_count=4,
        last_terminated_reason="Error",
        last_exit_code=2,
        image=new,
        message="back-off 40s restarting failed container",
    )
    w.raw_log(
        service,
        f"{stamp(T0)} INF cmd/{service}/main.go > Reading config...",
        "panic: runtime error: invalid memory address or nil pointer dereference",
        "",
        "goroutine 1 [running]:",
        "main.main()",
        f"\t/go/src/github.com/lab/{service}/main.go:54 +0x3c5",
        "exit status 2",
        previous=True,
    )
    w.logs[(f"{service}-7d9f8-0", w.container(service), False)] = [
        f"{stamp(T0)} INF cmd/{service}/main.go > Reading config..."
    ]
    w.event("Pod", f"{service}-7d9f8-0", "BackOff", "Back-off restarting failed container")
    w.log(caller, f"error calling {service}: {refused(w.ips[service], w.apps[service].port)}")
    w.sick(caller, errors=0.5)


def missing_binary(w: World, service: str) -> None:
    w.snapshot("Deployment", service)
    c = w.spec_container(service)
    old = c.get("command")
    c["command"] = [f"{service}-server"]
    w.change(
        "Deployment", service, {"spec.template.spec.containers[0].command": (old, c["command"])}
    )
    msg = (
        "failed to create containerd task: failed to create shim task: OCI runtime create failed: "
        f'runc create failed: unable to start container process: exec: "{service}-server": '
        "executable file not found in $PATH: unknown"
    )
    w.set_pod(
        service,
        ready=False,
        state="waiting",
        reason="CrashLoopBackOff",
        restart_count=3,
        last_terminated_reason="StartError",
        last_exit_code=128,
        message="back-off 20s restarting failed container",
    )
    w.event("Pod", f"{service}-7d9f8-0", "Failed", f"Error: {msg}")


def db_address(w: World, service: str, config_map: str, key: str, bad: str) -> None:
    w.snapshot("ConfigMap", config_map)
    old = w.config_maps[config_map][key]
    w.config_maps[config_map][key] = bad
    w.change("ConfigMap", config_map, {f"data.{key}": (old, bad)})
    w.set_pod(
        service,
        ready=False,
        state="waiting",
        reason="CrashLoopBackOff",
        restart_count=5,
        last_terminated_reason="Error",
        last_exit_code=2,
        message="back-off 1m20s restarting failed container",
    )
    w.raw_log(
        service,
        f"{stamp(T0)} INF cmd/{service}/main.go > Reading config...",
        f"{stamp(T0)} INF cmd/{service}/main.go > Read database URL: {bad}",
        f"{stamp(T0)} INF cmd/{service}/main.go > Initializing DB connection...",
        "panic: no reachable servers",
        "",
        "goroutine 1 [running]:",
        "main.initializeDatabase()",
        "exit status 2",
        previous=True,
    )


def revoke_auth(w: World, client: str, db: str, database: str) -> None:
    w.log(
        client,
        f"error calling {db}: not authorized on {database} to execute command "
        f'{{ find: "geo", filter: {{}}, $db: "{database}" }}',
    )
    w.raw_log(
        db,
        '{"t":{"$date":"2026-11-30T10:00:01.000Z"},"s":"E","c":"NETWORK","id":22943,"ctx":"conn",'
        f'"msg":"Checking authorization failed: not authorized on {database} to execute command"}}',
    )
    w.sick(client, errors=1.0)


def scale_down(w: World, service: str, caller: str, manager: str = "kubectl-scale") -> None:
    w.snapshot("Deployment", service)
    w.deployments[service]["spec"]["replicas"] = 0
    w.pods[service] = []
    w.change("Deployment", service, {"spec.replicas": (1, 0)}, manager=manager)
    w.event(
        "Deployment",
        service,
        "ScalingReplicaSet",
        f"Scaled down replica set {service}-7d9f8 to 0",
        type_="Normal",
    )
    w.log(caller, f"error calling {service}: {refused(w.ips[service], w.apps[service].port)}")
    w.sick(caller, errors=0.9)


def network_delay(w: World, service: str, caller: str) -> None:
    w.log(
        caller,
        f"error calling {service}: rpc error: code = DeadlineExceeded "
        "desc = context deadline exceeded",
    )
    w.sick(caller, errors=0.2, p99=1000.0)


def cpu_limit(w: World, service: str, caller: str) -> None:
    w.snapshot("Deployment", service)
    c = w.spec_container(service)
    c["resources"]["limits"]["cpu"] = "20m"
    w.change(
        "Deployment",
        service,
        {"spec.template.spec.containers[0].resources.limits.cpu": ("1", "20m")},
    )
    w.sick(service, p99=900.0)
    w.sick(caller, p99=1100.0, errors=0.02)
    w.pod_metrics = [
        {
            "metadata": {"name": f"{service}-7d9f8-0"},
            "containers": [{"name": w.container(service), "usage": {"cpu": "20m"}}],
        }
    ]


def oom(w: World, service: str) -> None:
    w.snapshot("Deployment", service)
    c = w.spec_container(service)
    c["resources"]["limits"]["memory"] = "32Mi"
    w.change(
        "Deployment",
        service,
        {"spec.template.spec.containers[0].resources.limits.memory": ("256Mi", "32Mi")},
    )
    w.set_pod(
        service,
        ready=False,
        state="waiting",
        reason="CrashLoopBackOff",
        restart_count=6,
        last_terminated_reason="OOMKilled",
        last_exit_code=137,
    )
    w.raw_log(service, f"{stamp(T0)} INF starting", previous=True)


def node_selector(w: World, service: str) -> None:
    w.snapshot("Deployment", service)
    spec = w.deployments[service]["spec"]["template"]["spec"]
    spec["nodeSelector"] = {"disktype": "ssd"}
    w.change(
        "Deployment", service, {"spec.template.spec.nodeSelector": (None, {"disktype": "ssd"})}
    )
    msg = "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
    pod = w.set_pod(service, ready=False, state="waiting", reason="ContainerCreating")
    from dataclasses import replace

    w.pods[service] = [replace(pod, phase="Pending", node=None, unschedulable_message=msg)]
    w.event("Pod", f"{service}-7d9f8-1", "FailedScheduling", msg)
    w.logs.pop((f"{service}-7d9f8-0", w.container(service), False), None)


def quota(w: World, service: str) -> None:
    w.pods[service] = []
    w.quotas[0] = w.quotas[0].__class__(
        name="compute", namespace=w.namespace, hard={"pods": "14"}, used={"pods": "14"}
    )
    w.event(
        "ReplicaSet",
        f"{service}-5c6d9",
        "FailedCreate",
        f'Error creating: pods "{service}-5c6d9-x2x" is forbidden: exceeded quota: compute, '
        "requested: pods=1, used: pods=14, limited: pods=14",
        count=12,
    )


def flag(
    w: World, flag_name: str, variant: str, service: str, caller: str, message: str, errors: float
) -> None:
    w.snapshot("ConfigMap", "flagd-config")
    doc = json.loads(FLAGS_OFF)
    off = {"state": "ENABLED", "variants": {"on": True, "off": False}, "defaultVariant": "off"}
    doc["flags"].setdefault(flag_name, off)["defaultVariant"] = variant
    new = json.dumps(doc)
    w.config_maps["flagd-config"]["demo.flagd.json"] = new
    w.change(
        "ConfigMap",
        "flagd-config",
        {"data.demo.flagd.json": (FLAGS_OFF, new)},
        manager="kubectl-apply",
        minutes_before=2,
    )
    w.log(service, message)
    w.sick(service, errors=errors)
    w.log(caller, f"error calling {service}: rpc error: code = Unknown desc = {message}")
    w.sick(caller, errors=errors / 2)


def runtime_address(w: World, service: str, config_map: str, key: str, bad: str) -> None:
    w.snapshot("ConfigMap", config_map)
    old = w.config_maps[config_map][key]
    w.config_maps[config_map][key] = bad
    w.change("ConfigMap", config_map, {f"data.{key}": (old, bad)}, minutes_before=6)
    host = bad.split(":", maxsplit=1)[0]
    w.log(
        service,
        f"error calling {host}: rpc error: code = Unavailable desc = connection error: desc = "
        f'"transport: Error while dialing: dial tcp: lookup {host} on 10.96.0.10:53: no such host"',
    )
    w.sick(service, errors=0.4)


def pod_kill(w: World, service: str, caller: str) -> None:
    w.set_pod(service, restart_count=3, last_terminated_reason="Error", last_exit_code=137)
    w.raw_log(
        service,
        f"{stamp(T0 - timedelta(seconds=5))} INF cmd/{service}/main.go > served 10 requests",
        previous=True,
    )
    w.event("Pod", f"{service}-7d9f8-0", "Killing", "Stopping container", type_="Normal")
    w.log(caller, f"error calling {service}: {refused(w.ips[service], w.apps[service].port)}")
    w.sick(caller, errors=0.1)


PAUSE = "gcr.io/google-containers/pause:latest"


def pod_failure(w: World, service: str, caller: str) -> None:
    """chaos-mesh's pod-failure: the pod's image swapped for a pause image (the template is
    untouched). With an explicit command the pause image lacks that binary and the container
    cannot start; without one it runs /pause, which serves nothing, so it is never ready."""
    pod = f"{service}-7d9f8-0"
    containers = copy.deepcopy(w.deployments[service]["spec"]["template"]["spec"]["containers"])
    for c in containers:
        c["image"] = PAUSE
    w.pod_containers[pod] = containers
    name = w.container(service)
    command = w.apps[service].command
    if command:
        msg = (
            "failed to create containerd task: failed to create shim task: OCI runtime create "
            f'failed: runc create failed: unable to start container process: exec: "{command[0]}": '
            "executable file not found in $PATH: unknown"
        )
        w.set_pod(
            service,
            image=PAUSE,
            ready=False,
            state="waiting",
            reason="CrashLoopBackOff",
            restart_count=2,
            last_terminated_reason="StartError",
            last_exit_code=128,
            message="back-off 20s restarting failed container",
        )
        w.event("Pod", pod, "Failed", f"Error: {msg}")
        w.event("Pod", pod, "BackOff", f"Back-off restarting failed container {name} in pod {pod}")
    else:
        w.set_pod(
            service,
            image=PAUSE,
            ready=False,
            restart_count=1,
            last_terminated_reason="Error",
            last_exit_code=137,
        )
        port = w.apps[service].port
        w.event(
            "Pod",
            pod,
            "Unhealthy",
            f"Readiness probe failed: dial tcp 10.244.1.9:{port}: connect: connection refused",
        )
    w.event(
        "Pod",
        pod,
        "Killing",
        f"Container {name} definition changed, will be restarted",
        type_="Normal",
        count=1,
    )
    w.event("Pod", pod, "Pulling", f'Pulling image "{PAUSE}"', type_="Normal", count=1)
    w.log(caller, f"error calling {service}: {refused(w.ips[service], w.apps[service].port)}")
    w.sick(caller, errors=0.6)


def pods_deleted(w: World, service: str, caller: str) -> None:
    """Pods deleted by hand: replaced by the ReplicaSet, fresh and not yet ready."""
    from dataclasses import replace

    pod = w.set_pod(service, ready=False)
    w.pods[service] = [
        replace(pod, name=f"{service}-7d9f8-9", created_at=T0 + timedelta(seconds=20))
    ]
    w.event("Pod", f"{service}-7d9f8-0", "Killing", "Stopping container", type_="Normal")
    w.log(caller, f"error calling {service}: {refused(w.ips[service], w.apps[service].port)}")
    w.sick(caller, errors=0.4)
