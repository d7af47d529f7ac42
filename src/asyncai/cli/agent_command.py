"""The agent: ``asyncai -p PROMPT``, interactive chat, piped stdin, and the ``--jsonl`` line channel.

All four run the same ``Runtime`` over the same code-mode executor: the model's only tool is
``run_code`` (invariant 1).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import TYPE_CHECKING, Any, TextIO

from asyncai.cli.settings import (
    Settings,
    UsageError,
    add_code_options,
    add_mcp_options,
    add_model_options,
    add_session_options,
    mutation_policy,
    read_text_file,
    server_requests,
)

if TYPE_CHECKING:
    from asyncai.backend import BackendConfig
    from asyncai.cli.live import TerminalActivity
    from asyncai.runtime import RunReply, RunRequest, Runtime

# What only a run needs is imported when one starts: `asyncai --help` stays light (issue 36).

DEFAULT_BASE_URL = "http://127.0.0.1:11434/v1"  # Ollama's OpenAI-compatible endpoint


def add_arguments(parser: argparse.ArgumentParser) -> None:
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("-p", "--prompt", help="one-shot: answer PROMPT, print only the reply, exit")
    mode.add_argument("--jsonl", action="store_true", default=None, help="JSON lines on stdin/stdout")
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=None,
        help="no live activity on the terminal (the snippets, their tool calls, a status line)",
    )
    add_model_options(parser)
    add_session_options(parser)
    add_mcp_options(parser)
    add_code_options(parser)


def backend_config(settings: Settings, *, stream_by_default: bool = False) -> BackendConfig:
    from asyncai.backend import DEFAULT_SYSTEM_PROMPT, BackendConfig
    from asyncai.backend.config import DEFAULT_MAX_TOKENS, DEFAULT_TEMPERATURE, protocol_named

    model = settings.text("model")
    if not model:
        raise UsageError("no model: pass --model NAME or set ASYNCAI_MODEL (e.g. qwen2.5-coder:7b)")
    system = settings.text("system")
    system_file = settings.text("system_file")
    if system_file:
        system = read_text_file(system_file, "--system-file")
    base_url = settings.text("base_url", DEFAULT_BASE_URL)
    assert base_url is not None
    temperature = settings.optional_number("temperature", allow_zero=True)
    try:
        return BackendConfig(
            base_url=checked_base_url(base_url),
            model=model,
            api_key=settings.text("api_key"),
            max_rounds=settings.count("max_rounds", 8),
            system_prompt=system or DEFAULT_SYSTEM_PROMPT,
            stream=settings.switch("stream", stream_by_default),
            eager=settings.switch("eager", True),
            temperature=temperature if temperature is not None else DEFAULT_TEMPERATURE,
            max_tokens=settings.count("max_tokens", DEFAULT_MAX_TOKENS),
            request_timeout=settings.number("request_timeout", 300.0),
            protocol=protocol_named(settings.text("protocol", "tools") or "tools"),
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def checked_base_url(url: str) -> str:
    """``url`` when it is an http(s) URL with a host; anything else is a ``UsageError`` before any
    request (``localhost:8080/v1`` would otherwise fail only after four retries)."""
    from urllib.parse import urlsplit

    text = url.strip()
    parts = urlsplit(text)
    if parts.scheme in ("http", "https") and parts.netloc:
        return url
    if not text:
        reason = "is empty"
    elif "://" not in text:
        reason = f"has no scheme: did you mean http://{text}?"
    elif parts.scheme not in ("http", "https"):
        reason = f"must start with http:// or https://, not {parts.scheme}://"
    else:
        reason = "has no host"
    raise UsageError(f"--base-url {text or repr(url)} {reason}")


async def run(settings: Settings) -> int:
    from asyncai.activity import QUIET
    from asyncai.cli.approval import TerminalApprover
    from asyncai.cli.blocking import LineReader
    from asyncai.cli.chat import Chat
    from asyncai.cli.questions import TerminalPerson
    from asyncai.cli.sessions import session_recorder, state_store
    from asyncai.cli.wiring import code_mode_executor
    from asyncai.runtime import Runtime

    prompt = settings.text("prompt")
    jsonl = settings.switch("jsonl")
    if prompt is None and not jsonl and not sys.stdin.isatty():
        prompt = sys.stdin.read()
        if not prompt.strip():
            raise UsageError("empty prompt on stdin")
    # Only the chat has a person at the terminal to ask; -p and --jsonl refuse what needs asking.
    chat = prompt is None and not jsonl
    activity = terminal_activity(settings) if not jsonl else None
    # The chat streams its replies where they are shown as they come.
    config = backend_config(settings, stream_by_default=chat and activity is not None and activity.markdown)
    recorder = session_recorder(settings)
    from asyncai.backend import OpenAiCompatibleBackend  # httpx2: loaded once a run needs the model

    reader = LineReader()  # the chat's prompt and its approval questions read the same lines
    approver = None
    # Someone at the chat can be asked before a tool changes the world; scripts keep allow.
    mutations = mutation_policy(settings, "ask" if chat else "allow")
    if chat and mutations == "ask":
        pause = activity.paused if activity is not None else contextlib.nullcontext
        approver = TerminalApprover(ask=reader.read, pause=pause)
    # What servers ask (a form, the model) is asked of the person in the chat, declined elsewhere.
    pause_display = activity.paused if activity is not None else contextlib.nullcontext
    requests = server_requests(
        settings, TerminalPerson(ask=reader.read, pause=pause_display) if chat else None
    )
    # A recorded session keeps its threads' REPLs too, so a resumed one still has its variables.
    store = await state_store(settings) if recorder is not None else None
    async with contextlib.AsyncExitStack() as closing:
        if store is not None:
            closing.push_async_callback(store.aclose)  # closed last, after the REPLs are saved
        executor = await closing.enter_async_context(
            code_mode_executor(settings, approver, store, activity, requests, mutations)
        )
        backend = await closing.enter_async_context(
            OpenAiCompatibleBackend(config, activity=activity or QUIET)
        )
        from asyncai.backend.sampling import BackendSampler

        requests.sampler = BackendSampler(backend)
        runtime = Runtime(backend, executor.scopes, sessions=recorder)
        try:
            if jsonl:
                return await _jsonl(runtime, sys.stdin, sys.stdout)
            if prompt is not None:
                return await _one_shot(runtime, prompt, activity)
            return await Chat(runtime, executor, recorder, activity, reader).run()
        finally:
            if recorder is not None:
                recorder.announce()


def terminal_activity(settings: Settings) -> TerminalActivity | None:
    """The live display when stderr is a terminal (and neither --quiet nor --verbose, whose NDJSON
    log is stderr's then); replies are rendered as Markdown only when stdout is a terminal too."""
    if settings.switch("quiet") or settings.switch("verbose") or not sys.stderr.isatty():
        return None
    from rich.console import Console  # rich: only for a person at a terminal

    from asyncai.cli.live import TerminalActivity

    markdown = sys.stdout.isatty()
    return TerminalActivity(Console(stderr=True), Console() if markdown else None)


async def _one_shot(runtime: Runtime, prompt: str, activity: TerminalActivity | None = None) -> int:
    from asyncai.runtime import RunRequest

    if activity is not None:
        activity.begin_run()
    try:
        reply = await runtime.submit(RunRequest(thread_id="main", text=prompt))
    finally:
        # On Ctrl-C (the main task cancelled) the in-flight run stops before the executors close.
        await runtime.aclose()
        if activity is not None:
            activity.close()
    if activity is not None and activity.end_run(reply.reply if reply.ok else None):
        return 0
    return _print_reply(reply, sys.stdout)


def _print_reply(reply: RunReply, out: TextIO) -> int:
    if not reply.ok:
        print(f"asyncai: {reply.error}", file=sys.stderr)
        return 1
    print(reply.reply, file=out, flush=True)
    return 0


def _parse_line(line: str) -> RunRequest | str:
    """A JSONL input line as a request, or the error to answer it with."""
    from asyncai.runtime import RunRequest

    try:
        data: Any = json.loads(line)
    except ValueError as exc:
        return f"not JSON: {exc}"
    if not isinstance(data, dict) or not isinstance(data.get("text"), str):
        return 'expected {"thread": "t1", "text": "..."}'
    thread = data.get("thread", "main")
    return RunRequest(thread_id=str(thread), text=data["text"])


async def _jsonl(runtime: Runtime, source: TextIO, out: TextIO) -> int:
    """One stdin line ``{"thread", "text"}`` starts or queues a run; one stdout line per run."""
    from asyncai.cli.blocking import read_in_thread

    def emit(line: dict[str, Any]) -> None:
        out.write(json.dumps(line, ensure_ascii=False) + "\n")
        out.flush()

    runtime.on_reply = lambda reply: emit(reply.to_json())
    failed = False
    try:
        # A thread reads stdin so pipes, files and terminals all work and runs go on meanwhile.
        while raw := await read_in_thread(source.readline):
            line = raw.strip()
            if not line:
                continue
            request = _parse_line(line)
            if isinstance(request, str):
                emit({"error": request, "line": line[:200]})
                failed = True
                continue
            runtime.post(request)
        await runtime.wait_idle()
    finally:
        await runtime.aclose()
    return 1 if failed else 0
