"""The small part of Prometheus's annotation templating the lab's rules use, rendered the way
Prometheus renders it (Go's `%.4g` and its humanize functions), so an alert reads the same from
the in-process evaluator as from a real Prometheus.

Supported: `{{ $labels.NAME }}`, `{{ $value }}`, and `{{ $value | F }}` with F one of
`humanize`, `humanizePercentage`, `humanizeDuration`. Anything else is refused when a rule is
checked (`check_template`), not when an alert fires.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

_ACTION = re.compile(r"\{\{\s*(.*?)\s*\}\}")
_LABEL = re.compile(r"\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)")
_VALUE = re.compile(r"\$value(?:\s*\|\s*(humanize|humanizePercentage|humanizeDuration))?")
_SMALL_PREFIXES = ("m", "u", "n", "p", "f", "a", "z", "y")
_BIG_PREFIXES = ("k", "M", "G", "T", "P", "E", "Z", "Y")


class TemplateError(ValueError):
    """A template action the lab's renderer does not support."""


def _g4(value: float) -> str:
    """Go's `%.4g`."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return f"{value:.4g}"


def go_float(value: float) -> str:
    """Go's `%v` of a float64 (how `{{ $value }}` prints)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    return text.replace("e-0", "e-").replace("e+0", "e+") if "e" in text else text


def humanize(value: float) -> str:
    if value == 0 or math.isnan(value) or math.isinf(value):
        return _g4(value)
    prefix = ""
    if abs(value) >= 1:
        for p in _BIG_PREFIXES:
            if abs(value) < 1000:
                break
            prefix, value = p, value / 1000
        return f"{_g4(value)}{prefix}"
    for p in _SMALL_PREFIXES:
        if abs(value) >= 1:
            break
        prefix, value = p, value * 1000
    return f"{_g4(value)}{prefix}"


def humanize_percentage(value: float) -> str:
    return f"{_g4(value * 100)}%"


def humanize_duration(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        return _g4(value)
    if value == 0:
        return f"{_g4(value)}s"
    if abs(value) >= 1:
        sign = "-" if value < 0 else ""
        value = abs(value)
        whole = int(value)
        seconds, minutes = whole % 60, (whole // 60) % 60
        hours, days = (whole // 3600) % 24, whole // 86400
        if days:
            return f"{sign}{days}d {hours}h {minutes}m {seconds}s"
        if hours:
            return f"{sign}{hours}h {minutes}m {seconds}s"
        if minutes:
            return f"{sign}{minutes}m {seconds}s"
        return f"{sign}{_g4(value)}s"
    prefix = ""
    for p in _SMALL_PREFIXES:
        if abs(value) >= 1:
            break
        prefix, value = p, value * 1000
    return f"{_g4(value)}{prefix}s"


_FUNCTIONS = {
    None: go_float,
    "humanize": humanize,
    "humanizePercentage": humanize_percentage,
    "humanizeDuration": humanize_duration,
}


def check_template(text: str) -> None:
    """Raise `TemplateError` naming the first unsupported action."""
    for action in _ACTION.findall(text):
        if not (_LABEL.fullmatch(action) or _VALUE.fullmatch(action)):
            raise TemplateError(f"unsupported template action {{{{ {action} }}}} in {text!r}")


def render(text: str, labels: Mapping[str, str], value: float) -> str:
    """Expand the template; a label the alert lacks expands to nothing, as in Go."""

    def expand(match: re.Match[str]) -> str:
        action = match.group(1)
        label = _LABEL.fullmatch(action)
        if label:
            return labels.get(label.group(1), "")
        found = _VALUE.fullmatch(action)
        if found is None:
            raise TemplateError(f"unsupported template action {{{{ {action} }}}}")
        return _FUNCTIONS[found.group(1)](value)

    return _ACTION.sub(expand, text)
