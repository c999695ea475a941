"""`stratus run`: the bot, in the foreground, until Ctrl-C (SIGINT) or SIGTERM.

Exit codes: 2 for a bad setting or policy file (one line naming it), 1 when the bot cannot
start (database, cluster, Slack token, a port in use), 0 after a clean stop.
"""

from __future__ import annotations

import gc
import sys
import threading
from typing import NoReturn

import click

from bot.cli.common import StopSignals

EXIT_FAILED = 1
EXIT_USAGE = 2


def _fail(message: str, code: int) -> NoReturn:
    click.echo(f"stratus: {message}", err=True)
    sys.exit(code)


@click.command("run")
def run() -> None:
    """Run the bot: Slack (Socket Mode or HTTP), the Alertmanager webhook, health and metrics
    endpoints, detection, and the incident loop."""
    from agents.errors import PolicyError
    from bot.config import SettingsError, load_settings
    from bot.errors import StartupError
    from bot.logging import configure_logging
    from storage import StorageError

    try:
        settings = load_settings()
    except SettingsError as e:
        _fail(f"invalid setting {e}", EXIT_USAGE)
    kubeconfig = settings.kubernetes.kubeconfig
    if kubeconfig is not None and not kubeconfig.is_file():
        # A setting that names a missing file is a bad setting (exit 2), found before anything
        # is started or migrated.
        _fail(f"invalid setting KUBECONFIG: {kubeconfig} is not a file", EXIT_USAGE)
    secrets = [
        s
        for s in (
            settings.slack.bot_token,
            settings.slack.app_token,
            settings.slack.signing_secret,
            settings.anthropic.api_key,
            settings.webhook.token,
            settings.webhook.password,
        )
        if s
    ]
    configure_logging(settings.log_level, secrets=secrets)

    from bot.runtime import BotRuntime
    from bot.services import Options, build_services

    stop = StopSignals()
    lost = threading.Event()

    def on_lost_leadership() -> None:
        lost.set()
        stop.stop()

    try:
        services = build_services(settings, Options(on_lost_leadership=on_lost_leadership))
    except SettingsError as e:
        _fail(f"invalid setting {e}", EXIT_USAGE)
    except PolicyError as e:
        _fail(f"invalid policy: {e}", EXIT_USAGE)
    except (StartupError, StorageError) as e:
        _fail(f"cannot start: {e}", EXIT_FAILED)

    stop.install()
    runtime = BotRuntime(services)
    try:
        runtime.start()
    except OSError as e:
        runtime.stop()
        _fail(f"cannot start: {e}", EXIT_FAILED)
    # What start-up built lives as long as the process: freezing it keeps the collector's full
    # passes (75–120 ms each on a small machine) out of Slack's 3-second ack path.
    gc.collect()
    gc.freeze()
    click.echo(f"stratus: running; endpoints at {runtime.http_url} (Ctrl-C stops)", err=True)
    try:
        stop.wait()
    finally:
        runtime.stop()
    if lost.is_set():
        # Kubernetes restarts the container; the new process is a follower until it wins.
        _fail(
            "stopped leading (the leader lease was lost); exiting so a restart starts clean",
            EXIT_FAILED,
        )
    click.echo("stratus: stopped", err=True)
