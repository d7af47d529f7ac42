"""Entry point of the ``asyncai`` command: parses options, dispatches, maps failures to exit codes.

Exit status: 0 success, 1 a run or snippet failed, 2 bad input or configuration (one line on stderr),
128 + the signal number when a signal ended it (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import NoReturn

from asyncai.cli import (
    agent_command,
    mcp_command,
    run_code_command,
    serve_command,
    sessions_command,
    skills_command,
    terminal,
    tools_command,
)
from asyncai.cli.parsing import (
    MergingSubParsers,
    Parser,
    check_argv,
    known_keys,
    subcommands,
    suppress_defaults,
)
from asyncai.cli.settings import Settings, UsageError, resolve
from asyncai.version import __version__
from asyncai.wording import use_flags

Command = Callable[[Settings], Awaitable[int]]
SUBCOMMANDS: dict[str, Command] = {
    "tools": tools_command.run,
    "run-code": run_code_command.run,
    "sessions": sessions_command.run,
    "skills": skills_command.run,
    "serve-mcp": serve_command.run,
    "mcp": mcp_command.run,
}


def build_parser() -> argparse.ArgumentParser:
    # Typed as the base class for the subcommand modules; subparsers are ``Parser``s at run time.
    parser: argparse.ArgumentParser = Parser(
        prog="asyncai",
        description="An agent whose model drives MCP tools by writing Python that runs in the Monty sandbox.",
    )
    parser.add_argument("--version", action="version", version=f"asyncai {__version__}")
    agent_command.add_arguments(parser)
    subparsers = parser.add_subparsers(
        dest="command", metavar="{tools,run-code,sessions,skills,serve-mcp,mcp}", action=MergingSubParsers
    )
    tools_command.add_parser(subparsers)
    run_code_command.add_parser(subparsers)
    sessions_command.add_parser(subparsers)
    skills_command.add_parser(subparsers)
    serve_command.add_parser(subparsers)
    mcp_command.add_parser(subparsers)
    for subparser in subcommands(parser).values():
        suppress_defaults(subparser)  # options given before the subcommand stay
    return parser


def parse_settings(argv: Sequence[str]) -> Settings:
    """argv, the environment and the config file as settings; bad input is a ``UsageError``."""
    parser = build_parser()
    notes = check_argv(parser, argv)
    settings = resolve(parser.parse_args(argv), known_keys(parser))
    if notes.file_hint is not None:
        settings.hints["file"] = notes.file_hint
    return settings


async def _dispatch(settings: Settings) -> int:
    command = SUBCOMMANDS.get(settings.text("command") or "", agent_command.run)
    return await command(settings)


FLAGS = {
    "mutations": "--mutations",
    "kind": "--code-sandbox",
    "monty_url": "--monty-url",
    "max_state": "--code-max-state",
    "location": "--state-store",
    "command_line": "--mcp-stdio command",
    "url": "--mcp-http URL",
    "sampling": "--sampling",
    "elicitation": "--elicitation",
    "request_timeout": "--request-timeout",
    "max_tokens": "--max-tokens",
}
"""How messages from the library name its settings on the command line."""


def main(argv: Sequence[str] | None = None) -> int:
    use_flags(FLAGS)
    try:
        with terminal.preserved(sys.stdin):
            settings = parse_settings(sys.argv[1:] if argv is None else argv)
            from asyncai.log import configure_logging  # what a command needs: once one runs
            from asyncai.telemetry.export import start_export

            configure_logging(settings.switch("verbose"))
            export = start_export(settings.text("otlp"), os.environ)
            from asyncai.cli import shutdown  # asyncio: only once a command runs

            try:
                status = shutdown.run(_dispatch(settings))
            finally:
                if export is not None:
                    export.shutdown()
    except Exception as exc:
        if not isinstance(exc, _bad_input()):
            raise
        print(f"asyncai: {exc}", file=sys.stderr)
        status = 2
    except KeyboardInterrupt:  # before the event loop runs
        status = 130
    if status > 128:
        terminal.end_line()
    sys.stdout.flush()
    return status


def _bad_input() -> tuple[type[Exception], ...]:
    """The errors that are the user's input (exit status 2), imported only once one was raised:
    their modules are not loaded by a command that never reaches them (``asyncai --help``)."""
    from asyncai.code_mode import SandboxConfigError
    from asyncai.telemetry.export import TracingUnavailable
    from asyncai.tools import ConfigError, ServerStartError

    return (UsageError, ConfigError, ServerStartError, SandboxConfigError, TracingUnavailable)


def run() -> NoReturn:
    """The console script: ``main``, then exit without tearing the interpreter down. Every server,
    worker and file asyncai opened is closed by then; what is left is freeing the imported modules,
    which the operating system does faster (about a tenth of a second of ``run-code``'s start-up)."""
    status = main()
    import logging  # loaded by any command that ran; not by --help, which exits in main

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)


if __name__ == "__main__":
    run()
