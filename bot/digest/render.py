"""The digest as a Block Kit message, and its chart's figures: pure functions of a `Digest`."""

from __future__ import annotations

from bot.charts import NamespaceFigures
from bot.commands.format import duration
from bot.digest.content import Digest, NamespaceDigest
from bot.render import text as t
from bot.render.blocks import Block, Message, context, divider, escape, fields, header, section


def digest_title(digest: Digest) -> str:
    period = f"{digest.start:%b %d %H:%M} to {digest.end:%b %d %H:%M} UTC"
    return f"Stratus digest — {digest.cluster}, {period}"


def digest_text(digest: Digest) -> str:
    """One line: the notification, and the fallback where blocks do not show."""
    return (
        f"{t.plural(digest.total('opened'), 'incident')} opened, "
        f"{digest.total('resolved')} resolved, "
        f"{digest.total('open_incidents')} open, {digest.total('pending_approvals')} waiting "
        "for approval"
    )


def _namespace_blocks(n: NamespaceDigest) -> list[Block]:
    health = (
        ":large_green_circle: nothing open"
        if n.healthy
        else f":red_circle: {t.plural(n.open_incidents, 'open incident')}, "
        f"worst μ {t.mu(n.worst_mu)}"
    )
    return [
        section(f"*{escape(n.namespace)}* — {health}"),
        fields(
            [
                (
                    "Incidents",
                    f"{n.opened} opened · {n.resolved} resolved · {n.escalated} escalated",
                ),
                ("Time to detect / mitigate", f"{duration(n.mttd_s)} / {duration(n.mttm_s)}"),
                (
                    "Transactions",
                    f"{n.committed} committed · {n.aborted} aborted · {n.undone} undone",
                ),
                ("Waiting for approval", str(n.pending_approvals)),
            ]
        ),
    ]


def render_digest(digest: Digest) -> Message:
    blocks: list[Block] = [
        header("Stratus digest"),
        context(f"`{escape(digest.cluster)}` · {t.when(digest.start)} → {t.when(digest.end)}"),
        section(digest_text(digest).capitalize() + "."),
        divider(),
    ]
    busy = [n for n in digest.namespaces if not n.quiet]
    quiet = [n.namespace for n in digest.namespaces if n.quiet]
    for namespace in busy[:20]:
        blocks.extend(_namespace_blocks(namespace))
    if len(busy) > 20:
        blocks.append(context(f"…and {len(busy) - 20} more namespaces with activity."))
    if quiet:
        names = ", ".join(f"`{escape(q)}`" for q in quiet)
        blocks.append(context(f":large_green_circle: Quiet, nothing open: {names}"))
    if not digest.namespaces:
        blocks.append(section("No namespace is covered yet."))
    return Message(text=f"Stratus digest: {digest_text(digest)}", blocks=tuple(blocks))


def digest_figures(digest: Digest) -> list[NamespaceFigures]:
    """What the chart draws, per namespace that had incidents in the period."""
    return [
        NamespaceFigures(
            namespace=n.namespace,
            opened=n.opened,
            resolved=n.resolved,
            mttd_s=n.mttd_s,
            mttm_s=n.mttm_s,
        )
        for n in digest.namespaces
        if n.opened or n.resolved
    ]
