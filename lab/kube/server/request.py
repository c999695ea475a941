"""Reading a request the way the real server does: query parameters with their validation,
the field manager, content types of bodies and patches, and `Accept` negotiation (JSON, YAML,
`as=Table`; protobuf is refused so that clients fall back to JSON)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml
from multidict import MultiMapping

from lab.kube.errors import BadRequest, NotAcceptable, UnsupportedMediaType

PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
}

MAX_MANAGER_LENGTH = 128


def flag(query: MultiMapping[str], name: str) -> bool:
    value = query.get(name, "")
    if value in ("", "false", "0", "False"):
        return False
    if value in ("true", "1", "True"):
        return True
    raise BadRequest(f'{name}: Invalid value: "{value}": must be a boolean')


def integer(query: MultiMapping[str], name: str, *, minimum: int | None = None) -> int | None:
    value = query.get(name)
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except ValueError:
        raise BadRequest(f'{name}: Invalid value: "{value}": must be an integer') from None
    if minimum is not None and number < minimum:
        raise BadRequest(
            f"{name}: Invalid value: {number}: must be greater than or equal to {minimum}"
        )
    return number


def dry_run(query: MultiMapping[str]) -> bool:
    values = query.getall("dryRun", [])
    for value in values:
        if value != "All":
            raise BadRequest(
                f'Invalid dry run value: dryRun: Unsupported value: "{value}": '
                'supported values: "All"'
            )
    return bool(values)


def strict_fields(query: MultiMapping[str]) -> bool:
    value = query.get("fieldValidation", "")
    if value not in ("", "Ignore", "Warn", "Strict"):
        raise BadRequest(
            f'fieldValidation: Unsupported value: "{value}": supported values: '
            '"Ignore", "Strict", "Warn"'
        )
    return value == "Strict"


def field_manager(query: MultiMapping[str], user_agent: str) -> str:
    manager = query.get("fieldManager", "")
    if not manager:
        manager = user_agent.split("/", 1)[0].strip() or "unknown"
    if len(manager) > MAX_MANAGER_LENGTH:
        raise BadRequest(f"fieldManager: Too long: may not be more than {MAX_MANAGER_LENGTH} bytes")
    return manager


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid number {name}")


def parse_json(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError:
        raise BadRequest("the body of the request is not valid UTF-8") from None
    except (ValueError, RecursionError) as e:
        raise BadRequest(f"couldn't get version/kind; json parse error: {e}") from None


def parse_yaml(raw: bytes) -> Any:
    try:
        loaded = yaml.safe_load(raw.decode("utf-8"))
        # YAML has types JSON lacks (timestamps, binary): normalise through JSON.
        return json.loads(json.dumps(loaded, default=str))
    except UnicodeDecodeError:
        raise BadRequest("the body of the request is not valid UTF-8") from None
    except (yaml.YAMLError, ValueError, RecursionError) as e:
        raise BadRequest(f"error converting YAML to JSON: {e}") from None


def media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def read_body(raw: bytes, content_type: str) -> Any:
    kind = media_type(content_type)
    if kind in ("", "application/json", "*/*"):
        return parse_json(raw)
    if kind in ("application/yaml", "application/x-yaml", "text/yaml"):
        return parse_yaml(raw)
    raise UnsupportedMediaType(
        f"the body of the request was in an unknown format - accepted media types include: "
        f'application/json, application/yaml ("{kind}" given)'
    )


def read_patch(raw: bytes, content_type: str) -> tuple[str, Any]:
    kind = media_type(content_type)
    patch_type = PATCH_TYPES.get(kind)
    if patch_type is None:
        raise UnsupportedMediaType(
            "the body of the request was in an unknown format - accepted media types include: "
            "application/json-patch+json, application/merge-patch+json, "
            "application/apply-patch+yaml, application/strategic-merge-patch+json"
        )
    body = parse_yaml(raw) if patch_type == "apply" else parse_json(raw)
    return patch_type, body


@dataclass(frozen=True, slots=True)
class Rendering:
    """How to answer: `json`, `yaml`, or `table` (meta.k8s.io Table)."""

    format: str
    include_object: str = "Metadata"


def negotiate(accept: str, *, table_allowed: bool, include_object: str = "") -> Rendering:
    if not accept.strip():
        return Rendering("json")
    for item in accept.split(","):
        parts = [p.strip() for p in item.split(";")]
        kind = parts[0].lower()
        params = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        as_ = params.get("as", "")
        if kind in ("application/json", "*/*", "application/*"):
            if as_ == "Table":
                if table_allowed and params.get("g", "meta.k8s.io") == "meta.k8s.io":
                    return Rendering("table", include_object or "Metadata")
                continue
            if as_:
                continue  # PartialObjectMetadata and aggregated discovery: let clients fall back
            return Rendering("json")
        if kind in ("application/yaml",) and not as_:
            return Rendering("yaml")
    raise NotAcceptable(
        "only the following media types are accepted: application/json, application/yaml, "
        "application/json;as=Table;v=v1;g=meta.k8s.io"
    )


@dataclass(frozen=True, slots=True)
class DeleteOptions:
    propagation: str | None
    grace: int | None
    dry_run: bool
    preconditions: dict[str, str]


def delete_options(query: MultiMapping[str], raw: bytes, content_type: str) -> DeleteOptions:
    """DeleteOptions from the query string and the (optional) body, the query winning."""
    body: Any = {}
    if raw.strip():
        body = read_body(raw, content_type)
        if not isinstance(body, dict):
            raise BadRequest("the body of the request must be a DeleteOptions object")
    propagation = query.get("propagationPolicy") or body.get("propagationPolicy")
    if propagation is not None and not isinstance(propagation, str):
        raise BadRequest("propagationPolicy must be a string")
    if flag(query, "orphanDependents") or body.get("orphanDependents") is True:
        propagation = propagation or "Orphan"
    grace = integer(query, "gracePeriodSeconds")
    if grace is None and isinstance(body.get("gracePeriodSeconds"), int):
        grace = body["gracePeriodSeconds"]
    body_dry_run = body.get("dryRun") or []
    if not isinstance(body_dry_run, list) or any(v != "All" for v in body_dry_run):
        raise BadRequest('dryRun: Unsupported value: supported values: "All"')
    preconditions = body.get("preconditions") or {}
    if not isinstance(preconditions, dict):
        raise BadRequest("preconditions must be an object")
    return DeleteOptions(
        propagation=propagation,
        grace=grace,
        dry_run=dry_run(query) or bool(body_dry_run),
        preconditions={str(k): str(v) for k, v in preconditions.items()},
    )
