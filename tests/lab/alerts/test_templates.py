"""Annotation templates render as Prometheus renders them (Go's %.4g and humanize)."""

from __future__ import annotations

import math

import pytest

from lab.alerts.templates import (
    TemplateError,
    check_template,
    go_float,
    humanize,
    humanize_duration,
    humanize_percentage,
    render,
)


@pytest.mark.parametrize(
    ("fn", "value", "text"),
    [
        (humanize_percentage, 0.032044775, "3.204%"),
        (humanize_percentage, 1.0, "100%"),
        (humanize_percentage, 0.6, "60%"),
        (humanize_duration, 2.0634, "2.063s"),
        (humanize_duration, 0.5, "500ms"),
        (humanize_duration, 0.0123, "12.3ms"),
        (humanize_duration, 0.0, "0s"),
        (humanize_duration, 61.5, "1m 1s"),
        (humanize_duration, 3700, "1h 1m 40s"),
        (humanize_duration, 90061, "1d 1h 1m 1s"),
        (humanize, 1234.0, "1.234k"),
        (humanize, 0.001, "1m"),
        (humanize, 12.0, "12"),
        (humanize, 2.5e9, "2.5G"),
        (go_float, 1.0, "1"),
        (go_float, 0.5, "0.5"),
        (go_float, 1e-7, "1e-7"),
        (go_float, math.inf, "+Inf"),
    ],
)
def test_functions_match_go(fn: object, value: float, text: str) -> None:
    assert fn(value) == text  # type: ignore[operator]


def test_render_labels_and_value() -> None:
    text = render(
        "{{ $labels.service }} in {{$labels.namespace}}: {{ $value | humanizePercentage }}"
        " ({{ $labels.missing }})",
        {"service": "geo", "namespace": "hotel"},
        0.5,
    )
    assert text == "geo in hotel: 50% ()"


@pytest.mark.parametrize(
    "template", ["{{ .Labels.service }}", '{{ $value | printf "%.2f" }}', "{{ range . }}"]
)
def test_unsupported_actions_are_refused(template: str) -> None:
    with pytest.raises(TemplateError, match="unsupported template action"):
        check_template(template)
