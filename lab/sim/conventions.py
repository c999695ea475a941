"""The lab's request metrics as other metric conventions name them, for the exporter.

The simulator keeps its metrics in the lab's own names (`lab.sim.metrics`); a real cluster
exposes them as a service mesh, OpenTelemetry, Micrometer or ingress-nginx would. `convert`
renames one lab series into the chosen convention (the same names and labels the built-in
signal profiles of `agents.adapters.signal_profiles` read), so Stratus can be run against each
convention on the same simulated traffic. Only the three request metrics change; the
kube-state-metrics and cAdvisor series are the same under every convention.

Simplifications, said once: the lab's latency histogram has no status-code label, so under
conventions whose request count is the histogram's `_count` (OTel, Micrometer) the count comes
from the request counter with its status code, and the buckets carry no status; ingress-nginx
is given every served request, as if each service sat behind an Ingress.
"""

from __future__ import annotations

from collections.abc import Iterator

from lab.sim.metrics import LabelSet

SERVER = "http_server_requests_total"
HISTOGRAM = "http_server_request_duration_seconds"
CLIENT = "http_client_requests_total"

#: One converted series: (family, kind, help, name, labels, value).
Converted = tuple[str, str, str, str, LabelSet, float]

#: Convention name → (family, kind, help) of each family it exposes.
FAMILIES: dict[str, dict[str, tuple[str, str]]] = {
    "lab": {},
    "otel": {
        "http_server_request_duration_seconds": ("histogram", "Duration of HTTP server requests."),
        "traces_service_graph_request_total": ("counter", "Requests between two services."),
        "traces_service_graph_request_failed_total": (
            "counter",
            "Failed requests between two services.",
        ),
    },
    "istio": {
        "istio_requests_total": ("counter", "Requests, as the reporting proxy saw them."),
        "istio_request_duration_milliseconds": ("histogram", "Request duration (ms)."),
    },
    "linkerd": {
        "response_total": ("counter", "Responses, by direction and classification."),
        "response_latency_ms": ("histogram", "Response latency (ms)."),
    },
    "micrometer": {
        "http_server_requests_seconds": ("histogram", "Duration of HTTP server requests."),
        "http_client_requests_seconds": ("histogram", "Duration of HTTP client requests."),
    },
    "ingress-nginx": {
        "nginx_ingress_controller_requests": ("counter", "Client requests, by backend service."),
        "nginx_ingress_controller_request_duration_seconds": (
            "histogram",
            "Request processing time (s).",
        ),
    },
}
CONVENTIONS: tuple[str, ...] = tuple(FAMILIES)


def _ms(le: str) -> str:
    """A bucket bound in seconds as the same bound in milliseconds (`0.0025` → `2.5`)."""
    return le if le == "+Inf" else f"{round(float(le) * 1000.0, 6):g}"


def _outcome(code: str) -> str:
    return {"1": "INFORMATIONAL", "2": "SUCCESS", "3": "REDIRECTION", "4": "CLIENT_ERROR"}.get(
        code[:1], "SERVER_ERROR"
    )


def _failed(code: str) -> bool:
    return code.startswith("5")


def convert(convention: str, name: str, labelset: LabelSet, value: float) -> Iterator[Converted]:
    """The series under `convention` that the lab series `name{labelset} value` becomes (none,
    when the convention has no such metric). Not a request metric: nothing (the caller keeps
    it as it is)."""
    labels = dict(labelset)
    ns, service = labels.get("namespace", ""), labels.get("service", "")
    code, peer, le = labels.get("code", ""), labels.get("peer", ""), labels.get("le")
    suffix = name.removeprefix(HISTOGRAM) if name.startswith(HISTOGRAM) else ""
    families = FAMILIES[convention]

    def out(family: str, series: str, pairs: dict[str, str], scale: float = 1.0) -> Converted:
        kind, help_text = families[family]
        return (family, kind, help_text, series, tuple(sorted(pairs.items())), value * scale)

    if convention == "otel":
        server = {"k8s_namespace_name": ns, "service_name": service}
        if name == SERVER:
            yield out(
                HISTOGRAM, f"{HISTOGRAM}_count", {**server, "http_response_status_code": code}
            )
        elif suffix == "_bucket":
            yield out(HISTOGRAM, name, {**server, "le": le or ""})
        elif suffix == "_sum":
            yield out(HISTOGRAM, name, server)
        elif name == CLIENT:
            edge = {"client": service, "server": peer}
            total = "traces_service_graph_request_total"
            yield out(total, total, edge)
            if _failed(code):
                failed = "traces_service_graph_request_failed_total"
                yield out(failed, failed, edge)
    elif convention == "istio":
        family = "istio_request_duration_milliseconds"
        dest = {
            "reporter": "destination",
            "destination_workload_namespace": ns,
            "destination_workload": service,
            "destination_service_name": service,
        }
        if name == SERVER:
            yield out(
                "istio_requests_total", "istio_requests_total", {**dest, "response_code": code}
            )
        elif suffix == "_bucket":
            yield out(family, f"{family}_bucket", {**dest, "le": _ms(le or "")})
        elif suffix in ("_sum", "_count"):
            yield out(family, f"{family}{suffix}", dest, 1000.0 if suffix == "_sum" else 1.0)
        elif name == CLIENT:
            source = {
                "reporter": "source",
                "source_workload": service,
                "source_workload_namespace": ns,
                "destination_workload": peer,
                "destination_service_name": peer,
                "destination_workload_namespace": ns,
                "response_code": code,
            }
            yield out("istio_requests_total", "istio_requests_total", source)
    elif convention == "linkerd":
        family = "response_latency_ms"
        inbound = {"direction": "inbound", "namespace": ns, "deployment": service}
        if name in (SERVER, CLIENT):
            response = {
                **inbound,
                "status_code": code,
                "classification": "failure" if _failed(code) else "success",
            }
            if name == CLIENT:
                response.update(direction="outbound", dst_deployment=peer, dst_namespace=ns)
            yield out("response_total", "response_total", response)
        elif suffix == "_bucket":
            yield out(family, f"{family}_bucket", {**inbound, "le": _ms(le or "")})
        elif suffix in ("_sum", "_count"):
            yield out(family, f"{family}{suffix}", inbound, 1000.0 if suffix == "_sum" else 1.0)
    elif convention == "micrometer":
        family = "http_server_requests_seconds"
        server = {"namespace": ns, "service": service, "uri": "/", "method": "GET"}
        if name == SERVER:
            pairs = {**server, "status": code, "outcome": _outcome(code)}
            yield out(family, f"{family}_count", pairs)
        elif suffix == "_bucket":
            yield out(family, f"{family}_bucket", {**server, "le": le or ""})
        elif suffix == "_sum":
            yield out(family, f"{family}_sum", server)
        elif name == CLIENT:
            client = "http_client_requests_seconds"
            pairs = {**server, "client_name": peer, "status": code, "outcome": _outcome(code)}
            yield out(client, f"{client}_count", pairs)
    elif convention == "ingress-nginx":
        family = "nginx_ingress_controller_request_duration_seconds"
        backend = {"exported_namespace": ns, "exported_service": service, "ingress": service}
        if name == SERVER:
            counter = "nginx_ingress_controller_requests"
            yield out(counter, counter, {**backend, "status": code})
        elif suffix == "_bucket":
            yield out(family, f"{family}_bucket", {**backend, "le": le or ""})
        elif suffix in ("_sum", "_count"):
            yield out(family, f"{family}{suffix}", backend)


def is_request_metric(name: str) -> bool:
    return name in (SERVER, CLIENT) or name.startswith(HISTOGRAM)
