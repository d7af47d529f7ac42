"""How asyncai answers what MCP servers ask, without processes: forms filled with their defaults or
checked against their schema, each elicitation and sampling policy with a scripted person and
model, the sampling budget, the SDK callbacks declared, and the roots offered."""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp.types as mt
import pytest
from mcp import Client
from mcp.server.mcpserver import Context, MCPServer

from asyncai import wording
from asyncai.cli.settings import Settings, server_requests
from asyncai.tools.mcp.asking import (
    FormAnswer,
    Sample,
    SampleRequest,
    SamplingBudget,
    defaults_answer,
    field_choices,
    form_problem,
)
from asyncai.tools.mcp.server_requests import ServerRequests, roots_from

pytestmark = pytest.mark.anyio

SETTINGS = {
    "type": "object",
    "properties": {
        "colour": {"type": "string", "default": "teal"},
        "size": {"type": "integer", "default": 3},
        "note": {"type": "string"},
    },
    "required": ["colour", "size"],
}
"""Every required field has a default; ``note`` (optional) has none."""

PROFILE = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer", "default": 30},
        "ratio": {"type": "number"},
        "agree": {"type": "boolean"},
        "friend": {"type": "string", "enum": ["Monica", "Joey"]},
        "hero": {"type": "string", "oneOf": [{"const": "hero-1"}, {"const": "hero-2"}]},
        "fish": {"type": "array", "items": {"anyOf": [{"const": "fish-1"}, {"const": "fish-2"}]}},
    },
    "required": ["name"],
}
"""Like server-everything's form: ``name`` is required and has no default."""


@pytest.fixture(autouse=True)
def library_wording(monkeypatch: pytest.MonkeyPatch) -> None:
    """Library wording, whatever an earlier test in this process told ``use_flags``."""
    monkeypatch.setattr(wording, "_flags", {})


DECLINE = FormAnswer("decline")


class Person:
    """A ``Person`` answering from a script and recording every question."""

    def __init__(
        self,
        form: FormAnswer | Exception = DECLINE,
        url: FormAnswer = DECLINE,
        sampling: bool = False,
    ) -> None:
        self.form = form
        self.url = url
        self.sampling = sampling
        self.forms: list[tuple[str, str, dict[str, Any]]] = []
        self.urls: list[tuple[str, str, str, str | None]] = []
        self.previews: list[tuple[str, str]] = []

    async def fill_form(self, server: str, message: str, schema: dict[str, Any]) -> FormAnswer:
        self.forms.append((server, message, schema))
        if isinstance(self.form, Exception):
            raise self.form
        return self.form

    async def visit_url(self, server: str, message: str, url: str, elicitation_id: str | None) -> FormAnswer:
        self.urls.append((server, message, url, elicitation_id))
        return self.url

    async def allow_sampling(self, server: str, preview: str) -> bool:
        self.previews.append((server, preview))
        return self.sampling


class Sampler:
    """A ``Sampler`` answering ``text`` and recording the requests; ``tokens`` used per answer."""

    def __init__(self, text: str = "sampled text", tokens: tuple[int, int] = (10, 5)) -> None:
        self.text = text
        self.tokens = tokens
        self.requests: list[SampleRequest] = []

    async def sample(self, request: SampleRequest) -> Sample:
        self.requests.append(request)
        return Sample(self.text, "scripted-model", *self.tokens, stop_reason="maxTokens")


class FailingSampler:
    async def sample(self, request: SampleRequest) -> Sample:
        raise ConnectionError("the model is down")


def form(schema: dict[str, Any], message: str = "Fill this in") -> mt.ElicitRequestFormParams:
    return mt.ElicitRequestFormParams(message=message, requested_schema=schema)


def url_question() -> mt.ElicitRequestURLParams:
    return mt.ElicitRequestURLParams(
        message="Sign in, please", url="https://example.com/sign-in", elicitation_id="e-1"
    )


def sampling_params(max_tokens: int = 50, text: str = "What is 6 x 7?") -> mt.CreateMessageRequestParams:
    return mt.CreateMessageRequestParams(
        messages=[
            mt.SamplingMessage(role="user", content=mt.TextContent(type="text", text="Earlier")),
            mt.SamplingMessage(role="assistant", content=mt.TextContent(type="text", text="Noted")),
            mt.SamplingMessage(role="user", content=mt.TextContent(type="text", text=text)),
        ],
        system_prompt="Be brief.",
        max_tokens=max_tokens,
        temperature=0.25,
    )


# -- defaults_answer -----------------------------------------------------------------------------


def test_defaults_answer_fills_a_form_whose_required_fields_all_have_defaults() -> None:
    assert defaults_answer(SETTINGS) == {"colour": "teal", "size": 3}  # no default: left out
    assert defaults_answer({"type": "object", "properties": {"a": {"type": "string"}}}) == {}
    assert defaults_answer({"type": "object"}) == {}


def test_defaults_answer_is_none_when_a_required_field_has_no_default() -> None:
    assert defaults_answer(PROFILE) is None
    assert defaults_answer({"type": "object", "required": ["x"]}) is None
    assert defaults_answer({**SETTINGS, "required": ["colour", "note"]}) is None


# -- form_problem and field_choices --------------------------------------------------------------


def test_an_answer_that_fits_has_no_problem() -> None:
    content = {
        "name": "Ada",
        "age": 36,
        "ratio": 1,  # an int is a number
        "agree": False,
        "friend": "Joey",
        "hero": "hero-2",
        "fish": ["fish-1", "fish-2"],
        "unknown": object(),  # fields the form does not describe are not checked
    }
    assert form_problem(PROFILE, content) is None
    assert form_problem(PROFILE, {"name": "Ada"}) is None


def test_a_missing_required_field_is_a_problem() -> None:
    assert form_problem(PROFILE, {"age": 3}) == "name is required"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ({"name": 7}, "name: expected string"),
        ({"name": "Ada", "age": "36"}, "age: expected integer"),
        ({"name": "Ada", "age": 3.5}, "age: expected integer"),
        ({"name": "Ada", "ratio": "1.5"}, "ratio: expected number"),
        ({"name": "Ada", "agree": "yes"}, "agree: expected boolean"),
        ({"name": "Ada", "agree": 1}, "agree: expected boolean"),
        ({"name": "Ada", "fish": "fish-1"}, "fish: expected a list"),
    ],
)
def test_a_value_of_the_wrong_type_is_a_problem(content: dict[str, Any], problem: str) -> None:
    assert form_problem(PROFILE, content) == problem


def test_a_bool_is_not_an_integer_nor_a_number() -> None:
    assert form_problem(PROFILE, {"name": "Ada", "age": True}) == "age: expected integer"
    assert form_problem(PROFILE, {"name": "Ada", "ratio": False}) == "ratio: expected number"


def test_a_number_must_be_finite() -> None:
    assert form_problem(PROFILE, {"name": "Ada", "ratio": math.inf}) == "ratio: expected a finite number"
    assert form_problem(PROFILE, {"name": "Ada", "ratio": math.nan}) == "ratio: expected a finite number"


def test_a_value_outside_the_choices_is_a_problem() -> None:
    assert (
        form_problem(PROFILE, {"name": "Ada", "friend": "Ross"})
        == "friend: 'Ross' is not one of Monica, Joey"
    )
    assert (
        form_problem(PROFILE, {"name": "Ada", "hero": "hero-9"})
        == "hero: 'hero-9' is not one of hero-1, hero-2"
    )
    assert (
        form_problem(PROFILE, {"name": "Ada", "fish": ["fish-1", "fish-7"]})
        == "fish: 'fish-7' is not one of fish-1, fish-2"
    )


def test_field_choices_come_from_enum_one_of_and_any_of() -> None:
    assert field_choices({"type": "string", "enum": ["a", "b"]}) == ["a", "b"]
    assert field_choices({"oneOf": [{"const": "x", "title": "X"}, {"title": "no const"}]}) == ["x"]
    assert field_choices({"anyOf": [{"const": 1}, {"const": 2}]}) == [1, 2]
    assert field_choices({"type": "string"}) == []


# -- elicitation ----------------------------------------------------------------------------------


async def test_decline_declines_without_asking() -> None:
    person = Person(form=FormAnswer("accept", {"name": "Ada"}), url=FormAnswer("accept"))
    requests = ServerRequests(elicitation="decline", person=person)
    assert await requests.elicit("s", form(SETTINGS)) == mt.ElicitResult(action="decline")
    assert await requests.elicit("s", url_question()) == mt.ElicitResult(action="decline")
    assert person.forms == [] and person.urls == []


async def test_the_default_policy_is_decline() -> None:
    result = await ServerRequests(
        person=Person(form=FormAnswer("accept", {"colour": "red", "size": 1}))
    ).elicit("s", form(SETTINGS))
    assert result.action == "decline"


async def test_accept_defaults_accepts_a_form_whose_required_fields_have_defaults() -> None:
    person = Person(form=FormAnswer("accept", {"colour": "red", "size": 1}))
    requests = ServerRequests(elicitation="accept-defaults", person=person)
    result = await requests.elicit("s", form(SETTINGS))
    assert result == mt.ElicitResult(action="accept", content={"colour": "teal", "size": 3})
    assert person.forms == [], "accept-defaults answers alone"


async def test_accept_defaults_declines_a_form_with_a_required_field_without_default() -> None:
    requests = ServerRequests(elicitation="accept-defaults", person=Person())
    assert await requests.elicit("s", form(PROFILE)) == mt.ElicitResult(action="decline")


async def test_ask_hands_the_form_to_the_person_and_sends_their_answer() -> None:
    content: dict[str, Any] = {"name": "Ada", "age": 36, "fish": ["fish-2"]}
    person = Person(form=FormAnswer("accept", content))
    requests = ServerRequests(elicitation="ask", person=person)
    result = await requests.elicit("everything", form(PROFILE, "Who are you?"))
    assert result == mt.ElicitResult(action="accept", content=content)
    assert person.forms == [("everything", "Who are you?", PROFILE)]


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_ask_sends_the_persons_decline_or_cancel(action: Any) -> None:
    requests = ServerRequests(elicitation="ask", person=Person(form=FormAnswer(action)))
    assert await requests.elicit("s", form(PROFILE)) == mt.ElicitResult(action=action)


async def test_ask_with_nobody_to_ask_declines() -> None:
    requests = ServerRequests(elicitation="ask")
    assert await requests.elicit("s", form(SETTINGS)) == mt.ElicitResult(action="decline")
    assert await requests.elicit("s", url_question()) == mt.ElicitResult(action="decline")


@pytest.mark.parametrize(
    "content",
    [{"age": 3}, {"name": "Ada", "age": "three"}, {"name": "Ada", "friend": "Ross"}, None],
)
async def test_an_answer_that_does_not_fit_the_form_is_cancelled(content: dict[str, Any] | None) -> None:
    person = Person(form=FormAnswer("accept", content))
    result = await ServerRequests(elicitation="ask", person=person).elicit("s", form(PROFILE))
    assert result == mt.ElicitResult(action="cancel")
    assert len(person.forms) == 1


async def test_a_person_who_fails_to_answer_cancels() -> None:
    person = Person(form=RuntimeError("the terminal went away"))
    result = await ServerRequests(elicitation="ask", person=person).elicit("s", form(PROFILE))
    assert result == mt.ElicitResult(action="cancel")
    assert len(person.forms) == 1


async def test_a_url_goes_to_the_person_under_ask_only() -> None:
    person = Person(url=FormAnswer("accept"))
    asked = await ServerRequests(elicitation="ask", person=person).elicit("srv", url_question())
    assert asked == mt.ElicitResult(action="accept")
    assert person.urls == [("srv", "Sign in, please", "https://example.com/sign-in", "e-1")]

    other = Person(url=FormAnswer("accept"))
    defaults = await ServerRequests(elicitation="accept-defaults", person=other).elicit("srv", url_question())
    assert defaults == mt.ElicitResult(action="decline")
    assert other.urls == [], "a URL has no defaults to accept"


async def test_the_persons_answer_to_a_url_is_sent_as_given() -> None:
    person = Person(url=FormAnswer("cancel"))
    result = await ServerRequests(elicitation="ask", person=person).elicit("srv", url_question())
    assert result == mt.ElicitResult(action="cancel")


# -- sampling -------------------------------------------------------------------------------------


async def test_deny_refuses_and_names_the_setting_that_allows_it() -> None:
    sampler = Sampler()
    result = await ServerRequests(sampling="deny", sampler=sampler).sample("s", sampling_params())
    assert isinstance(result, mt.ErrorData)
    assert result.code == mt.INVALID_REQUEST
    assert result.message.startswith("sampling refused: sampling is off")
    assert wording.setting("sampling", "allow") in result.message
    assert sampler.requests == []


async def test_allow_answers_with_the_samplers_text() -> None:
    sampler = Sampler("forty-two")
    requests = ServerRequests(sampling="allow", sampler=sampler)
    result = await requests.sample("s", sampling_params(max_tokens=64))
    assert isinstance(result, mt.CreateMessageResult)
    assert result.role == "assistant"
    assert result.content == mt.TextContent(type="text", text="forty-two")
    assert (result.model, result.stop_reason) == ("scripted-model", "maxTokens")
    [request] = sampler.requests
    assert request == SampleRequest(
        (("user", "Earlier"), ("assistant", "Noted"), ("user", "What is 6 x 7?")), "Be brief.", 64, 0.25
    )
    assert (requests.budget.requests, requests.budget.tokens) == (1, 15)


async def test_allow_without_a_model_refuses() -> None:
    result = await ServerRequests(sampling="allow").sample("s", sampling_params())
    assert isinstance(result, mt.ErrorData)
    assert result.message == "sampling refused: no model to sample from"


async def test_a_failing_model_is_the_servers_error() -> None:
    result = await ServerRequests(sampling="allow", sampler=FailingSampler()).sample("s", sampling_params())
    assert isinstance(result, mt.ErrorData)
    assert result.code == mt.INTERNAL_ERROR
    assert result.message == "sampling failed: the model is down"


async def test_ask_shows_the_person_the_last_message_and_refuses_when_they_say_no() -> None:
    person, sampler = Person(sampling=False), Sampler()
    result = await ServerRequests(sampling="ask", person=person, sampler=sampler).sample(
        "everything", sampling_params()
    )
    assert isinstance(result, mt.ErrorData)
    assert result.message == "sampling refused: the user declined the sampling request"
    assert person.previews == [("everything", "What is 6 x 7?")]
    assert sampler.requests == []


async def test_ask_samples_when_the_person_says_yes() -> None:
    person, sampler = Person(sampling=True), Sampler("yes, sampled")
    result = await ServerRequests(sampling="ask", person=person, sampler=sampler).sample(
        "s", sampling_params()
    )
    assert isinstance(result, mt.CreateMessageResult)
    assert result.content == mt.TextContent(type="text", text="yes, sampled")
    assert len(person.previews) == 1 and len(sampler.requests) == 1


async def test_ask_with_nobody_to_ask_refuses() -> None:
    sampler = Sampler()
    result = await ServerRequests(sampling="ask", sampler=sampler).sample("s", sampling_params())
    assert isinstance(result, mt.ErrorData) and result.message.startswith("sampling refused: ")
    assert "user declined" not in result.message, "nobody was asked, so nobody declined"
    assert sampler.requests == []


async def test_the_request_cap_refuses_further_requests_from_every_server() -> None:
    sampler = Sampler()
    requests = ServerRequests(sampling="allow", sampler=sampler, budget=SamplingBudget(max_requests=2))
    first = await requests.sample("a", sampling_params())
    second = await requests.sample("b", sampling_params())
    third = await requests.sample("a", sampling_params())
    assert isinstance(first, mt.CreateMessageResult) and isinstance(second, mt.CreateMessageResult)
    assert isinstance(third, mt.ErrorData)
    assert third.message == "sampling refused: the sampling budget is spent (2 requests per run)"
    assert len(sampler.requests) == 2


async def test_the_token_cap_counts_what_was_used_and_what_is_wanted() -> None:
    sampler = Sampler(tokens=(40, 20))
    requests = ServerRequests(sampling="allow", sampler=sampler, budget=SamplingBudget(max_tokens=100))
    too_big = await requests.sample("s", sampling_params(max_tokens=101))
    assert isinstance(too_big, mt.ErrorData) and "0 of 100 tokens" in too_big.message
    assert isinstance(await requests.sample("s", sampling_params(max_tokens=40)), mt.CreateMessageResult)
    assert requests.budget.tokens == 60
    over = await requests.sample("s", sampling_params(max_tokens=41))  # 60 used + 41 wanted > 100
    assert isinstance(over, mt.ErrorData)
    assert over.message == "sampling refused: the sampling budget is spent (60 of 100 tokens per run used)"
    assert isinstance(await requests.sample("s", sampling_params(max_tokens=40)), mt.CreateMessageResult)
    assert len(sampler.requests) == 2


async def test_the_budget_is_checked_before_the_person_is_asked() -> None:
    person = Person(sampling=True)
    requests = ServerRequests(
        sampling="ask", person=person, sampler=Sampler(), budget=SamplingBudget(max_requests=0)
    )
    result = await requests.sample("s", sampling_params())
    assert isinstance(result, mt.ErrorData) and "budget is spent" in result.message
    assert person.previews == []


# -- the SDK callbacks ----------------------------------------------------------------------------


async def test_elicitation_is_always_declared_sampling_and_roots_only_when_offered() -> None:
    assert set(ServerRequests().client_callbacks("s")) == {"elicitation_callback"}
    assert set(ServerRequests(sampling="allow").client_callbacks("s")) == {
        "elicitation_callback",
        "sampling_callback",
    }
    assert "sampling_callback" in ServerRequests(sampling="ask").client_callbacks("s")
    # deny is not offering it, model or not: servers do not list tools they cannot run here
    assert "sampling_callback" not in ServerRequests(sampler=Sampler()).client_callbacks("s")
    assert "list_roots_callback" in ServerRequests(roots=(Path("/tmp"),)).client_callbacks("s")


async def test_the_callbacks_answer_for_their_server(tmp_path: Path) -> None:
    person = Person(form=FormAnswer("accept", {"name": "Ada"}))
    sampler = Sampler("via the callback")
    requests = ServerRequests(elicitation="ask", sampling="allow", person=person, sampler=sampler)
    requests.roots = (tmp_path,)  # read when the server asks, so a later change is seen
    callbacks = requests.client_callbacks("named")
    context: Any = None
    elicited = await callbacks["elicitation_callback"](context, form(PROFILE, "Name?"))
    assert elicited == mt.ElicitResult(action="accept", content={"name": "Ada"})
    assert person.forms == [("named", "Name?", PROFILE)]
    sampled = await callbacks["sampling_callback"](context, sampling_params())
    assert isinstance(sampled, mt.CreateMessageResult)
    assert sampled.content == mt.TextContent(type="text", text="via the callback")
    listed = await callbacks["list_roots_callback"](context)
    assert isinstance(listed, mt.ListRootsResult)
    assert [str(root.uri) for root in listed.roots] == [tmp_path.as_uri()]


# -- roots ----------------------------------------------------------------------------------------


def capabilities_server() -> MCPServer:
    """An in-process server whose one tool answers the capabilities its client declared."""
    server = MCPServer("capabilities")

    @server.tool()
    def declared(ctx: Context) -> dict[str, Any]:
        capabilities = ctx.client_capabilities
        assert capabilities is not None
        return capabilities.model_dump(mode="json", by_alias=True, exclude_none=True)

    return server


async def declared_capabilities(requests: ServerRequests) -> dict[str, Any]:
    async with Client(capabilities_server(), mode="legacy", **requests.client_callbacks("s")) as client:
        result = await client.call_tool("declared", {})
    assert isinstance(result.structured_content, dict), result
    return result.structured_content


async def test_no_roots_capability_unless_roots_were_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a working directory that must not become a root
    unnamed = await declared_capabilities(server_requests(Settings()))
    library = await declared_capabilities(ServerRequests())
    named = await declared_capabilities(server_requests(Settings({"root": [str(tmp_path)]})))
    assert "roots" not in unnamed, "the command line offered roots nobody named"
    assert "roots" not in library
    assert "elicitation" in unnamed, "the capabilities were read: elicitation is always declared"
    assert named["roots"] == {"listChanged": True}


def test_roots_are_absolute_file_uris_named_by_their_last_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "home" / "work").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    roots = roots_from(["project", Path("~/work"), tmp_path / "project" / ".."])
    assert [(str(root.uri), root.name) for root in roots] == [
        ((tmp_path / "project").as_uri(), "project"),
        ((tmp_path / "home" / "work").as_uri(), "work"),
        (tmp_path.as_uri(), tmp_path.name),
    ]
    [top] = roots_from(["/"])
    assert (str(top.uri), top.name) == ("file:///", "/")
    assert roots_from([]) == []


class HeldSampler(Sampler):
    """A ``Sampler`` whose first answer waits for ``release``; ``entered`` is set once it is asked."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = anyio.Event()
        self.release = anyio.Event()

    async def sample(self, request: SampleRequest) -> Sample:
        first = not self.requests
        answer = await super().sample(request)
        if first:
            self.entered.set()
            await self.release.wait()
        return answer


async def test_the_request_cap_holds_for_requests_in_flight_at_once() -> None:
    sampler = HeldSampler()
    requests = ServerRequests(sampling="allow", sampler=sampler, budget=SamplingBudget(max_requests=1))
    results: list[mt.CreateMessageResult | mt.ErrorData] = []

    async def first() -> None:
        results.append(await requests.sample("a", sampling_params()))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(first)
            await sampler.entered.wait()  # the first request is with the model now
            second = await requests.sample("b", sampling_params())
            sampler.release.set()
    assert isinstance(results[0], mt.CreateMessageResult)
    assert isinstance(second, mt.ErrorData) and "budget is spent" in second.message
    assert len(sampler.requests) == 1


class Clock:
    """``ServerRequests.waiting``: counts how often it was entered; ``paused`` while inside."""

    def __init__(self) -> None:
        self.paused = False
        self.pauses = 0

    @contextlib.asynccontextmanager
    async def waiting(self) -> AsyncIterator[None]:
        self.pauses += 1
        self.paused = True
        try:
            yield
        finally:
            self.paused = False


class WatchedPerson(Person):
    """Records whether the clock was paused at each question."""

    def __init__(self, clock: Clock, **answers: Any) -> None:
        super().__init__(**answers)
        self.clock = clock
        self.paused_when_asked: list[bool] = []

    async def fill_form(self, server: str, message: str, schema: dict[str, Any]) -> FormAnswer:
        self.paused_when_asked.append(self.clock.paused)
        return await super().fill_form(server, message, schema)

    async def visit_url(self, server: str, message: str, url: str, elicitation_id: str | None) -> FormAnswer:
        self.paused_when_asked.append(self.clock.paused)
        return await super().visit_url(server, message, url, elicitation_id)

    async def allow_sampling(self, server: str, preview: str) -> bool:
        self.paused_when_asked.append(self.clock.paused)
        return await super().allow_sampling(server, preview)


async def test_the_clock_is_paused_while_the_person_answers_and_only_then() -> None:
    clock = Clock()
    person = WatchedPerson(clock, form=FormAnswer("accept", {"name": "Ada"}), sampling=True)
    requests = ServerRequests(
        elicitation="ask", sampling="ask", person=person, sampler=Sampler(), waiting=clock.waiting
    )
    await requests.elicit("s", form(PROFILE))
    await requests.elicit("s", url_question())
    await requests.sample("s", sampling_params())
    assert person.paused_when_asked == [True, True, True]
    assert (clock.pauses, clock.paused) == (3, False)

    requests.elicitation, requests.sampling = "accept-defaults", "allow"
    await requests.elicit("s", form(SETTINGS))
    await requests.sample("s", sampling_params())
    assert clock.pauses == 3, "nobody is asked: the clock runs on"
