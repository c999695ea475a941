"""What the CLI's commands share."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

import click

from bot.config import SettingsError

P = ParamSpec("P")
R = TypeVar("R")

EXIT_USAGE = 2


def settings_errors_exit_2(func: Callable[P, R]) -> Callable[P, R]:
    """Turn a `SettingsError` into one line on stderr and exit code 2."""

    @wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except SettingsError as e:
            click.echo(f"stratus: invalid setting {e}", err=True)
            sys.exit(EXIT_USAGE)

    return wrapper
