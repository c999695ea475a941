"""Decoding request bodies the way the real API server does.

The real server unmarshals every body into typed Go structs: a value of the wrong JSON type is
a 400 ("cannot unmarshal string into Go struct field ... of type int32"), an unknown field is
dropped with a warning (or refused under `fieldValidation=Strict`), and `null` means the zero
value. Doing the same here keeps stored objects well-typed, so controllers never trip over a
string where they expect a number, and the fuzz tests can throw anything at the server.

The field types come from `schema.json`, generated from the official client's models by
`tests/lab/kube/schema_gen.py` (the lab itself never imports the SDK).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from agents.model import JsonObject
from lab.kube.errors import BadRequest

#: Maps of resource quantities: the real server accepts numbers there and keeps strings.
QUANTITY_MAPS = frozenset(
    {
        "limits",
        "requests",
        "capacity",
        "allocatable",
        "hard",
        "used",
        "allocatedResources",
        "default",
        "defaultRequest",
        "max",
        "min",
        "maxLimitRequestRatio",
    }
)

_INT64_MAX = 2**63 - 1
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")

_GO_TYPES = {"str": "string", "int": "int32", "bool": "bool", "float": "float64"}


@cache
def _models() -> dict[str, dict[str, str]]:
    text = resources.files("lab.kube").joinpath("schema.json").read_text()
    data: dict[str, dict[str, dict[str, str]]] = json.loads(text)
    return data["models"]


def has_model(name: str) -> bool:
    return name in _models()


@dataclass(slots=True)
class Decoded:
    obj: JsonObject
    unknown_fields: list[str] = field(default_factory=list)


class _Mismatch(Exception):
    def __init__(self, got: str, where: str, go_type: str) -> None:
        super().__init__(where)
        self.got = got
        self.where = where
        self.go_type = go_type


class _Context:
    __slots__ = ("unknown",)

    def __init__(self) -> None:
        self.unknown: list[str] = []


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def _go_type(type_name: str) -> str:
    if type_name.startswith("List["):
        return "[]" + _go_type(type_name[5:-1])
    if type_name.startswith("Dict["):
        return "map[string]" + _go_type(type_name.split(", ", 1)[1][:-1])
    if type_name in _GO_TYPES:
        return _GO_TYPES[type_name]
    if type_name == "datetime":
        return "v1.Time"
    return re.sub(r"^(V\d\w*?|CoreV1|EventsV1)(?=[A-Z])", "", type_name)


def _zero(type_name: str) -> Any:
    if type_name.startswith("List["):
        return []
    if type_name.startswith("Dict[") or type_name in _models():
        return {}
    return {"str": "", "int": 0, "bool": False, "float": 0.0}.get(type_name)


def _quantity(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Mismatch(_json_type(value), where, "resource.Quantity")
    if isinstance(value, int) or value.is_integer():
        return str(int(value))
    milli = round(value * 1000)
    return f"{milli}m"


def _value(value: Any, type_name: str, where: str, ctx: _Context, key: str) -> Any:
    if type_name == "str":
        if not isinstance(value, str):
            raise _Mismatch(_json_type(value), where, "string")
        return value
    if type_name == "int":
        if isinstance(value, bool) or not isinstance(value, int) or abs(value) > _INT64_MAX:
            raise _Mismatch(
                _json_type(value) if not isinstance(value, float) else f"number {value}",
                where,
                "int32",
            )
        return value
    if type_name == "bool":
        if not isinstance(value, bool):
            raise _Mismatch(_json_type(value), where, "bool")
        return value
    if type_name == "float":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _Mismatch(_json_type(value), where, "float64")
        return value
    if type_name == "datetime":
        if not isinstance(value, str) or not _RFC3339.match(value):
            raise _Mismatch(_json_type(value), where, "v1.Time")
        return value
    if type_name == "bytes":
        if not isinstance(value, str):
            raise _Mismatch(_json_type(value), where, "[]uint8")
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise _Mismatch("string", where, "[]uint8 (illegal base64 data)") from None
        return value
    if type_name == "object":
        return value
    if type_name.startswith("List["):
        if not isinstance(value, list):
            raise _Mismatch(_json_type(value), where, _go_type(type_name))
        inner = type_name[5:-1]
        return [
            _zero(inner) if item is None else _value(item, inner, f"{where}[{i}]", ctx, key)
            for i, item in enumerate(value)
        ]
    if type_name.startswith("Dict["):
        if not isinstance(value, dict):
            raise _Mismatch(_json_type(value), where, _go_type(type_name))
        inner = type_name.split(", ", 1)[1][:-1]
        if inner == "str" and key in QUANTITY_MAPS:
            return {k: _quantity(v, f"{where}.{k}") for k, v in value.items() if v is not None}
        return {
            k: _zero(inner) if v is None else _value(v, inner, f"{where}.{k}", ctx, k)
            for k, v in value.items()
        }
    return _model(value, type_name, where, ctx)


def _model(value: Any, model: str, where: str, ctx: _Context) -> JsonObject:
    fields = _models().get(model)
    if fields is None:
        return value if isinstance(value, dict) else {}
    if not isinstance(value, dict):
        raise _Mismatch(_json_type(value), where, _go_type(model))
    out: JsonObject = {}
    for key, item in value.items():
        type_name = fields.get(key)
        path = f"{where}.{key}" if where else key
        if type_name is None:
            ctx.unknown.append(path)
            continue
        if item is None:
            continue
        out[key] = _value(item, type_name, path, ctx, key)
    return out


def decode(obj: Any, model: str, *, kind: str, version: str, strict: bool = False) -> Decoded:
    """A typed copy of `obj` as model `model`. Raises `BadRequest` as the real server does."""
    ctx = _Context()
    try:
        out = _model(obj, model, "", ctx)
    except _Mismatch as e:
        raise BadRequest(
            f'{kind} in version "{version}" cannot be handled as a {kind}: json: cannot '
            f"unmarshal {e.got} into Go struct field {_go_type(model)}.{e.where} of type "
            f"{e.go_type}"
        ) from None
    # apiVersion and kind are checked by the caller against the URL.
    ctx.unknown = [p for p in ctx.unknown if p not in ("apiVersion", "kind")]
    if strict and ctx.unknown:
        detail = ", ".join(f'unknown field "{p}"' for p in ctx.unknown)
        raise BadRequest(f"strict decoding error: {detail}")
    return Decoded(obj=out, unknown_fields=ctx.unknown)
