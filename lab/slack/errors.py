"""The workspace's error tree.

`ApiError` is a Web API refusal: Slack answers HTTP 200 (429 when rate limited) with
`{"ok": false, "error": code, ...}`, so it carries the code, any extra fields Slack adds
(`needed`/`provided` for `missing_scope`, `errors` for `invalid_blocks`) and the status.

`InteractionError` is what Slack's own client would refuse before anything reaches the app:
an unknown slash command, a click on a button that is not there, a modal submitted with a
required field empty. The Python API raises it; the page shows it to the user.
"""

from __future__ import annotations

from typing import Any


class SlackLabError(Exception):
    """Root of the local workspace's errors."""


class ApiError(SlackLabError):
    def __init__(self, code: str, *, status: int = 200, **extra: Any) -> None:
        super().__init__(code)
        self.code = code
        self.status = status
        self.extra = extra

    def body(self) -> dict[str, Any]:
        return {"ok": False, "error": self.code, **self.extra}


def invalid_arguments(*messages: str) -> ApiError:
    return ApiError(
        "invalid_arguments",
        response_metadata={"messages": [f"[ERROR] {m}" for m in messages]},
    )


class InteractionError(SlackLabError):
    def __init__(self, code: str, message: str = "", *, errors: dict[str, str] | None = None):
        super().__init__(f"{code}: {message}" if message else code)
        self.code = code
        self.message = message or code
        self.errors = errors or {}
