"""Tool search over a small synthetic catalog: ranking, close names, ``describe_tool``, the limit,
and the answers the dispatcher hands back to a snippet."""

from __future__ import annotations

import json
from typing import Any

import pytest

from asyncai.code_mode.catalog.entries import build_catalog
from asyncai.code_mode.catalog.host_functions import DESCRIBE_TOOL, SEARCH_TOOLS
from asyncai.code_mode.catalog.search import ToolFinder, ToolIndex, closest_names, words_of_name
from asyncai.tools.types import ToolDefinition


def tool(name: str, description: str, *parameters: str) -> ToolDefinition:
    schema = {
        "type": "object",
        "properties": {p: {"type": "string"} for p in parameters},
        "required": list(parameters[:1]),
    }
    return ToolDefinition(name=name, description=description, input_schema=schema, read_only=True)


TOOLS = [
    tool("kv_namespace_delete", "Remove a KV namespace and every key in it.", "namespace_id"),
    tool("kv_namespace_list", "List the KV namespaces of an account.", "account_id"),
    # The words "weather" and "forecast" are only in the name: found by splitting camelCase.
    tool("getWeatherForecast", "Tomorrow's outlook for a city.", "city"),
    tool("send-email", "Deliver a message.", "recipient", "subject"),
    tool("list_pods", "List the pods in a Kubernetes namespace.", "namespace"),
    tool("delete_pod", "Delete one pod.", "name", "namespace"),
]
CATALOG = build_catalog(TOOLS)


@pytest.fixture(scope="module")
def finder() -> ToolFinder:
    """One finder for the module: its index is built on the first search, as in a real catalog."""
    return ToolFinder(CATALOG)


def names(found: list[dict[str, str]]) -> list[str]:
    return [hit["name"] for hit in found if "name" in hit]


@pytest.mark.parametrize(
    ("query", "intended"),
    [
        ("delete a kv namespace", "kv_namespace_delete"),
        ("list the kv namespaces", "kv_namespace_list"),
        ("weather forecast", "getWeatherForecast"),
        ("send an email", "send_email"),
        ("recipient and subject", "send_email"),  # only parameter names have these words
        ("kubernetes pods", "list_pods"),
        ("delete pod", "delete_pod"),
    ],
)
def test_the_intended_tool_comes_first(finder: ToolFinder, query: str, intended: str) -> None:
    assert names(finder.search(query))[0] == intended


def test_every_hit_has_a_summary_and_a_signature(finder: ToolFinder) -> None:
    [hit] = finder.search("weather")
    assert hit == {
        "name": "getWeatherForecast",
        "summary": "Tomorrow's outlook for a city.",
        "signature": "getWeatherForecast(*, city: str) -> Any",
    }


def test_asyncais_own_functions_are_not_search_results(finder: ToolFinder) -> None:
    assert finder.search("catalog function stub") == []  # describe_tool's own words
    assert finder.search("resources") == []


def test_a_query_with_no_known_words_finds_nothing(finder: ToolFinder) -> None:
    assert finder.search("zebra quartz") == []
    assert finder.search("the of and") == []  # stop words only
    assert finder.search("   ") == []


def test_the_limit_cuts_the_hits_and_says_how_many_matched(finder: ToolFinder) -> None:
    everything = finder.search("namespace")
    assert len(everything) == 4 and "more" not in everything[-1]
    found = finder.search("namespace", limit=2)
    assert [hit["name"] for hit in found] == names(everything)[:2]  # every element is a match
    assert found[-1]["more"] == "showing 2 of 4 matches: raise limit or narrow the query"
    assert "more" not in found[0]


@pytest.mark.parametrize("limit", [0, -1, True, 2.0, "3"])
def test_a_bad_limit_is_refused(finder: ToolFinder, limit: Any) -> None:
    with pytest.raises(ValueError, match=r"must be a positive int"):
        finder.search("pods", limit)


def test_a_query_must_be_text(finder: ToolFinder) -> None:
    with pytest.raises(TypeError, match=r"takes a str"):
        finder.search(["pods"])  # type: ignore[arg-type]


def test_the_index_ranks_best_first_and_counts_every_match() -> None:
    hits, total = ToolIndex(CATALOG).search("delete pod namespace", 10)
    assert hits[0].name == "delete_pod"
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    assert all(hit.score > 0 for hit in hits) and total == len(hits) >= 3
    assert ToolIndex({}).search("pods", 5) == ([], 0)


def test_describe_gives_the_full_stub(finder: ToolFinder) -> None:
    stub = finder.describe("send_email")
    assert stub.startswith("async def send_email(*, recipient: str, subject: str | None = None) -> Any:")
    assert "Deliver a message." in stub


def test_describe_of_an_unknown_name_offers_the_closest(finder: ToolFinder) -> None:
    with pytest.raises(NameError) as caught:
        finder.describe("list_pod")
    assert str(caught.value).startswith("no catalog function 'list_pod'; the closest: list_pods")
    with pytest.raises(NameError) as caught:
        finder.describe("zzzzzz")
    assert str(caught.value) == "no catalog function 'zzzzzz'; search_tools(query=...) finds functions"


def test_closest_names() -> None:
    candidates = ["list_pods", "delete_pod", "kv_namespace_list", "send_email"]
    assert closest_names("delete_pods", candidates)[0] == "delete_pod"
    assert closest_names("xyz", candidates) == []
    assert len(closest_names("pod", ["pod1", "pod2", "pod3", "pod4"], count=2)) == 2


def test_answers_as_the_dispatcher_asks_for_them(finder: ToolFinder) -> None:
    """The dispatcher passes the schema-named arguments, without the ones the snippet left None."""
    searched = finder.answer(SEARCH_TOOLS, {"query": "send email"})
    assert searched.mode == "json"
    assert names(json.loads(searched.text))[0] == "send_email"
    limited = json.loads(finder.answer(SEARCH_TOOLS, {"query": "namespace", "limit": 1}).text)
    assert len(limited) == 1 and "more" in limited[0] and limited[0]["name"]
    described = finder.answer(DESCRIBE_TOOL, {"name": "delete_pod"})
    assert json.loads(described.text) == finder.describe("delete_pod")


def test_answer_refuses_other_functions(finder: ToolFinder) -> None:
    with pytest.raises(NameError, match="not a finder function: list_pods"):
        finder.answer(CATALOG["list_pods"].tool, {})


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("list_pods", "list pods"),
        ("send-email", "send email"),
        ("getWeatherForecast", "get Weather Forecast"),
        ("XMLHttpRequest", "XML Http Request"),
        ("github:repos/list__all", "github repos list all"),
        ("v2Api", "v2 Api"),
    ],
)
def test_words_of_name(name: str, words: str) -> None:
    assert words_of_name(name) == words
