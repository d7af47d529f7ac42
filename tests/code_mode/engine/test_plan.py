"""The plan stage alone: what runs, and how, decided from the scan (pure functions, no worker)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from asyncai.code_mode.catalog.entries import build_catalog
from asyncai.code_mode.engine.plan import (
    TYPE_CHECKED_SNIPPETS,
    finished_refusal,
    may_speculate,
    plan_feed,
    refusal,
    type_check_wanted,
    wants_restart,
)
from asyncai.code_mode.engine.read import bind_last_value, scan_snippet
from asyncai.tools.types import ToolDefinition

STRING = {"type": "string"}


def _tool(name: str, *, mutating: bool = False) -> ToolDefinition:
    schema = {"type": "object", "properties": {"name": STRING}, "required": ["name"]}
    return ToolDefinition(name, f"test tool {name}", schema, read_only=not mutating, destructive=mutating)


CATALOG = build_catalog([_tool("get_pod"), _tool("delete_pod", mutating=True)])


def _scan(code: str) -> Any:
    return scan_snippet(code, CATALOG.keys())


@pytest.mark.parametrize(
    ("code", "refused_for"),
    [
        ("get_pod = 1", "get_pod"),
        ("_asyncai_tool = 1", "reserved for asyncai"),
        ("exec = print", "reserved for asyncai"),
        ("get_pod(name='a')", "without await"),
        ("x = await get_pod(name='a')\nx", None),
        ("names = ['a']", None),  # a helper's name may be bound: it is shadowed
        # Monty answers these with an empty list, not an error: a count of files would be 0.
        (
            "import os\nfor root, dirs, files in os.walk('/d'):\n    n = len(files)",
            "`os.walk()` finds no files",
        ),
        ("import os as o\n[f for _, _, f in o.walk('/d')]", "`os.walk()`"),
        ("from os import walk as w\nlist(w('/d'))", "`os.walk()`"),
        ("from pathlib import Path\nlen(list(Path('/d').rglob('*.txt')))", "`Path.rglob()`"),
        ("p = Path('/d')\nsorted(p.glob('*'))", "`Path.glob()`"),
        ("list(Path('/d').walk())", "`Path.walk()`"),
        ("tree = {}\ndef walk(t):\n    return t\nwalk(tree)", None),  # the model's own walk
        ("graph.walk()", None),  # a method of the model's own object
        ("import glob\nglob.glob('/d/*')", None),  # no such module: its import fails, and says so
        ("import os\nos.glob('*')", None),  # no such function: its AttributeError says so
    ],
)
def test_what_is_refused_before_anything_runs(code: str, refused_for: str | None) -> None:
    refused = refusal(_scan(code), CATALOG)
    if refused_for is None:
        assert refused is None
    else:
        assert refused is not None and refused.is_error and refused_for in refused.text
        assert "Nothing was run" in refused.text or "cannot be rebound" in refused.text


def test_a_refused_listing_names_the_file_tools() -> None:
    catalog = build_catalog([_tool("list_directory"), _tool("read_text_file"), _tool("get_pod")])
    refused = refusal(scan_snippet("import os\nlist(os.walk('/d'))", catalog.keys()), catalog)
    assert refused is not None and refused.text == (
        "error: `os.walk()` finds no files in the sandbox, without an error, so it is refused: os access "
        "disabled in asyncai code mode: the sandbox cannot open files itself; the file tools can: "
        "list_directory, read_text_file (e.g. `r = await list_directory(name=...)`). Nothing was run."
    )


def test_the_type_check_runs_only_where_it_could_stop_something() -> None:
    wrong = "x = await get_pod(name=3)"
    assert type_check_wanted(wrong, _scan(wrong), CATALOG, 0)
    assert not type_check_wanted(wrong, _scan(wrong), CATALOG, TYPE_CHECKED_SNIPPETS)
    no_tools = "x = [1, 2]\nlen(x)"
    assert not type_check_wanted(no_tools, _scan(no_tools), CATALOG, 0)
    well_formed = "x = await get_pod(name='a')"
    assert not type_check_wanted(well_formed, _scan(well_formed), CATALOG, 0)


LIMIT = 20_000
OUT = f"_asyncai_bounded(_, {LIMIT}, 2000)"
"""How the snippet's value leaves the sandbox: through the bound on its size."""


def test_the_probe_rides_on_the_feed_unless_the_feed_is_checked_or_may_pause() -> None:
    code = "rows = [1, 2]\nlen(rows)"
    scan = _scan(code)
    folded = plan_feed(code, scan, type_check=False, pausing=False, held=["old"], result_chars=LIMIT)
    assert folded.probed == ("rows",) and not folded.type_check
    assert folded.source.startswith(bind_last_value(code, scan.value_at, scan.assigned))
    assert folded.source.endswith(f"({OUT}, _asyncai_probe)")
    checked = plan_feed(code, scan, type_check=True, pausing=False, held=["old"], result_chars=LIMIT)
    assert checked.probed is None and checked.source == bind_last_value(code, scan.value_at, scan.assigned)
    pausing = plan_feed(code, scan, type_check=False, pausing=True, held=["old"], result_chars=LIMIT)
    assert pausing.probed is None and pausing.source == f"{checked.source}\n{OUT}"


def test_the_value_leaves_through_the_bound_unless_the_feed_is_checked() -> None:
    """The checker knows no helper: a checked feed's value crosses whole, as it is."""
    for code, value in (("len([1, 2])", "_"), ("n = 2", "n"), ("a, b = 1, 2", "(a, b,)")):
        scan = _scan(code)
        plain = plan_feed(code, scan, type_check=False, pausing=False, held=[], result_chars=500)
        assert f"_asyncai_bounded({value}, 500, 50)" in plain.source
        checked = plan_feed(code, scan, type_check=True, pausing=False, held=[], result_chars=500)
        assert "_asyncai_bounded" not in checked.source
    statement = "for i in range(2):\n    print(i)"
    plan = plan_feed(statement, _scan(statement), type_check=False, pausing=False, held=[], result_chars=500)
    assert "_asyncai_bounded" not in plan.source, "a snippet without a value has nothing to bound"


def test_a_snippet_that_binds_and_changes_nothing_is_fed_without_a_probe() -> None:
    code = "len([1, 2])"
    plan = plan_feed(code, _scan(code), type_check=False, pausing=False, held=["rows"], result_chars=LIMIT)
    assert plan.probed == () and "_asyncai_probe" not in plan.source


def test_a_snippet_that_may_change_a_value_in_place_probes_every_name() -> None:
    code = "for r in [3]:\n    rows.append(r)"
    plan = plan_feed(
        code, _scan(code), type_check=False, pausing=False, held=["rows", "n"], result_chars=LIMIT
    )
    assert plan.probed == ("rows", "n", "r")  # the names held, and the one it binds
    assert plan.source.endswith("(None, _asyncai_probe)")


def test_a_closing_assignment_is_the_value_beside_the_probe() -> None:
    code = "n = 2"
    plan = plan_feed(code, _scan(code), type_check=False, pausing=False, held=[], result_chars=LIMIT)
    assert plan.source.endswith(f"(_asyncai_bounded(n, {LIMIT}, 2000), _asyncai_probe)")
    assert plan.probed == ("n",)


@given(
    st.lists(
        st.sampled_from(["a = 1", "b = [a]", "b.append(2)", "len(b)", "print(a)", "c = a + 1"]), min_size=1
    )
)
def test_every_plan_feeds_the_snippet_as_written_first(lines: list[str]) -> None:
    code = "\n".join(lines)
    scan = _scan(code)
    for type_check, pausing in ((False, False), (True, False), (False, True)):
        plan = plan_feed(code, scan, type_check=type_check, pausing=pausing, held=["a"], result_chars=LIMIT)
        assert plan.source.startswith(bind_last_value(code, scan.value_at, scan.assigned))
        assert plan.type_check is type_check
        assert (plan.probed is None) is (type_check or pausing)


@pytest.mark.parametrize(
    ("arguments", "fed", "reason"),
    [
        ({}, "", "the call has no code"),
        ({"code": "y = 2\nx = 1\n"}, "x = 1\n", "differs from the code that streamed"),
        ({"code": "x = 1\ny = 2", "restart": "true"}, "x = 1\n", "restart was asked for"),
        ({"code": "x = 1\ny = (", "restart": False}, "x = 1\n", "does not compile"),
        ({"code": "x = 1\nget_pod = 2"}, "x = 1\n", "was refused"),
        ({"code": "x = 1\ny = await get_pod(name='a')"}, "x = 1\n", None),
    ],
)
def test_the_rest_of_a_streamed_snippet_runs_only_when_the_whole_call_passes(
    arguments: dict[str, Any], fed: str, reason: str | None
) -> None:
    refused, scan = finished_refusal(arguments, fed, CATALOG)
    if reason is None:
        assert refused is None and scan is not None and scan.bound == ("x", "y")
    else:
        assert refused is not None and reason in refused


def test_only_read_only_calls_speculate_unless_named() -> None:
    read, write = CATALOG["get_pod"], CATALOG["delete_pod"]
    assert may_speculate(read, enabled=True) and not may_speculate(read, enabled=False)
    assert not may_speculate(write, enabled=True)
    assert may_speculate(write, enabled=True, also={"delete_pod"})
    assert not may_speculate(CATALOG["search_tools"], enabled=True, also={"search_tools"})


@pytest.mark.parametrize(
    ("value", "restart"), [(True, True), ("true", True), (1, True), (None, False), ("no", False)]
)
def test_restart_as_a_model_spells_it(value: Any, restart: bool) -> None:
    assert wants_restart({"restart": value}) is restart
