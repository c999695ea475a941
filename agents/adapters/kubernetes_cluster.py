"""`KubernetesCluster`: the cluster ports (`ClusterReader`, `ClusterWriter`, `ChangeWatcher`)
over the official `kubernetes` client.

It speaks JSON through the client's `ApiClient` (authentication, TLS, kubeconfig and
in-cluster config all come from the SDK) instead of the generated per-kind models: the engine
snapshots and restores objects of several kinds verbatim, and a generated model silently drops
fields it does not know and refuses servers that omit fields it requires. SDK and transport
errors become the `agents.errors` tree here and nowhere else.

Secrets are never read: the reader refuses the kind outright.

Deadlines. Every call carries `_request_timeout` (connect, read) and the pool's urllib3 `Retry`
is bounded (`CallDeadline`): at most `attempts` tries, no backoff sleeps, no `Retry-After`
waits, no retries on HTTP statuses. A read that timed out is retried only for GET and HEAD: a
write whose answer was lost may have happened, and trying it again would hide that (a
retried PUT would meet our own resourceVersion and look like someone else's conflict). A
connection that could not be opened sent nothing, so it is retried for every method.
Timeouts and connection failures become `TransientError`, distinct from not-found, conflict
and forbidden.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from agents import kubeparse
from agents.adapters.kinds import kind_info
from agents.adapters.retry import bounded_retry
from agents.deadlines import CallDeadline
from agents.errors import (
    ClusterError,
    Conflict,
    Expired,
    Forbidden,
    Invalid,
    NotFound,
    TransientError,
)
from agents.model import (
    ConfigMapInfo,
    EventRecord,
    JsonObject,
    KubeObject,
    NodeInfo,
    ObjectList,
    ObjectRef,
    PodState,
    QuotaInfo,
    RevisionInfo,
    ServiceInfo,
    WorkloadState,
)

logger = logging.getLogger(__name__)

_JSON = "application/json"
_NEVER_READ = frozenset({"Secret"})


#: Statuses that map to one error type each; 410 and the transient ones carry more.
_ERROR_OF_STATUS: Mapping[int, type[ClusterError]] = {
    404: NotFound,
    409: Conflict,
    401: Forbidden,
    403: Forbidden,
    400: Invalid,
    422: Invalid,
}


def _translate(status: int, reason: str, body: str, what: str) -> ClusterError:
    message, retry_after = _status_message(reason, body)
    text = f"{what}: {message}"
    error = _ERROR_OF_STATUS.get(status)
    if error is not None:
        return error(text)
    if status == 410:
        return Expired(f"{text} (HTTP 410)")
    if status == 429 or status >= 500:
        return TransientError(text, retry_after_s=retry_after)
    return ClusterError(f"{text} (HTTP {status})")


def _status_message(reason: str, body: str) -> tuple[str, float]:
    """The message of a Kubernetes `Status` body (else the HTTP reason, or the start of a body
    that is not JSON) and its `details.retryAfterSeconds` (default 1s)."""
    message = reason
    retry_after = 1.0
    try:
        parsed = json.loads(body) if body else {}
        if isinstance(parsed, dict) and parsed.get("message"):
            message = str(parsed["message"])
        details = parsed.get("details") if isinstance(parsed, dict) else None
        if isinstance(details, dict) and details.get("retryAfterSeconds"):
            retry_after = float(details["retryAfterSeconds"])
    except ValueError:
        message = body[:200] or reason
    return message, retry_after


def bounded(configuration: k8s.Configuration, deadline: CallDeadline) -> k8s.Configuration:
    """`configuration` with the pool's retries bounded by `deadline` (see the module doc)."""
    configuration.retries = bounded_retry(deadline, allowed_methods={"GET", "HEAD"})
    configuration.client_go_retries = False
    return configuration


def _transport(error: urllib3.exceptions.HTTPError, deadline: CallDeadline) -> str:
    """A transport failure in words, with the deadline it ran into."""
    reason: BaseException = error
    if isinstance(error, urllib3.exceptions.MaxRetryError) and error.reason is not None:
        reason = error.reason
    # NewConnectionError subclasses ConnectTimeoutError in urllib3: a refusal is not a timeout.
    if isinstance(reason, urllib3.exceptions.TimeoutError) and not isinstance(
        reason, urllib3.exceptions.NewConnectionError
    ):
        return (
            f"no answer within the deadline ({deadline.attempts} × {deadline.timeout_s:g}s): "
            f"{reason}"
        )
    return f"cannot reach the API server ({deadline.attempts} tries): {reason}"


class KubernetesCluster:
    """One cluster, reached through the official client."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        *,
        cluster_name: str,
        deadline: CallDeadline | None = None,
    ) -> None:
        """`api_client` should be built from a configuration passed through `bounded` (as
        `connect` does), or its pool keeps urllib3's default retries."""
        self._api = api_client
        self._name = cluster_name
        self.deadline = deadline or CallDeadline()
        self._timeout = (self.deadline.connect_s, self.deadline.read_s)

    @classmethod
    def connect(
        cls,
        *,
        kubeconfig: Path | None,
        context: str | None = None,
        cluster_name: str,
        deadline: CallDeadline | None = None,
    ) -> KubernetesCluster:
        """From a kubeconfig file, or the in-cluster service account when `kubeconfig` is None."""
        deadline = deadline or CallDeadline()
        configuration = k8s.Configuration()
        try:
            if kubeconfig is not None:
                k8s_config.load_kube_config(
                    config_file=str(kubeconfig),
                    context=context,
                    client_configuration=configuration,
                )
            else:
                k8s_config.load_incluster_config(client_configuration=configuration)
        except (k8s_config.ConfigException, OSError) as e:
            where = str(kubeconfig) if kubeconfig else "in-cluster service account"
            raise ClusterError(f"cannot load Kubernetes configuration from {where}: {e}") from e
        # The ClusterCache holds a long watch open per kind and namespace (8 each) beside the
        # short calls; with the SDK's default pool (5 per core) urllib3 discards a connection
        # after each watch and logs "Connection pool is full". Connections are opened only
        # when used, so a larger bound costs nothing while idle.
        configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize, 64)
        return cls(
            k8s.ApiClient(bounded(configuration, deadline)),
            cluster_name=cluster_name,
            deadline=deadline,
        )

    def close(self) -> None:
        self._api.close()

    @property
    def cluster_name(self) -> str:
        return self._name

    # ------------------------------------------------------------------------- transport

    def _call(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = _JSON,
        accept: str = _JSON,
        what: str,
    ) -> bytes:
        params = [(k, v) for k, v in (query or {}).items() if v is not None and v != ""]
        headers = {"Accept": accept}
        if body is not None:
            headers["Content-Type"] = content_type
        try:
            m, url, hdrs, payload, _ = self._api.param_serialize(
                method=method,
                resource_path=path,
                query_params=params,
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
            )
            response = self._api.call_api(
                m, url, header_params=hdrs, body=payload, _request_timeout=self._timeout
            )
            data: bytes = response.read() or b""
        except ApiException as e:
            raise _translate(int(e.status or 0), str(e.reason), str(e.body or ""), what) from e
        except urllib3.exceptions.HTTPError as e:
            raise TransientError(f"{what}: {_transport(e, self.deadline)}") from e
        if not 200 <= response.status <= 299:
            raise _translate(
                response.status, str(response.reason), data.decode(errors="replace"), what
            )
        return data

    def _json(self, method: str, path: str, **kwargs: Any) -> JsonObject:
        data = self._call(method, path, **kwargs)
        try:
            parsed = json.loads(data) if data else {}
        except ValueError as e:
            raise ClusterError(f"{kwargs.get('what')}: the server sent malformed JSON") from e
        return parsed if isinstance(parsed, dict) else {}

    # ---------------------------------------------------------------------------- reads

    def get(self, ref: ObjectRef) -> KubeObject:
        if ref.kind in _NEVER_READ:
            raise Forbidden(f"Stratus never reads {ref.kind} objects ({ref})")
        info = kind_info(ref.kind, ref.api_version)
        body = self._json("GET", info.object_path(ref.namespace, ref.name), what=f"get {ref}")
        body.setdefault("apiVersion", info.api_version)
        body.setdefault("kind", info.kind)
        return KubeObject(body)

    def list_objects(
        self, *, api_version: str, kind: str, namespace: str | None, label_selector: str = ""
    ) -> Sequence[KubeObject]:
        return self._list(kind, namespace, label_selector=label_selector, api_version=api_version)

    def list_for_watch(self, *, api_version: str, kind: str, namespace: str) -> ObjectList:
        # Every page (a watch's starting point must cover every object), at the first page's
        # resourceVersion: the continue token keeps the later pages consistent with it.
        items, version = self._list_versioned(
            kind, namespace, api_version=api_version, max_items=None
        )
        return ObjectList(items=tuple(items), resource_version=version)

    def _list(
        self,
        kind: str,
        namespace: str | None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        limit: int = 500,
        api_version: str | None = None,
    ) -> list[KubeObject]:
        # Every page: a list cut after a few pages keeps whatever sorts first by name (the
        # server's order), which in a big namespace is rarely what the incident is about. The
        # cost of whole lists is what the `ClusterCache` in front of this adapter absorbs.
        items, _version = self._list_versioned(
            kind,
            namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            limit=limit,
            api_version=api_version,
            max_items=None,
        )
        return items

    def _list_versioned(
        self,
        kind: str,
        namespace: str | None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        limit: int = 500,
        api_version: str | None = None,
        max_items: int | None,
    ) -> tuple[list[KubeObject], str | None]:
        if kind in _NEVER_READ:
            raise Forbidden(f"Stratus never reads {kind} objects")
        info = kind_info(kind, api_version)
        items: list[KubeObject] = []
        token: str | None = None
        version: str | None = None
        while True:
            page = self._json(
                "GET",
                info.collection_path(namespace),
                query={
                    "labelSelector": label_selector,
                    "fieldSelector": field_selector,
                    "limit": limit,
                    "continue": token,
                },
                what=f"list {kind} in {namespace or 'all namespaces'}",
            )
            for item in page.get("items") or []:
                if isinstance(item, dict):
                    item.setdefault("apiVersion", info.api_version)
                    item.setdefault("kind", info.kind)
                    items.append(KubeObject(item))
            meta = page.get("metadata") or {}
            if version is None and meta.get("resourceVersion"):
                version = str(meta["resourceVersion"])
            token = meta.get("continue")
            if not token or (max_items is not None and len(items) >= max_items):
                return items, version

    def pods(self, namespace: str, *, label_selector: str = "") -> Sequence[PodState]:
        return [
            kubeparse.parse_pod(o.body)
            for o in self._list("Pod", namespace, label_selector=label_selector)
        ]

    def workloads(self, namespace: str) -> Sequence[WorkloadState]:
        objects = self._list("Deployment", namespace) + self._list("StatefulSet", namespace)
        return [kubeparse.parse_workload(o.body) for o in objects]

    def events(self, namespace: str, *, limit: int = 200) -> Sequence[EventRecord]:
        return kubeparse.newest_events(
            (kubeparse.parse_event(o.body) for o in self._list("Event", namespace)), limit
        )

    def pod_logs(
        self,
        namespace: str,
        pod: str,
        *,
        container: str | None = None,
        tail_lines: int = 50,
        previous: bool = False,
    ) -> Sequence[str]:
        data = self._call(
            "GET",
            f"/api/v1/namespaces/{namespace}/pods/{pod}/log",
            query={
                "container": container,
                "tailLines": tail_lines,
                "previous": "true" if previous else None,
            },
            accept="text/plain",
            what=f"logs of pod {namespace}/{pod}",
        )
        return data.decode(errors="replace").splitlines()[-tail_lines:]

    def services(self, namespace: str) -> Sequence[ServiceInfo]:
        endpoints = {o.name: o.body for o in self._list("Endpoints", namespace)}
        return [
            kubeparse.parse_service(o.body, kubeparse.ready_endpoint_count(endpoints.get(o.name)))
            for o in self._list("Service", namespace)
        ]

    def config_maps(self, namespace: str) -> Sequence[ConfigMapInfo]:
        return [kubeparse.parse_config_map(o.body) for o in self._list("ConfigMap", namespace)]

    def nodes(self) -> Sequence[NodeInfo]:
        return [kubeparse.parse_node(o.body) for o in self._list("Node", None)]

    def quotas(self, namespace: str) -> Sequence[QuotaInfo]:
        return [kubeparse.parse_quota(o.body) for o in self._list("ResourceQuota", namespace)]

    def rollout_history(self, namespace: str, deployment: str) -> Sequence[RevisionInfo]:
        live = self.get(
            ObjectRef(
                api_version="apps/v1", kind="Deployment", name=deployment, namespace=namespace
            )
        )
        labels = (((live.body.get("spec") or {}).get("selector") or {}).get("matchLabels")) or {}
        selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        return kubeparse.parse_revisions(
            live, self._list("ReplicaSet", namespace, label_selector=selector)
        )

    def namespaces(self) -> Sequence[str]:
        return [o.name for o in self._list("Namespace", None)]

    # --------------------------------------------------------------------------- writes

    def replace(
        self, obj: KubeObject, *, dry_run: bool = False, field_manager: str = "stratus"
    ) -> KubeObject:
        info = kind_info(obj.kind, obj.api_version)
        body = self._json(
            "PUT",
            info.object_path(obj.namespace, obj.name),
            query={"dryRun": "All" if dry_run else None, "fieldManager": field_manager},
            body=obj.body,
            what=f"{'dry-run ' if dry_run else ''}update {obj.ref}",
        )
        return KubeObject(body)

    def create(
        self, obj: KubeObject, *, dry_run: bool = False, field_manager: str = "stratus"
    ) -> KubeObject:
        info = kind_info(obj.kind, obj.api_version)
        body = self._json(
            "POST",
            info.collection_path(obj.namespace),
            query={"dryRun": "All" if dry_run else None, "fieldManager": field_manager},
            body=obj.body,
            what=f"{'dry-run ' if dry_run else ''}create {obj.ref}",
        )
        return KubeObject(body)

    def delete(
        self, ref: ObjectRef, *, dry_run: bool = False, resource_version: str | None = None
    ) -> None:
        info = kind_info(ref.kind, ref.api_version)
        options: JsonObject = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if dry_run:
            options["dryRun"] = ["All"]
        if resource_version:
            options["preconditions"] = {"resourceVersion": resource_version}
        self._call(
            "DELETE",
            info.object_path(ref.namespace, ref.name),
            query={"dryRun": "All" if dry_run else None},
            body=options,
            what=f"{'dry-run ' if dry_run else ''}delete {ref}",
        )

    # ---------------------------------------------------------------------------- watch

    def watch(
        self,
        *,
        api_version: str,
        kind: str,
        namespace: str,
        resource_version: str | None,
        timeout_seconds: int,
    ) -> Iterator[tuple[str, KubeObject]]:
        if kind in _NEVER_READ:
            raise Forbidden(f"Stratus never reads {kind} objects")
        info = kind_info(kind, api_version)
        params = [
            ("watch", "true"),
            ("timeoutSeconds", str(timeout_seconds)),
            ("allowWatchBookmarks", "true"),
        ]
        if resource_version:
            params.append(("resourceVersion", resource_version))
        what = f"watch {kind} in {namespace}"
        try:
            m, url, hdrs, _, _ = self._api.param_serialize(
                method="GET",
                resource_path=info.collection_path(namespace),
                query_params=params,
                header_params={"Accept": _JSON},
                auth_settings=["BearerToken"],
            )
            response = self._api.call_api(
                m, url, header_params=hdrs, _request_timeout=(self._timeout[0], timeout_seconds + 5)
            )
        except ApiException as e:
            raise _translate(int(e.status or 0), str(e.reason), str(e.body or ""), what) from e
        except urllib3.exceptions.HTTPError as e:
            raise TransientError(f"{what}: {e}") from e
        if response.status != 200:
            raise _translate(
                response.status, str(response.reason), (response.read() or b"").decode(), what
            )
        raw = response.response
        try:
            for line in _lines(raw):
                event = json.loads(line)
                obj = event.get("object") or {}
                if event.get("type") == "ERROR":
                    status = int(obj.get("code", 500))
                    raise _translate(status, str(obj.get("reason", "")), json.dumps(obj), what)
                yield str(event.get("type")), KubeObject(obj)
        except (urllib3.exceptions.HTTPError, ValueError) as e:
            raise TransientError(f"{what}: stream broke: {e}") from e
        finally:
            raw.release_conn()


def _lines(raw: Any) -> Iterator[bytes]:
    """Split a chunked watch response into its JSON lines."""
    buffer = b""
    for chunk in raw.stream(4096, decode_content=True):
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if line.strip():
                yield line
    if buffer.strip():
        yield buffer
