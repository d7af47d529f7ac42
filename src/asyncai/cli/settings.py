"""Command-line options shared by every subcommand, resolved flags > environment > config file."""

from __future__ import annotations

import argparse
import ast
import difflib
import math
import os
import sys
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from asyncai.approvals import MUTATION_POLICIES, MutationPolicy
from asyncai.backend.config import PROTOCOLS
from asyncai.code_mode.sandbox.config import SANDBOX_KINDS, SandboxKind
from asyncai.tools.mcp.asking import ELICITATION_POLICIES, SAMPLING_POLICIES

if TYPE_CHECKING:
    from asyncai.code_mode import CodeModeLimits, SandboxConfig
    from asyncai.skills.skillset import SkillSet
    from asyncai.tools import ServerSpec
    from asyncai.tools.mcp.asking import Person
    from asyncai.tools.mcp.oauth import SignInMode
    from asyncai.tools.mcp.server_requests import ServerRequests

DEFAULT_CONFIG = Path("~/.config/asyncai/config.toml")
PATH_KEYS = ("config", "mcp_config", "code_preamble", "system_file", "file")
"""Options naming files: ``~`` is expanded in them, from flags and from the config file alike."""


class UsageError(Exception):
    """Bad input from the user; printed as one line, exit status 2."""


DEFAULT_STATE_TTL = 24 * 3600.0
"""How long saved REPL state lasts after its last use (``--state-ttl``)."""


def add_session_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("sessions (Claude Code transcripts)")
    choice = group.add_mutually_exclusive_group()
    choice.add_argument("--resume", metavar="UUID", help="continue session UUID: the model gets its history")
    choice.add_argument(
        "-c",
        "--continue",
        dest="continue_session",
        action="store_true",
        default=None,
        help="continue the newest session of this directory",
    )
    choice.add_argument("--session-id", metavar="UUID", help="record the new session under this id")
    group.add_argument("--no-session", action="store_true", default=None, help="do not record this session")
    group.add_argument(
        "--state-store",
        metavar="DIR|URL",
        help="where recorded sessions keep their REPL state: a directory, or redis://HOST:PORT/DB "
        "(default $XDG_STATE_HOME/asyncai/scopes)",
    )
    group.add_argument(
        "--state-ttl", type=float, metavar="SECONDS", help="saved REPL state expires this long after (86400)"
    )
    group.add_argument(
        "--code-max-state", metavar="SIZE", help="largest REPL state saved for a resumed session (256MiB)"
    )


def add_mcp_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("MCP servers")
    group.add_argument(
        "--mcp-stdio", action="append", metavar="COMMAND", help="stdio MCP server command (repeatable)"
    )
    group.add_argument(
        "--mcp-http", action="append", metavar="URL", help="Streamable HTTP MCP server URL (repeatable)"
    )
    group.add_argument(
        "--mcp-config", action="append", metavar="FILE", help='Claude-style {"mcpServers": ...} file'
    )
    group.add_argument("--tool-timeout", type=float, metavar="SECONDS", help="per tool call (default 120)")
    group.add_argument(
        "--no-browser",
        dest="browser",
        action="store_false",
        default=None,
        help="to sign in to a server, print the URL instead of opening a browser",
    )
    group.add_argument(
        "--elicitation",
        choices=ELICITATION_POLICIES,
        help="a server asking for input: ask (the chat's default), accept-defaults, decline (elsewhere)",
    )
    group.add_argument(
        "--sampling",
        choices=SAMPLING_POLICIES,
        help="a server asking the model: allow, ask (the chat's default), deny (elsewhere)",
    )
    group.add_argument(
        "--root",
        action="append",
        metavar="DIR",
        help="directory offered to servers as a root (repeatable; default: none, so servers keep their own)",
    )
    parser.add_argument("--config", metavar="FILE", help=f"settings file (default {DEFAULT_CONFIG})")
    parser.add_argument(
        "-v", "--verbose", action="store_true", default=None, help="NDJSON debug log on stderr"
    )


def add_code_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("code mode")
    group.add_argument(
        "--skills",
        action="append",
        metavar="DIR",
        help="a directory of skills (repeatable; .claude/skills here and in ~/.claude are read too)",
    )
    group.add_argument(
        "--code-sandbox", choices=SANDBOX_KINDS, help="where snippets run (default auto = pool)"
    )
    group.add_argument(
        "--monty-url", metavar="URL", help="ws:// URL of remote monty workers (sandbox remote)"
    )
    group.add_argument(
        "--code-timeout", type=float, metavar="SECONDS", help="execution time per snippet (30)"
    )
    group.add_argument(
        "--code-wall-timeout", type=float, metavar="SECONDS", help="wall clock per run_code (300)"
    )
    group.add_argument("--code-max-calls", type=int, metavar="N", help="nested tool calls per snippet (100)")
    group.add_argument(
        "--code-max-workers",
        type=int,
        metavar="N",
        help="sandbox worker processes at once; idle REPLs beyond are parked and restored (8)",
    )
    group.add_argument(
        "--code-max-result", type=int, metavar="CHARS", help="chars run_code may return (20000)"
    )
    group.add_argument("--code-max-memory", metavar="SIZE", help="heap cap per worker, e.g. 256MiB (4GiB)")
    group.add_argument(
        "--code-preamble", metavar="PATH", help="Python run in every new REPL after the helpers"
    )
    group.add_argument(
        "--catalog-budget",
        type=int,
        metavar="CHARS",
        help="run_code description size; under it, fewer rules and an index (16000; serve-mcp: 2048, "
        "what Claude Code shows)",
    )
    group.add_argument(
        "--mutations",
        choices=MUTATION_POLICIES,
        help="nested calls to tools that may change the world: allow, ask (the chat's default), deny",
    )
    group.add_argument(
        "--no-type-check",
        dest="type_check",
        action="store_false",
        default=None,
        help="run snippets without checking their tool calls against the stubs first",
    )
    add_trace_options(parser)


def add_trace_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("traces (OpenTelemetry, the otel extra)")
    group.add_argument(
        "--otlp",
        metavar="URL",
        help="send traces over OTLP/HTTP to this collector, e.g. http://localhost:4318 "
        "(default: env OTEL_EXPORTER_OTLP_ENDPOINT; none)",
    )
    group.add_argument(
        "--trace-content",
        action="store_true",
        default=None,
        help="put snippet code and tool-call arguments in the spans (they can hold secrets; results never)",
    )


def add_model_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("model")
    group.add_argument("--base-url", help="OpenAI-compatible endpoint (env OPENAI_BASE_URL)")
    group.add_argument("--api-key", help="API key (env OPENAI_API_KEY; optional for local servers)")
    group.add_argument("--model", help="model name (env ASYNCAI_MODEL)")
    group.add_argument("--max-rounds", type=int, metavar="N", help="model rounds per run (8)")
    group.add_argument(
        "--temperature", type=float, metavar="T", help="sampling temperature (0.2, as make eval runs)"
    )
    group.add_argument(
        "--max-tokens", type=int, metavar="N", help="tokens per model reply (512, as make eval runs)"
    )
    group.add_argument(
        "--request-timeout",
        type=float,
        metavar="SECONDS",
        help="wait for one model reply at most this long (300)",
    )
    group.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        help="how the model sends code: tools (run_code calls, the default) or text (a ```python "
        "block in its reply, for models that call tools badly)",
    )
    group.add_argument("--system", help="system prompt text")
    group.add_argument("--system-file", metavar="PATH", help="system prompt file")
    group.add_argument(
        "--stream",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="SSE streaming responses (on in the chat on a terminal, off elsewhere)",
    )
    group.add_argument(
        "--speculate",
        action="append",
        metavar="TOOL",
        help="also start TOOL's calls with literal arguments early though it is not marked read-only",
    )
    group.add_argument(
        "--no-speculate",
        action="store_true",
        default=None,
        help="start no call before the snippet reaches it (read-only ones do by default)",
    )
    group.add_argument(
        "--eager",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run a streamed snippet's statements that change nothing while the rest arrives (on)",
    )


ENV_NAMES = {"base_url": "OPENAI_BASE_URL", "api_key": "OPENAI_API_KEY", "model": "ASYNCAI_MODEL"}


def _option(key: str) -> str:
    return "--" + key.replace("_", "-")


@dataclass
class Settings:
    """Every option after resolution, keyed by the option's dest name (``code_timeout``).

    Values from the config file can have any TOML type: the typed getters turn a wrong one into a
    ``UsageError``.
    """

    values: dict[str, Any] = field(default_factory=dict)
    flags: set[str] = field(default_factory=set)
    """The keys given on the command line (they won over the environment and the config file)."""
    hints: dict[str, str] = field(default_factory=dict)
    """Extra words for an error about an option, by dest (see ``parsing.ArgvNotes``)."""

    def get(self, key: str, default: Any = None) -> Any:
        value = self.values.get(key)
        return default if value is None else value

    def text(self, key: str, default: str | None = None) -> str | None:
        value = self.get(key, default)
        if value is not None and not isinstance(value, str):
            raise UsageError(f"{_option(key)} must be a string, not {value!r}")
        return value

    def texts(self, key: str) -> list[str]:
        """A repeatable option: a string or a list of strings."""
        value = self.get(key)
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{_option(key)} must be a string or a list of strings, not {value!r}")
        return value

    def switch(self, key: str, default: bool = False) -> bool:
        value = self.get(key, default)
        if not isinstance(value, bool):
            raise UsageError(f"{_option(key)} must be true or false, not {value!r}")
        return value

    def number(self, key: str, default: float) -> float:
        """A positive finite number (seconds)."""
        value = self.get(key, default)
        try:
            number = float(value) if isinstance(value, int | float | str) else math.nan
        except ValueError:
            number = math.nan
        if isinstance(value, bool) or not math.isfinite(number) or number <= 0:
            raise UsageError(f"{_option(key)} must be a positive number, not {value!r}")
        return number

    def optional_number(self, key: str, *, allow_zero: bool = False) -> float | None:
        """A finite number above zero (or from zero), or ``None`` when not set."""
        value = self.get(key)
        if value is None:
            return None
        try:
            number = float(value) if isinstance(value, int | float | str) else math.nan
        except ValueError:
            number = math.nan
        low = number >= 0 if allow_zero else number > 0
        if isinstance(value, bool) or not math.isfinite(number) or not low:
            what = "a number, 0 or more" if allow_zero else "a positive number"
            raise UsageError(f"{_option(key)} must be {what}, not {value!r}")
        return number

    def count(self, key: str, default: int) -> int:
        """A positive integer."""
        value = self.get(key, default)
        try:
            number = int(value) if isinstance(value, int | str) else 0
        except ValueError:
            number = 0
        if isinstance(value, bool) or number <= 0:
            raise UsageError(f"{_option(key)} must be a positive integer, not {value!r}")
        return number


def read_text_file(path: str, what: str) -> str:
    """A UTF-8 file the user named; unreadable or not UTF-8 is a one-line ``UsageError``."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"cannot read {what} {path}: not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None


def _read_config(path: Path, explicit: bool) -> dict[str, Any]:
    """The config file's table as written (keys not normalised); ``{}`` when the default is missing."""
    if not path.exists():
        if explicit:
            raise UsageError(f"config file {path} does not exist")
        return {}
    import tomllib  # only when there is a file to read

    try:
        return tomllib.loads(read_text_file(str(path), "config file"))
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"cannot read config file {path}: {exc}") from None


COMMAND_LINE_ONLY = {
    "resume": "--resume",
    "continue": "--continue",
    "continue_session": "--continue",
    "session_id": "--session-id",
}
"""Options that choose what one run does: a config file setting them would apply to every run."""


def _known_values(data: dict[str, Any], known: Collection[str], path: Path) -> dict[str, Any]:
    """The keys that name an option (``code-timeout`` or ``code_timeout``); each other key is a
    one-line warning on stderr, and is left out."""
    values: dict[str, Any] = {}
    for key, value in data.items():
        name = key.replace("-", "_")
        if name in COMMAND_LINE_ONLY:
            where = f"config file {path}"
            print(
                f"asyncai: warning: {where}: {COMMAND_LINE_ONLY[name]} can only be given on the command line",
                file=sys.stderr,
            )
            continue
        if name in known:
            values[name] = value
            continue
        close = difflib.get_close_matches(name, sorted(known), n=1)
        suggestion = f" (did you mean {close[0]!r}?)" if close else ""
        print(f"asyncai: warning: config file {path}: unknown key {key!r}{suggestion}", file=sys.stderr)
    return values


def _expand_user(value: Any) -> Any:
    if isinstance(value, str):
        return os.path.expanduser(value)
    if isinstance(value, list):
        return [os.path.expanduser(item) if isinstance(item, str) else item for item in value]
    return value  # a wrong type: the typed getters say so


def resolve(args: argparse.Namespace, known: Collection[str]) -> Settings:
    """Flags win over the environment, the environment over the config file.

    ``known`` are the option dests a config file may set; ``~`` is expanded in ``PATH_KEYS``.
    """
    explicit = getattr(args, "config", None)
    path = Path(explicit if isinstance(explicit, str) else DEFAULT_CONFIG).expanduser()
    values = _known_values(_read_config(path, explicit is not None), known, path)
    for key, env in ENV_NAMES.items():
        if os.environ.get(env):
            values[key] = os.environ[env]
    flags = {key for key, value in vars(args).items() if value is not None}
    values.update({key: getattr(args, key) for key in flags})
    for key in PATH_KEYS:
        if key in values:
            values[key] = _expand_user(values[key])
    return Settings(values, flags)


def server_specs(settings: Settings) -> list[ServerSpec]:
    from asyncai.tools import http_spec, specs_from_config, stdio_spec  # once a command runs

    specs: list[ServerSpec] = [stdio_spec(command) for command in settings.texts("mcp_stdio")]
    specs += [http_spec(url) for url in settings.texts("mcp_http")]
    for path in settings.texts("mcp_config"):
        specs += specs_from_config(path)
    return specs


def sign_in_mode(settings: Settings, interactive: bool) -> SignInMode:
    """How a server that asks for sign-in gets it: in the browser (``BROWSER`` chooses) when someone
    can answer, the URL printed with ``--no-browser``, else not at all (the server is reported as
    needing ``asyncai mcp login``)."""
    if not interactive:
        return "never"
    return "browser" if settings.switch("browser", True) else "print"


def server_requests(settings: Settings, person: Person | None = None) -> ServerRequests:
    """How servers' questions are answered: asked of ``person`` by default when there is one (the
    chat), declined where nobody can answer; roots only those the user named (``--root`` or the
    ``root`` config key), else none."""
    from asyncai.tools.mcp.server_requests import ServerRequests

    ask = person is not None
    elicitation = settings.text("elicitation") or ("ask" if ask else "decline")
    sampling = settings.text("sampling") or ("ask" if ask else "deny")
    if elicitation not in ELICITATION_POLICIES:
        raise UsageError(
            f"--elicitation must be one of {', '.join(ELICITATION_POLICIES)}, not {elicitation!r}"
        )
    if sampling not in SAMPLING_POLICIES:
        raise UsageError(f"--sampling must be one of {', '.join(SAMPLING_POLICIES)}, not {sampling!r}")
    # No default root: a server such as mcp-server-filesystem swaps its own directories for ours.
    roots = [Path(directory).expanduser() for directory in settings.texts("root")]
    for root in roots:
        if not root.is_dir():
            raise UsageError(f"--root {root}: not a directory")
    return ServerRequests(
        elicitation=elicitation,
        sampling=sampling,
        person=person,
        roots=tuple(roots),
    )


def skill_directories(settings: Settings) -> list[Path]:
    """Where skills are read from, as Claude Code reads them (``.claude/skills`` in the working
    directory, then ``~/.claude/skills``), then each ``--skills DIR``."""
    from asyncai.files import claude_config_dir

    named = [Path(directory).expanduser() for directory in settings.texts("skills")]
    for directory in named:
        if not directory.is_dir():
            raise UsageError(f"--skills {directory}: not a directory")
    return [Path.cwd() / ".claude" / "skills", claude_config_dir() / "skills", *named]


def skill_set(
    settings: Settings, servers: Sequence[Any] = (), state_store: object = None, per_caller: bool = False
) -> SkillSet:
    """The skills of the command: its directories, the MCP ``servers`` that serve skills, and
    where ``save_skill`` writes (Redis when ``state_store`` is, else the saved-skills directory;
    ``per_caller``: a part of it for each caller)."""
    from asyncai.skills.servers import skill_sources
    from asyncai.skills.skillset import SkillSet
    from asyncai.skills.sources import DirectorySkills, SkillSource, saved_skills_dir
    from asyncai.skills.stored import RedisSkills
    from asyncai.state.stores import RedisStore

    sources: list[SkillSource] = [DirectorySkills(directory) for directory in skill_directories(settings)]
    sources += skill_sources(servers)
    if isinstance(state_store, RedisStore):
        return SkillSet(sources, saving=RedisSkills(state_store.client), per_caller=per_caller)
    return SkillSet(sources, saving=DirectorySkills(saved_skills_dir(), "saved"), per_caller=per_caller)


def someone_can_sign_in() -> bool:
    """A person at the terminal, or a browser command set for this run."""
    return sys.stdin.isatty() or bool(os.environ.get("BROWSER"))


def _size(settings: Settings, key: str, default: int) -> int:
    from asyncai.code_mode.limits import parse_memory  # the limits' dataclass: once a command runs

    value = settings.get(key)
    try:
        return parse_memory(str(value)) if value is not None else default
    except ValueError as exc:
        raise UsageError(f"{_option(key)}: {exc}") from None


def code_limits(settings: Settings, catalog_budget: int | None = None) -> CodeModeLimits:
    """The limits the settings give; ``catalog_budget`` is the command's own default, if it has one."""
    from asyncai.code_mode.limits import CodeModeLimits

    defaults = CodeModeLimits()
    max_memory = _size(settings, "code_max_memory", defaults.max_memory)
    max_state = _size(settings, "code_max_state", defaults.max_state)
    return CodeModeLimits(
        code_timeout=settings.number("code_timeout", defaults.code_timeout),
        wall_timeout=settings.number("code_wall_timeout", defaults.wall_timeout),
        tool_timeout=settings.number("tool_timeout", defaults.tool_timeout),
        max_calls=settings.count("code_max_calls", defaults.max_calls),
        max_result_chars=settings.count("code_max_result", defaults.max_result_chars),
        max_memory=max_memory,
        max_state=max_state,
        catalog_budget=settings.count("catalog_budget", catalog_budget or defaults.catalog_budget),
    )


def sandbox_config(settings: Settings) -> SandboxConfig:
    kind = settings.text("code_sandbox", "auto")
    if kind not in SANDBOX_KINDS:
        raise UsageError(f"--code-sandbox must be one of {', '.join(SANDBOX_KINDS)}, not {kind!r}")
    from asyncai.code_mode.sandbox.config import SandboxConfig

    return SandboxConfig(
        kind=cast(SandboxKind, kind),
        monty_url=settings.text("monty_url"),
        max_workers=settings.count("code_max_workers", 8),
        type_check=settings.switch("type_check", default=True),
    )


def mutation_policy(settings: Settings, default: MutationPolicy = "allow") -> MutationPolicy:
    """``--mutations``; ``default`` when not set (``ask`` in the chat on a terminal, where someone
    can answer, ``allow`` elsewhere)."""
    policy = settings.text("mutations", default)
    if policy not in MUTATION_POLICIES:
        raise UsageError(f"--mutations must be one of {', '.join(MUTATION_POLICIES)}, not {policy!r}")
    return policy


def read_preamble(settings: Settings) -> str | None:
    """The ``--code-preamble`` text; one that CPython cannot compile is refused at start-up.

    Monty runs a subset of Python, so compiling is a necessary check, not a sufficient one.
    """
    path = settings.text("code_preamble")
    if path is None:
        return None
    text = read_text_file(path, "--code-preamble")
    try:
        compile(text, path, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except SyntaxError as exc:
        where = f" (line {exc.lineno})" if exc.lineno else ""
        raise UsageError(f"--code-preamble {path} does not compile: {exc.msg}{where}") from None
    except ValueError as exc:  # null bytes in the source
        raise UsageError(f"--code-preamble {path} does not compile: {exc}") from None
    return text
