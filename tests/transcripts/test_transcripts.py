"""Transcript files without processes: paths, records, the chain rule, repair, listing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from asyncai.backend import Message, ModelTurn, ToolCall
from asyncai.log import dumps_compact
from asyncai.tools.types import ToolCallOutput
from asyncai.transcripts import (
    ClaudeCodeSession,
    chain_messages,
    conversation_chain,
    find_session,
    list_sessions,
    load_transcript,
    project_dirs,
    project_slug,
)
from asyncai.transcripts.paths import simple_hash
from asyncai.transcripts.reader import INTERRUPTED_RESULT
from asyncai.transcripts.records import encode
from tests.fakes.binaries import require
from tests.fakes.logs import captured_log
from tests.transcripts import claude_code

TURN = ModelTurn(model="m", finish_reason="stop", usage={"prompt_tokens": 7, "completion_tokens": 3})


def test_slug_replaces_every_character_but_ascii_letters_and_digits() -> None:
    assert project_slug("/Users/alice/my_app") == "-Users-alice-my-app"
    assert project_slug("/home/u/proj.v2 (copy)/é") == "-home-u-proj-v2--copy---"


def test_a_long_slug_is_cut_and_hashed_like_claude_codes_javascript() -> None:
    """The hash is JavaScript's ``(h << 5) - h + charCode | 0``: node itself is the reference."""
    node = require("node", "it is the reference implementation of the hash")
    paths = ["/" + "x" * 250, "/tmp/" + "deep/" * 60 + "é😀", "/a", "/a/😀b"]
    script = (
        "const h=s=>{let v=0;for(let i=0;i<s.length;i++){v=(v<<5)-v+s.charCodeAt(i)|0}"
        "return Math.abs(v).toString(36)};"
        'for (const p of JSON.parse(process.argv[1])) console.log(h(p), p.replace(/[^a-zA-Z0-9]/g, "-"));'
    )
    done = subprocess.run([node, "-e", script, json.dumps(paths)], capture_output=True, text=True, check=True)
    hashes, sanitized = zip(*(line.split() for line in done.stdout.splitlines()), strict=True)
    assert [simple_hash(path) for path in paths] == list(hashes)
    assert project_slug(paths[0]) == "-" + "x" * 199 + "-" + hashes[0]
    assert project_slug("/a/😀b") == sanitized[3] == "-a---b"  # per UTF-16 code unit, as JavaScript does


def test_a_long_directory_finds_sessions_under_another_hash_suffix(tmp_path: Path) -> None:
    cwd = "/" + "y" * 250
    own = project_dirs(cwd, tmp_path)[0]
    other = own.parent / (own.name[:201] + "zzzz")  # what another Claude Code version named it
    other.mkdir(parents=True)
    (other / "5d5b0f0e-7c1b-4f43-9a57-0c4f5d2f8e10.jsonl").write_text("{}\n")
    assert project_dirs(cwd, tmp_path) == [own, other]
    assert find_session("5d5b0f0e-7c1b-4f43-9a57-0c4f5d2f8e10", cwd, tmp_path) == (
        other / "5d5b0f0e-7c1b-4f43-9a57-0c4f5d2f8e10.jsonl"
    )


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


def test_a_run_the_process_did_not_finish_is_not_resumed(tmp_path: Path) -> None:
    """The process died mid-run (Ctrl-C while a snippet ran): the resumed history is the finished
    runs, and once the resumed session writes, Claude Code reads the same conversation."""
    path = tmp_path / "5d5b0f0e-7c1b-4f43-9a57-0c4f5d2f8e17.jsonl"
    first = ran(ClaudeCodeSession.new(path, str(tmp_path)), "one", calls=1)
    dying = ClaudeCodeSession.resumed(load_transcript(path), str(tmp_path))
    ran(dying, "two", calls=2, ok=False, answer=False)  # the process is gone mid-snippet
    assert load_transcript(path).chain[-1]["type"] == "assistant"  # Claude Code's leaf: the dead run
    resumed = ClaudeCodeSession.resumed(load_transcript(path), str(tmp_path))
    assert resumed.history() == first
    third = ran(resumed, "three")
    wire = [m.to_wire() for m in first + third]
    assert claude_code.without_is_error(claude_code.conversation(path)) == claude_code.from_openai(wire)
    assert load_transcript(path).messages() == first + third


def test_a_chain_of_only_unfinished_runs_resumes_empty_and_starts_a_new_root(tmp_path: Path) -> None:
    path = tmp_path / "5d5b0f0e-7c1b-4f43-9a57-0c4f5d2f8e18.jsonl"
    ran(ClaudeCodeSession.new(path, str(tmp_path)), "lost", calls=1, ok=False)
    transcript = load_transcript(path)
    assert transcript.messages() == [] and transcript.leaf is None
    later = ran(ClaudeCodeSession.resumed(transcript, str(tmp_path)), "again")
    assert load_transcript(path).messages() == later
    assert claude_code.conversation(path) == claude_code.from_openai([m.to_wire() for m in later])


def test_records_with_odd_field_types_are_skipped_not_fatal() -> None:
    records: list[dict[str, Any]] = [
        {"type": "user", "uuid": "a", "parentUuid": None, "message": {"role": "user", "content": "hi"}},
        {"type": "user", "uuid": "b", "parentUuid": ["x"], "message": {"role": "user", "content": "?"}},
        {"type": [], "uuid": "c", "parentUuid": "a"},
        {"type": "assistant", "uuid": "d", "parentUuid": {"x": 1}, "message": "not a dict"},
        {"type": "assistant", "uuid": 5, "parentUuid": "a"},
    ]
    assert [r["uuid"] for r in conversation_chain(records)] in (["a"], ["b"], ["d"])


def test_a_call_without_its_result_gets_an_error_result_and_orphans_are_dropped() -> None:
    """Claude Code's own repair, for files it wrote: a tool_use left unanswered gets an error
    result, a tool_result whose call is not in the message before it is dropped."""

    def record(uuid: str, kind: str, content: object) -> dict[str, object]:
        parent = None if uuid == "1" else str(int(uuid) - 1)
        return {
            "type": kind,
            "uuid": uuid,
            "parentUuid": parent,
            "message": {"role": kind, "content": content},
        }

    call = {"type": "tool_use", "id": "toolu_a", "name": "Bash", "input": {"command": "ls"}}
    orphan = {"type": "tool_result", "tool_use_id": "toolu_x", "content": "?"}
    chain = [
        record("1", "user", "list files"),
        record("2", "assistant", [call]),
        record("3", "user", [orphan]),
        record("4", "assistant", [{"type": "text", "text": "done"}]),
    ]
    assert chain_messages(chain) == [
        Message("user", "list files"),
        Message("assistant", None, tool_calls=(ToolCall("toolu_a", "Bash", '{"command":"ls"}'),)),
        Message("tool", INTERRUPTED_RESULT, tool_call_id="toolu_a"),
        Message("assistant", "done"),
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
    with newer.open("a") as file:  # clocks gone wrong: neither may crash the listing or win -c
        for stamp in ("9999-12-31T23:59:59-12:00", "0001-01-01T00:00:00+14:00", "yesterday"):
            file.write(json.dumps({"type": "system", "timestamp": stamp}) + "\n")
    infos = list_sessions([tmp_path])
    assert infos[0].last_activity.timestamp() <= newer.stat().st_mtime
    assert [info.path for info in infos] == [newer, older]
    assert [(info.turns, info.first_prompt) for info in infos] == [
        (1, "x" * 57 + "..."),
        (2, "a first prompt over lines"),
    ]
