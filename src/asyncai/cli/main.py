"""Entry point of the ``asyncai`` command: parses options, dispatches, maps failures to exit codes.

Exit status: 0 success, 1 a run or snippet failed, 2 bad input or configuration (one line on stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable, Sequence

from ..code_mode import SandboxConfigError
from ..log import configure_logging
from ..tools import ConfigError, ServerStartError
from . import agent_command, run_code_command, tools_command
from .settings import Settings, UsageError, resolve

Command = Callable[[Settings], Awaitable[int]]
SUBCOMMANDS: dict[str, Command] = {"tools": tools_command.run, "run-code": run_code_command.run}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="asyncai",
        description="An agent whose model drives MCP tools by writing Python that runs in the Monty sandbox.",
    )
    agent_command.add_arguments(parser)
    subparsers = parser.add_subparsers(dest="command", metavar="{tools,run-code}")
    tools_command.add_parser(subparsers)
    run_code_command.add_parser(subparsers)
    return parser


async def _dispatch(settings: Settings) -> int:
    command = SUBCOMMANDS.get(settings.text("command") or "", agent_command.run)
    return await command(settings)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = resolve(args)
        configure_logging(settings.switch("verbose"))
        status = asyncio.run(_dispatch(settings))
    except (UsageError, ConfigError, ServerStartError, SandboxConfigError) as exc:
        print(f"asyncai: {exc}", file=sys.stderr)
        status = 2
    except KeyboardInterrupt:
        status = 130
    sys.stdout.flush()
    return status


if __name__ == "__main__":
    sys.exit(main())
