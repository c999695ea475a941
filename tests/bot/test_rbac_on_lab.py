"""The shipped RBAC (`manifests/kustomize/base/rbac.yaml`) against the RBAC-enforcing lab.

`test_doctor.py` holds the manifest equal to `bot.doctor`'s permission table on paper; here
the bot's Kubernetes adapter runs as `system:serviceaccount:stratus:stratus` with exactly
those Roles and bindings applied to the lab, and the API server decides:

* every read detection, diagnosis and the change journal make succeeds;
* every action of the catalog, on every kind it targets, passes its server-side dry run
  (`agents.tnr.preview`, as the engine admits a plan), is applied and undone the way the TNR
  engine writes (PUT, or DELETE for a pod), and could be re-created by a drift-confirmed undo;
* the TNR engine itself commits a plan and the Undoer restores it, as the ServiceAccount;
* every verb the roles grant is one the bot sends (nothing excessive), and none is refused;
* Secrets cannot be read;
* with any one rule removed, `stratus doctor` names exactly the verbs that rule granted, and
  the fix.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import count
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from agents.actions import (
    Action,
    CordonNode,
    DeletePod,
    MergePatch,
    PatchService,
    Replace,
    RollbackWorkload,
    RolloutRestart,
    ScaleWorkload,
    SetConfigMapKeys,
    SetContainerEnv,
    SetHpaBounds,
    SetImage,
    SetResources,
    SetScheduling,
)
from agents.actions.snapshot import clean, comparable, restorable
from agents.adapters.kubernetes_cluster import KubernetesCluster
from agents.cache.cluster_cache import ClusterCache
from agents.errors import Conflict
from agents.journal import WATCHED_KINDS
from agents.leadership import LeaderElector, LeaseConfig
from agents.model import KubeObject, ObjectRef, OutcomeKind, Scope
from agents.severity import SeverityMeter
from agents.tnr import TnrLimits, TransactionEngine, TransactionRequest, Undoer, UndoStatus
from agents.tnr.ledger import StorageLedger
from agents.tnr.preview import preview
from bot.doctor import (
    RBAC_HINT,
    READ_PERMISSIONS,
    CheckStatus,
    SelfSubjectAccessReviews,
    catalog_actions,
    check_kubernetes,
    write_permissions,
)
from lab.kube.rbac import Attributes, Identity
from lab.sim.world import LabWorld, WorldConfig
from storage import Store
from storage.migrations import upgrade

ROOT = Path(__file__).resolve().parents[2]
RBAC = ROOT / "manifests" / "kustomize" / "base" / "rbac.yaml"
NAMESPACE = RBAC.with_name("namespace.yaml")
NS = "hotel-reservation"
SA = ("stratus", "stratus")
USER = "system:serviceaccount:stratus:stratus"
_touches = count()
SCOPE = Scope(cluster="lab", namespace=NS)


def _rbac_documents() -> list[dict[str, Any]]:
    """The shipped RBAC, after Stratus's own namespace (where the leader Role lives)."""
    return [d for path in (NAMESPACE, RBAC) for d in yaml.safe_load_all(path.read_text()) if d]


@dataclass
class Lab:
    world: LabWorld
    bot: KubernetesCluster  # the adapter, as the ServiceAccount
    sa_client: client.ApiClient  # the official client, as the ServiceAccount

    def reconcile(self) -> None:
        self.world.cluster.reconcile()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    home = tmp_path_factory.mktemp("rbac")
    world = LabWorld(WorldConfig(apps=(NS,), serve_api=True, kubeconfig=home / "admin"))
    with world:
        cluster = world.cluster
        # What the catalog targets but the hotel app does not have (as the admin).
        cluster.apply_manifests(_extra_objects(), field_manager="lab")
        cluster.apply_manifests(_rbac_documents(), field_manager="kubectl")
        cluster.reconcile()
        kubeconfig = cluster.write_kubeconfig(home / "sa", service_account=SA)
        bot = KubernetesCluster.connect(kubeconfig=kubeconfig, cluster_name="lab")
        sa_client = config.new_client_from_config(str(kubeconfig))
        try:
            yield Lab(world=world, bot=bot, sa_client=sa_client)
        finally:
            sa_client.close()
            bot.close()


def _extra_objects() -> list[dict[str, Any]]:
    labels = {"app": "cache"}
    meta = {"namespace": NS}
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "cache", **meta},
            "spec": {
                "replicas": 1,
                "serviceName": "cache",
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "cache", "image": "memcached:1.6"}]},
                },
            },
        },
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "frontend", **meta},
            "spec": {
                "scaleTargetRef": {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": "frontend",
                },
                "minReplicas": 1,
                "maxReplicas": 3,
            },
        },
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "quota", **meta},
            "spec": {"hard": {"pods": "100"}},
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "stratus-probe", **meta},
            "stringData": {"password": "hunter2"},
        },
    ]


# --------------------------------------------------------------------------------- reads


def test_every_read_of_detection_diagnosis_and_the_journal_succeeds(lab: Lab) -> None:
    _read_everything(lab)


def _read_everything(lab: Lab) -> None:
    bot = lab.bot
    assert NS in bot.namespaces()
    assert bot.nodes()
    pods = [p.name for p in bot.pods(NS) if p.name.startswith("frontend-")]
    assert pods
    assert isinstance(bot.pod_logs(NS, pods[0], tail_lines=5), list)
    assert {w.name for w in bot.workloads(NS)} >= {"frontend", "cache"}
    assert bot.services(NS)
    assert bot.config_maps(NS)
    assert isinstance(bot.events(NS), list)
    assert bot.quotas(NS)
    assert bot.rollout_history(NS, "frontend")
    # What planning and diagnosis list by kind (agents/planning/context.py, diagnosis/).
    for api_version, kind in (
        ("apps/v1", "Deployment"),
        ("apps/v1", "StatefulSet"),
        ("apps/v1", "ReplicaSet"),
        ("v1", "Service"),
        ("autoscaling/v2", "HorizontalPodAutoscaler"),
    ):
        assert bot.list_objects(api_version=api_version, kind=kind, namespace=NS)
    # Diagnosis reads the NetworkPolicies guarding a callee (none here: the read must pass).
    assert (
        bot.list_objects(api_version="networking.k8s.io/v1", kind="NetworkPolicy", namespace=NS)
        == []
    )
    # The read cache: one list + watch per cached kind, all synced (none refused).
    cache = ClusterCache(bot)
    try:
        assert cache.wait_synced(NS, timeout_s=30)
        assert {p.name for p in cache.pods(NS)} >= set(pods)
    finally:
        cache.close()
    # The change journal: list-then-watch of each kind it records. A write (as the admin)
    # after the list makes the watch's replay hold an event, so no wait is needed.
    admin = lab.world.api
    for api_version, kind, name in (
        ("apps/v1", "Deployment", "frontend"),
        ("apps/v1", "StatefulSet", "cache"),
        ("v1", "Service", "frontend"),
        ("v1", "ConfigMap", "hotel-config"),
    ):
        listed = bot.list_for_watch(api_version=api_version, kind=kind, namespace=NS)
        assert listed.items
        admin.patch(
            kind,
            NS,
            name,
            {"metadata": {"labels": {"touched": str(next(_touches))}}},  # a change each time
            patch_type="merge",
            field_manager="someone",
        )
        events = bot.watch(
            api_version=api_version,
            kind=kind,
            namespace=NS,
            resource_version=listed.resource_version,
            timeout_seconds=5,
        )
        event_type, obj = next(iter(events))
        assert (event_type, obj.name) == ("MODIFIED", name)
        close = getattr(events, "close", None)
        if close is not None:
            close()
    # The kinds that feed a workload, which the journal follows too (it may find none).
    for watched in WATCHED_KINDS:
        if watched.kind in ("Deployment", "StatefulSet", "Service", "ConfigMap"):
            continue
        listed = bot.list_for_watch(
            api_version=watched.api_version, kind=watched.kind, namespace=NS
        )
        quiet = bot.watch(
            api_version=watched.api_version,
            kind=watched.kind,
            namespace=NS,
            resource_version=listed.resource_version,
            timeout_seconds=1,
        )
        list(quiet)  # nothing changes: the watch ends at its timeout


def test_the_read_role_cannot_read_secret_values(lab: Lab) -> None:
    core = client.CoreV1Api(lab.sa_client)
    for call in (
        lambda: core.read_namespaced_secret("stratus-probe", NS),
        lambda: core.list_namespaced_secret(NS),
        core.list_secret_for_all_namespaces,
    ):
        with pytest.raises(client.ApiException) as caught:
            call()
        assert caught.value.status == 403
        assert "cannot" in json.loads(caught.value.body)["message"]
    # Nor anything outside the covered namespaces.
    with pytest.raises(client.ApiException) as caught:
        core.list_namespaced_pod("default")
    assert caught.value.status == 403


def test_a_rules_review_lists_exactly_the_permission_table(lab: Lab) -> None:
    """What `kubectl auth can-i --list -n hotel-reservation` would show the ServiceAccount:
    the table of `bot.doctor`, plus the access reviews every identity may create."""
    auth = client.AuthorizationV1Api(lab.sa_client)
    review = client.V1SelfSubjectRulesReview(spec=client.V1SelfSubjectRulesReviewSpec(namespace=NS))
    status = auth.create_self_subject_rules_review(review).status
    listed = {
        (group, resource, verb)
        for rule in status.resource_rules
        for group in rule.api_groups
        for resource in rule.resources
        for verb in rule.verbs
        if group != "authorization.k8s.io"
    }
    table = {
        (p.group, p.resource, verb)
        for p in (*READ_PERMISSIONS, *write_permissions())
        for verb in p.verbs
    }
    assert listed == table
    assert status.incomplete is False


# ------------------------------------------------------------------------------- writes


def _first_container(lab: Lab, ref: ObjectRef) -> str:
    live = lab.world.api.get(ref.kind, NS, ref.name)
    return str(live["spec"]["template"]["spec"]["containers"][0]["name"])


def _ref(kind: str, name: str) -> ObjectRef:
    api_version = {
        "Deployment": "apps/v1",
        "StatefulSet": "apps/v1",
        "HorizontalPodAutoscaler": "autoscaling/v2",
    }.get(kind, "v1")
    return ObjectRef(
        api_version=api_version, kind=kind, name=name, namespace=None if kind == "Node" else NS
    )


_TARGETS = {
    "Deployment": "frontend",
    "StatefulSet": "cache",
    "Service": "frontend",
    "ConfigMap": "hotel-config",
    "HorizontalPodAutoscaler": "frontend",
    "ResourceQuota": "quota",
    "Node": "lab-node-1",
}

_MERGE_PATCHES: dict[str, dict[str, Any]] = {
    "Deployment": {"spec": {"minReadySeconds": 1}},
    "StatefulSet": {"spec": {"minReadySeconds": 1}},
    "Service": {"spec": {"sessionAffinity": "ClientIP"}},
    "ConfigMap": {"data": {"stratus-test": "1"}},
    "HorizontalPodAutoscaler": {"spec": {"maxReplicas": 4}},
    "ResourceQuota": {"spec": {"hard": {"pods": "99"}}},
}

Factory = Callable[[Lab, ObjectRef], Action]

#: One example of each catalog action; `test_the_examples_cover_the_catalog` keeps it whole.
_EXAMPLES: dict[str, Factory] = {
    "scale": lambda lab, ref: ScaleWorkload(
        target=ref, replicas=lab.world.api.get(ref.kind, NS, ref.name)["spec"]["replicas"] + 1
    ),
    "set_image": lambda lab, ref: SetImage(
        target=ref, container=_first_container(lab, ref), image="registry.lab/hotel:v2"
    ),
    "rollback": lambda lab, ref: RollbackWorkload(target=ref),
    "rollout_restart": lambda lab, ref: RolloutRestart(target=ref, stamp="2026-01-05T09:00:00Z"),
    "set_env": lambda lab, ref: SetContainerEnv(
        target=ref, container=_first_container(lab, ref), env={"STRATUS_TEST": "1"}
    ),
    "set_resources": lambda lab, ref: SetResources(
        target=ref, container=_first_container(lab, ref), requests={"cpu": "50m"}
    ),
    "set_scheduling": lambda lab, ref: SetScheduling(
        target=ref, node_selector={"kubernetes.io/os": "linux"}
    ),
    "patch_service": lambda lab, ref: PatchService(
        target=ref,
        selector={**lab.world.api.get("Service", NS, ref.name)["spec"]["selector"], "x": "y"},
    ),
    "set_configmap": lambda lab, ref: SetConfigMapKeys(target=ref, values={"stratus-test": "1"}),
    "delete_pod": lambda lab, ref: DeletePod(target=ref),
    "cordon": lambda lab, ref: CordonNode(target=ref),
    "set_hpa_bounds": lambda lab, ref: SetHpaBounds(target=ref, max_replicas=5),
    "merge_patch": lambda lab, ref: MergePatch(
        target=ref, patch=_MERGE_PATCHES[ref.kind], reason="test"
    ),
}

_CASES = [(action, kind) for action, kinds in catalog_actions().items() for kind in sorted(kinds)]


def test_the_examples_cover_the_catalog() -> None:
    assert set(_EXAMPLES) == set(catalog_actions())


def _frontend(pod: dict[str, Any]) -> bool:
    return str(pod["metadata"]["name"]).startswith("frontend-")


def _target(lab: Lab, kind: str) -> ObjectRef:
    if kind == "Pod":
        pods = lab.world.cluster.api.list("Pod", NS)
        return _ref("Pod", next(p["metadata"]["name"] for p in pods if _frontend(p)))
    return _ref(kind, _TARGETS[kind])


@pytest.mark.parametrize(("action_kind", "target_kind"), _CASES)
def test_every_catalog_action_dry_runs_applies_and_undoes_as_the_service_account(
    lab: Lab, action_kind: str, target_kind: str
) -> None:
    _exercise(lab, action_kind, target_kind)


def _exercise(lab: Lab, action_kind: str, target_kind: str) -> None:
    """Dry run, apply and undo as the engine does, through the adapter as the bot."""
    if action_kind == "rollback":
        # A rollback needs a previous revision: the admin changes the template first.
        lab.world.api.patch(
            "Deployment",
            NS,
            "frontend",
            {"spec": {"template": {"metadata": {"annotations": {"rev": action_kind}}}}},
            patch_type="merge",
            field_manager="someone",
        )
        lab.reconcile()
    ref = _target(lab, target_kind)
    action = _EXAMPLES[action_kind](lab, ref)
    [previewed] = preview(lab.bot, lab.bot, SCOPE, [action])
    assert (previewed.admitted, previewed.error) == (True, None)
    live = lab.bot.get(ref)
    write = action.desired(live, lab.bot)
    if not isinstance(write, Replace):
        lab.bot.delete(write.ref, resource_version=live.resource_version)
        lab.reconcile()
        # Its controller replaces it.
        assert any(_frontend(p) for p in lab.world.cluster.api.list("Pod", NS))
        return
    applied = lab.bot.replace(write.obj, field_manager="stratus")
    assert comparable(applied.body) != comparable(live.body)
    # Undo re-applies the snapshot over the object we produced.
    snapshot = clean(live.body)
    lab.bot.replace(KubeObject(restorable(snapshot, applied.resource_version)))
    assert comparable(lab.bot.get(ref).body) == comparable(live.body)
    if target_kind != "Node":
        # A drift-confirmed undo re-creates a deleted object: authorization comes before the
        # existence check, so "already exists" (not "forbidden") shows create is granted.
        with pytest.raises(Conflict, match="already exists"):
            lab.bot.create(KubeObject(restorable(snapshot, None)), dry_run=True)
    lab.reconcile()


def test_the_shipped_rbac_grants_nothing_the_bot_does_not_use(lab: Lab) -> None:
    """Least privilege the other way round: every verb a rule grants is one the reads, the
    journal or some catalog action actually sends, and the bot is never refused."""
    used: set[tuple[str, str, str]] = set()
    refused: list[Attributes] = []

    def record(identity: Identity, attrs: Attributes, allowed: bool) -> None:
        if identity.user != USER or attrs.group == "authorization.k8s.io":
            return
        used.add((attrs.group, attrs.combined, attrs.verb))
        if not allowed:
            refused.append(attrs)

    observers = lab.world.cluster.rbac.observers
    observers.append(record)
    try:
        _read_everything(lab)
        for action_kind, target_kind in _CASES:
            _exercise(lab, action_kind, target_kind)
    finally:
        observers.remove(record)
    assert refused == []
    granted = {
        (group, resource, verb)
        for d in _rbac_documents()
        if d["kind"] == "ClusterRole"
        for rule in d["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert granted - used == set()


# ------------------------------------------------------------------------------- doctor


def _rules() -> list[tuple[str, int]]:
    return [
        (d["metadata"]["name"], i)
        for d in _rbac_documents()
        if d["kind"] == "ClusterRole"
        for i in range(len(d["rules"]))
    ]


def test_doctor_finds_every_permission_granted(lab: Lab) -> None:
    checks = check_kubernetes(SelfSubjectAccessReviews(lab.bot), [NS])
    assert [(c.name, c.verdict) for c in checks] == [
        ("kubernetes reads", CheckStatus.OK),
        ("kubernetes writes", CheckStatus.OK),
    ]


@pytest.mark.parametrize(("role", "index"), _rules())
def test_doctor_names_the_permissions_of_a_removed_rule_and_the_fix(
    lab: Lab, role: str, index: int
) -> None:
    [shipped] = [
        d for d in _rbac_documents() if d["kind"] == "ClusterRole" and d["metadata"]["name"] == role
    ]
    removed = shipped["rules"][index]
    reduced = copy.deepcopy(shipped)
    del reduced["rules"][index]
    cluster = lab.world.cluster
    cluster.apply_manifests(reduced, field_manager="kubectl")
    try:
        checks = check_kubernetes(SelfSubjectAccessReviews(lab.bot), [NS])
    finally:
        cluster.apply_manifests(shipped, field_manager="kubectl")
    cluster_scoped = role in ("stratus-read-cluster", "stratus-write-nodes")
    place = " (cluster-wide)" if cluster_scoped else f" in {NS}"
    expected = {
        f"{verb} {resource}.{group}{place}" if group else f"{verb} {resource}{place}"
        for group in removed["apiGroups"]
        for resource in removed["resources"]
        for verb in removed["verbs"]
    }
    problems = [c for c in checks if c.verdict is not CheckStatus.OK]
    assert [c.verdict for c in problems] == [CheckStatus.PROBLEM]
    [problem] = problems
    assert problem.name == ("kubernetes writes" if "write" in role else "kubernetes reads")
    assert problem.detail.startswith("not allowed: ")
    # Entries are "VERB RESOURCE PLACE — WHY", joined by "; " (a why may hold "; " too).
    named = set(
        re.findall(r"(?:^not allowed: |; )(\w+ \S+ (?:in \S+|\(cluster-wide\))) — ", problem.detail)
    )
    assert named == expected
    assert RBAC_HINT in problem.fix
    # Each named permission says why Stratus needs it (from the permission table).
    table = {p.name: p.why for p in (write_permissions() if "write" in role else READ_PERMISSIONS)}
    for entry in expected:
        assert f"{entry} — {table[entry.split()[1]]}" in problem.detail


# ------------------------------------------------------------------------------- engine


def test_the_tnr_engine_commits_and_undoes_a_plan_as_the_service_account(tmp_path: Path) -> None:
    """The whole write path under the shipped roles: the lease, dry runs, snapshots, writes,
    the severity measurements of validation, and the Undo button's restore."""
    url = f"sqlite:///{tmp_path / 'stratus.db'}"
    upgrade(url)
    store = Store.connect(url)
    config = WorldConfig(apps=(NS,), seed=3, serve_api=True, kubeconfig=tmp_path / "admin")
    try:
        with LabWorld(config) as world:
            world.cluster.apply_manifests(_rbac_documents(), field_manager="kubectl")
            world.wait_healthy()
            kubeconfig = world.cluster.write_kubeconfig(tmp_path / "sa", service_account=SA)
            bot = KubernetesCluster.connect(kubeconfig=kubeconfig, cluster_name="lab")
            try:
                _engine_round_trip(world, bot, store)
            finally:
                bot.close()
    finally:
        store.close()


def _engine_round_trip(world: LabWorld, bot: KubernetesCluster, store: Store) -> None:
    limits = TnrLimits(
        sustain_s=30, poll_s=5, settle_min_s=5, settle_timeout_s=120, lock_ttl_s=30, deadline_s=600
    )
    engine = TransactionEngine(
        reader=bot,
        writer=bot,
        meter=SeverityMeter(reader=bot, metrics=world.metrics),
        ledger=StorageLedger(store),
        clock=world.clock,
        holder="test-engine",
        limits=limits,
    )
    frontend, config_map = _ref("Deployment", "frontend"), _ref("ConfigMap", "hotel-config")
    before = {ref: comparable(bot.get(ref).body) for ref in (frontend, config_map)}
    replicas = int(before[frontend]["spec"]["replicas"])
    actions = (
        ScaleWorkload(target=frontend, replicas=replicas + 1, from_replicas=replicas),
        SetConfigMapKeys(target=config_map, values={"stratus-test": "1"}),
    )
    outcome = engine.run(TransactionRequest(scope=SCOPE, actions=actions, mu0=10.0, actor="U0A"))
    assert outcome.kind is OutcomeKind.COMMITTED, outcome.reason
    assert bot.get(frontend).body["spec"]["replicas"] == replicas + 1
    result = Undoer(engine).undo(outcome.transaction_id, actor="U0A")
    assert result.status is UndoStatus.UNDONE, result.message
    assert {ref: comparable(bot.get(ref).body) for ref in before} == before


# ------------------------------------------------------------------------------- leader


def test_the_leader_role_lets_replicas_elect_in_their_own_namespace_only(lab: Lab) -> None:
    """The shipped `stratus-leader` Role, as the ServiceAccount: a replica creates and renews
    the lease in `stratus`, and is refused a lease anywhere else (it then never leads)."""
    events: list[str] = []

    def elector(namespace: str) -> LeaderElector:
        return LeaderElector(
            lab.bot,
            LeaseConfig(namespace=namespace, lease_s=3, renew_deadline_s=2, retry_s=0.2),
            identity=f"replica-in-{namespace}",
            on_started=lambda token: events.append(f"leads in {namespace}"),
            on_stopped=lambda: events.append(f"stops in {namespace}"),
        )

    home, elsewhere = elector("stratus"), elector(NS)
    try:
        home.start()
        elsewhere.start()
        assert home.leading and not elsewhere.leading
        lease = lab.world.api.get("Lease", "stratus", "stratus-leader")
        assert lease is not None and lease["spec"]["holderIdentity"] == "replica-in-stratus"
        assert lab.world.api.get("Lease", NS, "stratus-leader") is None
    finally:
        home.stop()
        elsewhere.stop()
    assert events == ["leads in stratus", "stops in stratus"]
