"""From one hypothesis to its options: by the suspect's kind and field when the diagnosis
names one, else by the category and what the cluster shows.

Categories that no catalog action fixes (the network path, a database's users, no fault at
all) answer with an escalation; so does a suspect that only an unsafe write could fix (a
Secret, a volume). Nothing here knows a scenario, a fault or a service by name.
"""

from __future__ import annotations

from agents.diagnosis.suspect import Suspect
from agents.model import FaultLevel, FaultType, KubeObject
from agents.planning import runbooks
from agents.planning.context import Context
from agents.planning.drafts import NOTHING, Options
from agents.planning.rollback import template_options
from agents.planning.rules_cluster import node_options, quota_options
from agents.planning.rules_config import config_options
from agents.planning.rules_pod import pod_options
from agents.planning.rules_service import service_options
from agents.planning.rules_state import (
    broken_rollout,
    journal_suspects,
    oom_state,
    pod_failure,
    restart,
    service_state,
)
from agents.planning.rules_workload import scale_up, workload_options
from agents.planning.subject import Subject

#: Kinds Stratus never writes (or only by deleting, which loses data).
UNWRITABLE = frozenset({"Secret", "PersistentVolumeClaim", "PersistentVolume", "Namespace"})


def by_suspect(ctx: Context, subject: Subject) -> Options:
    suspect = subject.suspect
    if suspect is None:
        return NOTHING
    if suspect.kind in UNWRITABLE:
        return Options(escalation=runbooks.inadmissible(ctx, subject))
    if suspect.kind == "Service":
        return service_options(ctx, subject)
    if suspect.kind in ("Deployment", "StatefulSet"):
        return workload_options(ctx, subject)
    if suspect.kind == "ConfigMap":
        return config_options(ctx, subject)
    if suspect.kind == "ResourceQuota":
        return quota_options(ctx, subject)
    if suspect.kind == "Node" and "conditions" in suspect.field:
        return Options(escalation=runbooks.node_down(ctx, subject))
    if suspect.kind == "Node":
        return node_options(ctx, subject)
    if suspect.kind == "LimitRange":
        return Options(escalation=runbooks.limit_range(ctx, subject))
    if suspect.kind == "Pod":
        return pod_options(ctx, subject)
    return NOTHING


def by_state(ctx: Context, subject: Subject) -> Options:
    """No suspect (or none that yielded a fix): read the service's state and history."""
    h = subject.hypothesis
    workload = ctx.workload_for(h.service)
    if workload is None:
        return NOTHING
    kind, level = h.category.type, h.category.level
    options = NOTHING
    if kind is FaultType.OPERATION_ERROR:
        options += scale_up(ctx, subject, workload)
        options += broken_rollout(ctx, subject, workload)
        options += pod_failure(ctx, subject, workload)
    elif kind is FaultType.MISCONFIGURATION and level is FaultLevel.VIRTUALIZATION:
        options += service_state(ctx, subject, workload)
        options += oom_state(ctx, subject, workload)
        options += _from_journal(ctx, subject, workload)
    elif kind is FaultType.CODE_DEFECT:
        options += broken_rollout(ctx, subject, workload)
        options += _from_journal(ctx, subject, workload)
    elif kind is FaultType.DEPENDENCY:
        options += Options(drafts=(restart(ctx, subject, workload),))
    else:
        options += _from_journal(ctx, subject, workload)
    return options


def _from_journal(ctx: Context, subject: Subject, workload: KubeObject) -> Options:
    options = NOTHING
    for suspect in journal_suspects(ctx, subject, workload):
        options += by_suspect(ctx, _with(subject, suspect))
    if not options.drafts:
        options += template_options(ctx, subject, workload)
    return Options(drafts=options.drafts)  # a journal guess never escalates on its own


def _with(subject: Subject, suspect: Suspect) -> Subject:
    return Subject(hypothesis=subject.hypothesis, suspect=suspect, evidence=subject.evidence)


def options_for(ctx: Context, subject: Subject) -> Options:
    """Every option for one hypothesis with one suspect (or none)."""
    h = subject.hypothesis
    kind, level = h.category.type, h.category.level
    if kind is FaultType.NONE:
        return Options(escalation=runbooks.no_fault(ctx, subject))
    if kind is FaultType.NETWORK:
        return Options(escalation=runbooks.network(ctx, subject))
    if level in (FaultLevel.HARDWARE, FaultLevel.OPERATING_SYSTEM) or kind is FaultType.STORAGE:
        return Options(escalation=runbooks.outside_kubernetes(ctx, subject))
    options = by_suspect(ctx, subject)
    if kind is FaultType.AUTHENTICATION:
        # Only a Kubernetes change of the client's credentials (with a value to go back to)
        # is ours to undo; the database's users and roles are not.
        escalation = runbooks.authentication(ctx, subject)
        return Options(drafts=options.drafts, escalation=escalation)
    if not options.drafts and not _outside_workloads(subject, options):
        options += by_state(ctx, subject)
    return options


#: Objects outside the workloads that keep their pods off (a node's taints, the namespace's
#: LimitRange policy): when Stratus cannot fix one, no workload change is a fix either.
_POLICY_KINDS = frozenset({"Node", "LimitRange"})


def _outside_workloads(subject: Subject, options: Options) -> bool:
    """The suspect is a node or namespace policy Stratus cannot fix: the journal is not
    searched for a workload change to undo (a restart rolled back would only hide the fault
    until the pod is next recreated)."""
    suspect = subject.suspect
    return suspect is not None and suspect.kind in _POLICY_KINDS and options.escalation is not None
