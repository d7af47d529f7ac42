"""``python -m evals.screen``: each attempt stops after the model's first reply, and that reply gets
one kind by a fixed rule, read from the request the harness would have sent next."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from evals.recording import RECORDINGS, Exchange
from evals.run import load_recording
from evals.screen import KINDS, first_step, main

from tests.fakes.openai_server import ScriptedOpenAI, call, text_reply, tool_reply

STUBS = "Run Python.\n\nasync def list_directory(*, path: str) -> Any: ...\nasync def read_text_file(*, path: str) -> Any: ..."
QUESTION: list[dict[str, Any]] = [{"role": "user", "content": "q"}]
FIRST = {"messages": QUESTION, "tools": [{"function": {"name": "run_code", "description": STUBS}}]}


def _reply(finish_reason: str = "stop") -> dict[str, Any]:
    return {"choices": [{"message": {"content": "..."}, "finish_reason": finish_reason}]}


def _after(code: str | None = None, *, calls: int = 1) -> Exchange:
    """The request that follows the first reply: the assistant message the harness made of it."""
    tool_calls = [{"function": {"name": "run_code", "arguments": json.dumps({"code": code})}}] * calls
    assistant = {"role": "assistant", "tool_calls": tool_calls} if code is not None else {"role": "assistant"}
    return Exchange({"messages": [*QUESTION, assistant]}, {})


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ('await list_directory(path="/d")', "one call"),
        ('x = await list_directory(path="/d")\nawait read_text_file(path=x[0])', "program"),
        ('for p in ["a", "b"]:\n    await read_text_file(path=p)', "program"),
        ('[await read_text_file(path=p) for p in ["a", "b"]]', "program"),
        ('await asyncio.gather(read_text_file(path="a"))', "program"),
        ('await read_text_file(path="a")\nawait read_text_file(path="b")', "one call"),
        ("import os\nos.listdir('/d')", "no function called"),
        ("for x in (:", "no function called"),
        ("await run_code(code='x')", "no function called"),
    ],
)
def test_the_code_the_harness_ran_gives_the_kind(code: str, kind: str) -> None:
    assert first_step([Exchange(FIRST, _reply()), _after(code)], "code") == kind


def test_a_reply_cut_answered_or_nudged_and_direct_calls() -> None:
    assert first_step([Exchange(FIRST, _reply("length"))], "code") == "cut"
    assert first_step([Exchange(FIRST, _reply())], "code") == "answer"
    assert first_step([Exchange(FIRST, _reply()), _after(None)], "code") == "answer"  # nudged, ran nothing
    assert first_step([Exchange(FIRST, _reply()), _after("{}", calls=1)], "direct") == "one call"
    assert first_step([Exchange(FIRST, _reply()), _after("{}", calls=2)], "direct") == "program"


def test_every_recorded_first_reply_has_a_kind_that_agrees_with_the_attempt() -> None:
    """A path that must agree: a finished attempt that ran no tool call at all had a first reply
    that ran nothing (an answer, or cut), and one whose first reply ran code did run a tool call."""
    paths = sorted(RECORDINGS.glob("*.json"))
    assert paths
    kinds = set()
    for path in paths:
        record = load_recording(path)
        kind = first_step(record["exchanges"], record["mode"])
        kinds.add(kind)
        if record["rounds"] == 0:
            continue  # the attempt ended in an error (a context overflow): no counts to compare
        if record["tool_calls"] == 0:
            assert kind in ("answer", "cut"), path.name
        if kind in ("program", "one call", "no function called"):
            assert record["tool_calls"] > 0, path.name
    assert kinds <= set(KINDS) and {"one call", "answer"} <= kinds


def test_a_screening_stops_each_attempt_after_the_first_reply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = 'pages = await http_get(url="x")\nawait asyncio.gather(*(http_get(url=u) for u in ["a"]))'
    script = [tool_reply(call("run_code", {"code": program})), text_reply("never asked")]
    saved = tmp_path / "screened.json"
    with ScriptedOpenAI(script) as model:
        args = ["--base-url", model.base_url, "--model", "m", "--tasks", "page-title", "--repeat", "1"]
        assert (
            main([*args, "--extra-body", '{"response_format": {"type": "text"}}', "--save", str(saved)]) == 0
        )
        assert model.remaining == 1, "the second request never reached the model"
        assert model.requests[0]["response_format"] == {"type": "text"}
    [row] = json.loads(saved.read_text())
    assert (row["task"], row["mode"], row["kind"], row["recorded"]) == (
        "page-title",
        "code",
        "program",
        "one call",
    )
    assert "| code | one | 1 | 1 (0) | 0 (1) |" in capsys.readouterr().out


def test_bad_extra_body_is_a_one_line_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["--extra-body", "[1]", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"])
    assert exit.value.code == 2
    assert "--extra-body: must be a JSON object" in capsys.readouterr().err
