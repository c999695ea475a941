"""Who may POST to `/alerts/alertmanager`: the caller Alertmanager's `http_config` describes.

    receivers:
    - name: stratus
      webhook_configs:
      - url: http://stratus:8080/alerts/alertmanager
        http_config:
          authorization: {type: Bearer, credentials_file: /etc/alertmanager/stratus-token}
          # or: basic_auth: {username: alertmanager, password_file: /etc/.../password}

Secure by default: with no token and no basic-auth pair configured every call is refused
(an anonymous POST would otherwise open incidents, and in HTTP mode the webhook shares its
port with `/slack/events`). Comparisons are constant-time.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from dataclasses import dataclass

from bot.config import WebhookSettings

CHALLENGE = 'Bearer realm="stratus", Basic realm="stratus"'


@dataclass(frozen=True, slots=True, kw_only=True)
class WebhookAuth:
    settings: WebhookSettings

    def refusal(self, authorization: str | None) -> str | None:
        """None when `authorization` (the header's value) is acceptable, else why not (for
        the log line; never echoes what was sent)."""
        s = self.settings
        if not s.configured:
            return "no webhook credentials are configured (see `stratus doctor`)"
        if not authorization:
            return "no Authorization header"
        scheme, _, value = authorization.strip().partition(" ")
        value = value.strip()
        if scheme.lower() == "bearer" and s.token:
            return None if _same(value, s.token) else "wrong bearer token"
        if scheme.lower() == "basic" and s.username and s.password:
            try:
                decoded = base64.b64decode(value, validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                return "malformed basic credentials"
            user, sep, password = decoded.partition(":")
            ok = _same(user, s.username) & _same(password, s.password)
            return None if sep and ok else "wrong basic credentials"
        return f"unsupported scheme {scheme[:16]!r}"


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))
