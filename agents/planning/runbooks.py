"""Runbooks for the faults no transaction can fix: what a person checks, runs and pages.

An escalation is only useful if the person who reads it at 3 a.m. can act on it. So each
runbook names the namespace, the objects and the commands with this incident's values filled
in (the database, its user, the callers, the nodes), and says *why* Stratus stops: users and
roles live inside a database, latency lives on the network path — no Kubernetes object holds
them, so there is nothing to snapshot, restore or undo. Commands that exec into a container
are for a person to run; Stratus never does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from agents.model import Diagnosis, Hypothesis, KubeObject
from agents.planning.context import Context, containers
from agents.planning.paths import hides_secret
from agents.planning.plan import Attempt, Escalation
from agents.planning.subject import Subject
from agents.redact import looks_secret

_ENGINES = (
    ("mongo", "MongoDB"),
    ("postgres", "PostgreSQL"),
    ("mysql", "MySQL"),
    ("mariadb", "MySQL"),
    ("redis", "Redis"),
    ("valkey", "Redis"),
)
_DATABASE = re.compile(r"not authorized on (?P<db>[\w.-]+)|database \"?(?P<pg>[\w.-]+)\"?", re.I)


def _short_kind(workload: KubeObject | None) -> str:
    return (
        "statefulset" if workload is not None and workload.kind == "StatefulSet" else "deployment"
    )


def _engine(workload: KubeObject | None, text: str) -> str | None:
    """The database engine: by the image it runs, else by what the evidence says."""
    images = (
        " ".join(str(c.get("image", "")) for c in containers(workload.body)) if workload else ""
    )
    for haystack in (images.lower(), text.lower()):  # what it runs beats what it is called
        found = next((name for word, name in _ENGINES if word in haystack), None)
        if found is not None:
            return found
    return None


def _texts(subject: Subject) -> str:
    parts = [subject.hypothesis.explanation]
    parts += [f"{e.summary}\n{e.detail}" for e in subject.evidence]
    return "\n".join(parts)


def _clients(ctx: Context, service: str) -> list[tuple[str, str | None]]:
    """Workloads whose settings name `service`, each with the database user it presents
    (an env var or ConfigMap key whose name says USER), when that is not a secret."""
    found: list[tuple[str, str | None]] = []
    for workload in ctx.workloads():
        if workload.name == service:
            continue
        names_it, user = _client_settings(ctx, workload, service)
        if names_it:
            found.append((workload.name, user))
    return found


def _client_settings(ctx: Context, workload: KubeObject, service: str) -> tuple[bool, str | None]:
    """Whether any env var of the workload names `service`, and the (last) user it presents."""
    names_it = False
    user: str | None = None
    for c in containers(workload.body):
        for env in c.get("env") or []:
            if not isinstance(env, dict):
                continue
            value = _env_value(ctx, env)
            if not isinstance(value, str):
                continue
            if re.search(rf"(^|[/@:.]){re.escape(service)}([:./]|$)", value):
                names_it = True
            name = str(env.get("name", ""))
            if "USER" in name.upper() and not looks_secret(name) and not hides_secret(value):
                user = value
    return names_it, user


def _env_value(ctx: Context, env: dict[str, Any]) -> Any:
    """An env var's value: its literal, or the ConfigMap key it refers to."""
    value = env.get("value")
    ref = (env.get("valueFrom") or {}).get("configMapKeyRef") or {}
    if ref.get("name"):
        cm = ctx.get("ConfigMap", str(ref["name"]))
        value = ((cm.body.get("data") or {}) if cm else {}).get(str(ref.get("key")))
    return value


def authentication(ctx: Context, subject: Subject) -> Escalation:
    h = subject.hypothesis
    workload = ctx.workload_for(h.service)
    text = _texts(subject)
    engine = _engine(workload, text)
    match = _DATABASE.search(text)
    database = (match["db"] or match["pg"]) if match else None
    db = database or "<database>"
    clients = _clients(ctx, h.service)
    client_names = ", ".join(name for name, _ in clients) or "its clients"
    user = next((u for _, u in clients if u), None) or "<user>"
    ns = ctx.namespace
    target = f"{_short_kind(workload)}/{workload.name if workload else h.service}"
    why = (
        f"**Why Stratus does not act:** {h.service} refuses the credentials or commands of "
        f"{client_names}. Users and their roles live inside the database, not in any Kubernetes "
        "object, so there is nothing a transaction could change, snapshot or undo."
    )
    steps = [
        f"1. Confirm on the database side: `kubectl -n {ns} logs {target} --tail=200 | grep -iE "
        "'auth|not authorized|denied'` — note the user and the command that was refused.",
    ]
    if engine == "MongoDB":
        steps += [
            f"2. Connect as an administrator (a person runs this; Stratus never execs): "
            f"`kubectl -n {ns} exec -it {target} -- mongosh admin -u <admin>` (the admin "
            "password is in the database's Secret; never paste it into Slack).",
            f'3. Inspect the user: `use {db}` then `db.getUser("{user}", '
            "{showPrivileges: true})` — null means the user is gone; no `readWrite` on "
            f'`{db}` explains "not authorized".',
            f'4. Re-grant what it lost: `db.grantRolesToUser("{user}", [{{role: "readWrite", '
            f'db: "{db}"}}])`; if the user was dropped, `db.createUser({{user: "{user}", '
            f'pwd: passwordPrompt(), roles: [{{role: "readWrite", db: "{db}"}}]}})` with the '
            "password from the clients' Secret.",
        ]
    elif engine == "PostgreSQL":
        steps += [
            f"2. Connect as an administrator: `kubectl -n {ns} exec -it {target} -- psql -U "
            "postgres`.",
            f"3. Inspect the role: `\\du {user}` and `\\l {db}`; check `pg_hba.conf` if the "
            "error is about the connection rather than the role.",
            f"4. Re-grant: `GRANT CONNECT ON DATABASE {db} TO {user};` and the table privileges "
            f"it had (`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO "
            f"{user};`), or `ALTER ROLE {user} LOGIN;` if it was disabled.",
        ]
    elif engine == "MySQL":
        steps += [
            f"2. Connect as an administrator: `kubectl -n {ns} exec -it {target} -- mysql -u "
            "root -p`.",
            f"3. Inspect: `SHOW GRANTS FOR '{user}'@'%';`.",
            f"4. Re-grant: `GRANT SELECT, INSERT, UPDATE, DELETE ON {db}.* TO '{user}'@'%';`.",
        ]
    elif engine == "Redis":
        steps += [
            f"2. Connect: `kubectl -n {ns} exec -it {target} -- redis-cli` and `AUTH` as an "
            "administrator.",
            f"3. Inspect: `ACL GETUSER {user}`.",
            f"4. Re-enable or re-grant: `ACL SETUSER {user} on ~* +@all` (narrow it to what "
            "the application needs).",
        ]
    else:
        steps += [
            f"2. Check the user {user} of {client_names} in {h.service}: does it exist, is it "
            "enabled, which roles or grants does it have?",
            "3. Restore the roles or grants it had (the database's audit log shows what "
            "changed), or rotate the password in both the database and the clients' Secret.",
        ]
    steps += [
        f"{len(steps) + 1}. Verify: the error ratio of {client_names} falls within a minute "
        "(drivers authenticate again on new connections); if not, restart them: "
        f"`kubectl -n {ns} rollout restart deployment/<client>`.",
        f"{len(steps) + 2}. Find out who changed the user (the database's audit log) and page "
        f"the owner of {h.service} if it was not planned.",
    ]
    return Escalation(
        reason=f"{h.service} refuses its clients' credentials ({h.category}): the fix is inside "
        "the database, not in Kubernetes",
        runbook="\n".join([why, "", *steps]),
    )


def network(ctx: Context, subject: Subject) -> Escalation:
    h = subject.hypothesis
    ns = ctx.namespace
    workload = ctx.workload_for(h.service)
    callers = sorted({e.service for e in subject.evidence if e.service and e.service != h.service})
    who = ", ".join(callers) or "its callers"
    caller = callers[0] if callers else "<caller>"
    pods = ctx.pods_of(workload) if workload is not None else []
    nodes = ", ".join(sorted({p.node for p in pods if p.node})) or "its nodes"
    why = (
        f"**Why Stratus does not act:** {who} time out or lose requests to {h.service} while "
        f"its pods are Ready and its spec has not changed. The delay is on the network path "
        "(CNI, node network, a service mesh, a NetworkPolicy, traffic shaping); no action in "
        "Stratus's catalog changes those, and restarting healthy pods would only add risk."
    )
    steps = [
        f"1. Measure the path from a caller: `kubectl -n {ns} exec deploy/{caller} -- sh -c "
        f"'time wget -qO- http://{h.service}:<port>/ || true'` (or a netshoot debug pod) — "
        "seconds instead of milliseconds confirm it.",
        "2. Look for deliberate delay or loss: chaos experiments (`kubectl get "
        "networkchaos,podchaos -A`), service-mesh fault injection (`kubectl -n "
        f"{ns} get virtualservices -o yaml | grep -A6 fault`), `tc qdisc show` on the nodes.",
        f"3. Check NetworkPolicies and their recent changes: `kubectl -n {ns} get networkpolicy`.",
        f"4. Check the nodes that host {h.service} ({nodes}): packet drops, NIC errors, "
        "conntrack exhaustion; do other services on the same nodes suffer too?",
        "5. Page the platform / network on-call with this thread. If it is a planned "
        "experiment or maintenance it is time-bounded: note when it ends — Stratus keeps "
        "measuring μ and the incident resolves by itself when the path recovers.",
    ]
    return Escalation(
        reason=f"the network path to {h.service} adds delay or drops packets while its pods "
        "are healthy: no Kubernetes change in the catalog can fix it",
        runbook="\n".join([why, "", *steps]),
    )


def no_fault(ctx: Context, subject: Subject) -> Escalation:
    return Escalation(
        reason=f"the diagnosis found nothing wrong in {ctx.namespace}",
        runbook="\n".join(
            [
                "Nothing in the namespace looks wrong: no failing pods, Services or recent "
                "changes. The alert may be a false positive or the fault may have passed.",
                "1. Check the alert's query and threshold against the service's normal level.",
                "2. If the symptoms are real, note what users see and re-run `/stratus diagnose`.",
            ]
        ),
    )


def outside_kubernetes(ctx: Context, subject: Subject) -> Escalation:
    h = subject.hypothesis
    return Escalation(
        reason=f"{h.service}: {h.category} is below what Kubernetes objects control",
        runbook="\n".join(
            [
                f"The diagnosis points at {h.category} for {h.service}: {h.explanation}",
                f"1. Check the nodes and volumes {h.service} uses: `kubectl -n {ctx.namespace} "
                f"describe pod -l <selector of {h.service}>`, node conditions and disk pressure.",
                "2. Page the infrastructure on-call; Stratus keeps measuring μ.",
            ]
        ),
    )


def inadmissible(ctx: Context, subject: Subject) -> Escalation:
    s = subject.suspect
    what = s.object if s is not None else subject.hypothesis.service
    kind = s.kind if s is not None else "object"
    return Escalation(
        reason=f"fixing {what} needs a change Stratus cannot undo or may not make ({kind})",
        runbook="\n".join(
            [
                f"The diagnosis suspects {subject.statement()}.",
                f"1. Compare {what} with its source of truth (manifests, Helm values, GitOps "
                "repository); Secrets and volumes are never read or written by Stratus.",
                f"2. Re-apply the intended version: `kubectl -n {ctx.namespace} apply -f "
                "<manifest>`, then restart the workloads that read it.",
            ]
        ),
    )


def node_down(ctx: Context, subject: Subject) -> Escalation:
    """A node that is not Ready: the machine or its kubelet is fixed by a person; the catalog
    has nothing that brings a node back (a restart of the pods cannot reach them)."""
    s = subject.suspect
    node = s.name if s is not None else "the node"
    return Escalation(
        reason=f"node {node} is not Ready and {subject.hypothesis.service}'s pods are stranded "
        "on it; Stratus cannot repair a node",
        runbook="\n".join(
            [
                f"1. See why: `kubectl describe node {node}` (conditions, last heartbeat), then "
                "the machine itself (kubelet and container runtime logs, network).",
                "2. Bring the kubelet or the machine back; its pods report Ready again.",
                f"3. If it cannot come back soon, drain it: `kubectl cordon {node}` and "
                f"`kubectl -n {ctx.namespace} delete pod <pod> --wait=false` for its pods, so "
                "their controllers recreate them on other nodes (pods with local volumes "
                "need their data moved first).",
            ]
        ),
    )


def limit_range(ctx: Context, subject: Subject) -> Escalation:
    """A LimitRange refuses (or under-sizes) the pods: the namespace's policy, not a catalog
    kind — and lowering the workload's limits under it would trade the refusal for OOM kills."""
    s = subject.suspect
    bound = f" ({s.field} = {s.current})" if s is not None and s.current else ""
    return Escalation(
        reason=f"a LimitRange in {ctx.namespace} refuses {subject.hypothesis.service}'s pods"
        f"{bound}; Stratus does not write LimitRanges",
        runbook="\n".join(
            [
                f"1. See the namespace's limits: `kubectl -n {ctx.namespace} describe limitrange`.",
                "2. If one was applied by mistake or is too low, delete it or raise its max/min "
                f"(`kubectl -n {ctx.namespace} edit limitrange <name>`); the ReplicaSet retries "
                "and its pods are admitted.",
                "3. If the limit is intended, size the workload's requests and limits to fit "
                "it in its manifests (check its working set first).",
            ]
        ),
    )


def exhausted(
    ctx: Context, diagnosis: Diagnosis, attempts: Sequence[Attempt], lines: Sequence[str]
) -> Escalation:
    top: Hypothesis = diagnosis.top
    steps = [
        f"Stratus has tried every plan it could derive for {ctx.namespace}; none made it healthy.",
        "",
        "What was tried:",
        *lines,
        "",
        f"What the diagnosis says now: {top.service}: {top.category} "
        f"({top.confidence:.0%}) — {top.explanation}",
        "",
        "Next steps for a person:",
        "1. Read the still-failing services above and the evidence of the latest diagnosis.",
        "2. A committed attempt stays in place; press its Undo if it should not.",
        "3. Fix by hand what the diagnosis cannot see (application data, external "
        "dependencies), then `/stratus diagnose` to check.",
    ]
    return Escalation(
        reason=f"{len(attempts)} attempt(s) did not make the scope healthy and no untried plan "
        "is left",
        runbook="\n".join(steps),
    )
