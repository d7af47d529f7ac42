"""The compact catalog index and the words tool search sees (pure functions)."""

from __future__ import annotations

from asyncai.code_mode.catalog.index import how_to_find, index_line, render_index
from asyncai.code_mode.catalog.search import summary, words_of_name
from asyncai.tools.types import ToolDefinition


def tool(name: str, server: str, description: str = "Does a thing. More words.") -> ToolDefinition:
    schema = {
        "type": "object",
        "properties": {"id": {"type": "string"}, "page": {"type": "integer"}},
        "required": ["id"],
    }
    return ToolDefinition(name=name, description=description, input_schema=schema, server=server)


def test_names_are_split_as_people_say_them() -> None:
    assert words_of_name("kv_namespace-getValue.v2") == "kv namespace get Value v2"
    assert words_of_name("HTTPServerList") == "HTTP Server List"


def test_summary_is_the_first_sentence_on_one_line() -> None:
    assert summary("List pods.\nIn every namespace.") == "List pods."
    assert summary("no full stop here\n\nsecond paragraph") == "no full stop here"
    assert summary("x" * 300, 20) == "x" * 17 + "..."


def test_an_index_line_lists_required_parameters_first() -> None:
    assert index_line("get_thing", tool("get-thing", "s")) == "get_thing(id, page=...) - Does a thing."


def test_the_index_fits_its_budget_shares_it_among_servers_and_is_stable() -> None:
    functions = {f"big_{i}": tool(f"big-{i}", "big") for i in range(500)}
    functions |= {f"small_{i}": tool(f"small-{i}", "small") for i in range(3)}
    text = render_index(functions, 4_000, how_to_find(len(functions), 123_456))
    assert len(text) <= 4_000
    assert "The catalog has 503 functions; their stubs would take 123,456 characters" in text
    assert "# server big: 500 functions (big)" in text and "# server small: 3 functions (small)" in text
    assert all(f"small_{i}(id, page=...)" in text for i in range(3))  # not crowded out by "big"
    assert ", listing " in text
    assert (
        render_index(dict(reversed(list(functions.items()))), 4_000, how_to_find(len(functions), 123_456))
        != text
    )  # order matters...
    assert (
        render_index(functions, 4_000, how_to_find(len(functions), 123_456)) == text
    )  # ...and the same input gives the same bytes
