"""A tiny in-memory cluster for the simulator's unit tests: objects, a Deployment → Pod
controller, a kubelet loop over a `PodRuntime`, and an Endpoints controller.

Deliberately small and independent of `lab.kube` (the real emulator is tested with the
simulator in test_world.py); it implements just what Kubernetes does that the simulator reads:
pod IPs, container statuses with restarts and CrashLoopBackOff, readiness, OOM kills and
Endpoints with resolved target ports.
"""

from __future__ import annotations

import copy
import hashlib
import json
from datetime import datetime
from typing import Any

from lab.kube.runtime import PodRuntime

Obj = dict[str, Any]


class FakeCluster:
    def __init__(self, runtime: PodRuntime, *, nodes: int = 2) -> None:
        self.runtime = runtime
        self.objects: dict[tuple[str, str, str], Obj] = {}
        self._rv = 0
        self._ip = 10
        self.logs: dict[str, list[str]] = {}
        self._next_start: dict[str, float] = {}
        for i in range(nodes):
            self.put(
                {
                    "kind": "Node",
                    "metadata": {"name": f"node-{i}"},
                    "status": {"conditions": [{"type": "Ready", "status": "True"}]},
                }
            )

    # ------------------------------------------------------------------ ClusterView

    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None:
        obj = self.objects.get((kind, namespace or "", name))
        return copy.deepcopy(obj) if obj is not None else None

    def list(self, kind: str, namespace: str | None = None, label_selector: str = "") -> list[Obj]:
        return [
            copy.deepcopy(o)
            for (k, ns, _), o in sorted(self.objects.items())
            if k == kind and (namespace is None or ns == namespace)
        ]

    # ------------------------------------------------------------------ writes

    def put(self, obj: Obj) -> None:
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        self._rv += 1
        meta["resourceVersion"] = str(self._rv)
        self.objects[(obj["kind"], meta.get("namespace", ""), meta["name"])] = obj

    def apply(self, docs: list[Obj]) -> None:
        for original in docs:
            doc = copy.deepcopy(original)
            if doc["kind"] == "Service":
                self._ip += 1
                doc["spec"]["clusterIP"] = f"10.96.0.{self._ip}"
            self.put(doc)

    def delete(self, kind: str, namespace: str, name: str) -> None:
        self.objects.pop((kind, namespace, name), None)

    def mutate(self, kind: str, namespace: str, name: str, fn: Any) -> None:
        obj = self.objects[(kind, namespace, name)]
        fn(obj)
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)

    def restart(self, namespace: str, deployment: str) -> None:
        """`kubectl rollout restart`: new pods replace the old ones."""

        def bump(dep: Obj) -> None:
            ann = dep["spec"]["template"]["metadata"].setdefault("annotations", {})
            ann["kubectl.kubernetes.io/restartedAt"] = str(self._rv)

        self.mutate("Deployment", namespace, deployment, bump)

    # ------------------------------------------------------------------ controllers

    def reconcile(self, now: datetime) -> None:
        self._deployments(now)
        self._kubelet(now)
        self._endpoints()

    def _deployments(self, now: datetime) -> None:
        for (kind, ns, name), dep in list(self.objects.items()):
            if kind != "Deployment":
                continue
            template = dep["spec"]["template"]
            digest = hashlib.sha1(json.dumps(template, sort_keys=True).encode()).hexdigest()[:8]
            want = int(dep["spec"].get("replicas", 1))
            owned = [
                o
                for (k, n2, _), o in self.objects.items()
                if k == "Pod" and n2 == ns and o["metadata"].get("owner") == name
            ]
            for pod in owned:
                index = int(pod["metadata"]["name"].rsplit("-", 1)[1])
                if pod["metadata"]["hash"] != digest or index >= want:
                    self.delete("Pod", ns, pod["metadata"]["name"])
            have = {
                o["metadata"]["name"]
                for (k, n2, _), o in self.objects.items()
                if k == "Pod" and n2 == ns and o["metadata"].get("owner") == name
            }
            for i in range(want):
                pod_name = f"{name}-{digest}-{i}"
                if pod_name in have:
                    continue
                self._ip += 1
                pod = {
                    "kind": "Pod",
                    "metadata": {
                        "name": pod_name,
                        "namespace": ns,
                        "uid": f"uid-{pod_name}-{self._ip}",
                        "labels": dict(template["metadata"].get("labels", {})),
                        "owner": name,
                        "hash": digest,
                    },
                    "spec": copy.deepcopy(template["spec"]) | {"nodeName": f"node-{i % 2}"},
                    "status": {
                        "phase": "Pending",
                        "podIP": f"10.244.{self._ip // 250}.{self._ip % 250}",
                        "containerStatuses": [],
                    },
                }
                self.put(pod)
            ready = sum(
                1
                for (k, n2, _), o in self.objects.items()
                if k == "Pod" and n2 == ns and o["metadata"].get("owner") == name and _ready(o)
            )
            dep["status"] = {"replicas": want, "availableReplicas": ready, "readyReplicas": ready}

    def _kubelet(self, now: datetime) -> None:
        t = now.timestamp()
        for (kind, _, name), pod in list(self.objects.items()):
            if kind != "Pod":
                continue
            container = pod["spec"]["containers"][0]
            statuses = pod["status"]["containerStatuses"]
            if not statuses:
                statuses.append(
                    {
                        "name": container["name"],
                        "ready": False,
                        "restartCount": -1,
                        "state": {"waiting": {"reason": "ContainerCreating"}},
                        "image": container["image"],
                    }
                )
            cs = statuses[0]
            uid = pod["metadata"]["uid"]
            if "running" not in cs["state"]:
                if t < self._next_start.get(uid, 0.0):
                    continue
                pulled = self.runtime.pull(container["image"])
                if not pulled.ok:
                    cs["state"] = {
                        "waiting": {"reason": "ImagePullBackOff", "message": pulled.message}
                    }
                    self._next_start[uid] = t + 10
                    continue
                result = self.runtime.start(pod, container, now)
                cs["restartCount"] += 1
                self.logs.setdefault(name, []).extend(result.log_lines)
                if result.running:
                    cs["state"] = {"running": {"startedAt": now.isoformat()}}
                    pod["status"]["phase"] = "Running"
                else:
                    cs["state"] = {
                        "waiting": {
                            "reason": "CrashLoopBackOff"
                            if result.reason != "CreateContainerConfigError"
                            else result.reason,
                            "message": result.message,
                        }
                    }
                    cs["lastState"] = {
                        "terminated": {"reason": result.reason, "exitCode": result.exit_code}
                    }
                    self._next_start[uid] = t + 10
                    continue
            health = self.runtime.health(pod, container, now)
            self.logs.setdefault(name, []).extend(health.new_log_lines)
            _, mem_limit = _limits(container)
            if mem_limit is not None and health.memory_bytes > mem_limit:
                cs["state"] = {"waiting": {"reason": "CrashLoopBackOff"}}
                cs["lastState"] = {"terminated": {"reason": "OOMKilled", "exitCode": 137}}
                cs["ready"] = False
                self._next_start[uid] = t + 10
                continue
            cs["ready"] = health.ready
            pod["status"]["conditions"] = [
                {"type": "Ready", "status": "True" if health.ready else "False"}
            ]

    def _endpoints(self) -> None:
        for (kind, ns, name), svc in list(self.objects.items()):
            if kind != "Service":
                continue
            selector = svc["spec"].get("selector") or {}
            pods = [
                o
                for (k, n2, _), o in sorted(self.objects.items())
                if k == "Pod"
                and n2 == ns
                and selector
                and all(o["metadata"]["labels"].get(a) == b for a, b in selector.items())
            ]
            subsets = []
            for port in svc["spec"]["ports"]:
                target = port.get("targetPort", port["port"])
                for pod in pods:
                    if not _ready(pod):
                        continue
                    number = target
                    if isinstance(target, str):
                        named = [
                            p["containerPort"]
                            for c in pod["spec"]["containers"]
                            for p in c.get("ports", [])
                            if p.get("name") == target
                        ]
                        if not named:
                            continue
                        number = named[0]
                    subsets.append(
                        {
                            "addresses": [
                                {
                                    "ip": pod["status"]["podIP"],
                                    "targetRef": {"kind": "Pod", "name": pod["metadata"]["name"]},
                                }
                            ],
                            "ports": [{"name": port.get("name"), "port": number}],
                        }
                    )
            self.put(
                {
                    "kind": "Endpoints",
                    "metadata": {"name": name, "namespace": ns},
                    "subsets": subsets,
                }
            )


def _ready(pod: Obj) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in pod["status"].get("conditions", [])
    )


def _limits(container: Obj) -> tuple[int | None, int | None]:
    from lab.sim.kubeobj import limits

    return limits(container)
