"""The `/stratus` listener: acknowledge, run after the ack, answer through the response URL.

Slack gives an app 3 seconds to acknowledge. The acknowledgement carries only what needs no
I/O (help, a usage message, a "working…" note); everything else runs after it on the
listener's own threads — not Bolt's, which must stay free to acknowledge the next requests
(measured in `benchmarks/ack_latency.py`) — and answers through `respond`: replacing the note
when the answer is for the person alone, as a new channel message when it is a report for
everyone. `undo` opens the Undo button's modal at once (a trigger id lives 3 seconds) and
hands the undo to the incident operations. A failure after the ack is logged with its
traceback and answered with one sentence, never a stack trace.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, TypedDict

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.commands.context import CommandContext
from bot.commands.parse import Command, Help, Undo, Usage, parse_command
from bot.commands.render import render_error
from bot.commands.run import CommandRunner, Invocation, Reply, immediate
from bot.commands.undo import undo_in_modal
from bot.errors import user_message

if TYPE_CHECKING:
    from bot.commands.context import DetectionHook
    from bot.digest.post import DigestPoster
    from bot.services import Services

logger = logging.getLogger(__name__)

COMMAND = "/stratus"
#: Threads that run commands after their ack (a diagnosis holds one for a few seconds).
COMMAND_THREADS = 4


class RawSlashCommand(TypedDict, total=False):
    command: str
    text: str
    user_id: str
    channel_id: str
    channel_name: str
    response_url: str
    trigger_id: str


def invocation_of(payload: RawSlashCommand) -> Invocation:
    return Invocation(
        user_id=payload.get("user_id", ""),
        channel_id=payload.get("channel_id", ""),
        channel_name=payload.get("channel_name", ""),
    )


def send(respond: Respond, reply: Reply, *, replace: bool) -> None:
    """Post `reply` through the response URL; `replace` swaps out the "working…" note."""
    text, blocks = reply.message.payload()
    if reply.in_channel:
        respond(text=text, blocks=blocks, response_type="in_channel")
        return
    answer = respond(text=text, blocks=blocks, replace_original=replace or None)
    if replace and answer.status_code != 200:
        # The note could not be replaced (expired, removed): say it in a new message instead.
        respond(text=text, blocks=blocks)


def upload_chart(client: WebClient, channel_id: str, reply: Reply) -> None:
    if reply.chart is None:
        return
    try:
        client.files_upload_v2(
            channel=channel_id,
            file=reply.chart.png,
            filename=reply.chart.filename,
            title=reply.chart.title,
        )
    except SlackApiError as e:
        # Most often the bot is not in the channel; the diagnosis itself is already posted.
        logger.warning("chart not uploaded to %s: %s", channel_id, e.response.get("error"))


class CommandListener:
    def __init__(self, ctx: CommandContext, runner: CommandRunner) -> None:
        self._ctx = ctx
        self._runner = runner
        self._executor = ThreadPoolExecutor(
            max_workers=COMMAND_THREADS, thread_name_prefix="stratus-command"
        )

    def on_command(
        self, ack: Ack, command: RawSlashCommand, respond: Respond, client: WebClient
    ) -> None:
        parsed = parse_command(command.get("text", ""))
        first = immediate(parsed)
        if first is None:
            ack()
        else:
            text, blocks = first.message.payload()
            ack(text=text, blocks=blocks)
        if isinstance(parsed, Usage | Help):
            return  # the acknowledgement was the whole answer
        if isinstance(parsed, Undo):
            self._undo(parsed, command, respond)
            return
        self._executor.submit(self._answer, parsed, command, respond, client, first is not None)

    def _undo(self, parsed: Undo, command: RawSlashCommand, respond: Respond) -> None:
        try:
            undo_in_modal(
                self._ctx,
                trigger_id=command.get("trigger_id", ""),
                transaction_id=parsed.transaction_id,
                user=command.get("user_id", ""),
                channel=command.get("channel_id", ""),
            )
        except Exception as e:  # the Slack boundary: log the traceback, answer in one sentence
            logger.exception("/stratus %s failed", command.get("text", ""))
            send(respond, Reply(message=render_error(_sentence(e))), replace=False)

    def _answer(
        self,
        parsed: Command,
        command: RawSlashCommand,
        respond: Respond,
        client: WebClient,
        replace: bool,
    ) -> None:
        invocation = invocation_of(command)
        try:
            reply = self._run(parsed, invocation)
            send(respond, reply, replace=replace)
            upload_chart(client, invocation.channel_id, reply)
        except Exception as e:  # the worker boundary: log the traceback, answer in one sentence
            logger.exception("/stratus %s failed", command.get("text", ""))
            send(respond, Reply(message=render_error(_sentence(e))), replace=replace)

    def _run(self, parsed: Command, invocation: Invocation) -> Reply:
        try:
            return self._runner.run(parsed, invocation)
        except SlackApiError as e:
            error = str(e.response.get("error", "slack_error"))
            logger.warning("/stratus %s: Slack refused: %s", parsed, error)
            if error in ("not_in_channel", "channel_not_found"):
                message = "Stratus is not in this channel: invite it (`/invite @stratus`) first."
            else:
                message = f"Slack refused the request ({error})."
            return Reply(message=render_error(message))


def _sentence(error: BaseException) -> str:
    return user_message(error).removeprefix(":warning: ")


def register_commands(
    app: App,
    services: Services,
    *,
    after_detection: DetectionHook | None = None,
    digest_poster: DigestPoster | None = None,
) -> None:
    """Register `/stratus` on `app`.

    `after_detection` gets what `/stratus declare` detected (default:
    `services.incidents.after_detection`, which announces and drives it); `digest_poster`
    posts `/stratus digest` (default: one on `app.client`)."""
    # Imported here: the digest renders with this package's helpers (an import cycle otherwise).
    from bot.digest.post import DigestPoster

    ctx = CommandContext.of(services)
    poster = digest_poster or DigestPoster(
        client=app.client,
        store=ctx.brain.store,
        cluster=ctx.brain.cluster,
        namespaces=ctx.namespaces,
        clock=ctx.brain.clock,
    )
    runner = CommandRunner(
        ctx,
        post_digest=poster.post,
        after_detection=after_detection or services.incidents.after_detection,
    )
    app.command(COMMAND)(CommandListener(ctx, runner).on_command)
