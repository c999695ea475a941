"""Rules for what a controller does with a misconfigured workload.

A readiness probe aimed at a port the container does not declare can never pass: the kubelet
reports `Readiness probe failed: dial tcp IP:PORT: connect: connection refused` on every new
pod, the Deployment's rollout cannot make them available and, past its progress deadline,
stops with ProgressDeadlineExceeded; with maxUnavailable above zero the old pods it already
took down are serving capacity lost. The cause is the probe in the workload's spec
(virtualization misconfiguration), whatever else changed in the same rollout.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from agents.diagnosis.candidate import VIRT_MISCONFIG, Candidate, touch_suspect
from agents.diagnosis.facts import Facts
from agents.diagnosis.suspect import Suspect

_PROBE_REFUSED = re.compile(
    r"Readiness probe failed: dial tcp [^\s]*:(\d+): connect: connection refused"
)


def readiness_probe_port(facts: Facts, service: str) -> Iterator[Candidate]:
    """Unwell, and its pods' readiness probe dials a port none of its containers declares ⇒
    the probe's port is misconfigured (a declared port that refuses is a different story:
    the process is not listening, which other rules read from logs)."""
    if service not in facts.anomalous:
        return
    spec = facts.obs.specs.get(service)
    if spec is None:
        return
    declared = {port for c in spec.containers for port, _ in c.ports}
    probed = sorted(
        {
            int(m.group(1))
            for e in facts.events(service)
            if e.reason == "Unhealthy" and (m := _PROBE_REFUSED.search(e.message))
        }
        - declared
    )
    if not probed:
        return
    port = probed[0]
    touches = sorted(
        facts.touched("Deployment", service, r"readinessProbe"), key=lambda t: -t.weight
    ) or sorted(facts.touched("StatefulSet", service, r"readinessProbe"), key=lambda t: -t.weight)
    reason = f"readiness probe dials port {port}, which no container of {service} declares"
    if touches:
        suspect = touch_suspect(facts, touches[0], reason)
    else:
        suspect = Suspect(
            kind=spec.kind,
            namespace=facts.ns,
            name=spec.name,
            field="spec.template.spec.containers[*].readinessProbe",
            current=str(port),
            last_known_good=None,
            reason=reason,
        )
    ports = ", ".join(str(p) for p in sorted(declared)) or "none"
    yield Candidate(
        service=service,
        category=VIRT_MISCONFIG,
        confidence=0.85,
        explanation=(
            f"{service}'s pods never become Ready: their readiness probe dials port {port} "
            f"(connection refused) while the containers declare {ports}"
        ),
        rule="readiness-probe-port",
        keys=tuple(
            [*(t.key for t in touches[:1]), *facts.keys(service, "events", "pods", "changes")]
        ),
        suspect=suspect,
    )


RULES = (readiness_probe_port,)

__all__ = ["RULES"]
