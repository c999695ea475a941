"""Logging, configured once at start-up (`stratus run`): one line per record on stderr, every
line passed through redaction — the configured secrets by value, and anything shaped like a
credential by `agents.redact` — so a token never reaches a log, even inside a traceback."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable

from agents.redact import REDACTED, redact_text

FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"

#: Libraries that are chatty at INFO.
_QUIET = (
    "alembic",
    "apscheduler",
    "slack_sdk",
    "slack_bolt",
    "urllib3",
    "kubernetes",
    "aiohttp.access",
)


class RedactingFormatter(logging.Formatter):
    def __init__(self, fmt: str, secrets: Iterable[str]) -> None:
        super().__init__(fmt)
        # Longest first, so a secret containing another is masked whole.
        self._secrets = sorted({s for s in secrets if len(s) >= 6}, key=len, reverse=True)

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return redact_text(text)


def configure_logging(level: str, *, secrets: Iterable[str] = ()) -> None:
    """Configure the root logger (replacing any handler set before)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(RedactingFormatter(FORMAT, secrets))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in _QUIET:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
