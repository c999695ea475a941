"""Cluster DNS: CoreDNS in kube-system behind the kube-dns Service (10.96.0.10), as kubeadm
installs it, and what the apps' resolvers see when it has no ready endpoint.

Every app pod resolves Service names through 10.96.0.10 (dnsPolicy ClusterFirst). While the
kube-dns Service has ready endpoints, names resolve (an unknown one is NXDOMAIN: "no such
host", `lab.sim.outcome.no_host`). When none is ready (CoreDNS scaled to zero, or its pods
crash on a broken Corefile) the queries go unanswered and every lookup times out, so every
new connection by name fails across the app while the callees themselves stay healthy.
A lab without the kube-dns Service (the kube-only tests) resolves as before.
"""

from __future__ import annotations

from agents.model import JsonObject
from lab.kube.runtime import ClusterView
from lab.sim.images import ImageSpec
from lab.sim.model import Listen, Memory, Program

NAMESPACE = "kube-system"
SERVICE = "kube-dns"
DEPLOYMENT = "coredns"
CLUSTER_IP = "10.96.0.10"
IMAGE = "registry.k8s.io/coredns/coredns:v1.11.1"
BINARY = "/coredns"
#: Go's resolver gives up on an unanswered query after this long (timeout 5s, one attempt
#: per nameserver) — which is what a caller's dial waits before "i/o timeout".
LOOKUP_TIMEOUT_MS = 5000.0

IMAGE_SPEC = ImageSpec(binaries=frozenset({BINARY}), entrypoint=(BINARY,))

#: CoreDNS as a program: it serves DNS on 53 and nothing the apps' traffic model routes.
PROGRAM = Program(
    binary=BINARY,
    listen=Listen(port=53),
    startup_s=0.0,  # the cluster comes up with DNS already answering
    memory=Memory(base_mib=18, per_rps_kib=0, warmup_s=5),
)

COREFILE = """.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30
    loop
    reload
    loadbalance
}
"""


def manifests() -> list[JsonObject]:
    """The ConfigMap, Deployment and Service kubeadm creates for CoreDNS."""
    labels = {"k8s-app": "kube-dns"}
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": DEPLOYMENT, "namespace": NAMESPACE},
            "data": {"Corefile": COREFILE},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": DEPLOYMENT, "namespace": NAMESPACE, "labels": labels},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "strategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": 1, "maxSurge": "25%"},
                },
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [
                            {
                                "name": "coredns",
                                "image": IMAGE,
                                "args": ["-conf", "/etc/coredns/Corefile"],
                                "ports": [
                                    {"name": "dns", "containerPort": 53, "protocol": "UDP"},
                                    {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"},
                                    {"name": "metrics", "containerPort": 9153, "protocol": "TCP"},
                                ],
                                "resources": {
                                    "requests": {"cpu": "100m", "memory": "70Mi"},
                                    "limits": {"memory": "170Mi"},
                                },
                                "volumeMounts": [
                                    {
                                        "name": "config-volume",
                                        "mountPath": "/etc/coredns",
                                        "readOnly": True,
                                    }
                                ],
                            }
                        ],
                        "dnsPolicy": "Default",
                        "volumes": [
                            {
                                "name": "config-volume",
                                "configMap": {
                                    "name": DEPLOYMENT,
                                    "items": [{"key": "Corefile", "path": "Corefile"}],
                                },
                            }
                        ],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": SERVICE,
                "namespace": NAMESPACE,
                "labels": {**labels, "kubernetes.io/name": "CoreDNS"},
            },
            "spec": {
                "selector": labels,
                "clusterIP": CLUSTER_IP,
                "ports": [
                    {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                    {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                    {"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153},
                ],
            },
        },
    ]


def serving(view: ClusterView) -> bool:
    """Does cluster DNS answer? True without a kube-dns Service (no cluster DNS modelled)."""
    if view.get("Service", NAMESPACE, SERVICE) is None:
        return True
    endpoints = view.get("Endpoints", NAMESPACE, SERVICE) or {}
    return any(subset.get("addresses") for subset in endpoints.get("subsets") or [])
