"""Redaction as diagnosis applies it: a text redactor (injected) plus the key-based rule for
mappings (env, ConfigMap data) that no text pattern can know.

`agents.redact` (written in parallel) is the project's redactor and is what the composition
root passes. `basic_redact` is a conservative stand-in so that the diagnoser is never
constructed without one: it removes the secret shapes we know (tokens, keys, passwords in
URLs and `key=value` pairs, PEM blocks).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from agents.diagnosis.ports import Redactor

MASK = "[REDACTED]"

#: Keys whose values are secrets whatever they look like.
SENSITIVE_KEY = re.compile(
    r"(pass(word|wd)?|secret|token|api[_-]?key|private[_-]?key|credential|auth|pwd|"
    r"access[_-]?key|session[_-]?key|signing)",
    re.IGNORECASE,
)

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.S),
        MASK,
    ),
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{8,}"), MASK),
    (re.compile(r"\bxapp-[A-Za-z0-9-]{8,}"), MASK),
    (re.compile(r"\bsk-ant-[A-Za-z0-9_-]{8,}"), MASK),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), MASK),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), MASK),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), MASK),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 " + MASK),
    # user:password@host in URLs and connection strings
    (re.compile(r"(?i)([a-z][a-z0-9+.-]*://[^:/@\s]+):[^@\s/]+@"), r"\1:" + MASK + "@"),
    # key=value / key: value where the key names a secret
    (
        re.compile(
            r"(?i)\b([\w.-]*(?:pass(?:word|wd)?|secret|token|api[_-]?key|pwd|credential)[\w.-]*)"
            r"(\"?\s*[:=]\s*\"?)([^\s\"',;}&]+)"
        ),
        r"\1\2" + MASK,
    ),
)


def basic_redact(text: str) -> str:
    """The stand-in text redactor (see module docstring)."""
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def redact_value(key: str, value: str, redactor: Redactor) -> str:
    """A mapping entry's value: masked whole when its key names a secret."""
    if SENSITIVE_KEY.search(key):
        return MASK
    return redactor(value)


def redact_mapping(data: Mapping[str, str], redactor: Redactor) -> dict[str, str]:
    return {k: redact_value(k, v, redactor) for k, v in data.items()}
