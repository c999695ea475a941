"""Run the local Slack workspace on its own, to look at the page or point a bot at it by hand:

    python -m lab.slack [--port 3333] [--config workspace.yaml]

`stratus demo` starts the workspace together with the bot; this is for poking at it alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import threading
from pathlib import Path

from lab.slack.config import WorkspaceConfig
from lab.slack.workspace import SlackWorkspace

logger = logging.getLogger("lab.slack")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.slack", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free one)")
    parser.add_argument("--config", type=Path, help="a YAML file of WorkspaceConfig fields")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    config = WorkspaceConfig.from_yaml(args.config) if args.config else WorkspaceConfig()
    with SlackWorkspace(dataclasses.replace(config, port=args.port)) as ws:
        logger.info("Local Slack workspace: %s  (Web API: %s)", ws.url, ws.api_url)
        logger.info("Tokens and the signing secret are the config's (see WorkspaceConfig).")
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            logger.info("stopping")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
