"""`stratus doctor`: check the installation — Slack token and scopes, Kubernetes permissions,
the webhook's credentials, Prometheus and the golden signals its signal profile can read, the
database's migrations — and say how to fix what is
wrong.

Exit 0 when nothing is a problem, 1 when something is (with `--strict`, also when a check
could not be made), 2 for an invalid setting. It reads the same settings as the bot, so run it
with the bot's environment (in the pod: `kubectl exec deploy/stratus -- stratus doctor`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from bot.cli.common import settings_errors_exit_2
from bot.config import Settings, SlackMode, load_settings

if TYPE_CHECKING:
    from bot.doctor import Check

EXIT_PROBLEM = 1


def _namespaces(settings: Settings) -> tuple[str, ...]:
    if settings.kubernetes.namespaces:
        return settings.kubernetes.namespaces
    if settings.policy_file is not None:
        from agents.errors import PolicyError
        from agents.policy import load_policy

        try:
            return load_policy(settings.policy_file).covered_namespaces
        except PolicyError:
            return ()  # the bot itself refuses to start on it; doctor checks cluster-wide
    return ()


def run_checks(settings: Settings) -> list[Check]:
    """Every check, in the order they are printed. (Imports inside: `stratus --help` stays
    fast.)"""
    from slack_sdk import WebClient

    from agents.errors import ClusterError
    from bot.doctor import (
        Check,
        CheckStatus,
        SelfSubjectAccessReviews,
        check_database,
        check_kubernetes,
        check_policy,
        check_prometheus,
        check_slack,
        check_webhook,
    )
    from bot.services import connect_cluster
    from storage.migrations import current, head

    checks: list[Check] = []
    slack = settings.slack
    if slack.bot_token:
        client = WebClient(base_url=slack.api_url, token=slack.bot_token, timeout=10)
        app_token = (slack.app_token or "") if slack.mode is SlackMode.SOCKET else None
        checks += check_slack(client, app_token=app_token)
    else:
        checks.append(
            Check(
                name="slack token",
                verdict=CheckStatus.PROBLEM,
                detail="SLACK_BOT_TOKEN is not set",
                fix="set it from the Secret (see manifests/kustomize/base/secret.yaml)",
            )
        )

    namespaces = _namespaces(settings)
    cluster = None
    try:
        cluster = connect_cluster(settings.kubernetes)
        where = ", ".join(namespaces) if namespaces else "cluster-wide (no namespaces configured)"
        checks.append(
            Check(name="kubernetes", verdict=CheckStatus.OK, detail=f"configured; checking {where}")
        )
    except ClusterError as e:
        checks.append(
            Check(
                name="kubernetes",
                verdict=CheckStatus.PROBLEM,
                detail=str(e),
                fix="set KUBECONFIG (and STRATUS_KUBE_CONTEXT), or run in the cluster with "
                "the stratus ServiceAccount",
            )
        )
    try:
        reviewer = SelfSubjectAccessReviews(cluster) if cluster is not None else None
        lease = settings.leader.namespace if settings.leader is not None else None
        checks += check_kubernetes(reviewer, namespaces, lease_namespace=lease)
    finally:
        if cluster is not None:
            cluster.close()

    checks.append(check_webhook(settings.webhook))
    checks.append(check_policy(settings.policy_file))
    prometheus = check_prometheus(settings.prometheus.url)
    checks.append(prometheus)
    if prometheus.verdict is CheckStatus.OK:
        checks += _signal_checks(settings, namespaces)
    checks.append(check_database(settings.database.url, current=current, head=head))
    return checks


def _signal_checks(settings: Settings, namespaces: Sequence[str]) -> list[Check]:
    from agents.adapters.prometheus_metrics import PrometheusMetrics
    from bot.config import SettingsError
    from bot.doctor import SIGNAL_FIX, Check, CheckStatus, check_signals
    from bot.services import signal_profile

    url = settings.prometheus.url
    assert url is not None  # checked by check_prometheus
    try:
        profile = signal_profile(settings)
    except SettingsError as e:
        return [
            Check(name="signal profile", verdict=CheckStatus.PROBLEM, detail=str(e), fix=SIGNAL_FIX)
        ]
    metrics = PrometheusMetrics(url, profile=profile, deadline=settings.prometheus.deadline)
    try:
        return check_signals(metrics, namespaces)
    finally:
        metrics.close()


@click.command("doctor")
@click.option(
    "--strict", is_flag=True, help="Also fail when a check could not be made ('?' lines)."
)
@settings_errors_exit_2
def doctor(strict: bool) -> None:
    """Check the Slack token and scopes, Kubernetes permissions, Prometheus and the database."""
    from bot.doctor import Report

    report = Report(checks=tuple(run_checks(load_settings())))
    for line in report.lines():
        click.echo(line)
    if report.failed(strict=strict):
        click.echo("stratus doctor: problems found (see the fix lines above)", err=True)
        sys.exit(EXIT_PROBLEM)
    click.echo("stratus doctor: no problem found")
