"""Lists: selectors, `limit` and `continue`, as the real server pages them.

Items come in etcd key order (namespace, then name); a continue token carries the key to
resume after and the resourceVersion of the first page, encoded as the real server's are, so
clients that inspect nothing but pass it back work unchanged. Pages after the first are not a
consistent snapshot (the real server's are, within its compaction window).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from agents.model import JsonObject
from lab.kube.errors import BadRequest
from lab.kube.resources import ResourceType
from lab.kube.selectors import EVERYTHING, FieldSelector, LabelSelector
from lab.kube.store import Store, Stored

StoredList = list[Stored]


@dataclass(frozen=True, slots=True)
class ListPage:
    items: StoredList
    resource_version: str
    continue_token: str | None
    remaining: int | None


def list_page(
    store: Store,
    rt: ResourceType,
    namespace: str | None,
    *,
    labels: LabelSelector = EVERYTHING,
    fields: FieldSelector | None = None,
    limit: int = 0,
    continue_token: str = "",
) -> ListPage:
    fields = fields or FieldSelector()
    start, token_rv = _decode_continue(continue_token) if continue_token else ("", 0)
    with store.lock:
        rv = token_rv or store.resource_version
        if fields.name is not None:
            namespaces = (
                [namespace]
                if namespace is not None
                else ([fields.namespace] if fields.namespace is not None else None)
            )
            if namespaces is None:
                candidates = [
                    s
                    for s in store.items(rt.stored_kind)
                    if s.obj["metadata"]["name"] == fields.name
                ]
            else:
                hit = store.get(rt.stored_kind, namespaces[0] or "", fields.name)
                candidates = [hit] if hit is not None else []
        else:
            candidates = store.items(rt.stored_kind, namespace)
        matched: StoredList = []
        remaining = 0
        for stored in candidates:
            meta = stored.obj["metadata"]
            if start and _key(meta) <= start:
                continue
            if not labels.matches(meta.get("labels")) or not fields.matches(stored.obj):
                continue
            if limit and len(matched) >= limit:
                remaining += 1
                continue
            matched.append(stored)
    token = None
    if remaining:
        token = _encode_continue(_key(matched[-1].obj["metadata"]), rv)
    unfiltered = labels.empty and not fields.requirements
    return ListPage(
        items=matched,
        resource_version=str(rv),
        continue_token=token,
        remaining=remaining if token and unfiltered else None,
    )


def _key(meta: JsonObject) -> str:
    return f"{meta.get('namespace', '')}/{meta['name']}"


def _encode_continue(start: str, rv: int) -> str:
    token = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start + "\x00"})
    return base64.urlsafe_b64encode(token.encode()).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[str, int]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        start, rv = data["start"], data["rv"]
        if (
            not isinstance(start, str)
            or not isinstance(rv, int)
            or data.get("v") != ("meta.k8s.io/v1")
        ):
            raise ValueError("bad continue token")
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeDecodeError):
        raise BadRequest(
            "continue key is not valid: incorrect encoded start resourceVersion "
            "(version meta.k8s.io/v1)"
        ) from None
    return start.rstrip("\x00"), rv
