"""`stratus`: the command-line entry point.

Every command reads its settings through `bot.config`; a bad setting prints one line naming it
and exits 2, never a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import click

from bot.cli.common import settings_errors_exit_2
from bot.config import database_url, environment


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="stratus")
def cli() -> None:
    """Stratus: Kubernetes incident response in Slack, with transactions you can undo."""


@cli.group()
def db() -> None:
    """Database migrations."""


@db.command("upgrade")
@click.argument("revision", required=False)
@click.option(
    "--revision", "revision_option", help="Target revision (the same as REVISION; default head)."
)
@settings_errors_exit_2
def db_upgrade(revision: str | None, revision_option: str | None) -> None:
    """Apply migrations up to REVISION, `head` by default (the bot also does this at start).
    Spelt like `db downgrade REVISION`; `--revision` is kept for older scripts."""
    from storage.migrations import upgrade

    if revision is not None and revision_option is not None and revision != revision_option:
        click.echo("stratus: give the revision once (REVISION or --revision)", err=True)
        sys.exit(2)
    _migrate(upgrade, revision or revision_option or "head")


@db.command("downgrade")
@click.argument("revision")
@settings_errors_exit_2
def db_downgrade(revision: str) -> None:
    """Revert migrations down to REVISION (`base` empties the schema)."""
    from storage.migrations import downgrade

    _migrate(downgrade, revision)


def _migrate(move: Callable[[str, str], object], revision: str) -> None:
    """Move the configured database to `revision`; a failed migration exits 1."""
    from storage.migrations import MigrationError

    try:
        move(database_url(environment()), revision)
    except MigrationError as e:
        click.echo(f"stratus: {e}", err=True)
        sys.exit(1)
    click.echo(f"database at {revision}")


@db.command("current")
@settings_errors_exit_2
def db_current() -> None:
    """Print the database's migration revision."""
    from storage.migrations import MigrationError, current

    url = database_url(environment())
    try:
        click.echo(current(url) or "empty (no migrations applied)")
    except MigrationError as e:
        click.echo(f"stratus: {e}", err=True)
        sys.exit(1)


def _register_commands() -> None:
    # Each command imports what it runs lazily, inside the command, so `--help` stays fast.
    from bot.cli.bench import bench
    from bot.cli.demo import demo
    from bot.cli.doctor import doctor
    from bot.cli.lab_commands import lab
    from bot.cli.run import run

    for command in (run, demo, bench, doctor, lab):
        cli.add_command(command)


_register_commands()


def main() -> None:
    cli(prog_name="stratus")


if __name__ == "__main__":  # pragma: no cover
    main()
