"""The urllib3 `Retry` every HTTP adapter uses: at most the deadline's attempts, on connection
and read failures only, with no backoff sleep and no `Retry-After` wait, so that one call
ends within `CallDeadline.worst_case_s` (see `agents.deadlines`)."""

from __future__ import annotations

from collections.abc import Collection

import urllib3

from agents.deadlines import CallDeadline


def bounded_retry(
    deadline: CallDeadline,
    *,
    allowed_methods: Collection[str] = urllib3.Retry.DEFAULT_ALLOWED_METHODS,
) -> urllib3.Retry:
    """A status is answered, never retried (`status=0`): the adapter reads it. Only
    `allowed_methods` are retried (the Kubernetes adapter never sends a write twice)."""
    retries = deadline.attempts - 1
    return urllib3.Retry(
        total=retries,
        connect=retries,
        read=retries,
        status=0,
        other=0,
        redirect=0,
        backoff_factor=0,
        respect_retry_after_header=False,
        raise_on_status=False,
        allowed_methods=frozenset(allowed_methods),
    )
