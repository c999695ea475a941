"""Rules for a new build that leaks memory, and for a NetworkPolicy that drops a caller.

An OOMKill has two usual causes, and the change record tells them apart. When somebody lowered
the memory limit, the limit is the suspect (`rules_pods.oom`). When nobody touched the limit
but the image changed before the kills began, the same limit that held the old build is now
too small for the new one: its working set grows until the kernel kills it, which is a defect
of the new version, fixed by going back to the image that ran before. None of this knows a
scenario, a fault or a service by name.

A caller that times out on a healthy, unchanged callee is what any drop on the path looks
like (`rules_traffic.network`). When a NetworkPolicy guards the callee's pods and none of its
rules admits those callers' pods, the drop has a name: the policy. It stays a network fault
(the CNI drops the packets; no workload, Service or ConfigMap write heals it), but with the
evidence that makes the escalation's runbook point at one object.

A caller whose dials fail at the lookup itself — the cluster's nameserver does not answer
("lookup search on 10.96.0.10:53: ... i/o timeout", "server misbehaving"), unlike NXDOMAIN
("no such host"), which is a wrong name — is not failing because of the service it names:
every name fails the same way. The root cause is cluster DNS, outside the namespace, and no
app service is to blame, whatever order their names come in.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from agents.diagnosis.candidate import (
    APP_CODE,
    VIRT_NETWORK,
    Candidate,
    container_of,
    container_suspect,
    touch_keys,
)
from agents.diagnosis.facts import Facts
from agents.diagnosis.netpolicy import denied, guarding
from agents.diagnosis.signs import Sign


def oom_after_release(facts: Facts, service: str) -> Iterator[Candidate]:
    """OOMKilled after an image change, with the memory limit untouched ⇒ code defect (a
    leak or a heavier build) in the new version; roll the image back."""
    s = facts.symptoms[service]
    if not s.oom:
        return
    if facts.touched(None, service, r"limits.*memory|resources"):
        return  # the limit moved: rules_pods.oom blames it
    images = facts.touched(None, service, r"\.image$|image")
    if not images:
        return
    c = container_of(facts, service, frozenset({"OOMKilled"}))
    suspect, touches = container_suspect(
        facts,
        service,
        c,
        "image",
        c.image if c else None,
        touch_pattern=r"image",
        reason="the new image outgrows the memory limit the old one ran within",
    )
    limit = f" {c.memory_limit_bytes // (1024 * 1024)}Mi" if c and c.memory_limit_bytes else ""
    yield Candidate(
        service=service,
        category=APP_CODE,
        confidence=0.9,
        explanation=f"{service}'s containers are OOMKilled at the unchanged{limit} memory limit "
        f"since its image changed ({images[0].old} → {images[0].new}): the new version's "
        "working set grows past what the old one used (a leak or a heavier build)",
        rule="oom-after-release",
        keys=(*facts.keys(service, "pods", "events", "logs"), *touch_keys(touches)),
        suspect=suspect,
    )


def network_policy(facts: Facts, service: str) -> Iterator[Candidate]:
    """Callers time out on a healthy service whose pods a NetworkPolicy guards without
    admitting those callers ⇒ the network path (the policy) drops them."""
    blame = facts.blame.get(service)
    policies = facts.obs.network_policies
    if blame is None or not policies or Sign.TIMEOUT not in blame.signs():
        return
    s = facts.symptoms.get(service)
    spec = facts.obs.specs.get(service)
    if s is None or spec is None or s.intrinsic or s.total == 0 or s.ready < s.total:
        return
    dest = spec.template_labels
    names = guarding(policies, dest)
    dropped = sorted(
        caller
        for caller in blame.by
        if (c := facts.obs.specs.get(caller)) is not None
        and denied(policies, dest, c.template_labels)
    )
    if not names or not dropped:
        return
    yield Candidate(
        service=service,
        category=VIRT_NETWORK,
        confidence=0.9,
        explanation=f"{', '.join(dropped)} time out calling {service}, whose pods are healthy: "
        f"NetworkPolicy {', '.join(names)} guards {service}'s pods and admits none of "
        f"{', '.join(dropped)}'s pods, so their connections are dropped",
        rule="network-policy",
        keys=(
            *blame.keys,
            *facts.keys(service, "pods", "signals"),
            *(f"netpol:{n}" for n in names),
        ),
    )


#: The name the cluster's DNS Deployment has on kubeadm, EKS, AKS and most distributions (in
#: kube-system, behind the kube-dns Service). Diagnosis does not read kube-system; the
#: nameserver address in the resolver's error is what ties the failures to it.
CLUSTER_DNS = "coredns"
_UNANSWERED = re.compile(
    r"lookup (\S+?)(?:\.[\w.-]+)? on ([0-9a-fA-F.:\[\]]+):53: "
    r"(?:.*(?:i/o timeout|server misbehaving|connection refused))"
)


def cluster_dns(facts: Facts, service: str) -> Iterator[Candidate]:
    """A service's dials fail at the lookup: the nameserver does not answer ⇒ cluster DNS
    (virtualization network), not the services it was looking up."""
    lines = [line for found in facts.own_signs(service).values() for line in found]
    failed = {(m.group(1), m.group(2)) for line in lines if (m := _UNANSWERED.search(line))}
    if not failed:
        return
    names = sorted({name for name, _ in failed})
    servers = sorted({server for _, server in failed})
    yield Candidate(
        service=CLUSTER_DNS,
        category=VIRT_NETWORK,
        confidence=0.92 if len(names) > 1 else 0.85,
        explanation=f"{service}'s lookups of {', '.join(names[:5])} get no answer from the "
        f"cluster nameserver {', '.join(servers)}: cluster DNS (CoreDNS in kube-system) is "
        "down or unreachable, so every connection by name fails; the services looked up are "
        "not the cause",
        rule="cluster-dns",
        keys=tuple(facts.keys(service, "logs")),
        intrinsic=False,
    )


RULES = (oom_after_release, network_policy, cluster_dns)
