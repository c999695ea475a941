"""Small formatting rules shared by the renderers: how μ, instants, people, states and
confidences read in Slack."""

from __future__ import annotations

import re
from datetime import datetime

from agents.model import IncidentState, Risk

_STATE_LABEL = {
    IncidentState.DETECTED: "Detected",
    IncidentState.DIAGNOSING: "Diagnosing",
    IncidentState.DIAGNOSED: "Diagnosed",
    IncidentState.PLANNING: "Planning",
    IncidentState.AWAITING_APPROVAL: "Awaiting approval",
    IncidentState.EXECUTING: "Executing",
    IncidentState.VALIDATING: "Validating",
    IncidentState.COMMITTED: "Committed",
    IncidentState.ABORTING: "Rolling back",
    IncidentState.HELD: "Held (rollback unfinished)",
    IncidentState.RESOLVED: "Resolved",
    IncidentState.ESCALATED: "Escalated",
    IncidentState.CLOSED: "Closed",
}

_STATE_ICON = {
    IncidentState.DETECTED: ":rotating_light:",
    IncidentState.DIAGNOSING: ":mag:",
    IncidentState.DIAGNOSED: ":mag:",
    IncidentState.PLANNING: ":memo:",
    IncidentState.AWAITING_APPROVAL: ":raised_hand:",
    IncidentState.EXECUTING: ":gear:",
    IncidentState.VALIDATING: ":hourglass_flowing_sand:",
    IncidentState.COMMITTED: ":white_check_mark:",
    IncidentState.ABORTING: ":leftwards_arrow_with_hook:",
    IncidentState.HELD: ":double_vertical_bar:",
    IncidentState.RESOLVED: ":large_green_circle:",
    IncidentState.ESCALATED: ":sos:",
    IncidentState.CLOSED: ":checkered_flag:",
}

_RISK_ICON = {
    Risk.LOW: ":large_green_circle:",
    Risk.MEDIUM: ":large_orange_circle:",
    Risk.HIGH: ":red_circle:",
}


def state_label(state: IncidentState | str) -> str:
    try:
        return _STATE_LABEL[IncidentState(state)]
    except ValueError:
        return str(state)


def state_icon(state: IncidentState | str) -> str:
    try:
        return _STATE_ICON[IncidentState(state)]
    except ValueError:
        return ":grey_question:"


def risk(value: Risk) -> str:
    return f"{_RISK_ICON[value]} {value.value}"


def mu(value: float | None) -> str:
    return "unknown" if value is None else f"{value:g}"


def when(at: datetime | None) -> str:
    return "—" if at is None else f"{at:%Y-%m-%d %H:%M:%S} UTC"


def clock_time(at: datetime) -> str:
    return f"{at:%H:%M:%S}"


def person(user_id: str) -> str:
    """A mention for Slack user ids; other actors (`policy:autonomous`, `recovery`) as code."""
    if user_id and user_id[0] in "UW" and user_id[1:].isalnum() and user_id.isupper():
        return f"<@{user_id}>"
    return f"`{user_id}`"


#: A Slack user id (U…/W…, 9 to 11 characters), bare or as an escaped mention.
_USER_ID = re.compile(r"&lt;@([UW][A-Z0-9]{8,10})&gt;|(?<![<@\w])([UW][A-Z0-9]{8,10})\b")


def people(text: str) -> str:
    """`text` (already escaped) with every Slack user id made a mention: the agents name
    people by id ("undone by U0ALICE01") or as a mention that escaping broke
    ("&lt;@U0ALICE01&gt;"), and a person reads a name."""
    return _USER_ID.sub(lambda m: f"<@{m.group(1) or m.group(2)}>", text)


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """`1 pod`, `2 pods` (`nouns` for irregular plurals)."""
    return f"{count} {noun if count == 1 else (nouns or noun + 's')}"


def percent(value: float) -> str:
    return f"{value:.0%}"
