"""The lab's control endpoint: inject faults into a running lab from another process.

`stratus lab up` starts it on 127.0.0.1 next to the emulated API, and `stratus lab inject`
posts to it. It is a loopback-only, unauthenticated test harness (like the lab itself):

    GET  /lab/faults                      the library: id, description, category, params
    POST /lab/faults/{id}                 {"app": ..., "target": ..., "params": {k: v}}
                                          → 200 {"injection": {...}}
    GET  /lab/injections                  everything injected so far, with oracle verdicts
    POST /lab/injections/{n}/recover      put back what injection n changed

Errors are `{"error": "<one line>"}` with 400 (bad parameter or body), 404 (unknown fault or
injection), 409 (the cluster refused the change).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aiohttp import web

from agents.model import JsonObject
from lab.faults.base import Fault
from lab.faults.errors import BadParameter, InjectionFailed, UnknownFault
from lab.faults.model import Injection
from lab.faults.oracle import check_mitigation
from lab.faults.registry import fault, faults
from lab.serving import ThreadedSite

if TYPE_CHECKING:
    from lab.sim.world import LabWorld

logger = logging.getLogger(__name__)


def fault_json(f: Fault) -> JsonObject:
    return {
        "id": f.id,
        "description": f.description,
        "category": str(f.category) if f.category is not None else None,
        "apps": list(f.apps),
        "default_targets": dict(f.default_targets),
        "undoable_fix": f.undoable_fix,
        "time_bounded": f.time_bounded,
        "params": [{"name": p.name, "help": p.help, "default": p.default} for p in f.params],
    }


def injection_json(index: int, injection: Injection) -> JsonObject:
    truth = injection.truth
    return {
        "index": index,
        "fault": injection.fault_id,
        "app": injection.app,
        "namespace": injection.namespace,
        "target": injection.target,
        "params": dict(injection.params),
        "changes": list(injection.changes),
        "injected_at": injection.injected_at.isoformat(),
        "expires_at": injection.expires_at.isoformat() if injection.expires_at else None,
        "truth": {
            "root_causes": list(truth.root_causes),
            "category": str(truth.category) if truth.category is not None else None,
            "undoable_fix": truth.undoable_fix,
            "expects_incident": truth.expects_incident,
        },
    }


class FaultControl:
    """The injections made into one world, in order. Thread-safe."""

    def __init__(self, world: LabWorld) -> None:
        self.world = world
        self._lock = threading.Lock()
        self._injections: list[Injection] = []

    def inject(
        self,
        fault_id: str,
        *,
        app: str | None = None,
        target: str | None = None,
        params: Mapping[str, object] | None = None,
    ) -> tuple[int, Injection]:
        injection = fault(fault_id).inject(self.world, app=app, target=target, params=params)
        with self._lock:
            self._injections.append(injection)
            return len(self._injections) - 1, injection

    def injections(self) -> list[Injection]:
        with self._lock:
            return list(self._injections)

    def get(self, index: int) -> Injection:
        with self._lock:
            if not 0 <= index < len(self._injections):
                raise UnknownFault(f"no injection #{index}")
            return self._injections[index]


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


@web.middleware
async def _loopback_only(request: web.Request, handler: Any) -> web.StreamResponse:
    remote = request.remote or ""
    try:
        loopback = ipaddress.ip_address(remote.split("%")[0]).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        return _error(403, "the lab's control endpoint only answers loopback clients")
    response: web.StreamResponse = await handler(request)
    return response


class ControlServer:
    def __init__(self, control: FaultControl, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.control = control
        self._site = ThreadedSite(self._application, name="lab-fault-control", host=host, port=port)

    @property
    def url(self) -> str:
        return self._site.url

    # ------------------------------------------------------------------ handlers

    async def _list(self, request: web.Request) -> web.Response:
        return web.json_response({"faults": [fault_json(f) for f in faults()]})

    async def _inject(self, request: web.Request) -> web.Response:
        try:
            body = json.loads(await request.read() or b"{}")
        except ValueError as e:
            return _error(400, f"the body is not JSON: {e}")
        if not isinstance(body, dict):
            return _error(400, "the body must be a JSON object")
        params = body.get("params") or {}
        if not isinstance(params, dict):
            return _error(400, "params must be an object of name → value")
        try:
            index, injection = self.control.inject(
                request.match_info["fault_id"],
                app=_optional_str(body, "app"),
                target=_optional_str(body, "target"),
                params=params,
            )
        except UnknownFault as e:
            return _error(404, str(e))
        except BadParameter as e:
            return _error(400, str(e))
        except InjectionFailed as e:
            return _error(409, str(e))
        return web.json_response({"injection": injection_json(index, injection)})

    async def _injections(self, request: web.Request) -> web.Response:
        rows = []
        for index, injection in enumerate(self.control.injections()):
            verdict = check_mitigation(self.control.world, injection)
            rows.append(
                {
                    **injection_json(index, injection),
                    "mitigated": verdict.mitigated,
                    "problems": list(verdict.problems),
                }
            )
        return web.json_response({"injections": rows})

    async def _recover(self, request: web.Request) -> web.Response:
        try:
            index = int(request.match_info["index"])
            injection = self.control.get(index)
        except (ValueError, UnknownFault) as e:
            return _error(404, str(e))
        done = fault(injection.fault_id).recover(self.control.world, injection)
        return web.json_response({"recovered": list(done)})

    # ------------------------------------------------------------------ serving

    def start(self) -> str:
        """Serve in a background thread; returns the base URL."""
        if not self._site.running:
            self._site.start()
            logger.info("lab fault control at %s", self.url)
        return self.url

    def _application(self) -> web.Application:
        app = web.Application(middlewares=[_loopback_only])
        app.router.add_get("/lab/faults", self._list)
        app.router.add_post("/lab/faults/{fault_id}", self._inject)
        app.router.add_get("/lab/injections", self._injections)
        app.router.add_post("/lab/injections/{index}/recover", self._recover)
        return app

    def stop(self) -> None:
        self._site.stop()


def _optional_str(body: Mapping[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise BadParameter(f"{key} must be a non-empty string")
    return value
