"""Sessions end to end: ``asyncai -p`` against a scripted model and a real stdio MCP server records a
Claude Code transcript; ``--resume`` and ``-c`` send the model the same messages as before."""

from __future__ import annotations

import itertools
import json
import os
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from asyncai.state.stores import SUFFIX, default_state_dir
from asyncai.transcripts import RESTART_NOTE
from tests.cli.conftest import asyncai
from tests.cli.helpers import ask, lines_of, session_of, sessions_dir
from tests.fakes.openai_server import ScriptedOpenAI, call, text_reply, tool_reply
from tests.transcripts import claude_code

ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
FINAL = "Both answered 200; the division failed."


@pytest.fixture
def claude_dir() -> Path:
    return Path(os.environ["CLAUDE_CONFIG_DIR"])  # a temp dir per test (tests/conftest.py)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A working directory outside any git repository, with characters the slug replaces."""
    directory = tmp_path / "my_project.v2"
    directory.mkdir()
    return directory


def kind(record: dict[str, Any]) -> tuple[str, Any]:
    """``("user", "prompt")`` or the record type and its content block types."""
    content = record["message"]["content"]
    return record["type"], "prompt" if isinstance(content, str) else [block["type"] for block in content]


def record_first_session(project: Path, http_url: str) -> tuple[str, list[dict[str, Any]]]:
    """Two run_code calls (one fans out two nested MCP calls, one fails), then a reply."""
    fetch = (
        f'rs = await asyncio.gather(http_get(url="{http_url}/a"), http_get(url="{http_url}/b"))\n'
        '[r["status"] for r in rs]'
    )
    script = [
        tool_reply(call("run_code", {"code": fetch}), content="Fetching both."),
        tool_reply(call("run_code", {"code": "1 / 0"})),
        text_reply(FINAL),
    ]
    with ScriptedOpenAI(script) as model:
        result = ask(model, project, "-p", "fetch a and b")
        requests = model.requests
    assert result.status == 0, result.stderr
    assert result.stdout == FINAL + "\n"
    return session_of(result), requests


def assert_chain_is_whole(lines: list[dict[str, Any]]) -> None:
    assert lines[0]["parentUuid"] is None
    for previous, record in itertools.pairwise(lines):
        assert record["parentUuid"] == previous["uuid"]
    assert len({line["uuid"] for line in lines}) == len(lines)


def test_a_session_records_what_the_model_saw(project: Path, claude_dir: Path, http_url: str) -> None:
    session_id, requests = record_first_session(project, http_url)
    [path] = sessions_dir(claude_dir, project).iterdir()
    assert path.name == f"{session_id}.jsonl"
    lines = lines_of(path)

    kinds = [kind(line) for line in lines]
    assert kinds == [
        ("user", "prompt"),
        ("assistant", ["text", "tool_use"]),
        ("user", ["tool_result"]),
        ("assistant", ["tool_use"]),
        ("user", ["tool_result"]),
        ("assistant", ["text"]),
    ]  # the two nested http_get calls are not records
    for line in lines:
        assert line["isSidechain"] is False and line["userType"] == "external"
        assert line["cwd"] == str(project) and line["sessionId"] == session_id
        assert line["gitBranch"] == "" and line["version"]
        assert ISO_UTC.match(line["timestamp"])
    assert_chain_is_whole(lines)
    assert lines[0]["message"] == {"role": "user", "content": "fetch a and b"}

    for index in (1, 3, 5):
        message = lines[index]["message"]
        assert message["id"].startswith("msg_") and lines[index]["requestId"].startswith("req_")
        assert (message["type"], message["role"], message["model"]) == ("message", "assistant", "m")
        assert message["usage"]["input_tokens"] == 10 and message["usage"]["output_tokens"] == 5
    assert [lines[i]["message"]["stop_reason"] for i in (1, 3, 5)] == ["tool_use", "tool_use", "end_turn"]
    assert lines[5]["message"]["content"] == [{"type": "text", "text": FINAL}]

    for call_index in (1, 3):  # every tool_use answered in the very next record
        tool_use = lines[call_index]["message"]["content"][-1]
        assert tool_use["name"] == "run_code"
        answer = lines[call_index + 1]
        assert answer["sourceToolAssistantUUID"] == lines[call_index]["uuid"]
        [block] = answer["message"]["content"]
        assert block["tool_use_id"] == tool_use["id"]
    fan_out, failure = lines[2], lines[4]
    assert fan_out["message"]["content"][0]["is_error"] is False
    assert fan_out["message"]["content"][0]["content"] == [{"type": "text", "text": "[200,200]"}]
    nested = fan_out["toolUseResult"]["nested_calls"]
    assert [(c["tool"], c["arguments"], c["is_error"], c["mutating"]) for c in nested] == [
        ("http_get", {"url": f"{http_url}/a"}, False, False),
        ("http_get", {"url": f"{http_url}/b"}, False, False),
    ]
    assert all(c["bytes"] > 1000 for c in nested)
    assert failure["message"]["content"][0]["is_error"] is True
    assert "ZeroDivisionError" in failure["message"]["content"][0]["content"][0]["text"]
    assert failure["toolUseResult"] == {"nested_calls": []}

    # Loaded the way Claude Code loads it, the file is exactly the conversation the model saw.
    seen = [*requests[-1]["messages"], {"role": "assistant", "content": FINAL}]
    assert claude_code.without_is_error(claude_code.conversation(path)) == claude_code.from_openai(seen)


def test_resume_sends_the_same_messages_and_continues_the_file(
    project: Path, claude_dir: Path, http_url: str
) -> None:
    session_id, first_requests = record_first_session(project, http_url)
    # As for a session recorded before REPL state was saved (tests/cli/test_durable_state.py has
    # the restored case): the sandbox starts empty, and the prompt says so.
    (default_state_dir(os.environ) / f"{session_id}{SUFFIX}").unlink()
    with ScriptedOpenAI([text_reply("Still two.")]) as model:
        result = ask(model, project, "--resume", session_id, "-p", "how many calls?")
        [request] = model.requests
    assert result.status == 0, result.stderr
    assert result.stdout == "Still two.\n"
    assert session_of(result) == session_id
    before = [*first_requests[-1]["messages"], {"role": "assistant", "content": FINAL}]
    assert request["messages"][: len(before)] == before  # byte for byte, system prompt included
    assert request["messages"][len(before) :] == [
        {"role": "user", "content": f"how many calls?\n\n{RESTART_NOTE}"}
    ]
    [path] = sessions_dir(claude_dir, project).iterdir()
    lines = lines_of(path)
    assert len(lines) == 8
    assert_chain_is_whole(lines)
    seen = [*request["messages"], {"role": "assistant", "content": "Still two."}]
    assert claude_code.without_is_error(claude_code.conversation(path)) == claude_code.from_openai(seen)


def test_continue_picks_the_newest_session_of_the_directory(project: Path, claude_dir: Path) -> None:
    ids = []
    for prompt in ("first question", "second question"):
        with ScriptedOpenAI([text_reply(f"answer to {prompt}")]) as model:
            ids.append(session_of(ask(model, project, "-p", prompt)))
    with ScriptedOpenAI([text_reply("continued")]) as model:
        result = ask(model, project, "-c", "-p", "and then?")
        [request] = model.requests
    assert session_of(result) == ids[1]
    assert [m["content"] for m in request["messages"][1:]] == [
        "second question",
        "answer to second question",
        "and then?",  # no run_code earlier, so no restart note
    ]
    listing = asyncai("sessions", cwd=project)
    assert listing.status == 0, listing.stderr
    header, *rows = listing.stdout.splitlines()
    assert header.split() == ["SESSION", "LAST", "ACTIVITY", "TURNS", "FIRST", "PROMPT"]
    assert [row.split()[0] for row in rows] == [ids[1], ids[0]]
    assert rows[0].split()[3:] == ["2", "second", "question"]  # two prompts, the first one shown
    assert rows[1].split()[3:] == ["1", "first", "question"]


def test_a_truncated_last_line_is_left_out_and_the_session_goes_on(project: Path, claude_dir: Path) -> None:
    with ScriptedOpenAI([text_reply("one")]) as model:
        session_id = session_of(ask(model, project, "-p", "q1"))
    path = sessions_dir(claude_dir, project) / f"{session_id}.jsonl"
    complete = lines_of(path)
    half = '{"parentUuid":"' + complete[-1]["uuid"] + '","type":"user","message":{"role":"user","cont'
    with path.open("a", encoding="utf-8") as file:
        file.write(half)  # a crash mid-write: no newline
    with ScriptedOpenAI([text_reply("two")]) as model:
        result = ask(model, project, "--resume", session_id, "-p", "q2")
        [request] = model.requests
    assert result.status == 0, result.stderr
    assert [m["content"] for m in request["messages"][1:]] == ["q1", "one", "q2"]
    raw = path.read_text(encoding="utf-8").splitlines()
    assert raw[len(complete)] == half  # kept, alone on its line
    after = [json.loads(line) for line in raw[len(complete) + 1 :]]
    assert after[0]["parentUuid"] == complete[-1]["uuid"]
    assert_chain_is_whole(complete + after)


def test_foreign_records_are_tolerated_and_kept(project: Path, claude_dir: Path) -> None:
    directory = sessions_dir(claude_dir, project)
    directory.mkdir(parents=True)
    session_id = "3f0c9b1e-6a2d-4c8e-9f1a-2b7d5e8c4a10"
    path = directory / f"{session_id}.jsonl"
    fixture = (Path(__file__).parent.parent / "transcripts" / "claude_code_written.jsonl").read_bytes()
    path.write_bytes(fixture)
    with ScriptedOpenAI([text_reply("ok")]) as model:
        result = ask(model, project, "--resume", session_id, "-p", "go on")
        [request] = model.requests
    assert result.status == 0, result.stderr
    assert request["messages"][1:] == [
        {"role": "user", "content": "What does README.md say?"},
        {
            "role": "assistant",
            "content": "Let me read it.",
            "tool_calls": [
                {
                    "id": "toolu_01asyncaiCall0001",
                    "type": "function",
                    "function": {"name": "mcp__fs__read_file", "arguments": '{"path":"README.md"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_01asyncaiCall0001", "content": "# proj\nA demo project."},
        {"role": "assistant", "content": 'README.md says: "A demo project."'},
        {"role": "user", "content": f"go on\n\n{RESTART_NOTE}"},
    ]
    assert path.read_bytes().startswith(fixture)  # nothing rewritten


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--resume", "6a0c7e3e-0000-4000-8000-000000000000"],
            "no session 6a0c7e3e-0000-4000-8000-000000000000 in ",
        ),
        (["--resume", "latest"], "--resume takes a session id (a UUID"),
        (["--session-id", "nope"], "--session-id takes a session id (a UUID"),
        (["-c"], "no session to continue: none recorded for "),
        (["--no-session", "-c"], "--no-session cannot be combined with --continue"),
        (["--resume", "6a0c7e3e-0000-4000-8000-000000000000", "-c"], "not allowed with argument"),
    ],
)
def test_bad_session_options_are_one_line_and_exit_2(project: Path, argv: list[str], message: str) -> None:
    result = asyncai("--model", "m", "--base-url", "http://127.0.0.1:9/v1", *argv, "-p", "x", cwd=project)
    assert result.status == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("asyncai: ")
    assert message in result.stderr


def test_a_file_that_is_not_a_transcript_is_refused_untouched(project: Path, claude_dir: Path) -> None:
    directory = sessions_dir(claude_dir, project)
    directory.mkdir(parents=True)
    session_id = str(uuid.uuid4())
    path = directory / f"{session_id}.jsonl"
    path.write_bytes(b"hello\n\xff\xfe not json\n[1, 2]\n")
    result = asyncai("--model", "m", "--resume", session_id, "-p", "x", cwd=project)
    assert result.status == 2
    assert (
        result.stderr
        == f"asyncai: {path} is not a Claude Code transcript: it has no user or assistant records\n"
    )
    assert path.read_bytes() == b"hello\n\xff\xfe not json\n[1, 2]\n"


def test_session_id_no_session_and_verbose(project: Path, claude_dir: Path) -> None:
    chosen = str(uuid.uuid4())
    with ScriptedOpenAI([text_reply("a"), text_reply("b")]) as model:
        named = ask(model, project, "--session-id", chosen, "-p", "q")
        unrecorded = ask(model, project, "--no-session", "-p", "q")
    assert session_of(named) == chosen
    assert unrecorded.status == 0 and "session" not in unrecorded.stderr
    assert [p.name for p in sessions_dir(claude_dir, project).iterdir()] == [f"{chosen}.jsonl"]
    again = asyncai("--model", "m", "--session-id", chosen, "-p", "q", cwd=project)
    assert again.status == 2
    assert again.stderr == f"asyncai: session {chosen} already exists: continue it with --resume {chosen}\n"
    with ScriptedOpenAI([text_reply("c")]) as model:
        verbose = ask(model, project, "--verbose", "--resume", chosen, "-p", "q2")
    assert verbose.status == 0
    assert [e["id"] for e in verbose.log() if e["event"] == "session"] == [chosen]
    assert all(line.startswith("{") for line in verbose.stderr.splitlines())


def test_jsonl_threads_are_sessions_of_their_own(project: Path, claude_dir: Path) -> None:
    stdin = "".join(json.dumps({"thread": t, "text": f"hello from {t}"}) + "\n" for t in ("t1", "t2"))
    with ScriptedOpenAI([text_reply("hi"), text_reply("hi")]) as model:
        result = ask(model, project, "--jsonl", stdin=stdin)
    assert result.status == 0, result.stderr
    replies = {line["thread"]: line["session"] for line in map(json.loads, result.stdout.splitlines())}
    assert len(set(replies.values())) == 2
    for thread, session_id in replies.items():
        [prompt, _reply] = lines_of(sessions_dir(claude_dir, project) / f"{session_id}.jsonl")
        assert prompt["message"]["content"] == f"hello from {thread}"
    assert sorted(line.removeprefix("session: ") for line in result.stderr.splitlines()) == sorted(
        replies.values()
    )


def test_sessions_lists_nothing_in_a_new_directory(project: Path) -> None:
    result = asyncai("sessions", cwd=project)
    assert result.status == 0
    assert result.stdout.startswith(f"no sessions recorded for {project}")


def test_a_failed_run_is_not_sent_again_on_resume(project: Path, claude_dir: Path) -> None:
    with ScriptedOpenAI([text_reply("one")]) as model:
        session_id = session_of(ask(model, project, "-p", "q1"))
    with ScriptedOpenAI([{"status": 400, "error": "bad request"}]) as model:
        failed = ask(model, project, "--resume", session_id, "-p", "q2 fails")
    assert failed.status == 1 and session_of(failed) == session_id
    with ScriptedOpenAI([text_reply("three")]) as model:
        ask(model, project, "--resume", session_id, "-p", "q3")
        [request] = model.requests
    assert [m["content"] for m in request["messages"][1:]] == ["q1", "one", "q3"]
    path = sessions_dir(claude_dir, project) / f"{session_id}.jsonl"
    assert "q2 fails" in path.read_text()  # kept in the file, on a branch of its own
    seen = [*request["messages"], {"role": "assistant", "content": "three"}]
    assert claude_code.conversation(path) == claude_code.from_openai(seen)


def test_session_files_named_in_upper_case_resume_by_the_listed_id(project: Path, claude_dir: Path) -> None:
    with ScriptedOpenAI([text_reply("one")]) as model:
        session_id = session_of(ask(model, project, "-p", "q1"))
    directory = sessions_dir(claude_dir, project)
    (directory / f"{session_id}.jsonl").rename(directory / f"{session_id.upper()}.jsonl")
    listed = asyncai("sessions", cwd=project).stdout.splitlines()[1].split()[0]
    assert listed == session_id.upper()
    with ScriptedOpenAI([text_reply("two")]) as model:
        result = ask(model, project, "--resume", listed, "-p", "q2")
        [request] = model.requests
    assert result.status == 0, result.stderr
    assert [m["content"] for m in request["messages"][1:]] == ["q1", "one", "q2"]


def test_config_no_session_yields_to_a_typed_session_option(project: Path, claude_dir: Path) -> None:
    config = project / "config.toml"
    config.write_text(f'no_session = true\nresume = "{uuid.uuid4()}"\n')
    with ScriptedOpenAI([text_reply("a"), text_reply("b")]) as model:
        quiet = ask(model, project, "--config", str(config), "-p", "q")
        named = ask(model, project, "--config", str(config), "--session-id", str(uuid.uuid4()), "-p", "q")
    warning = f"asyncai: warning: config file {config}: --resume can only be given on the command line"
    assert quiet.stderr.splitlines() == [warning]  # recorded nothing, and the resume key was ignored
    assert quiet.status == 0
    assert named.status == 0 and session_of(named)
    both = asyncai("--config", str(config), "--model", "m", "--no-session", "-c", "-p", "q", cwd=project)
    assert both.stderr.endswith("asyncai: --no-session cannot be combined with --continue\n")


def test_a_sessions_directory_that_cannot_be_searched_is_one_line(project: Path, tmp_path: Path) -> None:
    too_long = tmp_path / ("x" * 300)  # ENAMETOOLONG from the file system
    result = asyncai(
        "--model",
        "m",
        "--resume",
        str(uuid.uuid4()),
        "-p",
        "q",
        cwd=project,
        env={"CLAUDE_CONFIG_DIR": str(too_long)},
    )
    assert result.status == 2
    assert result.stderr.startswith("asyncai: cannot look for session ") and result.stderr.count("\n") == 1
