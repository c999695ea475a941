"""The aiohttp application: one catch-all route that reads the path like the real server,
then answers discovery, CRUD, subresources (status, scale, log), lists and watches.

Every answer is either the object(s) asked for or a `Status`; nothing a client sends may make
the server answer 5xx or die (the fuzz tests hold it to that). The handlers are thin: the
semantics live in `KubeApi`, shared with in-process callers.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import yaml
from aiohttp import web
from multidict import CIMultiDict, MultiMapping

from agents.model import JsonObject
from lab.kube import scale
from lab.kube.api import KubeApi
from lab.kube.controllers import disruption
from lab.kube.errors import (
    ApiError,
    BadRequest,
    InternalError,
    MethodNotAllowed,
    NotFound,
    RequestEntityTooLarge,
)
from lab.kube.events import to_events_v1
from lab.kube.jsonutil import dumps
from lab.kube.logs import LogQuery, LogStore, pod_log
from lab.kube.rbac import Authorizer
from lab.kube.resources import ResourceType
from lab.kube.selectors import parse_field_selector, parse_label_selector
from lab.kube.server import authz, discovery
from lab.kube.server import request as req
from lab.kube.server.routing import Route, Target, parse
from lab.kube.server.tables import table
from lab.kube.server.watch import Filter, WatchOptions, WatchSession, serve_watch
from lab.kube.store import Stored

logger = logging.getLogger(__name__)


MAX_BODY = 3 * 1024 * 1024
DEFAULT_WATCH_TIMEOUT_S = 1800.0
MAX_WARNINGS = 10
JSON = "application/json"


def _render(value: Any, rendering: req.Rendering) -> tuple[bytes, str]:
    if rendering.format == "yaml":
        return yaml.safe_dump(value, sort_keys=False).encode(), "application/yaml"
    return dumps(value), JSON


class ApiServer:
    def __init__(
        self, *, api: KubeApi, logs: LogStore, authorizer: Authorizer | None = None
    ) -> None:
        self.api = api
        self.logs = logs
        self.authorizer = authorizer or Authorizer(api.store)
        self.server_address = "127.0.0.1:0"
        self.sessions: set[WatchSession] = set()

    def application(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY, handler_args={"max_field_size": 65536})
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    def close_watches(self) -> None:
        for session in list(self.sessions):
            session.close()

    # ------------------------------------------------------------------ entry

    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            return await self._dispatch(request)
        except ApiError as e:
            return self._error(e)
        except web.HTTPRequestEntityTooLarge:
            return self._error(RequestEntityTooLarge("the request body is too large"))
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception:  # the outer boundary: log it, answer a Status, keep serving
            logger.exception("unexpected error serving %s %s", request.method, request.path_qs)
            return self._error(InternalError("an internal error occurred"))

    def _error(self, error: ApiError) -> web.Response:
        headers = {"Content-Type": JSON}
        if error.retry_after_s:
            headers["Retry-After"] = str(error.retry_after_s)
        return web.Response(status=error.code, body=dumps(error.status()), headers=headers)

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        segments = [s for s in request.path.split("/")]
        segments = segments[1:] if segments and segments[0] == "" else segments
        if segments and segments[-1] == "" and len(segments) <= 4:
            segments = segments[:-1]
        head = segments[0] if segments else ""
        if (
            head in ("", "version", "healthz", "livez", "readyz")
            or (head == "openapi" and len(segments) <= 5)
            or (head == "api" and len(segments) <= 2)
            or (head == "apis" and len(segments) <= 3)
        ):
            return self._discovery(request, segments)
        if head == "api" and len(segments) >= 2:
            if segments[1] != "v1":
                raise NotFound("the server could not find the requested resource")
            route = parse("", "v1", segments[2:])
        elif head == "apis" and len(segments) >= 4:
            route = parse(segments[1], segments[2], segments[3:])
        else:
            raise NotFound("the server could not find the requested resource")
        reviewed = await authz.authorize(self.authorizer, request, route)  # RBAC: 401/403
        return reviewed if reviewed is not None else await self._resource(request, route)

    # ------------------------------------------------------------------ discovery

    def _discovery(self, request: web.Request, segments: list[str]) -> web.Response:
        if request.method not in ("GET", "HEAD"):
            raise MethodNotAllowed(
                "the server does not allow this method on the requested resource"
            )
        if segments[:1] in (["healthz"], ["livez"], ["readyz"]) and len(segments) == 1:
            return web.Response(text="ok", content_type="text/plain")
        body = discovery.document(segments, self.server_address)
        if body is None:
            raise NotFound("the server could not find the requested resource")
        rendering = req.negotiate(request.headers.get("Accept", ""), table_allowed=False)
        payload, content_type = _render(body, rendering)
        return web.Response(body=payload, headers={"Content-Type": content_type})

    # ------------------------------------------------------------------ resources

    async def _resource(self, request: web.Request, route: Route) -> web.StreamResponse:
        method, query = request.method, request.query
        user_agent = request.headers.get("User-Agent", "")
        if method in ("GET", "HEAD"):
            return await self._get(request, route)
        if method == "POST" and route.target is Target.COLLECTION and not route.legacy_watch:
            if route.rt.namespaced and route.namespace is None:
                raise MethodNotAllowed(
                    "the server does not allow this method on the requested resource"
                )
            body = req.read_body(await request.read(), request.headers.get("Content-Type", ""))
            created, warnings = self.api.create_object(
                route.rt,
                route.namespace or "",
                body,
                manager=req.field_manager(query, user_agent),
                dry_run=req.dry_run(query),
                strict=req.strict_fields(query),
            )
            return self._object(request, route.rt, created, status=201, warnings=warnings)
        if method == "POST" and route.subresource == "eviction":
            # kubectl drain's request: granted (201, a Success Status) or refused by a budget.
            req.read_body(await request.read(), request.headers.get("Content-Type", ""))
            if not req.dry_run(query):
                disruption.evict(self.api, route.namespace or "", route.name, self.api.clock.now())
            return self._json(
                request,
                {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"},
                status=201,
            )
        if route.subresource == "eviction":
            raise MethodNotAllowed(
                "the server does not allow this method on the requested resource"
            )
        if method == "PUT" and route.target is not Target.COLLECTION and not route.legacy_watch:
            return await self._put(request, route, user_agent)
        if method == "PATCH" and route.target is not Target.COLLECTION and not route.legacy_watch:
            return await self._patch(request, route, user_agent)
        if method == "DELETE" and not route.legacy_watch and not route.subresource:
            return await self._delete(request, route)
        raise MethodNotAllowed("the server does not allow this method on the requested resource")

    async def _put(self, request: web.Request, route: Route, user_agent: str) -> web.Response:
        query = request.query
        body = req.read_body(await request.read(), request.headers.get("Content-Type", ""))
        manager = req.field_manager(query, user_agent)
        namespace = route.namespace or ""
        if route.subresource == "scale":
            result = scale.update_scale(
                self.api,
                route.rt,
                namespace,
                route.name,
                body,
                manager=manager,
                dry_run=req.dry_run(query),
            )
            return self._json(request, result)
        if route.subresource == "log":
            raise MethodNotAllowed(
                "the server does not allow this method on the requested resource"
            )
        if route.subresource == "finalize":
            return self._finalize(request, route, body, manager)
        updated = self.api.update_object(
            route.rt,
            namespace,
            route.name,
            body,
            manager=manager,
            subresource=route.subresource,
            dry_run=req.dry_run(query),
            strict=req.strict_fields(query),
        )
        return self._object(request, route.rt, updated)

    def _finalize(
        self, request: web.Request, route: Route, body: Any, manager: str
    ) -> web.Response:
        if not isinstance(body, dict):
            raise BadRequest("the body of the request must be a Namespace")
        with self.api.store.lock:
            old = self.api.read(route.rt, "", route.name).obj
            new = json.loads(dumps(old))
            finalizers = (body.get("spec") or {}).get("finalizers") or []
            new.setdefault("spec", {})["finalizers"] = [str(f) for f in finalizers]
            updated = self.api.commit_update(
                route.rt,
                old,
                new,
                manager=manager,
                subresource="finalize",
                dry_run=False,
                internal=True,
            )
        return self._object(request, route.rt, updated)

    async def _patch(self, request: web.Request, route: Route, user_agent: str) -> web.Response:
        query = request.query
        patch_type, body = req.read_patch(
            await request.read(), request.headers.get("Content-Type", "")
        )
        if patch_type == "apply" and not query.get("fieldManager"):
            raise BadRequest(
                'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required '
                "value: is required for apply patch"
            )
        manager = req.field_manager(query, user_agent)
        namespace = route.namespace or ""
        if route.subresource == "scale":
            result = scale.patch_scale(
                self.api,
                route.rt,
                namespace,
                route.name,
                body,
                patch_type=patch_type,
                manager=manager,
                dry_run=req.dry_run(query),
            )
            return self._json(request, result)
        if route.subresource in ("log", "finalize"):
            raise MethodNotAllowed(
                "the server does not allow this method on the requested resource"
            )
        created = (
            patch_type == "apply"
            and self.api.store.get(route.rt.kind, namespace, route.name) is None
        )
        patched = self.api.patch_object(
            route.rt,
            namespace,
            route.name,
            body,
            patch_type=patch_type,
            manager=manager,
            subresource=route.subresource,
            dry_run=req.dry_run(query),
        )
        return self._object(request, route.rt, patched, status=201 if created else 200)

    async def _delete(self, request: web.Request, route: Route) -> web.Response:
        options = req.delete_options(
            request.query, await request.read(), request.headers.get("Content-Type", "")
        )
        propagation, grace, dry_run = options.propagation, options.grace, options.dry_run
        if route.target is Target.COLLECTION:
            return self._delete_collection(request, route, propagation, grace, dry_run)
        result = self.api.delete_object(
            route.rt,
            route.namespace or "",
            route.name,
            propagation=propagation,
            preconditions=options.preconditions,
            grace_period=grace,
            dry_run=dry_run,
        )
        rt = route.rt
        if result.gone and not rt.returns_deleted_object:
            meta = result.obj["metadata"]
            status = {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "details": {
                    "name": meta["name"],
                    "group": rt.group,
                    "kind": rt.plural,
                    "uid": meta["uid"],
                },
            }
            return self._json(request, status)
        code = 200 if result.gone or rt.kind in ("Pod", "Namespace") else 202
        return self._object(request, rt, result.obj, status=code)

    def _delete_collection(
        self,
        request: web.Request,
        route: Route,
        propagation: str | None,
        grace: int | None,
        dry_run: bool,
    ) -> web.Response:
        labels, fields = self._selectors(request.query, route.rt)
        page = self.api.list_page(route.rt, route.namespace, labels=labels, fields=fields)
        deleted = []
        for stored in page.items:
            meta = stored.obj["metadata"]
            try:
                result = self.api.delete_object(
                    route.rt,
                    meta.get("namespace", ""),
                    meta["name"],
                    propagation=propagation,
                    grace_period=grace,
                    dry_run=dry_run,
                )
            except NotFound:
                continue
            deleted.append(result.obj)
        body = {
            "kind": route.rt.list_kind,
            "apiVersion": route.rt.api_version,
            "metadata": {"resourceVersion": str(self.api.store.resource_version)},
            "items": deleted,
        }
        return self._json(request, body)

    # ------------------------------------------------------------------ reads

    def _selectors(self, query: MultiMapping[str], rt: ResourceType) -> Any:
        labels = parse_label_selector(query.get("labelSelector", ""))
        fields = parse_field_selector(query.get("fieldSelector", ""), rt.stored_kind)
        return labels, fields

    async def _get(self, request: web.Request, route: Route) -> web.StreamResponse:
        query = request.query
        rt = route.rt
        if route.target is Target.COLLECTION:
            if route.legacy_watch or req.flag(query, "watch"):
                return await self._watch(request, route)
            return self._list(request, route)
        if route.legacy_watch:
            return await self._watch(request, route, name=route.name)
        namespace = route.namespace or ""
        if route.subresource == "log":
            return self._log(request, route)
        if route.subresource == "scale":
            return self._json(request, scale.get_scale(self.api, rt, namespace, route.name))
        if route.subresource in ("finalize", "eviction"):
            raise MethodNotAllowed(
                "the server does not allow this method on the requested resource"
            )
        rendering = self._rendering(request, table_allowed=True)
        stored = self.api.read(rt, namespace, route.name)
        if rendering.format == "json" and not rt.storage_kind:
            return web.Response(body=stored.raw(), headers={"Content-Type": JSON})
        return self._present(request, rt, [stored], rendering, single=True)

    def _rendering(self, request: web.Request, *, table_allowed: bool) -> req.Rendering:
        include = request.query.get("includeObject", "")
        if include not in ("", "None", "Metadata", "Object"):
            raise BadRequest(f'includeObject: Unsupported value: "{include}"')
        return req.negotiate(
            request.headers.get("Accept", ""), table_allowed=table_allowed, include_object=include
        )

    def _list(self, request: web.Request, route: Route) -> web.Response:
        query = request.query
        rt = route.rt
        rendering = self._rendering(request, table_allowed=True)
        labels, fields = self._selectors(query, rt)
        limit = req.integer(query, "limit", minimum=0) or 0
        rv = query.get("resourceVersion", "")
        if rv and not rv.isdigit():
            raise BadRequest(f'resourceVersion: Invalid value: "{rv}": must be a number')
        page = self.api.list_page(
            rt,
            route.namespace,
            labels=labels,
            fields=fields,
            limit=limit,
            continue_token=query.get("continue", ""),
        )
        if rendering.format == "json" and not rt.storage_kind:
            meta = {"resourceVersion": page.resource_version}
            if page.continue_token:
                meta["continue"] = page.continue_token
            if page.remaining is not None:
                meta["remainingItemCount"] = page.remaining  # type: ignore[assignment]
            head = dumps({"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta})
            body = head[:-1] + b',"items":[' + b",".join(s.raw() for s in page.items) + b"]}"
            return web.Response(body=body, headers={"Content-Type": JSON})
        return self._present(request, rt, page.items, rendering, page=page)

    def _present(
        self,
        request: web.Request,
        rt: ResourceType,
        items: list[Stored],
        rendering: req.Rendering,
        *,
        single: bool = False,
        page: Any = None,
    ) -> web.Response:
        objects = [self._view(rt, s.obj) for s in items]
        if rendering.format == "table":
            body = table(
                rt.kind,
                objects,
                self.api.clock.now(),
                include_object=rendering.include_object,
                resource_version=page.resource_version
                if page
                else objects[0]["metadata"].get("resourceVersion", ""),
                continue_token=page.continue_token if page else None,
                remaining=page.remaining if page else None,
            )
        elif single:
            body = objects[0]
        else:
            meta: JsonObject = {"resourceVersion": page.resource_version}
            if page.continue_token:
                meta["continue"] = page.continue_token
            body = {
                "kind": rt.list_kind,
                "apiVersion": rt.api_version,
                "metadata": meta,
                "items": objects,
            }
        payload, content_type = _render(body, rendering)
        return web.Response(body=payload, headers={"Content-Type": content_type})

    def _view(self, rt: ResourceType, obj: JsonObject) -> JsonObject:
        return to_events_v1(obj) if rt.group == "events.k8s.io" else obj

    def _object(
        self,
        request: web.Request,
        rt: ResourceType,
        obj: JsonObject,
        *,
        status: int = 200,
        warnings: list[str] | None = None,
    ) -> web.Response:
        rendering = self._rendering(request, table_allowed=False)
        payload, content_type = _render(self._view(rt, obj), rendering)
        headers: CIMultiDict[str] = CIMultiDict({"Content-Type": content_type})
        for warning in (warnings or [])[:MAX_WARNINGS]:
            # Quoted and escaped (field names may hold control characters).
            headers.add("Warning", f"299 - {json.dumps(warning[:256])}")
        return web.Response(status=status, body=payload, headers=headers)

    def _json(self, request: web.Request, body: JsonObject, status: int = 200) -> web.Response:
        rendering = self._rendering(request, table_allowed=False)
        payload, content_type = _render(body, rendering)
        return web.Response(status=status, body=payload, headers={"Content-Type": content_type})

    def _log(self, request: web.Request, route: Route) -> web.Response:
        query = request.query
        log = LogQuery(
            container=query.get("container", ""),
            previous=req.flag(query, "previous"),
            tail_lines=req.integer(query, "tailLines", minimum=0),
            since_seconds=req.integer(query, "sinceSeconds", minimum=1),
            timestamps=req.flag(query, "timestamps"),
            limit_bytes=req.integer(query, "limitBytes", minimum=1),
        )
        req.flag(query, "follow")
        text = pod_log(self.api, self.logs, route.namespace or "", route.name, log)
        return web.Response(text=text, content_type="text/plain", charset="utf-8")

    # ------------------------------------------------------------------ watch

    async def _watch(
        self, request: web.Request, route: Route, *, name: str = ""
    ) -> web.StreamResponse:
        query = request.query
        rt = route.rt
        rendering = self._rendering(request, table_allowed=True)
        labels, fields = self._selectors(query, rt)
        if name:
            fields = parse_field_selector(
                ",".join(filter(None, [query.get("fieldSelector", ""), f"metadata.name={name}"])),
                rt.stored_kind,
            )
        timeout = req.integer(query, "timeoutSeconds", minimum=0)
        rv_text = query.get("resourceVersion", "")
        if rv_text and not rv_text.isdigit():
            raise BadRequest(f'resourceVersion: Invalid value: "{rv_text}": must be a number')
        initial_events = req.flag(query, "sendInitialEvents")
        req.flag(query, "allowWatchBookmarks")
        options = WatchOptions(
            filter=Filter(route.namespace, labels, fields),
            since=int(rv_text) if rv_text and rv_text != "0" and not initial_events else None,
            timeout_s=float(timeout) if timeout else DEFAULT_WATCH_TIMEOUT_S,
            initial_events=initial_events,
        )
        now = self.api.clock.now

        def present(event_type: str, obj: JsonObject) -> JsonObject:
            shown = self._view(rt, obj)
            if rendering.format == "table" and event_type not in ("ERROR", "BOOKMARK"):
                shown = table(
                    rt.kind,
                    [shown],
                    now(),
                    include_object=rendering.include_object,
                    resource_version=obj["metadata"].get("resourceVersion", ""),
                )
            return shown

        return await serve_watch(
            request,
            rt=rt,
            store=self.api.store,
            sessions=self.sessions,
            options=options,
            present=present,
        )
