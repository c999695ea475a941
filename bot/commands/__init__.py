"""The `/stratus` slash command (DESIGN section 7): parse → run after the ack → render → reply.

    register_commands(app, services)        # services: bot.services.Services

`parse` is pure (text → command), `run` talks to the agents and storage (command → `Reply`),
`render` is pure (values → `Message`), `undo` takes the Undo button's path (modal +
`IncidentOps.undo`), `listener` is the thin Bolt layer.
"""

from bot.commands.context import CommandContext
from bot.commands.listener import COMMAND, register_commands
from bot.commands.parse import Command, Usage, Verb, parse_command
from bot.commands.run import CommandRunner, Invocation, Reply

__all__ = [
    "COMMAND",
    "Command",
    "CommandContext",
    "CommandRunner",
    "Invocation",
    "Reply",
    "Usage",
    "Verb",
    "parse_command",
    "register_commands",
]
