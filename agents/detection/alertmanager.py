"""Alertmanager webhook payloads (version "4"), parsed once into `Alert` values.

The shape is what Alertmanager 0.25 POSTs to a `webhook_config` receiver:

    {"version": "4", "groupKey": "{}:{alertname=\"X\"}", "truncatedAlerts": 0,
     "status": "firing", "receiver": "stratus", "groupLabels": {...}, "commonLabels": {...},
     "commonAnnotations": {...}, "externalURL": "http://alertmanager:9093",
     "alerts": [{"status": "firing", "labels": {...}, "annotations": {...},
                 "startsAt": "2026-01-05T09:00:00.123456789Z",
                 "endsAt": "0001-01-01T00:00:00Z", "generatorURL": "...",
                 "fingerprint": "c6eadffa33fcdf37"}]}

Anything else is refused with a `PayloadError` naming the field path (`alerts[2].startsAt`)
and the problem, which the HTTP endpoint returns with a 400: a misconfigured sender learns
what to fix. Fields Stratus does not use are type-checked but not required, so a newer
Alertmanager that adds fields still gets through.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NotRequired, TypedDict

from agents.errors import StratusError
from agents.jsonlimit import JsonLimitError, loads_bounded
from agents.model import Alert, AlertStatus

#: Timestamps outside these years are refused (Go's zero time aside): a year-9999 time with
#: an offset would overflow on conversion to UTC.
_YEARS = (1970, 2999)
SUPPORTED_VERSION = "4"


class RawAlert(TypedDict):
    status: str
    labels: dict[str, str]
    annotations: dict[str, str]
    startsAt: str
    endsAt: str
    generatorURL: NotRequired[str]
    fingerprint: str


class RawWebhook(TypedDict):
    version: str
    groupKey: str
    truncatedAlerts: NotRequired[int]
    status: str
    receiver: str
    groupLabels: dict[str, str]
    commonLabels: dict[str, str]
    commonAnnotations: dict[str, str]
    externalURL: str
    alerts: list[RawAlert]


class PayloadError(StratusError, ValueError):
    """A webhook body that is not an Alertmanager v4 payload. `str()` is one line:
    `<field path>: <problem>`."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


@dataclass(frozen=True, slots=True, kw_only=True)
class WebhookMessage:
    """One notification: a group of alerts as Alertmanager routed them."""

    receiver: str
    status: AlertStatus
    group_key: str
    group_labels: Mapping[str, str]
    common_labels: Mapping[str, str]
    common_annotations: Mapping[str, str]
    external_url: str
    truncated_alerts: int
    alerts: tuple[Alert, ...]


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "object", list: "array", str: "string", bool: "boolean"}.get(
        type(value), type(value).__name__
    )


def _string(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise PayloadError(path, f"expected a string, got {_type_name(value)}")
    return value


def _labels(value: Any, path: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise PayloadError(path, f"expected an object of strings, got {_type_name(value)}")
    for key, item in value.items():
        if not isinstance(item, str):
            raise PayloadError(f"{path}.{key}", f"expected a string, got {_type_name(item)}")
    return dict(value)


def _status(value: Any, path: str) -> AlertStatus:
    text = _string(value, path)
    try:
        return AlertStatus(text)
    except ValueError:
        raise PayloadError(path, f"expected 'firing' or 'resolved', got {text!r}") from None


def _time(value: Any, path: str) -> datetime | None:
    """An RFC 3339 timestamp (nanoseconds are truncated); Go's zero time is None."""
    text = _string(value, path)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise PayloadError(path, f"expected an RFC 3339 timestamp, got {text!r}") from None
    if parsed.tzinfo is None:
        raise PayloadError(path, f"timestamp {text!r} has no time zone")
    if parsed.year == 1:
        return None  # Go's zero time (0001-01-01T00:00:00Z): not set
    if not (_YEARS[0] <= parsed.year <= _YEARS[1]):
        raise PayloadError(path, f"timestamp {text!r} is outside {_YEARS[0]}..{_YEARS[1]}")
    return parsed.astimezone(UTC)


def _optional(raw: Mapping[str, Any], key: str, path: str, kind: type[str] | type[int]) -> Any:
    """A field Stratus can do without, type-checked when present."""
    if key not in raw:
        return None
    value = raw[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        wanted = "a string" if kind is str else "an integer"
        raise PayloadError(f"{path}{key}", f"expected {wanted}, got {_type_name(value)}")
    return value


def label_fingerprint(labels: Mapping[str, str]) -> str:
    """A stable 16-hex-digit fingerprint of a label set, for senders that omit one."""
    canonical = "\x00".join(f"{k}\x01{v}" for k, v in sorted(labels.items()))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def parse_alert(raw: Any, path: str = "alert") -> Alert:
    if not isinstance(raw, dict):
        raise PayloadError(path, f"expected an object, got {_type_name(raw)}")
    for key in ("status", "labels", "startsAt"):
        if key not in raw:
            raise PayloadError(f"{path}.{key}", "is required")
    status = _status(raw["status"], f"{path}.status")
    labels = _labels(raw["labels"], f"{path}.labels")
    annotations = _labels(raw.get("annotations", {}), f"{path}.annotations")
    starts_at = _time(raw["startsAt"], f"{path}.startsAt")
    if starts_at is None:
        raise PayloadError(f"{path}.startsAt", "is the zero time; a started alert needs one")
    ends_at = _time(raw["endsAt"], f"{path}.endsAt") if "endsAt" in raw else None
    if status is AlertStatus.RESOLVED and ends_at is None:
        raise PayloadError(f"{path}.endsAt", "a resolved alert needs its end time")
    _optional(raw, "generatorURL", f"{path}.", str)
    fingerprint = _optional(raw, "fingerprint", f"{path}.", str) or label_fingerprint(labels)
    return Alert(
        fingerprint=fingerprint,
        # Prometheus always sets alertname; an alert posted by hand might not.
        name=labels.get("alertname") or "unnamed",
        status=status,
        labels=labels,
        annotations=annotations,
        starts_at=starts_at,
        ends_at=ends_at,
        source="alertmanager",
    )


def parse_webhook(payload: Any) -> WebhookMessage:
    """Parse a decoded JSON body. Raises `PayloadError`."""
    if not isinstance(payload, dict):
        raise PayloadError("$", f"expected a JSON object, got {_type_name(payload)}")
    if "version" not in payload:
        raise PayloadError("version", "is required")
    version = _string(payload["version"], "version")
    if version != SUPPORTED_VERSION:
        raise PayloadError("version", f"unsupported version {version!r} (expected '4')")
    if "alerts" not in payload:
        raise PayloadError("alerts", "is required")
    raw_alerts = payload["alerts"]
    if not isinstance(raw_alerts, list):
        raise PayloadError("alerts", f"expected an array, got {_type_name(raw_alerts)}")
    if "status" not in payload:
        raise PayloadError("status", "is required")
    status = _status(payload["status"], "status")
    truncated = _optional(payload, "truncatedAlerts", "", int) or 0
    if truncated < 0:
        raise PayloadError("truncatedAlerts", f"expected a count, got {truncated}")
    alerts = tuple(parse_alert(raw, f"alerts[{i}]") for i, raw in enumerate(raw_alerts))
    return WebhookMessage(
        receiver=_optional(payload, "receiver", "", str) or "",
        status=status,
        group_key=_optional(payload, "groupKey", "", str) or "",
        group_labels=_labels(payload.get("groupLabels", {}), "groupLabels"),
        common_labels=_labels(payload.get("commonLabels", {}), "commonLabels"),
        common_annotations=_labels(payload.get("commonAnnotations", {}), "commonAnnotations"),
        external_url=_optional(payload, "externalURL", "", str) or "",
        truncated_alerts=truncated,
        alerts=alerts,
    )


def parse_webhook_body(body: bytes | str) -> WebhookMessage:
    """Parse a raw HTTP body (UTF-8 JSON). Raises `PayloadError`."""
    try:
        payload = loads_bounded(body)
    except JsonLimitError as e:
        raise PayloadError("$", str(e)) from None
    return parse_webhook(payload)
