"""The bot's own metrics for `/metrics` (prometheus_client).

One registry per process object, not the library's global one, so that a test can build
several bots in one interpreter. The notifier counts what the incident loop announces; the
operations count approval verdicts; the Slack layer counts API errors (rate limits included,
even when a retry then succeeded).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

CONTENT_TYPE = CONTENT_TYPE_LATEST


class BotMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.incidents_opened = Counter(
            "stratus_incidents_opened", "Incidents opened, by alert source", ["source"], registry=r
        )
        self.incident_transitions = Counter(
            "stratus_incident_transitions",
            "Incident state transitions, by the state entered",
            ["state"],
            registry=r,
        )
        self.incidents_closed = Counter(
            "stratus_incidents_closed",
            "Incidents closed, by the state they ended in (resolved or escalated)",
            ["state"],
            registry=r,
        )
        self.transactions = Counter(
            "stratus_transactions", "Transactions finished, by outcome", ["outcome"], registry=r
        )
        self.undos = Counter("stratus_undo", "Undo requests, by result", ["status"], registry=r)
        self.approvals = Counter(
            "stratus_approvals", "Approve and reject clicks, by verdict", ["verdict"], registry=r
        )
        self.slack_api_errors = Counter(
            "stratus_slack_api_errors",
            "Slack Web API errors, by method and error (429s count even when retried)",
            ["method", "error"],
            registry=r,
        )
        self.llm_tokens = Counter(
            "stratus_llm_tokens",
            "Language-model tokens spent on diagnoses",
            ["reasoner"],
            registry=r,
        )
        self.webhooks = Counter(
            "stratus_alertmanager_webhooks",
            "Alertmanager webhook requests, by HTTP status answered",
            ["status"],
            registry=r,
        )

        self.leader = Gauge(
            "stratus_leader",
            "1 while this replica leads (runs the scan, watches, digests, approval expiry and "
            "recovery), 0 while it follows",
            registry=r,
        )
        self.singleton_runs = Counter(
            "stratus_singleton_runs",
            "Passes of the leader-only periodic jobs run by this replica, by job",
            ["job"],
            registry=r,
        )

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
