"""Rules for failures that show only with time: a new build that leaks memory.

An OOMKill has two usual causes, and the change record tells them apart. When somebody lowered
the memory limit, the limit is the suspect (`rules_pods.oom`). When nobody touched the limit
but the image changed before the kills began, the same limit that held the old build is now
too small for the new one: its working set grows until the kernel kills it, which is a defect
of the new version, fixed by going back to the image that ran before. None of this knows a
scenario, a fault or a service by name.
"""

from __future__ import annotations

from collections.abc import Iterator

from agents.diagnosis.candidate import (
    APP_CODE,
    Candidate,
    container_of,
    touch_keys,
    workload_suspect,
)
from agents.diagnosis.facts import Facts

_C = "spec.template.spec.containers"


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
    index = c.index if c else 0
    suspect, touches = workload_suspect(
        facts,
        service,
        f"{_C}[{index}].image",
        c.image if c else None,
        touch_pattern=r"image",
        container=c,
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


RULES = (oom_after_release,)
