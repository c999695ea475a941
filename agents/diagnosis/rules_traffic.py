"""Rules over how services reach each other: Service ports and selectors, credentials,
addresses in settings, feature flags, CPU throttling and the network path. Callers' error
lines point at a callee; these rules decide what is wrong with that callee by principle."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from agents.diagnosis.candidate import (
    APP_AUTH,
    APP_CODE,
    APP_MISCONFIG,
    VIRT_MISCONFIG,
    VIRT_NETWORK,
    Candidate,
    container_suspect,
    touch_keys,
    touch_suspect,
)
from agents.diagnosis.changes import json_diff
from agents.diagnosis.facts import STRATUS_MANAGER, Blame, Facts, Touch
from agents.diagnosis.graph import Reference, references
from agents.diagnosis.observe import ServiceSpec
from agents.diagnosis.signs import Sign, edit_distance
from agents.diagnosis.suspect import Suspect

_CREDENTIAL = r"pass|user|cred|secret|auth|token|key"


def service_ports(facts: Facts, service: str) -> Iterator[Candidate]:
    """A Service whose selector or targetPort matches no serving pod/port ⇒ virt misconfig."""
    obs = facts.obs
    candidates = [s for s in obs.services.values() if s.name == service] or obs.k8s_services_for(
        service
    )
    for svc in candidates:
        keys = [*facts.keys(service, "service", "pods"), *facts.blame.get(service, _NO).keys]
        found = _selector_mismatch(facts, service, svc, keys) or _target_port_mismatch(
            facts, service, svc, keys
        )
        if found is not None:
            yield found
            return


def _selector_mismatch(
    facts: Facts, service: str, svc: ServiceSpec, keys: list[str]
) -> Candidate | None:
    """The Service's selector matches none of the service's pods, so it has no endpoints."""
    spec = facts.obs.specs.get(service)
    pods = facts.obs.pods.get(service, ())
    labels_match = spec is not None and all(
        spec.template_labels.get(k) == v for k, v in svc.selector.items()
    )
    if not (svc.selector and not labels_match and (spec is not None or not pods)):
        return None
    touches = facts.touched("Service", svc.name, r"selector")
    return Candidate(
        service=service,
        category=VIRT_MISCONFIG,
        confidence=0.92 if touches else 0.85,
        explanation=f"Service {svc.name}'s selector {dict(svc.selector)} matches none of "
        f"{service}'s pods, so it has no endpoints",
        rule="service-selector",
        keys=(*keys, *touch_keys(touches)),
        suspect=Suspect(
            kind="Service",
            namespace=facts.ns,
            name=svc.name,
            field="spec.selector",
            current=str(dict(svc.selector)),
            last_known_good=next((t.old for t in touches if t.old), None),
            reason="selector matches no pods",
        ),
    )


def _target_port_mismatch(
    facts: Facts, service: str, svc: ServiceSpec, keys: list[str]
) -> Candidate | None:
    """The Service's first port whose targetPort no container of the service listens on."""
    spec = facts.obs.specs.get(service)
    ports = spec.container_ports() if spec else set()
    for i, p in enumerate(svc.ports):
        if ports and p.target_port not in ports:
            return _target_port_candidate(facts, service, svc, i, ports, keys=keys)
    return None


def _target_port_candidate(
    facts: Facts, service: str, svc: ServiceSpec, i: int, ports: set[int | str], *, keys: list[str]
) -> Candidate:
    p = svc.ports[i]
    touches = facts.touched("Service", svc.name, r"ports|targetPort")
    ready = sum(1 for pod in facts.obs.pods.get(service, ()) if pod.ready)
    return Candidate(
        service=service,
        category=VIRT_MISCONFIG,
        confidence=0.93 if touches or service in facts.blame else 0.85,
        explanation=f"Service {svc.name} sends port {p.port} to targetPort "
        f"{p.target_port}, which no container of {service} listens on ({_ports(ports)})"
        + (f" while {ready} pod{' is' if ready == 1 else 's are'} Ready" if ready else "")
        + ("; callers' connections are refused" if service in facts.blame else ""),
        rule="service-target-port",
        keys=(*keys, *touch_keys(touches)),
        suspect=Suspect(
            kind="Service",
            namespace=facts.ns,
            name=svc.name,
            field=f"spec.ports[{i}].targetPort",
            current=str(p.target_port),
            last_known_good=next((t.old for t in touches if t.old), None),
            reason="targetPort matches no containerPort",
        ),
    )


def _ports(ports: set[int | str]) -> str:
    return ", ".join(str(p) for p in sorted(ports, key=str))


class _NoBlame:
    keys: list[str] = []  # noqa: RUF012 - an empty, never-mutated default


_NO = _NoBlame()


def authentication(facts: Facts, service: str) -> Iterator[Candidate]:
    """A database refuses the service's credentials ⇒ application authentication.

    The root cause is the database the callers authenticate against (its users or roles) —
    unless a caller's own credentials changed just before, then that caller."""
    blame = facts.blame.get(service)
    callers = _refused_callers(blame)
    own = facts.own_signs(service).get(Sign.AUTH, [])
    if not callers and not own:
        return
    if not callers and own and facts.obs.callees(service):
        return  # it complains about someone else's refusal: the blame lands on that one
    changed = _credential_changes(facts, callers)
    line = (blame.lines[0] if blame and blame.lines else own[0]).strip()
    keys = [*(blame.keys if blame else []), *facts.keys(service, "logs", "pods")]
    if changed:
        yield _client_change(facts, service, changed[0], line, keys)
    yield Candidate(
        service=service,
        category=APP_AUTH,
        confidence=0.6 if changed else 0.86,
        explanation=f"{service} refuses its clients' credentials or commands ({line}): its "
        f"users or roles no longer match what {', '.join(callers) or 'its clients'} present",
        rule="auth-database",
        keys=tuple(keys),
    )
    yield from _refused_clients(service, callers, changed, line, keys)


def _refused_callers(blame: Blame | None) -> list[str]:
    """The callers whose error lines say the service refused their credentials, sorted."""
    return sorted(c for c, signs in (blame.by.items() if blame else []) if Sign.AUTH in signs)


def _credential_changes(facts: Facts, callers: list[str]) -> list[tuple[str, Touch]]:
    """Recent changes of the callers' credential settings, caller by caller."""
    changed = []
    for caller in callers:
        changed += [
            (caller, t)
            for t in facts.changed_recently(caller)
            if re.search(_CREDENTIAL, t.path, re.I)
        ]
    return changed


def _refused_clients(
    service: str,
    callers: list[str],
    changed: list[tuple[str, Touch]],
    line: str,
    keys: list[str],
) -> Iterator[Candidate]:
    """The first two callers as weak suspects of their own, but for the one already named
    for its credential change."""
    for caller in callers[:2]:
        if not changed or caller != changed[0][0]:
            yield Candidate(
                service=caller,
                category=APP_AUTH,
                confidence=0.4,
                explanation=f"{caller}'s credentials for {service} are refused ({line})",
                rule="auth-client",
                keys=tuple(keys),
            )


def _client_change(
    facts: Facts, service: str, change: tuple[str, Touch], line: str, keys: list[str]
) -> Candidate:
    caller, t = change
    return Candidate(
        service=caller,
        category=APP_AUTH,
        confidence=0.85,
        explanation=f"{service} refuses {caller}'s credentials ({line}) after {caller}'s "
        f"{t.path} changed",
        rule="auth-client-change",
        keys=(*keys, t.key),
        suspect=touch_suspect(facts, t, "credentials changed"),
    )


def flags(facts: Facts, service: str) -> Iterator[Candidate]:
    """A feature flag turned on makes a service fail ⇒ application misconfiguration."""
    if not _misbehaves(facts, service):
        return
    words = _words(service)
    for flip in _flips(facts):
        named = bool(words) and words <= _words(flip.flag)
        logged = Sign.FEATURE_FLAG in facts.own_signs(service)
        if not (named or logged):
            continue
        yield _flag_candidate(facts, service, flip, _flag_confidence(named=named, logged=logged))
        for consumer in sorted(_consumers(facts, flip.touch.name) - {service})[:1]:
            yield Candidate(
                service=consumer,
                category=APP_MISCONFIG,
                confidence=0.3,
                explanation=f"{consumer} serves the flags of ConfigMap {flip.touch.name}, whose "
                f"flag {flip.flag!r} changed",
                rule="feature-flag-source",
                keys=(flip.touch.key,),
            )
        return


@dataclass(frozen=True, slots=True, kw_only=True)
class _Flip:
    """One value a ConfigMap change turned: a leaf of its flag document, or the key itself."""

    touch: Touch
    path: str
    old: object
    new: object

    @property
    def flag(self) -> str:
        return _flag_name(self.path)


def _misbehaves(facts: Facts, service: str) -> bool:
    """Its pods, signals or own logs show trouble: a flag is only suspect for a failing service."""
    s = facts.symptoms.get(service)
    sick = s is not None and (s.intrinsic or s.restarts > 0)
    return bool(sick or facts.failing(service) or facts.slow(service) or facts.own_signs(service))


def _flips(facts: Facts) -> Iterator[_Flip]:
    """The ConfigMap changes by leaf; a change that is no JSON document counts as a flip only
    when its key names a flag or feature."""
    for t in facts.touches:
        if t.kind != "ConfigMap":
            continue
        flips = [(p, a, b) for p, a, b in json_diff(t.old, t.new)] or (
            [(t.path, t.old, t.new)] if re.search(r"flag|feature", t.path, re.I) else []
        )
        for path, old, new in flips:
            yield _Flip(touch=t, path=path, old=old, new=new)


def _flag_confidence(*, named: bool, logged: bool) -> float:
    return 0.88 if named and logged else (0.82 if named else 0.6)


def _flag_candidate(facts: Facts, service: str, flip: _Flip, confidence: float) -> Candidate:
    t, flag, old, new = flip.touch, flip.flag, flip.old, flip.new
    return Candidate(
        service=service,
        category=APP_MISCONFIG,
        confidence=confidence,
        explanation=f"feature flag {flag!r} in ConfigMap {t.name} went from {old!r} to "
        f"{new!r} and {service} now fails its requests",
        rule="feature-flag",
        keys=(t.key, *facts.keys(service, "signals", "logs")),
        suspect=Suspect(
            kind="ConfigMap",
            namespace=facts.ns,
            name=t.name,
            field=t.path,
            current=str(new),
            last_known_good=None if old is None else str(old),
            reason=f"flag {flag} ({flip.path}) turned on",
        ),
    )


def _consumers(facts: Facts, config_map: str) -> set[str]:
    return {name for name, spec in facts.obs.specs.items() if config_map in spec.config_maps()}


def _flag_name(path: str) -> str:
    parts = [p for p in re.split(r"[.\[\]]", path) if p]
    if "flags" in parts and parts.index("flags") + 1 < len(parts):
        return parts[parts.index("flags") + 1]
    return parts[-1] if parts else path


def _words(text: str) -> set[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    stop = {
        "failure",
        "fail",
        "flag",
        "enabled",
        "service",
        "high",
        "cpu",
        "slow",
        "load",
        "data",
        "json",
    }
    return {w for w in re.split(r"[^a-z0-9]+", spaced.lower()) if w and w not in stop}


def cpu_throttling(facts: Facts, service: str) -> Iterator[Candidate]:
    """Latency from CPU throttling: the CPU limit is below demand ⇒ virt misconfiguration."""
    ratio = facts.obs.cpu_ratio.get(service, 0.0)
    saturated = ratio >= facts.handler.thresholds.cpu_saturation
    lowered = facts.touched(None, service, r"limits.*cpu|resources")
    slow = facts.slow(service) or any(
        Sign.TIMEOUT in s for s in facts.blame.get(service, _Blames()).by.values()
    )
    if not slow or not (saturated or lowered):
        return
    spec = facts.obs.specs.get(service)
    c = spec.containers[0] if spec and spec.containers else None
    suspect, touches = container_suspect(
        facts,
        service,
        c,
        "resources.limits.cpu",
        c.cpu_limit_millis if c else None,
        touch_pattern=r"limits.*cpu|resources",
        reason="CPU limit below demand",
    )
    yield Candidate(
        service=service,
        category=VIRT_MISCONFIG,
        confidence=0.88 if saturated and lowered else (0.82 if saturated else 0.7),
        explanation=f"{service} is slow while its CPU use is "
        + (
            f"at {ratio:.0%} of its limit (throttled)"
            if saturated
            else "capped by a lowered CPU limit"
        ),
        rule="cpu-throttling",
        keys=(*facts.keys(service, "cpu", "signals"), *touch_keys(touches)),
        suspect=suspect,
    )


class _Blames:
    by: dict[str, set[Sign]] = {}  # noqa: RUF012 - an empty, never-mutated default


def network(facts: Facts, service: str) -> Iterator[Candidate]:
    """Timeouts/loss to a service whose pods are healthy and unchanged ⇒ virtualization network."""
    blame = facts.blame.get(service)
    if blame is None:
        return
    signs = blame.signs()
    if not signs & {Sign.TIMEOUT, Sign.UNREACHABLE}:
        return
    s = facts.symptoms.get(service)
    if s is None or s.intrinsic or s.ready < s.total or s.total == 0:
        return
    if facts.changed_recently(service) or any(
        svc.ready_endpoints == 0 for svc in facts.obs.k8s_services_for(service)
    ):
        return
    own = facts.own_signs(service, previous=False)
    if {Sign.PANIC, Sign.AUTH, Sign.BAD_CONFIG, Sign.FEATURE_FLAG} & set(own):
        return
    callers = ", ".join(sorted(blame.by))
    timeouts = Sign.TIMEOUT in signs
    yield Candidate(
        service=service,
        category=VIRT_NETWORK,
        confidence=0.75 if timeouts else 0.55,
        explanation=f"{callers} time out or lose requests to {service} while its pods are "
        "healthy and unchanged: the network path to it adds delay or drops packets",
        rule="network",
        keys=(*blame.keys, *facts.keys(service, "pods", "signals")),
    )


def address_settings(facts: Facts, service: str) -> Iterator[Candidate]:
    """A running service dials an address from its settings that names no Service (or no port
    of it) ⇒ application misconfiguration of that setting."""
    obs = facts.obs
    spec = obs.specs.get(service)
    if spec is None or facts.symptoms[service].crash:
        return
    complaints = _dial_complaints(facts, service)
    if not complaints:
        return
    for ref in references(obs, spec):
        mentioned = any(ref.host in line for line in complaints)
        why = _wrong_address(facts, ref, mentioned=mentioned)
        if why is None:
            continue
        yield _address_candidate(facts, service, ref, why, mentioned=mentioned)
        return


def _dial_complaints(facts: Facts, service: str) -> list[str]:
    """The service's current log lines that say it cannot reach an address."""
    own = facts.own_signs(service, previous=False)
    return [
        line
        for s in (Sign.NO_HOST, Sign.UNREACHABLE, Sign.REFUSED, Sign.TIMEOUT)
        for line in own.get(s, [])
    ]


def _wrong_address(facts: Facts, ref: Reference, *, mentioned: bool) -> str | None:
    """Why the address a setting holds is wrong, or None when nothing says it is."""
    obs = facts.obs
    svc = obs.services.get(ref.host)
    if svc is None and (mentioned or _near(ref.host, obs.service_names)):
        return f"{ref.host} is not a Service of {facts.ns}"
    if (
        svc is not None
        and ref.port is not None
        and svc.ports
        and all(p.port != ref.port for p in svc.ports)
    ):
        return f"Service {ref.host} has no port {ref.port}"
    return None


def _address_candidate(
    facts: Facts, service: str, ref: Reference, why: str, *, mentioned: bool
) -> Candidate:
    kind, name = ref.owner
    touches = facts.touched(kind, name, re.escape(ref.key) if ref.config_map else r"env")
    return Candidate(
        service=service,
        category=APP_MISCONFIG,
        confidence=0.88 if touches or mentioned else 0.7,
        explanation=f"{service} dials {ref.value!r} from {ref.key}: {why}",
        rule="address-misconfig",
        keys=(*facts.keys(service, "logs", "changes", "drift"), *touch_keys(touches)),
        suspect=Suspect(
            kind=kind,
            namespace=facts.ns,
            name=name,
            field=ref.field,
            current=ref.value,
            last_known_good=next((t.old for t in touches if t.old), None),
            container=ref.container.name,
            reason=why,
        ),
    )


def _near(host: str, names: set[str]) -> bool:
    """One or two edits away from an existing Service name: a typo, not another cluster's host."""
    for name in names:
        if abs(len(name) - len(host)) <= 2 and host != name and edit_distance(host, name) <= 2:
            return True
    return False


def recent_change(facts: Facts, service: str) -> Iterator[Candidate]:
    """Anomalous right after a change of its own objects: the change is the suspect.

    A recent change alone justifies nothing (DESIGN section 3 rule 10): the changed service
    must itself be unwell or blamed by an unwell caller (`facts.anomalous` holds both), else a
    healthy release that merely happened minutes earlier would be named and rolled back.
    Stratus's own writes are not suspects: they are what the last incident put back."""
    if service not in facts.anomalous:
        return
    touches = sorted(
        (t for t in facts.changed_recently(service) if t.manager != STRATUS_MANAGER),
        key=lambda t: -t.weight,
    )
    if not touches:
        return
    t = touches[0]
    path = t.path.lower()
    if "image" in path:
        category = APP_CODE
    elif re.search(r"env|data\.|command|args", path):
        category = APP_MISCONFIG
    else:
        category = VIRT_MISCONFIG
    yield Candidate(
        service=service,
        category=category,
        confidence=0.35 + 0.15 * t.weight,
        explanation=f"{service} misbehaves after {t.kind}/{t.name} {t.path} changed"
        + (f" from {t.old!r} to {t.new!r}" if t.old is not None or t.new is not None else ""),
        rule="recent-change",
        keys=(t.key, *facts.keys(service, "pods", "signals", "logs")),
        suspect=touch_suspect(facts, t, "changed just before the incident"),
    )


RULES = (
    service_ports,
    authentication,
    flags,
    cpu_throttling,
    network,
    address_settings,
    recent_change,
)

__all__ = ["RULES", "Touch"]
