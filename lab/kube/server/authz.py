"""The server's one authorization hook: authenticate the bearer token, answer access reviews,
and refuse (403) a resource request the identity's RBAC does not allow — before any handler
runs, as the real server's filter chain does."""

from __future__ import annotations

from aiohttp import web

from lab.kube.errors import MethodNotAllowed
from lab.kube.jsonutil import dumps
from lab.kube.rbac import REVIEW_GROUP, Attributes, Authorizer
from lab.kube.server import request as req
from lab.kube.server.routing import Route, Target


def attributes(request: web.Request, route: Route) -> Attributes:
    """The verb the real server derives from the method and path (`RequestInfoFactory`)."""
    method = request.method
    collection = route.target is Target.COLLECTION
    if method in ("GET", "HEAD"):
        if route.legacy_watch or (collection and req.flag(request.query, "watch")):
            verb = "watch"
        else:
            verb = "list" if collection else "get"
    elif method == "POST":
        verb = "create"
    elif method == "PUT":
        verb = "update"
    elif method == "PATCH":
        verb = "patch"
    elif method == "DELETE":
        verb = "deletecollection" if collection else "delete"
    else:
        verb = method.lower()
    rt = route.rt
    return Attributes(
        verb=verb,
        group=rt.group,
        resource=rt.plural,
        subresource=route.subresource,
        namespace=route.namespace or "",
        name=route.name,
    )


async def authorize(
    authorizer: Authorizer, request: web.Request, route: Route
) -> web.Response | None:
    """None when the request may go on to its handler; the answer of an access review;
    raises `Unauthorized` or `Forbidden`."""
    identity = authorizer.authenticate(request.headers.get("Authorization", ""))
    attrs = attributes(request, route)
    authorizer.authorize(identity, attrs)
    if route.rt.group != REVIEW_GROUP:
        return None
    # Reviews are never stored: a POST is answered about the identity that sent it.
    if attrs.verb != "create" or route.target is not Target.COLLECTION:
        raise MethodNotAllowed("the server does not allow this method on the requested resource")
    body = req.read_body(await request.read(), request.headers.get("Content-Type", ""))
    if route.rt.plural == "selfsubjectaccessreviews":
        answer = authorizer.access_review(identity, body)
    else:
        answer = authorizer.rules_review(identity, body)
    return web.Response(
        status=201, body=dumps(answer), headers={"Content-Type": "application/json"}
    )
