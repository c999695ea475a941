"""Detection: Alertmanager webhooks and the periodic scan in, incidents out.

The webhook handler parses a body with `parse_webhook_body` (a `PayloadError` is an HTTP 400)
and hands `message.alerts` to `Detector.ingest`; the scan job hands it `Scanner.scan()`; a
timer calls `Detector.tick()` to promote alerts whose grace or flap hold ran out and to send
coalesced updates. Each call returns a `Detection` whose `events` (`IncidentOpened`,
`AlertsUpdated`) are what the bot posts to Slack.
"""

from agents.detection.alertmanager import (
    PayloadError,
    WebhookMessage,
    parse_alert,
    parse_webhook,
    parse_webhook_body,
)
from agents.detection.detector import Detector, DetectorConfig, incident_of
from agents.detection.events import (
    AlertDisposition,
    AlertsUpdated,
    Detection,
    DetectorEvent,
    Disposition,
    IncidentOpened,
)
from agents.detection.ids import incident_id
from agents.detection.scan import SCAN_SOURCE, Scanner
from agents.detection.scan_rules import ScanConfig

__all__ = [
    "SCAN_SOURCE",
    "AlertDisposition",
    "AlertsUpdated",
    "Detection",
    "Detector",
    "DetectorConfig",
    "DetectorEvent",
    "Disposition",
    "IncidentOpened",
    "PayloadError",
    "ScanConfig",
    "Scanner",
    "WebhookMessage",
    "incident_id",
    "incident_of",
    "parse_alert",
    "parse_webhook",
    "parse_webhook_body",
]
