"""The fault library's error tree. Each message is one line a person can act on: the CLI and
the control endpoint show it as it is."""

from __future__ import annotations


class FaultError(Exception):
    """Root of every error the fault library raises on purpose."""


class UnknownFault(FaultError, LookupError):
    """No fault has that id."""


class BadParameter(FaultError, ValueError):
    """A parameter, app or target the fault cannot use."""


class InjectionFailed(FaultError):
    """The cluster refused the change (the API's own message is quoted)."""
