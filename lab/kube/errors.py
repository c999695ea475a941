"""The emulator's error tree.

Every refusal the API server can give is one of these, carrying the HTTP status, the machine
reason and the message of a `Status` body, worded as the real kube-apiserver words them. The
HTTP layer turns them into `Status` responses; in-process callers (`ClusterAPI`) catch them
as exceptions. One tree for both keeps the two surfaces exactly alike.
"""

from __future__ import annotations

from agents.model import JsonObject


class ApiError(Exception):
    """A request the API server refuses. `code` is the HTTP status, `reason` the `Status`
    reason ("NotFound", "AlreadyExists", ...)."""

    code = 500
    reason = "InternalError"

    def __init__(
        self,
        message: str,
        *,
        name: str = "",
        group: str = "",
        kind: str = "",
        causes: list[JsonObject] | None = None,
        retry_after_s: int = 0,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.name = name
        self.group = group
        self.kind = kind
        self.causes = causes or []
        self.retry_after_s = retry_after_s

    def status(self) -> JsonObject:
        """The `Status` body the real server sends with this error."""
        body: JsonObject = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        details: JsonObject = {}
        if self.name:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind:
            details["kind"] = self.kind
        if self.causes:
            details["causes"] = self.causes
        if self.retry_after_s:
            details["retryAfterSeconds"] = self.retry_after_s
        if details:
            body["details"] = details
        return body


class BadRequest(ApiError):
    code = 400
    reason = "BadRequest"


class Unauthorized(ApiError):
    code = 401
    reason = "Unauthorized"


class Forbidden(ApiError):
    code = 403
    reason = "Forbidden"


class NotFound(ApiError):
    code = 404
    reason = "NotFound"


class MethodNotAllowed(ApiError):
    code = 405
    reason = "MethodNotAllowed"


class NotAcceptable(ApiError):
    code = 406
    reason = "NotAcceptable"


class AlreadyExists(ApiError):
    code = 409
    reason = "AlreadyExists"


class Conflict(ApiError):
    code = 409
    reason = "Conflict"


class Gone(ApiError):
    """A resourceVersion or continue token older than the retained history."""

    code = 410
    reason = "Expired"


class RequestEntityTooLarge(ApiError):
    code = 413
    reason = "RequestEntityTooLarge"


class UnsupportedMediaType(ApiError):
    code = 415
    reason = "UnsupportedMediaType"


class TooManyRequests(ApiError):
    """429: what the eviction subresource answers when a disruption budget forbids it."""

    code = 429
    reason = "TooManyRequests"


class Invalid(ApiError):
    """A well-formed object that fails validation (422), with one cause per field."""

    code = 422
    reason = "Invalid"


class InternalError(ApiError):
    code = 500
    reason = "InternalError"


def group_resource(plural: str, group: str) -> str:
    """`pods`, `deployments.apps`: how the real server names a resource in messages."""
    return f"{plural}.{group}" if group else plural


def not_found(plural: str, group: str, name: str) -> NotFound:
    return NotFound(
        f'{group_resource(plural, group)} "{name}" not found',
        name=name,
        group=group,
        kind=plural,
    )


def already_exists(plural: str, group: str, name: str) -> AlreadyExists:
    return AlreadyExists(
        f'{group_resource(plural, group)} "{name}" already exists',
        name=name,
        group=group,
        kind=plural,
    )


def conflict(plural: str, group: str, name: str) -> Conflict:
    return Conflict(
        f"Operation cannot be fulfilled on {group_resource(plural, group)} "
        f'"{name}": the object has been modified; please apply your changes to the latest '
        "version and try again",
        name=name,
        group=group,
        kind=plural,
    )


def field_error(kind_reason: str, field: str, message: str) -> JsonObject:
    """One entry of `details.causes` ("FieldValueInvalid", "FieldValueRequired", ...)."""
    return {"reason": kind_reason, "message": message, "field": field}


def invalid(kind: str, group: str, name: str, causes: list[JsonObject]) -> Invalid:
    """`Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1: ...`."""
    parts = [f"{c['field']}: {c['message']}" if c.get("field") else c["message"] for c in causes]
    summary = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    qualified = f"{kind}.{group}" if group else kind
    return Invalid(
        f'{qualified} "{name}" is invalid: {summary}',
        name=name,
        group=group,
        kind=kind,
        causes=causes,
    )
