"""The three patch types the API server accepts.

* JSON patch (RFC 6902): a list of operations on JSON pointers.
* JSON merge patch (RFC 7386): a partial document; `null` deletes, lists are replaced.
* Strategic merge patch: like merge patch, but lists declared as maps (`mergekeys.py`) merge
  item by item on their key, with the `$patch`, `$retainKeys`, `$setElementOrder/` and
  `$deleteFromPrimitiveList/` directives that kubectl sends.

Errors: a patch that is not the right shape raises `PatchFormatError` (the server's 400); a
well-formed patch that cannot apply raises `PatchApplyError` (its 422).
"""

from __future__ import annotations

from typing import Any

from lab.kube.jsonutil import deep_copy
from lab.kube.mergekeys import PRIMITIVE_SETS, merge_key

MAX_JSON_PATCH_OPERATIONS = 10_000

_DELETE = object()


class PatchFormatError(ValueError):
    """The patch document is malformed."""


class PatchApplyError(ValueError):
    """The patch is well formed but does not apply to the object."""


# --------------------------------------------------------------------------- merge patch


def merge_patch(original: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return deep_copy(patch)
    result = dict(original) if isinstance(original, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# --------------------------------------------------------------------------- strategic merge


def strategic_merge_patch(original: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        raise PatchFormatError("a strategic merge patch must be a JSON object")
    result = _merge_map(original if isinstance(original, dict) else {}, patch)
    if result is _DELETE:
        return {}
    return result


def _merge_map(original: dict[str, Any], patch: dict[str, Any]) -> Any:
    directive = patch.get("$patch")
    if directive == "delete":
        return _DELETE
    if directive == "replace":
        return _strip({k: v for k, v in patch.items() if k != "$patch"})
    if directive is not None:
        raise PatchFormatError(f"unknown patch type: {directive}")
    result = dict(original)
    retain = patch.get("$retainKeys")
    if retain is not None and not isinstance(retain, list):
        raise PatchFormatError("$retainKeys must be a list of strings")
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in ("$retainKeys",):
            continue
        if key.startswith("$setElementOrder/"):
            if not isinstance(value, list):
                raise PatchFormatError("$setElementOrder must be a list")
            orders[key.split("/", 1)[1]] = value
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if not isinstance(value, list):
                raise PatchFormatError("$deleteFromPrimitiveList must be a list")
            current = result.get(field)
            if isinstance(current, list):
                result[field] = [v for v in current if v not in value]
            continue
        if key.startswith("$"):
            raise PatchFormatError(f"unknown directive {key}")
        if value is None:
            result.pop(key, None)
            continue
        current = result.get(key)
        if isinstance(value, dict):
            merged = _merge_map(current if isinstance(current, dict) else {}, value)
            if merged is _DELETE:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _merge_list(key, current if isinstance(current, list) else [], value)
        else:
            result[key] = value
    for field, order in orders.items():
        if isinstance(result.get(field), list):
            result[field] = _reorder(field, result[field], order)
    if retain is not None:
        keep = {str(k) for k in retain}
        result = {k: v for k, v in result.items() if k in keep}
    return result


def _strip(value: Any) -> Any:
    """A patch fragment with its directives removed (for items with nothing to merge into)."""
    if isinstance(value, dict):
        if value.get("$patch") == "delete":
            return _DELETE
        out = {}
        for k, v in value.items():
            if k.startswith("$"):
                continue
            stripped = _strip(v)
            if stripped is not _DELETE and v is not None:
                out[k] = stripped
        return out
    if isinstance(value, list):
        return [s for s in (_strip(v) for v in value) if s is not _DELETE]
    return value


def _merge_list(field: str, original: list[Any], patch: list[Any]) -> list[Any]:
    if field in PRIMITIVE_SETS:
        merged = list(original)
        merged.extend(v for v in patch if v not in merged)
        return merged
    key = merge_key(field, [*patch, *original])
    if key is None or not all(isinstance(item, dict) for item in patch):
        return [s for s in (_strip(v) for v in patch) if s is not _DELETE]
    if any(item.get("$patch") == "replace" for item in patch):
        return [
            s
            for s in (_strip(v) for v in patch if v.get("$patch") != "replace")
            if s is not _DELETE
        ]
    result = [item for item in original]
    for item in patch:
        if key not in item:
            raise PatchApplyError(f"map: {item} does not contain declared merge key: {key}")
        index = next(
            (i for i, o in enumerate(result) if isinstance(o, dict) and o.get(key) == item[key]),
            None,
        )
        if item.get("$patch") == "delete":
            result = [o for o in result if not (isinstance(o, dict) and o.get(key) == item[key])]
            continue
        if index is None:
            merged = _merge_map({}, item)
            if merged is not _DELETE:
                result.append(merged)
        else:
            merged = _merge_map(result[index], item)
            if merged is _DELETE:
                del result[index]
            else:
                result[index] = merged
    return result


def _reorder(field: str, items: list[Any], order: list[Any]) -> list[Any]:
    key = merge_key(field, items)
    if key is None:
        ranks = {repr(v): i for i, v in enumerate(order)}
        return sorted(items, key=lambda v: ranks.get(repr(v), len(ranks)))
    ranks = {repr(entry.get(key)): i for i, entry in enumerate(order) if isinstance(entry, dict)}
    return sorted(
        items,
        key=lambda v: ranks.get(repr(v.get(key)) if isinstance(v, dict) else "", len(ranks)),
    )


# --------------------------------------------------------------------------- JSON patch


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str):
        raise PatchFormatError("path must be a string")
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchApplyError(f"JSON pointer must start with '/': {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(container: list[Any], part: str, *, allow_end: bool) -> int:
    if part == "-" and allow_end:
        return len(container)
    if not part.isdigit() or (len(part) > 1 and part.startswith("0")):
        raise PatchApplyError(f"invalid array index {part!r}")
    index = int(part)
    if index > len(container) or (index == len(container) and not allow_end):
        raise PatchApplyError(f"array index {index} out of bounds")
    return index


def _parent(doc: Any, parts: list[str]) -> Any:
    node = doc
    for part in parts[:-1]:
        if isinstance(node, dict):
            if part not in node:
                raise PatchApplyError(f"doc is missing path: /{'/'.join(parts)}")
            node = node[part]
        elif isinstance(node, list):
            node = node[_index(node, part, allow_end=False)]
        else:
            raise PatchApplyError(f"doc is missing path: /{'/'.join(parts)}")
    return node


def _get(doc: Any, parts: list[str]) -> Any:
    if not parts:
        return doc
    parent = _parent(doc, parts)
    last = parts[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchApplyError(f"doc is missing key: /{'/'.join(parts)}")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, allow_end=False)]
    raise PatchApplyError(f"doc is missing path: /{'/'.join(parts)}")


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent = _parent(doc, parts)
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, allow_end=True), value)
    else:
        raise PatchApplyError(f"doc is missing path: /{'/'.join(parts)}")
    return doc


def _remove(doc: Any, parts: list[str]) -> Any:
    if not parts:
        raise PatchApplyError("cannot remove the whole document")
    parent = _parent(doc, parts)
    last = parts[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchApplyError(
                f"remove operation does not apply: doc is missing path: /{'/'.join(parts)}"
            )
        del parent[last]
    elif isinstance(parent, list):
        del parent[_index(parent, last, allow_end=False)]
    else:
        raise PatchApplyError(f"doc is missing path: /{'/'.join(parts)}")
    return doc


def json_patch(original: Any, operations: Any) -> Any:
    if not isinstance(operations, list):
        raise PatchFormatError(
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
        )
    if len(operations) > MAX_JSON_PATCH_OPERATIONS:
        raise PatchApplyError(
            f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, "
            f"got {len(operations)}"
        )
    doc = deep_copy(original)
    for operation in operations:
        if not isinstance(operation, dict):
            raise PatchFormatError("each JSON patch operation must be an object")
        op = operation.get("op")
        parts = _pointer(operation.get("path"))
        if op in ("add", "replace", "test") and "value" not in operation:
            raise PatchApplyError(f"missing value for operation {op}")
        value = deep_copy(operation.get("value"))
        if op == "add":
            doc = _add(doc, parts, value)
        elif op == "remove":
            doc = _remove(doc, parts)
        elif op == "replace":
            _get(doc, parts)  # must exist
            doc = value if not parts else _add(_remove(doc, parts), parts, value)
        elif op in ("move", "copy"):
            source = _pointer(operation.get("from"))
            moved = deep_copy(_get(doc, source))
            if op == "move":
                if parts[: len(source)] == source and len(parts) > len(source):
                    raise PatchApplyError("cannot move a value into one of its children")
                doc = _remove(doc, source)
            doc = _add(doc, parts, moved)
        elif op == "test":
            if _get(doc, parts) != value:
                raise PatchApplyError(f"testing value {operation.get('path')} failed")
        else:
            raise PatchApplyError(f"Unexpected kind: {op}")
    return doc
