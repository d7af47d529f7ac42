"""What real servers ask, answered end to end: npm ``server-everything`` (the 2025 protocol era:
standalone ``elicitation/create``, ``sampling/createMessage``, ``roots/list`` requests) and
``tests/fakes/asking_server.py`` (2026-07-28: the same questions in ``InputRequiredResult`` rounds).

server-everything offers ``trigger-elicitation-request``, ``trigger-sampling-request`` and
``get-roots-list`` only to a client declaring elicitation, sampling and roots; its form requires a
``name`` that has no default.

- ``run-code`` declines by default, offers no roots and no sampling;
  ``--elicitation accept-defaults`` sends a form's defaults only when every required field has one;
  ``--root`` names the roots; ``--sampling allow`` without a model is refused.
- ``-p`` declines; with ``--sampling allow`` the agent's model answers the servers.
- The chat asks the person at the terminal: the form field by field, then whether the model may answer.
- ``serve-mcp`` hands the questions to its own MCP client.

Each scenario is one ``asyncai`` process (with its own scripted model); the module starts them all
at once, in threads, and each test checks one scenario's outcome.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp.types as mt
import pytest
from mcp import Client
from mcp.client.stdio import stdio_client

from tests.cli.conftest import asyncai
from tests.cli.helpers import on_a_terminal
from tests.fakes.openai_server import ScriptedOpenAI, ScriptEntry, call, text_reply, tool_reply
from tests.serve.helpers import stdio_params
from tests.third_party import npm_server

ASKER = "asker=" + shlex.join([sys.executable, str(Path(__file__).parents[2] / "fakes" / "asking_server.py")])
DECLINED = "❌ User declined to provide the requested information."
ACCEPTED = "✅ User provided the requested information!"
SAMPLING_PROMPT = "what is 6*7?"
SAMPLED_FROM = f"Resource trigger-sampling-request context: {SAMPLING_PROMPT}"
"""The user message server-everything sends the model for ``SAMPLING_PROMPT``."""
WAIT = 100.0
"""Seconds a test waits for its scenario (they all run at once)."""

ASK_EVERYTHING = f"""
e = await trigger_elicitation_request()
u = await trigger_url_elicitation(url="https://example.com/sign-in")
try:
    r = await get_roots_list()
except NameError as exc:
    r = "not offered: " + str(exc)
try:
    s = await trigger_sampling_request(prompt="{SAMPLING_PROMPT}")
except NameError as exc:
    s = "not offered: " + str(exc)
{{"elicitation": e, "url": u, "roots": r, "sampling": s}}
"""

FORM_AT_THE_TERMINAL = [
    "fill in the form",  # the chat's prompt
    "y",  # fill it in
    "Ada Lovelace",  # name
    "maybe",  # check: not a yes or no
    "y",
    "",  # firstLine: its default
    "ada@example.com",  # email
    "",  # homepage: optional, left out
    "",  # birthdate: optional, left out
    "seven",  # integer: not a whole number
    "7",
    "2.5",  # number
    "Joey",  # untitledSingleSelectEnum
    "Piano, Drums",  # untitledMultipleSelectEnum
    "hero-2",  # titledSingleSelectEnum
    "fish-3",  # titledMultipleSelectEnum
    "pet-2",  # legacyTitledEnum
    "y",  # the model may answer the server
    "/exit",
]


@dataclass
class Outcome:
    """What one scenario's ``asyncai`` did: its exit status and output, and what its model got."""

    home: Path
    """The scenario's own directory (its working directory is ``home / "project"``)."""
    status: int = 0
    stdout: str = ""
    stderr: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)

    @property
    def project(self) -> Path:
        return self.home / "project"

    def log(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stderr.splitlines() if line.startswith("{")]


@dataclass
class Served:
    """serve-mcp's answers to three ``run_code`` calls, and the questions its client was asked."""

    home: Path
    results: dict[str, mt.CallToolResult] = field(default_factory=dict)
    forms: list[mt.ElicitRequestParams] = field(default_factory=list)
    samplings: list[mt.CreateMessageRequestParams] = field(default_factory=list)
    protocol: str = ""


def value_of(output: str) -> Any:
    """A snippet's value as ``run-code`` prints it (and the model reads it): JSON on the first line."""
    return json.loads(output.splitlines()[0])


def raw_result(texts: list[str]) -> dict[str, Any]:
    """The elicitation result server-everything got, from the ``Raw result:`` block it echoes."""
    [raw] = [text for text in texts if text.startswith("\nRaw result: ")]
    parsed: dict[str, Any] = json.loads(raw.removeprefix("\nRaw result: "))
    return parsed


def sampled(text: str) -> dict[str, Any]:
    """The ``CreateMessageResult`` server-everything got, from its ``LLM sampling result:`` text."""
    assert text.startswith("LLM sampling result: \n"), text
    parsed: dict[str, Any] = json.loads(text.removeprefix("LLM sampling result: \n"))
    return parsed


def tool_results(requests: list[dict[str, Any]]) -> list[Any]:
    """What the model read back from each ``run_code``, in order."""
    return [value_of(message["content"]) for message in requests[-1]["messages"] if message["role"] == "tool"]


def echo_the_prompt(body: dict[str, Any]) -> dict[str, Any]:
    """The scripted model's answer to a sampling request: it quotes the last message."""
    return text_reply(f"SAMPLED <{body['messages'][-1]['content']}>")


def text_of(result: mt.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, mt.TextContent) and not result.is_error, result
    return block.text


# -- the scenarios --------------------------------------------------------------------------------


def run_code_defaults(everything: str, home: Path) -> Outcome:
    outcome = Outcome(home)
    result = asyncai("run-code", "--mcp-stdio", everything, "-c", ASK_EVERYTHING, cwd=outcome.project)
    outcome.status, outcome.stdout, outcome.stderr = result.status, result.stdout, result.stderr
    return outcome


def run_code_accept_defaults(everything: str, home: Path) -> Outcome:
    snippet = f"""
e = await trigger_elicitation_request()
a = await ask_settings()
r = await get_roots_list()
q = await roots()
try:
    s = await trigger_sampling_request(prompt="{SAMPLING_PROMPT}")
except RuntimeError as exc:
    s = str(exc)
{{"everything": e, "asker": a, "roots": r, "asker_roots": q, "sampling": s}}
"""
    outcome = Outcome(home)
    for root in ("alpha", "beta"):
        (home / root).mkdir()
    result = asyncai(
        "run-code", "-v", "--mcp-stdio", everything, "--mcp-stdio", ASKER,
        "--elicitation", "accept-defaults", "--sampling", "allow",
        "--root", str(home / "alpha"), "--root", str(home / "beta"), "-c", snippet, cwd=outcome.project,
    )  # fmt: skip
    outcome.status, outcome.stdout, outcome.stderr = result.status, result.stdout, result.stderr
    return outcome


def agent_defaults(everything: str, home: Path) -> Outcome:
    outcome = Outcome(home)
    script: list[ScriptEntry] = [tool_reply(call("run_code", {"code": ASK_EVERYTHING})), text_reply("noted")]
    with ScriptedOpenAI(script) as model:
        result = asyncai(
            "--base-url", model.base_url, "--model", "m", "--no-session", "--mcp-stdio", everything,
            "-p", "fill in the form", cwd=outcome.project,
        )  # fmt: skip
        outcome.requests = model.requests
    outcome.status, outcome.stdout, outcome.stderr = result.status, result.stdout, result.stderr
    return outcome


def agent_sampling_allowed(everything: str, home: Path) -> Outcome:
    snippet = (
        "a = await summarise(text='a long story')\n"
        f"s = await trigger_sampling_request(prompt='{SAMPLING_PROMPT}', maxTokens=64)\n"
        "[a, s]"
    )
    script: list[ScriptEntry] = [
        tool_reply(call("run_code", {"code": snippet})),
        echo_the_prompt,  # the asker's sampling request
        echo_the_prompt,  # server-everything's
        text_reply("done"),
    ]
    outcome = Outcome(home)
    with ScriptedOpenAI(script) as model:
        result = asyncai(
            "--base-url", model.base_url, "--model", "m", "--no-session",
            "--mcp-stdio", everything, "--mcp-stdio", ASKER, "--sampling", "allow",
            "-p", "summarise", cwd=outcome.project,
        )  # fmt: skip
        outcome.requests = model.requests
    outcome.status, outcome.stdout, outcome.stderr = result.status, result.stdout, result.stderr
    return outcome


def chat_at_the_terminal(everything: str, home: Path) -> Outcome:
    snippet = (
        "e = await trigger_elicitation_request()\n"
        f"s = await trigger_sampling_request(prompt='{SAMPLING_PROMPT}', maxTokens=64)\n"
        "[e, s]"
    )
    script: list[ScriptEntry] = [
        tool_reply(call("run_code", {"code": snippet})),
        echo_the_prompt,
        text_reply("thanks"),
    ]
    outcome = Outcome(home)
    with ScriptedOpenAI(script) as model:
        # Mutating calls would be asked about first (the chat's default): this test is about what servers ask.
        argv = ["--base-url", model.base_url, "--model", "m", "--no-session", "--mutations", "allow"]
        chat = on_a_terminal(
            [*argv, "--mcp-stdio", everything],
            "".join(f"{line}\n" for line in FORM_AT_THE_TERMINAL),
            home / "state",
            cwd=outcome.project,
        )
        outcome.requests = model.requests
    outcome.status, outcome.stdout, outcome.stderr = chat.returncode, chat.stdout, chat.stderr
    return outcome


def serve_mcp(everything: str, home: Path, mode: Literal["legacy", "auto"] = "legacy") -> Served:
    """A 2025-era client: the questions reach it as requests of their own."""
    served = Served(home)

    async def elicit(context: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        served.forms.append(params)
        return mt.ElicitResult(action="accept", content={"name": "Grace Hopper", "check": True, "integer": 9})

    async def sample(context: Any, params: mt.CreateMessageRequestParams) -> mt.CreateMessageResult:
        served.samplings.append(params)
        reply = mt.TextContent(type="text", text="the client's model says 42")
        return mt.CreateMessageResult(role="assistant", content=reply, model="client-model")

    snippets = {
        "elicitation": "await trigger_elicitation_request()",
        "sampling": f"await trigger_sampling_request(prompt='{SAMPLING_PROMPT}', maxTokens=20)",
        "roots": "await get_roots_list()",
    }

    async def session() -> None:
        project = str(home / "project")  # the working directory, and the root: roots only when named
        params = stdio_params("--mcp-stdio", everything, "--root", project)
        params = params.model_copy(update={"cwd": project})
        with anyio.fail_after(WAIT):
            async with Client(
                stdio_client(params), mode=mode, elicitation_callback=elicit, sampling_callback=sample
            ) as client:
                served.protocol = client.protocol_version
                for name, code in snippets.items():
                    served.results[name] = await client.call_tool("run_code", {"code": code})

    anyio.run(session)
    return served


def serve_mcp_stateless(everything: str, home: Path) -> Served:
    """A 2026-07-28 client: a request cannot carry a question, so each comes back as the
    ``input_required`` answer of ``run_code`` while the snippet waits, and the retry answers it."""
    return serve_mcp(everything, home, mode="auto")


SCENARIOS: dict[str, Callable[[str, Path], Any]] = {
    scenario.__name__: scenario
    for scenario in (
        run_code_defaults,
        run_code_accept_defaults,
        agent_defaults,
        agent_sampling_allowed,
        chat_at_the_terminal,
        serve_mcp,
        serve_mcp_stateless,
    )
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Future[Any]]]:
    """Every scenario, started at once; each in its own directory, state and sessions kept there."""
    everything = "everything=" + npm_server("everything", "stdio")
    base = tmp_path_factory.mktemp("asking")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("XDG_STATE_HOME", str(base / "state"))
        env.setenv("CLAUDE_CONFIG_DIR", str(base / "claude"))
        with ThreadPoolExecutor(max_workers=len(SCENARIOS), thread_name_prefix="scenario") as pool:
            futures = {}
            for name, scenario in SCENARIOS.items():
                (base / name / "project").mkdir(parents=True)
                futures[name] = pool.submit(scenario, everything, base / name)
            yield futures


def outcome_of(runs: dict[str, Future[Any]], scenario: Callable[[str, Path], Outcome]) -> Outcome:
    outcome: Outcome = runs[scenario.__name__].result(timeout=WAIT)
    assert outcome.status == 0, outcome.stderr
    return outcome


# -- run-code -------------------------------------------------------------------------------------


def test_run_code_declines_and_offers_no_roots_and_no_sampling(runs: dict[str, Future[Any]]) -> None:
    outcome = outcome_of(runs, run_code_defaults)
    value = value_of(outcome.stdout)
    assert value["elicitation"][0] == DECLINED
    assert raw_result(value["elicitation"]) == {"action": "decline"}
    assert value["url"][0].startswith("❌ User declined to open the URL")
    assert raw_result(value["url"]) == {"action": "decline"}
    # No --root: no roots capability, so the server keeps its own (issue 34).
    assert value["roots"] == "not offered: name 'get_roots_list' is not defined"
    assert value["sampling"] == "not offered: name 'trigger_sampling_request' is not defined"


def test_run_code_accept_defaults_roots_and_sampling_without_a_model(runs: dict[str, Future[Any]]) -> None:
    outcome = outcome_of(runs, run_code_accept_defaults)
    alpha, beta = outcome.home / "alpha", outcome.home / "beta"
    value = value_of(outcome.stdout)
    # server-everything's form requires a name without a default: declined, nobody asked.
    assert value["everything"][0] == DECLINED and raw_result(value["everything"]) == {"action": "decline"}
    # Every required field of the asker's form has a default: accepted with them.
    assert value["asker"] == {"action": "accept", "content": {"colour": "teal", "size": 3}}
    answered = [
        (line["server"], line["policy"], line["action"])
        for line in outcome.log()
        if line.get("event") == "mcp.elicitation"
    ]
    assert answered == [("everything", "accept-defaults", "decline"), ("asker", "accept-defaults", "accept")]
    # --root names the roots, for servers of both eras.
    assert value["roots"].startswith("Current MCP Roots (2 total):")
    assert f"URI: {alpha.as_uri()}\n" in value["roots"] and f"URI: {beta.as_uri()}\n" in value["roots"]
    assert outcome.project.as_uri() not in value["roots"]
    assert value["asker_roots"] == [alpha.as_uri(), beta.as_uri()]
    # Sampling is offered (--sampling allow), but run-code has no model to answer with.
    assert "sampling refused: no model to sample from" in value["sampling"]


# -- the agent, run once --------------------------------------------------------------------------


def test_the_agent_run_once_declines_and_offers_no_sampling(runs: dict[str, Future[Any]]) -> None:
    outcome = outcome_of(runs, agent_defaults)
    requests = outcome.requests
    assert outcome.stdout == "noted\n"
    assert len(requests) == 2, "nothing but the agent's own turns reached the model"
    description = requests[0]["tools"][0]["function"]["description"]
    assert "trigger_elicitation_request(" in description and "trigger_sampling_request(" not in description
    [value] = tool_results(requests)
    assert value["elicitation"][0] == DECLINED and raw_result(value["elicitation"]) == {"action": "decline"}
    assert value["sampling"] == "not offered: name 'trigger_sampling_request' is not defined"


def test_with_sampling_allowed_the_agents_model_answers_the_servers(runs: dict[str, Future[Any]]) -> None:
    outcome = outcome_of(runs, agent_sampling_allowed)
    requests = outcome.requests
    assert outcome.stdout == "done\n"
    assert len(requests) == 4
    modern, legacy = requests[1], requests[2]
    for body in (modern, legacy):
        assert body["model"] == "m" and "tools" not in body, "a plain completion on the agent's model"
    assert modern["messages"] == [
        {"role": "system", "content": "You summarise."},
        {"role": "user", "content": "Summarise: a long story"},
    ]
    assert modern["max_tokens"] == 32
    assert legacy["messages"] == [
        {"role": "system", "content": "You are a helpful test server."},
        {"role": "user", "content": SAMPLED_FROM},
    ]
    assert (legacy["max_tokens"], legacy["temperature"]) == (64, 0.7)
    [[summary, sampling]] = tool_results(requests)
    assert summary == "m: SAMPLED <Summarise: a long story>"
    got = sampled(sampling)
    assert got["content"] == {"type": "text", "text": f"SAMPLED <{SAMPLED_FROM}>"}
    assert (got["model"], got["role"], got["stopReason"]) == ("m", "assistant", "endTurn")


# -- the chat -------------------------------------------------------------------------------------


def test_the_chat_asks_the_person_at_the_terminal(runs: dict[str, Future[Any]]) -> None:
    outcome = outcome_of(runs, chat_at_the_terminal)
    out, requests = outcome.stdout, outcome.requests
    assert "server everything asks: Please provide inputs for the following fields:" in out
    assert "String (text, required) - Your full, legal name: " in out
    assert "answer yes or no: " in out and "a whole number, please: " in out
    assert f"server everything wants the model to answer:\n  {SAMPLED_FROM}\nallow? [y] yes, [n] no: " in out
    assert out.rstrip().endswith("thanks\nyou>")
    assert len(requests) == 3 and requests[1]["messages"][-1] == {"role": "user", "content": SAMPLED_FROM}
    [[form, sampling]] = tool_results(requests)
    assert form[0] == ACCEPTED
    assert "- Name: Ada Lovelace\n- Agreed to terms: true\n- Email: ada@example.com" in form[1]
    assert raw_result(form) == {
        "action": "accept",
        "content": {
            "name": "Ada Lovelace",
            "check": True,
            "firstLine": "It was a dark and stormy night.",
            "email": "ada@example.com",
            "integer": 7,
            "number": 2.5,
            "untitledSingleSelectEnum": "Joey",
            "untitledMultipleSelectEnum": ["Piano", "Drums"],
            "titledSingleSelectEnum": "hero-2",
            "titledMultipleSelectEnum": ["fish-3"],
            "legacyTitledEnum": "pet-2",
        },
    }
    assert sampled(sampling)["content"]["text"] == f"SAMPLED <{SAMPLED_FROM}>"


# -- serve-mcp ------------------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", [serve_mcp, serve_mcp_stateless], ids=["2025", "2026-stateless"])
def test_serve_mcp_hands_the_questions_to_its_client(
    runs: dict[str, Future[Any]], scenario: Callable[[str, Path], Served]
) -> None:
    served: Served = runs[scenario.__name__].result(timeout=WAIT)
    assert served.protocol == ("2026-07-28" if scenario is serve_mcp_stateless else "2025-11-25")

    [form] = served.forms
    assert isinstance(form, mt.ElicitRequestFormParams)
    assert form.message == "Please provide inputs for the following fields:"
    assert form.requested_schema["required"] == ["name"]
    assert "untitledMultipleSelectEnum" in form.requested_schema["properties"]
    texts = value_of(text_of(served.results["elicitation"]))
    assert texts[0] == ACCEPTED and "- Name: Grace Hopper" in texts[1]
    assert raw_result(texts) == {
        "action": "accept",
        "content": {"name": "Grace Hopper", "check": True, "integer": 9},
    }

    [asked] = served.samplings
    assert asked.max_tokens == 20 and asked.system_prompt == "You are a helpful test server."
    assert asked.messages[-1].content == mt.TextContent(type="text", text=SAMPLED_FROM)
    got = sampled(text_of(served.results["sampling"]))
    assert got["content"]["text"] == "the client's model says 42" and got["model"] == "client-model"

    assert f"URI: {(served.home / 'project').as_uri()}" in text_of(served.results["roots"])


@pytest.mark.anyio
async def test_new_roots_reach_a_2025_server_through_the_change_notice(tmp_path: Path) -> None:
    """``McpServers.set_roots``: a 2025-era server is told the list changed, asks for it again, and
    its ``get-roots-list`` then shows the new directory."""
    from asyncai import McpServers, ServerRequests, stdio_spec

    asked = anyio.Event()

    class Recording(ServerRequests):
        def client_callbacks(self, server: str) -> dict[str, Any]:
            callbacks = super().client_callbacks(server)
            answer = callbacks["list_roots_callback"]

            async def list_roots(context: Any) -> mt.ListRootsResult:
                result: mt.ListRootsResult = await answer(context)
                if any(root.name == "later" for root in result.roots):
                    asked.set()
                return result

            return {**callbacks, "list_roots_callback": list_roots}

    first, later = tmp_path / "first", tmp_path / "later"
    first.mkdir()
    later.mkdir()
    requests = Recording(roots=(first,))
    async with McpServers(
        [stdio_spec(npm_server("everything", "stdio"), name="everything")], requests=requests
    ) as servers:
        before = await servers.call_tool("get-roots-list", {})
        await servers.set_roots([later])
        with anyio.fail_after(30):
            await asked.wait()
        after = await servers.call_tool("get-roots-list", {})
    assert first.as_uri() in before.content and later.as_uri() not in before.content
    assert later.as_uri() in after.content and first.as_uri() not in after.content
