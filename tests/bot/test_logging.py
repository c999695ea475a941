"""Log lines never carry a secret: the configured ones by value, and anything shaped like a
credential, even inside a traceback."""

from __future__ import annotations

import logging

from bot.logging import RedactingFormatter

TOKEN = "xoxb-123456789012-abcdefghijklmnop"  # a made-up token


def record(message: str, *args: object, exc: BaseException | None = None) -> logging.LogRecord:
    exc_info = (type(exc), exc, exc.__traceback__) if exc is not None else None
    return logging.LogRecord("bot.test", logging.ERROR, __file__, 1, message, args, exc_info)


def test_configured_secrets_and_credential_shapes_are_masked() -> None:
    formatter = RedactingFormatter("%(message)s", ["my-signing-secret-value"])
    text = formatter.format(record("token %s and secret %s", TOKEN, "my-signing-secret-value"))
    assert TOKEN not in text and "my-signing-secret-value" not in text
    assert "‹redacted›" in text


def test_a_secret_inside_a_traceback_is_masked() -> None:
    formatter = RedactingFormatter("%(message)s", ["another-secret-123"])
    try:
        raise RuntimeError("auth failed for another-secret-123")
    except RuntimeError as e:
        text = formatter.format(record("call failed", exc=e))
    assert "another-secret-123" not in text and "RuntimeError" in text
