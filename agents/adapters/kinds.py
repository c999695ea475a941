"""Where each kind Stratus reads or writes lives in the Kubernetes REST API."""

from __future__ import annotations

from dataclasses import dataclass

from agents.errors import Invalid


@dataclass(frozen=True, slots=True, kw_only=True)
class KindInfo:
    api_version: str
    kind: str
    plural: str
    namespaced: bool

    def collection_path(self, namespace: str | None) -> str:
        prefix = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        if self.namespaced and namespace:
            return f"{prefix}/namespaces/{namespace}/{self.plural}"
        return f"{prefix}/{self.plural}"

    def object_path(self, namespace: str | None, name: str) -> str:
        return f"{self.collection_path(namespace)}/{name}"


_KINDS = (
    KindInfo(api_version="v1", kind="Namespace", plural="namespaces", namespaced=False),
    KindInfo(api_version="v1", kind="Node", plural="nodes", namespaced=False),
    KindInfo(api_version="v1", kind="Pod", plural="pods", namespaced=True),
    KindInfo(api_version="v1", kind="Service", plural="services", namespaced=True),
    KindInfo(api_version="v1", kind="Endpoints", plural="endpoints", namespaced=True),
    KindInfo(api_version="v1", kind="ConfigMap", plural="configmaps", namespaced=True),
    KindInfo(api_version="v1", kind="Secret", plural="secrets", namespaced=True),
    KindInfo(api_version="v1", kind="Event", plural="events", namespaced=True),
    KindInfo(api_version="v1", kind="ResourceQuota", plural="resourcequotas", namespaced=True),
    KindInfo(api_version="v1", kind="LimitRange", plural="limitranges", namespaced=True),
    KindInfo(
        api_version="v1",
        kind="PersistentVolumeClaim",
        plural="persistentvolumeclaims",
        namespaced=True,
    ),
    KindInfo(
        api_version="v1", kind="PersistentVolume", plural="persistentvolumes", namespaced=False
    ),
    KindInfo(
        api_version="networking.k8s.io/v1",
        kind="NetworkPolicy",
        plural="networkpolicies",
        namespaced=True,
    ),
    KindInfo(
        api_version="policy/v1",
        kind="PodDisruptionBudget",
        plural="poddisruptionbudgets",
        namespaced=True,
    ),
    KindInfo(api_version="apps/v1", kind="Deployment", plural="deployments", namespaced=True),
    KindInfo(api_version="apps/v1", kind="ReplicaSet", plural="replicasets", namespaced=True),
    KindInfo(api_version="apps/v1", kind="StatefulSet", plural="statefulsets", namespaced=True),
    KindInfo(
        api_version="autoscaling/v2",
        kind="HorizontalPodAutoscaler",
        plural="horizontalpodautoscalers",
        namespaced=True,
    ),
    KindInfo(api_version="coordination.k8s.io/v1", kind="Lease", plural="leases", namespaced=True),
    # `stratus doctor` asks the API server what the bot's service account may do.
    KindInfo(
        api_version="authorization.k8s.io/v1",
        kind="SelfSubjectAccessReview",
        plural="selfsubjectaccessreviews",
        namespaced=False,
    ),
)

_BY_KIND = {k.kind: k for k in _KINDS}


def kind_info(kind: str, api_version: str | None = None) -> KindInfo:
    info = _BY_KIND.get(kind)
    if info is None or (api_version and api_version != info.api_version):
        raise Invalid(f"unsupported kind {api_version or '?'}/{kind}")
    return info
