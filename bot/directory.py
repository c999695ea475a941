"""Who people are to the policy: a Slack user's groups, and the members of approver groups.

Approvers in the policy are user ids or group handles (`@sre-oncall`). Deciding a click needs
the clicker's group handles; inviting responders to an incident channel needs the members of
each approver group (`usergroups.users.list`). Group data changes rarely and a burst of clicks
would otherwise cost a call each, so it is cached for a minute. When Slack cannot answer, a
person counts by user id alone — a group-only approver is then refused, which is the safe side.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

from agents.incident.approvals import Person
from bot.errors import SlackCallFailed
from bot.slack_io import SlackIO, UserGroup

logger = logging.getLogger(__name__)

GROUPS_TTL_S = 60.0


class Directory:
    def __init__(
        self,
        slack: SlackIO,
        *,
        ttl_s: float = GROUPS_TTL_S,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._slack = slack
        self._ttl_s = ttl_s
        self._now = now
        self._lock = threading.Lock()
        self._groups: list[UserGroup] = []
        self._fetched_at: float | None = None

    def _all_groups(self) -> list[UserGroup]:
        with self._lock:
            if self._fetched_at is not None and self._now() - self._fetched_at < self._ttl_s:
                return self._groups
            try:
                self._groups = self._slack.user_groups()
                self._fetched_at = self._now()
            except SlackCallFailed as e:
                logger.warning("cannot list user groups (%s); deciding by user id only", e.error)
            return self._groups

    def person(self, user_id: str) -> Person:
        handles = tuple(sorted(f"@{g.handle}" for g in self._all_groups() if user_id in g.users))
        return Person(user_id=user_id, groups=handles)

    def members(self, approvers: Iterable[str]) -> set[str]:
        """User ids of `approvers` (user ids as they are, `@handles` resolved to members)."""
        users: set[str] = set()
        by_handle = {f"@{g.handle}": g for g in self._all_groups()}
        for entry in approvers:
            if not entry.startswith("@"):
                users.add(entry)
                continue
            group = by_handle.get(entry)
            if group is None:
                logger.warning("approver group %s does not exist in this workspace", entry)
                continue
            try:
                users.update(self._slack.user_group_members(group.id))
            except SlackCallFailed as e:
                logger.warning("cannot list the members of %s: %s", entry, e.error)
                users.update(group.users)
        return users
