"""The service dependency graph: who calls whom.

Three sources, best first: the call graph the metrics observed (client-side request counters),
configuration references (an env value or a consumed ConfigMap key whose value names another
Service of the namespace, `mongodb-geo:27017`, `http://cart:7070`), and blame in logs (a
caller's error line that names a callee or an address it owns). The first is what happened;
the second is what the services were told; the third is what they complained about.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from agents.diagnosis.observe import ContainerSpec, EnvVar, Observations, WorkloadSpec
from agents.diagnosis.signs import address_of, looks_like_address_key


@dataclass(frozen=True, slots=True, kw_only=True)
class Reference:
    """A setting of `service` whose value names a host (and maybe a port)."""

    service: str
    container: ContainerSpec
    env: EnvVar | None  # None when the value comes from a whole ConfigMap (envFrom, volume)
    env_index: int | None
    config_map: str | None
    key: str
    value: str
    host: str
    port: int | None

    @property
    def field(self) -> str:
        """The field path a fix would change: the ConfigMap key when the value lives there."""
        if self.config_map is not None:
            return f"data.{self.key}"
        return f"spec.template.spec.containers[{self.container.index}].env[{self.env_index}].value"

    @property
    def owner(self) -> tuple[str, str]:
        """(kind, name) of the object that holds the value."""
        if self.config_map is not None:
            return "ConfigMap", self.config_map
        return "Deployment", self.service


def references(obs: Observations, spec: WorkloadSpec) -> Iterator[Reference]:
    """Every setting of a workload whose value looks like an address."""
    for container in spec.containers:
        for index, env in enumerate(container.env):
            value, cm = env.value, None
            if env.config_map is not None and env.key is not None:
                data = obs.config_maps.get(env.config_map)
                value = data.data.get(env.key) if data is not None else None
                cm = env.config_map
            if value is None:
                continue
            key = env.key if cm is not None and env.key is not None else env.name
            ref = _reference(
                spec.name,
                container=container,
                env=env,
                index=index,
                config_map=cm,
                key=key,
                value=value,
            )
            if ref is not None:
                yield ref
        for cm_name in (*container.env_from_config_maps, *spec.volume_config_maps):
            data = obs.config_maps.get(cm_name)
            for key, value in (data.data if data is not None else {}).items():
                ref = _reference(
                    spec.name,
                    container=container,
                    env=None,
                    index=None,
                    config_map=cm_name,
                    key=key,
                    value=value,
                )
                if ref is not None:
                    yield ref


def _reference(
    service: str,
    *,
    container: ContainerSpec,
    env: EnvVar | None,
    index: int | None,
    config_map: str | None,
    key: str,
    value: str,
) -> Reference | None:
    address = address_of(value)
    if address is None:
        return None
    host, port = address
    if port is None and not looks_like_address_key(key):
        return None  # a bare word is an address only when the key says so
    if host.replace(".", "").isdigit() or host in ("localhost", ""):
        return None
    return Reference(
        service=service,
        container=container,
        env=env,
        env_index=index,
        config_map=config_map,
        key=key,
        value=value,
        host=host,
        port=port,
    )


def add_config_edges(obs: Observations) -> None:
    """Edges from settings that name another Service of the namespace."""
    for name, spec in obs.specs.items():
        for ref in references(obs, spec):
            callee = obs.service_for_k8s_service(ref.host) or (
                ref.host if ref.host in obs.service_names else None
            )
            if callee and callee != name:
                add_edge(obs, name, callee, "config")


def add_edge(obs: Observations, caller: str, callee: str, source: str) -> None:
    if caller == callee:
        return
    edge = (caller, callee)
    if edge not in obs.edges:
        obs.edges.add(edge)
        obs.edge_sources[edge] = source


def downstream(obs: Observations, service: str) -> list[str]:
    """Services reachable from `service` along the graph, nearest first."""
    return _breadth_first(service, obs.callees)


def _breadth_first(service: str, neighbours: Callable[[str], Iterable[str]]) -> list[str]:
    seen, order, frontier = {service}, [], [service]
    while frontier:
        nxt = []
        for node in frontier:
            for other in sorted(neighbours(node)):
                if other not in seen:
                    seen.add(other)
                    order.append(other)
                    nxt.append(other)
        frontier = nxt
    return order


def lies_below(obs: Observations, deep: str, shallow: str) -> bool:
    """`deep` is reached from `shallow` along the graph and not the other way round. A
    complaint in a log is the weakest source: an edge seen only there does not stand against
    the reverse edge that metrics or configuration show (a database whose log quotes a
    collection named like its client does not call that client)."""
    edges = {
        (a, b)
        for a, b in obs.edges
        if not (
            obs.edge_sources.get((a, b)) == "logs"
            and (b, a) in obs.edges
            and obs.edge_sources.get((b, a)) != "logs"
        )
    }
    return _reaches(edges, shallow, deep) and not _reaches(edges, deep, shallow)


def _reaches(edges: set[tuple[str, str]], start: str, goal: str) -> bool:
    seen, frontier = {start}, [start]
    while frontier:
        node = frontier.pop()
        for a, b in edges:
            if a == node and b not in seen:
                if b == goal:
                    return True
                seen.add(b)
                frontier.append(b)
    return False


def upstream(obs: Observations, service: str) -> list[str]:
    """Services from which `service` is reached along the graph, nearest first."""
    return _breadth_first(service, obs.callers)
