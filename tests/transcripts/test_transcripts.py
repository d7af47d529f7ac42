"""Transcript files without processes: paths, records, the chain rule, repair, listing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from asyncai.backend import Message, ModelTurn, ToolCall
from asyncai.log import dumps_compact
from asyncai.tools.types import ToolCallOutput
from asyncai.transcripts import (
    ClaudeCodeSession,
    list_sessions,
    load_transcript,
    project_slug,
)
from asyncai.transcripts.paths import simple_hash
from asyncai.transcripts.reader import INTERRUPTED_RESULT
from asyncai.transcripts.records import encode
from tests.fakes.logs import captured_log
from tests.transcripts import claude_code

TURN = ModelTurn(model="m", finish_reason="stop", usage={"prompt_tokens": 7, "completion_tokens": 3})


def test_slug_replaces_every_character_but_ascii_letters_and_digits() -> None:
    assert project_slug("/Users/alice/my_app") == "-Users-alice-my-app"
    assert project_slug("/home/u/proj.v2 (copy)/é") == "-home-u-proj-v2--copy---"


def test_a_long_slug_is_cut_and_hashed_like_claude_codes_javascript() -> None:
    """The hash is JavaScript's ``(h << 5) - h + charCode | 0``: node itself is the reference."""
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI"):
            pytest.fail("node is required in CI")
        pytest.skip("node is not installed: it is the reference implementation of the hash")
    paths = ["/" + "x" * 250, "/tmp/" + "deep/" * 60 + "é😀", "/a"]
    script = (
        "const h=s=>{let v=0;for(let i=0;i<s.length;i++){v=(v<<5)-v+s.charCodeAt(i)|0}"
        "return Math.abs(v).toString(36)};"
        "for (const p of JSON.parse(process.argv[1])) console.log(h(p));"
    )
    done = subprocess.run([node, "-e", script, json.dumps(paths)], capture_output=True, text=True, check=True)
    assert [simple_hash(path) for path in paths] == done.stdout.split()
    slug = project_slug(paths[0])
    assert slug == "-" + "x" * 199 + "-" + done.stdout.split()[0]


def ran(
    session: ClaudeCodeSession, prompt: str, *, calls: int = 0, ok: bool = True, answer: bool = True
) -> list[Message]:
    """Drive ``session`` through one run the way the backend does; the run's messages."""
    session.begin_run()
    messages = [Message("user", prompt)]
    session.user_turn(messages[-1])
    if calls:
        tool_calls = tuple(
            ToolCall(f"call_{prompt}_{i}", "run_code", dumps_compact({"code": str(i)})) for i in range(calls)
        )
        messages.append(Message("assistant", None, tool_calls=tool_calls, reasoning_content="thinking..."))
        session.assistant_turn(messages[-1], TURN)
        if answer:
            for index, tool_call in enumerate(tool_calls):
                messages.append(Message("tool", str(index), tool_call_id=tool_call.id))
                session.tool_result(messages[-1], ToolCallOutput(str(index), audit={"nested_calls": []}))
    if ok:
        messages.append(Message("assistant", f"reply to {prompt}"))
        session.final_reply(messages[-1], TURN)
    session.end_run(ok)
    return messages


def test_a_failed_run_stays_in_the_file_but_off_the_chain(tmp_path: Path) -> None:
    path = tmp_path / "5d5b0f0e-7c1b-4f43-9a57-0c4f5d2f8e11.jsonl"
    session = ClaudeCodeSession.new(path, str(tmp_path))
    first = ran(session, "one", calls=2)
    ran(session, "two", calls=1, ok=False, answer=False)  # the model server went away mid-run
    third = ran(session, "three")
    assert len(path.read_text().splitlines()) == 5 + 2 + 2
    transcript = load_transcript(path)
    assert transcript.messages() == first + third
    assert transcript.messages()[1].reasoning_content == "thinking..."
    wire = [m.to_wire() for m in first + third]
    assert claude_code.without_is_error(claude_code.conversation(path)) == claude_code.from_openai(wire)


def test_resumed_session_continues_from_its_leaf_and_says_the_sandbox_restarted(tmp_path: Path) -> None:
    path = tmp_path / "5d5b0f0e-7c1b-4f43-9a57-0c4f5d2f8e12.jsonl"
    earlier = ran(ClaudeCodeSession.new(path, str(tmp_path)), "one", calls=1)
    resumed = ClaudeCodeSession.resumed(load_transcript(path), str(tmp_path))
    assert resumed.history() == earlier
    assert "restarted" in (resumed.note() or "")
    later = ran(resumed, "two")
    assert resumed.note() is None  # told once, after a run that worked
    assert load_transcript(path).messages() == earlier + later


def test_a_call_without_its_result_gets_an_error_result_and_orphans_are_dropped(tmp_path: Path) -> None:
    path = tmp_path / "5d5b0f0e-7c1b-4f43-9a57-0c4f5d2f8e13.jsonl"
    session = ClaudeCodeSession.new(path, str(tmp_path))
    messages = ran(session, "one", calls=2, ok=False, answer=False)  # the process died mid-call
    last = json.loads(path.read_text().splitlines()[-1])
    with path.open("a") as file:
        orphan = {  # a result for a call the assistant never made
            "type": "user",
            "uuid": "orphan",
            "parentUuid": last["uuid"],
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "x", "content": "?"}],
            },
        }
        file.write(json.dumps(orphan) + "\n")
    restored = load_transcript(path).messages()
    assert restored == [
        *messages,
        Message("tool", INTERRUPTED_RESULT, tool_call_id="call_one_0"),
        Message("tool", INTERRUPTED_RESULT, tool_call_id="call_one_1"),
    ]


def test_records_are_json_claude_code_can_parse(tmp_path: Path) -> None:
    line = encode({"nan": float("nan"), "lone": "\ud800", "text": "é"})
    decoded = json.loads(line.decode("utf-8"), parse_constant=lambda name: pytest.fail(f"{name} in JSON"))
    assert decoded == {"nan": "nan", "lone": "\ud800", "text": "é"}
    assert line.endswith(b"\n") and line.count(b"\n") == 1


def test_a_write_failure_is_one_warning_and_the_run_goes_on(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    session = ClaudeCodeSession.new(blocker / "5d5b0f0e-7c1b-4f43-9a57-0c4f5d2f8e14.jsonl", str(tmp_path))
    with captured_log() as log:
        ran(session, "one", calls=1)
    events = [json.loads(line) for line in log.getvalue().splitlines()]
    assert [(e["event"], e["level"]) for e in events] == [("session.write_failed", "warn")]
    assert not session.writer.written


def test_listing_counts_prompts_not_tool_results(tmp_path: Path) -> None:
    older = tmp_path / "5d5b0f0e-7c1b-4f43-9a57-0c4f5d2f8e15.jsonl"
    newer = tmp_path / "5d5b0f0e-7c1b-4f43-9a57-0c4f5d2f8e16.jsonl"
    session = ClaudeCodeSession.new(older, str(tmp_path))
    ran(session, "a first   prompt\nover lines", calls=3)
    ran(session, "a second prompt")
    ran(ClaudeCodeSession.new(newer, str(tmp_path)), "x" * 100)
    (tmp_path / "notes.jsonl").write_text('{"type": "user"}\n')  # not a session id: ignored
    infos = list_sessions(tmp_path)
    assert [info.path for info in infos] == [newer, older]
    assert [(info.turns, info.first_prompt) for info in infos] == [
        (1, "x" * 57 + "..."),
        (2, "a first prompt over lines"),
    ]
