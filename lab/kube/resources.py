"""The resource types the emulator serves, as discovery describes them.

One table drives discovery, path routing, storage, validation and the schema used to decode
bodies, so a kind is added in one place. Names, short names, categories, verbs and
subresources follow the real API server (kubectl relies on them: `kubectl get all` expands the
"all" category, `kubectl get deploy` resolves a short name).
"""

from __future__ import annotations

from dataclasses import dataclass

READ_VERBS = ("get", "list", "watch")
ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
NO_COLLECTION_DELETE = ("create", "delete", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceType:
    group: str  # "" for the core group
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    model: str  # the model in schema.json that decodes its bodies
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()  # "status", "scale", "log", "eviction"
    verbs: tuple[str, ...] = ALL_VERBS
    has_generation: bool = False  # metadata.generation bumps on spec changes
    returns_deleted_object: bool = False  # DELETE answers with the object, not a Status
    storage_kind: str = ""  # a view of another kind's storage (events.k8s.io Event)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def stored_kind(self) -> str:
        return self.storage_kind or self.kind

    @property
    def group_resource(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def read_only(self) -> bool:
        return "create" not in self.verbs


def _core(**kw: object) -> ResourceType:
    return ResourceType(group="", version="v1", **kw)  # type: ignore[arg-type]


RESOURCES: tuple[ResourceType, ...] = (
    _core(
        plural="namespaces",
        singular="namespace",
        kind="Namespace",
        namespaced=False,
        model="V1Namespace",
        short_names=("ns",),
        subresources=("status", "finalize"),
        verbs=NO_COLLECTION_DELETE,
        returns_deleted_object=True,
    ),
    _core(
        plural="nodes",
        singular="node",
        kind="Node",
        namespaced=False,
        model="V1Node",
        short_names=("no",),
        subresources=("status",),
    ),
    _core(
        plural="pods",
        singular="pod",
        kind="Pod",
        namespaced=True,
        model="V1Pod",
        short_names=("po",),
        categories=("all",),
        subresources=("status", "log", "eviction"),
        returns_deleted_object=True,
    ),
    _core(
        plural="services",
        singular="service",
        kind="Service",
        namespaced=True,
        model="V1Service",
        short_names=("svc",),
        categories=("all",),
        subresources=("status",),
        returns_deleted_object=True,
    ),
    _core(
        plural="endpoints",
        singular="endpoints",
        kind="Endpoints",
        namespaced=True,
        model="V1Endpoints",
        short_names=("ep",),
    ),
    _core(
        plural="configmaps",
        singular="configmap",
        kind="ConfigMap",
        namespaced=True,
        model="V1ConfigMap",
        short_names=("cm",),
    ),
    _core(plural="secrets", singular="secret", kind="Secret", namespaced=True, model="V1Secret"),
    _core(
        plural="serviceaccounts",
        singular="serviceaccount",
        kind="ServiceAccount",
        namespaced=True,
        model="V1ServiceAccount",
        short_names=("sa",),
        returns_deleted_object=True,
    ),
    _core(
        plural="limitranges",
        singular="limitrange",
        kind="LimitRange",
        namespaced=True,
        model="V1LimitRange",
        short_names=("limits",),
    ),
    _core(
        plural="events",
        singular="event",
        kind="Event",
        namespaced=True,
        model="CoreV1Event",
        short_names=("ev",),
    ),
    _core(
        plural="resourcequotas",
        singular="resourcequota",
        kind="ResourceQuota",
        namespaced=True,
        model="V1ResourceQuota",
        short_names=("quota",),
        subresources=("status",),
        returns_deleted_object=True,
    ),
    _core(
        plural="persistentvolumeclaims",
        singular="persistentvolumeclaim",
        kind="PersistentVolumeClaim",
        namespaced=True,
        model="V1PersistentVolumeClaim",
        short_names=("pvc",),
        subresources=("status",),
        returns_deleted_object=True,
    ),
    ResourceType(
        group="apps",
        version="v1",
        plural="deployments",
        singular="deployment",
        kind="Deployment",
        namespaced=True,
        model="V1Deployment",
        short_names=("deploy",),
        categories=("all",),
        subresources=("status", "scale"),
        has_generation=True,
    ),
    ResourceType(
        group="apps",
        version="v1",
        plural="replicasets",
        singular="replicaset",
        kind="ReplicaSet",
        namespaced=True,
        model="V1ReplicaSet",
        short_names=("rs",),
        categories=("all",),
        subresources=("status", "scale"),
        has_generation=True,
    ),
    ResourceType(
        group="apps",
        version="v1",
        plural="statefulsets",
        singular="statefulset",
        kind="StatefulSet",
        namespaced=True,
        model="V1StatefulSet",
        short_names=("sts",),
        categories=("all",),
        subresources=("status", "scale"),
        has_generation=True,
    ),
    ResourceType(
        group="apps",
        version="v1",
        plural="controllerrevisions",
        singular="controllerrevision",
        kind="ControllerRevision",
        namespaced=True,
        model="V1ControllerRevision",
    ),
    ResourceType(
        group="autoscaling",
        version="v2",
        plural="horizontalpodautoscalers",
        singular="horizontalpodautoscaler",
        kind="HorizontalPodAutoscaler",
        namespaced=True,
        model="V2HorizontalPodAutoscaler",
        short_names=("hpa",),
        categories=("all",),
        subresources=("status",),
        has_generation=True,
    ),
    ResourceType(
        group="batch",
        version="v1",
        plural="jobs",
        singular="job",
        kind="Job",
        namespaced=True,
        model="V1Job",
        categories=("all",),
        subresources=("status",),
        has_generation=True,
    ),
    ResourceType(
        group="policy",
        version="v1",
        plural="poddisruptionbudgets",
        singular="poddisruptionbudget",
        kind="PodDisruptionBudget",
        namespaced=True,
        model="V1PodDisruptionBudget",
        short_names=("pdb",),
        subresources=("status",),
        has_generation=True,
    ),
    ResourceType(
        group="coordination.k8s.io",
        version="v1",
        plural="leases",
        singular="lease",
        kind="Lease",
        namespaced=True,
        model="V1Lease",
    ),
    ResourceType(
        group="networking.k8s.io",
        version="v1",
        plural="networkpolicies",
        singular="networkpolicy",
        kind="NetworkPolicy",
        namespaced=True,
        model="V1NetworkPolicy",
        short_names=("netpol",),
        has_generation=True,
    ),
    ResourceType(
        group="discovery.k8s.io",
        version="v1",
        plural="endpointslices",
        singular="endpointslice",
        kind="EndpointSlice",
        namespaced=True,
        model="V1EndpointSlice",
    ),
    *(
        ResourceType(
            group="rbac.authorization.k8s.io",
            version="v1",
            plural=plural,
            singular=plural[:-1],
            kind=kind,
            namespaced=namespaced,
            model=f"V1{kind}",
        )
        for plural, kind, namespaced in (
            ("clusterrolebindings", "ClusterRoleBinding", False),
            ("clusterroles", "ClusterRole", False),
            ("rolebindings", "RoleBinding", True),
            ("roles", "Role", True),
        )
    ),
    # Access reviews are answered, never stored (lab/kube/rbac.py): create is their only verb.
    *(
        ResourceType(
            group="authorization.k8s.io",
            version="v1",
            plural=plural,
            singular=plural[:-1],
            kind=kind,
            namespaced=False,
            model=f"V1{kind}",
            verbs=("create",),
        )
        for plural, kind in (
            ("selfsubjectaccessreviews", "SelfSubjectAccessReview"),
            ("selfsubjectrulesreviews", "SelfSubjectRulesReview"),
        )
    ),
    ResourceType(
        group="events.k8s.io",
        version="v1",
        plural="events",
        singular="event",
        kind="Event",
        namespaced=True,
        model="EventsV1Event",
        short_names=("ev",),
        verbs=READ_VERBS,
        storage_kind="Event",
    ),
)

#: Group → its versions, in preference order, as `/apis` lists them.
GROUP_VERSIONS: dict[str, tuple[str, ...]] = {}
for _r in RESOURCES:
    if _r.group and _r.version not in GROUP_VERSIONS.get(_r.group, ()):
        GROUP_VERSIONS[_r.group] = (*GROUP_VERSIONS.get(_r.group, ()), _r.version)

_BY_PATH: dict[tuple[str, str, str], ResourceType] = {
    (r.group, r.version, r.plural): r for r in RESOURCES
}
#: The storage kinds: the core Event, not its events.k8s.io view.
_BY_KIND: dict[str, ResourceType] = {r.kind: r for r in RESOURCES if not r.storage_kind}


def by_path(group: str, version: str, plural: str) -> ResourceType | None:
    return _BY_PATH.get((group, version, plural))


def by_kind(kind: str) -> ResourceType | None:
    """The resource that stores `kind` ("Deployment" → deployments.apps)."""
    return _BY_KIND.get(kind)


def stored_kinds() -> tuple[str, ...]:
    return tuple(_BY_KIND)


def resources_of(group: str, version: str) -> tuple[ResourceType, ...]:
    return tuple(r for r in RESOURCES if r.group == group and r.version == version)


#: The `Scale` subresource lives in autoscaling/v1 whatever the parent's group.
SCALE_GROUP = "autoscaling"
SCALE_VERSION = "v1"
