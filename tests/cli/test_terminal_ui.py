"""The chat's terminal experience (issue 15), read off a real pseudo-terminal: pexpect drives
``asyncai``, pyte renders what a person would see. A scripted model on loopback and a tool whose
answer the test holds back (``tests/fakes/slow_site.py``) let a test read the screen while a run is
still going, without sleeping.

And the other half of the contract: with stderr not a terminal, the output is byte for byte what
it was before the terminal experience existed."""

from __future__ import annotations

import contextlib
import os
import pty
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pexpect
import pyte
import pytest

from tests.cli.conftest import BIN, SIMPLE
from tests.fakes.openai_server import ScriptedOpenAI, ScriptEntry, call, held_reply, text_reply, tool_reply
from tests.fakes.servers import server_command
from tests.fakes.slow_site import SlowSite, slow_site

ASYNCAI = str(BIN / "asyncai")
NOTES = server_command("notes")  # write_note is mutating
BANNER = b"asyncai chat. /exit quits, /restart clears the REPL, /new starts a new thread.\n"


def _script() -> list[dict[str, object]]:
    return [
        tool_reply(call("run_code", {"code": "x = 41\nx + 1"})),
        text_reply("**42** it is"),
        text_reply("bye"),
    ]


def test_without_a_terminal_on_stderr_the_output_is_unchanged(tmp_path: Path) -> None:
    """The bytes pinned here are those asyncai wrote before issue 15 (a Markdown reply stays plain)."""
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    args = ["--model", "m", "--no-session", "--mcp-stdio", SIMPLE]
    with ScriptedOpenAI(_script()) as model:
        once = subprocess.run(
            [ASYNCAI, "--base-url", model.base_url, *args, "-p", "store"],
            capture_output=True, stdin=subprocess.DEVNULL, env=env, timeout=60,
        )  # fmt: skip
    assert (once.returncode, once.stdout, once.stderr) == (0, b"**42** it is\n", b"")

    with ScriptedOpenAI(_script()) as model:
        master, slave = pty.openpty()  # a person typing; stdout and stderr go to pipes
        try:
            chat = subprocess.Popen(
                [ASYNCAI, "--base-url", model.base_url, *args],
                stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
            )  # fmt: skip
            os.write(master, b"store\nthanks\n/exit\n")
            out, err = chat.communicate(timeout=60)
        finally:
            os.close(slave)
            os.close(master)
    assert (chat.returncode, out, err) == (0, b"you> **42** it is\nyou> bye\nyou> ", BANNER)


class Terminal:
    """``asyncai`` on a pseudo-terminal of ``columns`` x ``rows``; ``screen()`` is what a person
    sees now (pyte renders the escape sequences), ``wait_for`` reads until a text is on it."""

    def __init__(self, args: list[str], env: dict[str, str], columns: int = 100, rows: int = 40) -> None:
        self.screen_buffer = pyte.HistoryScreen(columns, rows, history=5000)
        self.stream = pyte.ByteStream(self.screen_buffer)
        self.child = pexpect.spawn(ASYNCAI, args, env=env, dimensions=(rows, columns))

    def pump(self, timeout: float) -> None:
        with contextlib.suppress(pexpect.TIMEOUT):
            data = self.child.read_nonblocking(65536, timeout=timeout)
            self.stream.feed(data if isinstance(data, bytes) else data.encode())

    def screen(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen_buffer.display)

    def scrollback(self) -> str:
        """Every line that scrolled off the top, then the screen."""
        width = self.screen_buffer.columns
        gone = ["".join(row[x].data for x in range(width)).rstrip() for row in self.screen_buffer.history.top]
        return "\n".join([*gone, self.screen()])

    def wait_for(self, *texts: str, timeout: float = 30, wrapped: bool = False) -> str:
        """Read the terminal until every text is on the screen (``wrapped``: possibly across a
        line end); the screen then."""
        deadline = time.monotonic() + timeout

        def shown() -> str:
            return self.screen().replace("\n", "") if wrapped else self.screen()

        while not all(text in shown() for text in texts):
            left = deadline - time.monotonic()
            assert left > 0, f"not on the screen within {timeout} s: {texts}\n{self.screen()}"
            self.pump(min(left, 0.5))  # returns as soon as output arrives
        return self.screen()

    def wait_for_scrollback(self, done: Callable[[str], bool], timeout: float = 30) -> str:
        """Read the terminal until ``done`` holds for the scrollback; the scrollback then."""
        deadline = time.monotonic() + timeout
        while not done(self.scrollback()):
            left = deadline - time.monotonic()
            assert left > 0, f"not in the scrollback within {timeout} s\n{self.scrollback()[-3000:]}"
            self.pump(min(left, 0.5))  # returns as soon as output arrives
        return self.scrollback()

    def type(self, text: str) -> None:
        self.child.send(text)

    def close(self) -> None:
        self.child.close(force=True)


@pytest.fixture
def site() -> Iterator[SlowSite]:
    with slow_site() as fixture:
        yield fixture


def terminal(model: ScriptedOpenAI, tmp_path: Path, *args: str, server: str = SIMPLE) -> Terminal:
    """``asyncai ARGS`` (the chat without any) against ``model`` and ``server``; its state and
    home under ``tmp_path``."""
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path), "TERM": "xterm-256color", "HOME": str(tmp_path)}
    env.pop("NO_COLOR", None)
    return Terminal(["--base-url", model.base_url, "--model", "m", "--mcp-stdio", server, *args], env)


def held(gate: threading.Event, answer: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A scripted model answer that waits for ``gate``: the run is still going until the test says."""

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        gate.wait(60)
        return answer

    return respond


def test_the_chat_shows_the_snippet_its_calls_and_a_summary_while_the_run_goes_on(
    tmp_path: Path, site: SlowSite
) -> None:
    snippet = "\n".join([f"step_{i} = {i}" for i in range(14)] + [
        f"page = await http_get(url='{site.url}/slow/page')",
        "status = page['status']",
        "status",
    ])  # fmt: skip
    answered = threading.Event()
    script: list[ScriptEntry] = [
        tool_reply(call("run_code", {"code": snippet})),
        held(answered, text_reply("The page says **200**.\n\n- fetched once")),
    ]
    with ScriptedOpenAI(script) as model:
        chat = terminal(model, tmp_path)
        try:
            chat.wait_for("you>")
            chat.type("fetch the page\r")
            site.entered["page"].wait(30)
            # The nested call is in flight: the snippet and the running call are on the screen.
            screen = chat.wait_for("step_0 = 0", "… 5 more lines", "→ http_get(url=")
            assert "status = page['status']" not in screen, "a long snippet shows its first lines"
            site.release["page"].set()
            # The snippet ended; the model has not answered yet.
            screen = chat.wait_for("✓ http_get(url=", "run_code: 1 call · ", "thinking (round 2)")
            assert "to the model · " in screen
            assert "The page says" not in screen
            answered.set()
            screen = chat.wait_for("The page says 200.", "• fetched once")
            assert "**" not in screen, "the reply is rendered as Markdown"
            assert model.requests[-1]["stream"] is True, "the chat streams its replies"
        finally:
            chat.close()


def test_the_chat_shows_a_statement_running_while_the_snippet_still_streams(
    tmp_path: Path, site: SlowSite
) -> None:
    snippet = f"page = await http_get(url='{site.url}/slow/early')\nstatus = page['status']\nstatus"
    reply = held_reply(snippet, "status = page")
    with ScriptedOpenAI([reply, text_reply("It says **200**.")]) as model:
        chat = terminal(model, tmp_path)
        try:
            chat.wait_for("you>")
            chat.type("fetch it\r")
            site.entered["early"].wait(30)
            assert reply["holding"].is_set(), "the call started while the model was still writing"
            chat.wait_for("running early, while the snippet streams", "→ http_get(url=")
            site.release["early"].set()
            reply["release"].set()
            chat.wait_for("It says 200.")
        finally:
            chat.close()


def test_ctrl_c_stops_the_run_and_the_chat_goes_on_on_the_same_thread(tmp_path: Path, site: SlowSite) -> None:
    script = [
        tool_reply(call("run_code", {"code": "a = 41\na"})),
        text_reply("bound a"),
        tool_reply(call("run_code", {"code": f"await http_get(url='{site.url}/slow/stuck')"})),
        tool_reply(call("run_code", {"code": "a + 1"})),
        text_reply("after the interrupt"),
    ]
    with ScriptedOpenAI(script) as model:
        chat = terminal(model, tmp_path)
        try:
            chat.wait_for("you>")
            chat.type("bind a\r")
            chat.wait_for("bound a")
            chat.type("/vars\r")
            chat.wait_for("a: int")
            chat.type("/session\r")
            found = re.search(r"session ([0-9a-f-]{36})", chat.wait_for("session "))
            assert found is not None
            chat.wait_for(f"{found.group(1)}.jsonl", wrapped=True)  # the transcript's path
            chat.type("fetch forever\r")
            site.entered["stuck"].wait(30)
            chat.wait_for("→ http_get(url=")
            chat.type("\x03")  # Ctrl-C mid-run
            chat.wait_for("(interrupted: the run was cancelled; the conversation goes on)")
            chat.type("still there?\r")
            chat.wait_for("after the interrupt")
            # The next snippet read the variable bound before the interrupt: the REPL was kept.
            assert [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"][-1] == "42"
            messages = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "user"]
            assert messages[0].startswith("bind a") and messages[-1].startswith("still there?")
            assert not any(m.startswith("fetch forever") for m in messages), "the cancelled run left no turn"
            chat.wait_for("you>")
            chat.type("\x03")  # Ctrl-C at the prompt: the chat ends
            chat.child.expect(pexpect.EOF, timeout=30)
            chat.child.close()
            assert chat.child.exitstatus == 130
        finally:
            site.release["stuck"].set()
            chat.close()


def test_help_lists_the_commands(tmp_path: Path) -> None:
    with ScriptedOpenAI([]) as model:
        chat = terminal(model, tmp_path)
        try:
            chat.wait_for("you>")
            chat.type("/help\r")
            screen = chat.wait_for("transcript file", "Ctrl-C stops a run")
            for command in ("/help", "/tools", "/vars", "/session", "/restart", "/new"):
                assert f"  {command}" in screen
            chat.type("/tools\r")
            chat.wait_for("http_get", ": 1 tool, ")  # the table, then the servers, as `asyncai tools`
            chat.type("/quit\r")
            chat.child.expect(pexpect.EOF, timeout=30)
            chat.child.close()
            assert chat.child.exitstatus == 0
        finally:
            chat.close()
    assert model.requests == [], "commands never reach the model"


def test_one_shot_on_a_terminal_shows_the_activity_and_renders_the_reply(tmp_path: Path) -> None:
    script = [tool_reply(call("run_code", {"code": "6 * 7"})), text_reply("It is **42**.")]
    with ScriptedOpenAI(script) as model:
        shown = terminal(model, tmp_path, "-p", "what is 6 * 7?")
        try:
            screen = shown.wait_for("run_code: 0 calls · ", "It is 42.")
            assert "6 * 7" in screen and "**" not in screen
            shown.child.expect(pexpect.EOF, timeout=30)
        finally:
            shown.close()
        assert "stream" not in model.requests[-1] or model.requests[-1]["stream"] is False


def test_a_reply_the_server_did_not_stream_is_still_shown_after_streamed_text(tmp_path: Path) -> None:
    """Text streamed before a tool call is not the reply; a final answer sent whole (a server
    that ignores ``stream``) is printed at the end."""
    script = [
        tool_reply(call("run_code", {"code": "1 + 1"}), content="Let me add them."),
        {**text_reply("The sum is two."), "stream": False},
    ]
    with ScriptedOpenAI(script) as model:
        chat = terminal(model, tmp_path)
        try:
            chat.wait_for("you>")
            chat.type("add\r")
            screen = chat.wait_for("Let me add them.", "The sum is two.")
            assert screen.count("The sum is two.") == 1
        finally:
            chat.close()


def test_a_long_streamed_reply_is_shown_once(tmp_path: Path) -> None:
    """Taller than the terminal: the streamed preview is replaced by the rendered reply, and nothing
    of it is left twice in the scrollback."""
    reply = "\n\n".join(f"Paragraph {n:02d} of the answer." for n in range(60))
    with ScriptedOpenAI([{**text_reply(reply), "content_chunk": 40}]) as model:
        chat = terminal(model, tmp_path)
        try:
            chat.wait_for("you>")
            chat.type("tell me at length\r")
            chat.wait_for("Paragraph 59 of the answer.")
            # The prompt line of this turn is on the screen too: wait for the next turn's.
            everything = chat.wait_for_scrollback(lambda text: text.count("you>") == 2)
        finally:
            chat.close()
    for n in (0, 30, 59):
        assert everything.count(f"Paragraph {n:02d} of the answer.") == 1, everything[-3000:]


def test_ctrl_c_at_an_approval_question_loses_no_typed_line(tmp_path: Path) -> None:
    script = [
        tool_reply(call("run_code", {"code": "await write_note(text='x')"})),
        text_reply("the next question arrived"),
    ]
    with ScriptedOpenAI(script) as model:
        chat = terminal(model, tmp_path, "--mutations", "ask", server=NOTES)
        try:
            chat.wait_for("you>")
            chat.type("write a note\r")
            chat.wait_for("run_code wants to call write_note(text='x')", "[A] every call of this snippet:")
            chat.type("\x03")
            chat.wait_for("(interrupted: the run was cancelled; the conversation goes on)")
            chat.type("anything else?\r")
            chat.wait_for("the next question arrived")
        finally:
            chat.close()
    assert model.requests[-1]["messages"][-1]["content"].startswith("anything else?")


def test_a_call_written_as_text_shows_as_its_snippet_not_as_words(tmp_path: Path) -> None:
    fenced = 'I will compute it.\n```json\n{"name": "run_code", "arguments": {"code": "6 * 7"}}\n```'
    script = [text_reply(fenced, content_chunk=4), text_reply("It is **42**.")]
    with ScriptedOpenAI(script) as model:
        chat = terminal(model, tmp_path)
        try:
            chat.wait_for("you>")
            chat.type("compute\r")
            chat.wait_for("It is 42.")
            shown = chat.scrollback()
        finally:
            chat.close()
    assert "I will compute it." in shown and "6 * 7" in shown
    assert '"arguments"' not in shown, "the call's JSON is not printed as the model's words"
