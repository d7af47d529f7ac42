"""Which names the variables probe looks at again after a snippet (``names_to_probe``)."""

from __future__ import annotations

import pytest

from asyncai.code_mode.engine.read import as_written, bind_last_value, scan_snippet
from asyncai.code_mode.engine.variables import names_to_probe

HELD = ["pods", "data", "total", "helper"]


@pytest.mark.parametrize(
    ("code", "bound", "expected"),
    [
        # Reading a name changes neither its type nor its size: only what the snippet binds.
        ("sum(1 for item in data['items'] if item['warning'])", [], []),
        ("len(pods) + 1", [], []),
        ("1 + 1", [], []),
        ("x = len(pods)", ["x"], ["x"]),
        ("data = 3", ["data"], ["data"]),  # rebound: probed once, as the newest
        ("total >= 3 and total <= 9 and total != 4", [], []),  # comparisons change nothing
        # Anything that may change a value in place, or a function of the REPL's: every name.
        ("pods.append(1)", [], HELD),
        ("data['items'] = []", [], HELD),
        ("data .x = 1", [], HELD),
        ("total += 1", [], HELD),
        ("del total", [], HELD),
        ("def f():\n    global total\n    total = 0\nf()", ["f"], [*HELD, "f"]),
        ("helper(pods)", [], HELD),
        ("_asyncai_x = 1", ["_asyncai_x"], []),  # internal names are never in the note
    ],
)
def test_the_probe_looks_again_at_what_a_snippet_may_have_changed(
    code: str, bound: list[str], expected: list[str]
) -> None:
    assert names_to_probe(code, HELD, bound) == expected


@pytest.mark.parametrize(
    ("code", "bound"),
    [
        ("a, (b, c) = 1, (2, 3)\nfor d in []:\n    pass", ["a", "b", "c", "d"]),
        (
            "import json as j\nfrom re import sub\ndef f():\n    inner = 1\nclass K:\n    pass",
            ["j", "sub", "f", "K"],
        ),
        ("[y for y in range(3)]\nif (n := 2):\n    pass", ["n"]),  # a comprehension's target is its own
        ("try:\n    pass\nexcept Exception as e:\n    pass\nwith open('x') as fh:\n    pass", ["e", "fh"]),
        (
            "match v:\n    case [first, *rest]:\n        pass\n    case {'k': val, **others}:\n        pass",
            ["first", "rest", "val", "others"],
        ),
        (
            "match v:\n    case Point(x=px) | Point(y=px):\n        pass\n    case other:\n        pass",
            ["px", "other"],
        ),
    ],
)
def test_the_scan_finds_every_name_a_snippet_binds_at_module_level(code: str, bound: list[str]) -> None:
    assert list(scan_snippet(code).bound) == bound


def test_a_traceback_quotes_the_line_as_the_model_wrote_it() -> None:
    code = "xs = [1]; xs[5]"
    fed = bind_last_value(code, (1, 10))
    assert fed == "xs = [1]; _ = xs[5]\n_"
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "<python-input-3>", line 1, in <module>\n'
        "    xs = [1]; _ = xs[5]\n"
        "                  ~~~~~\n"
        "IndexError: list index out of range"
    )
    assert as_written(traceback, (1, 10)) == (
        "Traceback (most recent call last):\n"
        '  File "<python-input-3>", line 1, in <module>\n'
        "    xs = [1]; xs[5]\n"
        "              ~~~~~\n"
        "IndexError: list index out of range"
    )
    in_a_function = traceback.replace("in <module>", "in f")
    assert as_written(in_a_function, (1, 10)) == in_a_function, "only the snippet's own frame"
    assert as_written(traceback, (2, 0)) == traceback, "only the line whose value was bound"
    assert as_written(traceback, None) == traceback


def test_known_variables_keep_what_a_partial_probe_did_not_look_at() -> None:
    from asyncai.code_mode.engine.variables import BoundVariable, KnownVariables

    known = KnownVariables()
    known.remember(("rows", "n", "_asyncai_x"))
    assert list(known.bound) == ["rows", "n"]  # internal names are never noted
    assert known.listed() == [BoundVariable("n", "?"), BoundVariable("rows", "?")]
    known.update([("n", "int", -1), ("rows", "list", 2)], None)
    assert known.note == "[run_code variables still in scope: n: int, rows: list[2]]"
    known.remember(("m",))
    known.update([("m", "str", 3)], ("m",))  # only m was probed: rows and n keep their rows
    assert [v.describe() for v in known.variables] == ["m: str[3]", "n: int", "rows: list[2]"]
    known.update([], ("n",))  # n was probed and not found: it is gone
    assert [v.name for v in known.variables] == ["m", "rows"]
    known.update([], None)  # every name probed, none found
    assert known.variables == [] and known.note is None
