"""The agent: ``asyncai -p PROMPT``, interactive chat, and the ``--jsonl`` line channel."""

from __future__ import annotations

import argparse

from .settings import Settings, UsageError, add_code_options, add_mcp_options, add_model_options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-p", "--prompt", help="one-shot: answer PROMPT, print the reply, exit")
    parser.add_argument("--jsonl", action="store_true", default=None, help="line channel on stdin/stdout")
    add_model_options(parser)
    add_mcp_options(parser)
    add_code_options(parser)


async def run(settings: Settings) -> int:
    raise UsageError("the agent is not wired yet")
