"""The command-line reference of the documentation site, written from the argument parser itself
(``docs/hooks.py`` renders it at build time), so the page cannot drift from what the CLI takes."""

from __future__ import annotations

import argparse

from asyncai.cli.parsing import known_keys, subcommands
from asyncai.cli.settings import COMMAND_LINE_ONLY, DEFAULT_CONFIG

ENVIRONMENT = {
    "OPENAI_BASE_URL": "the model server's OpenAI-compatible API root (`--base-url`)",
    "OPENAI_API_KEY": "the model server's API key (`--api-key`); never passed to MCP servers",
    "ASYNCAI_MODEL": "the model's name (`--model`)",
    "ASYNCAI_MCP_TOKEN": "a bearer token `serve-mcp --http` accepts, beside `--token-file`'s",
    "ASYNCAI_KUBECTL": "the bundled kcp servers' kubectl (else `kubectl` on `PATH`)",
    "ASYNCAI_KCP_KUBECONFIGS": "the bundled kcp servers' kubeconfigs, `:`-separated",
    "XDG_STATE_HOME": "where REPL state (`scopes/`), sign-in tokens (`oauth/`) and the chat's history "
    "are kept, under `asyncai/` (else `~/.local/state`)",
    "XDG_DATA_HOME": "where the skills the agent saves go: `asyncai/skills` (else `~/.local/share`)",
    "CLAUDE_CONFIG_DIR": "Claude Code's directory, where sessions are kept and skills read "
    "(else `~/.claude`)",
    "BROWSER": "the browser a sign-in opens (Python's `webbrowser`); set, it also lets a "
    "non-interactive run sign in",
    "OTEL_EXPORTER_OTLP_ENDPOINT": "send traces over OTLP/HTTP here (as `--otlp`)",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "the traces endpoint itself",
    "OTEL_EXPORTER_OTLP_TIMEOUT": "the exporter's timeout",
    "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "the traces exporter's timeout",
    "OTEL_SERVICE_NAME": "the traces' `service.name` (else `asyncai`)",
    "OTEL_RESOURCE_ATTRIBUTES": "more resource attributes of the traces",
}
"""Every environment variable asyncai reads, and what for (a test keeps it complete)."""


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    text = parser._get_formatter()._expand_help(action) if action.help else ""
    return " ".join(text.split()).replace("|", "\\|").replace("`", "\\`")


def _spelling(action: argparse.Action) -> str:
    names = ", ".join(f"`{name}`" for name in action.option_strings) or f"`{action.metavar or action.dest}`"
    if action.option_strings and action.nargs != 0:
        choices = "{" + ",".join(map(str, action.choices)) + "}" if action.choices else None
        metavar = action.metavar or choices or action.dest.upper()
        names += f" `{metavar if isinstance(metavar, str) else ' '.join(metavar)}`"
    return names


def _command(name: str, parser: argparse.ArgumentParser, level: str) -> list[str]:
    usage = " ".join(parser.format_usage().split()).removeprefix("usage: ")
    lines = [f"{level} `{name}`", "", parser.description or "", "", "```text", usage, "```", ""]
    rows = [
        f"| {_spelling(action)} | {_help(parser, action)} |"
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction) and action.help != argparse.SUPPRESS
    ]
    if rows:
        lines += ["| option | what it does |", "|---|---|", *rows, ""]
    return lines


def cli_reference(parser: argparse.ArgumentParser) -> str:
    """Markdown: every command and option ``parser`` (``build_parser()``) takes, and the keys a
    config file and the environment may set."""
    lines = [
        "# Command line",
        "",
        "Every command and option, written from the argument parser when the site is built. "
        "Options given before a subcommand apply to it too.",
        "",
        *_command("asyncai", parser, "##"),
    ]
    for name, subparser in subcommands(parser).items():
        lines += _command(f"asyncai {name}", subparser, "##")
        for inner, nested in subcommands(subparser).items():
            lines += _command(f"asyncai {name} {inner}", nested, "###")
    keys = sorted(key for key in known_keys(parser) if key not in COMMAND_LINE_ONLY and key != "config")
    lines += [
        "## Config file and environment",
        "",
        f"Flags win over the environment, and the environment over the config file, `{DEFAULT_CONFIG}` "
        "unless `--config` names another (TOML; a key is an option's name, `code-timeout` or "
        "`code_timeout`; an unknown key is a warning). `~` is expanded in paths. The options that "
        f"choose what one run does ({', '.join(sorted({f'`{o}`' for o in COMMAND_LINE_ONLY.values()}))}) "
        "are for the command line only.",
        "",
        "| environment variable | what it sets |",
        "|---|---|",
        *(f"| `{name}` | {what} |" for name, what in ENVIRONMENT.items()),
        "",
        "Config file keys: " + ", ".join(f"`{key.replace('_', '-')}`" for key in keys) + ".",
        "",
    ]
    return "\n".join(lines)
