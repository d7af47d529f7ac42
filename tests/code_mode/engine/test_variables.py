"""Which names the variables probe looks at again after a snippet (``names_to_probe``)."""

from __future__ import annotations

import pytest

from asyncai.code_mode.engine.variables import names_to_probe

HELD = ["pods", "data", "total", "helper"]


@pytest.mark.parametrize(
    ("code", "bound", "expected"),
    [
        ("sum(1 for item in data['items'] if item['warning'])", [], ["data"]),
        ("len(pods) + 1", [], ["pods"]),
        ("1 + 1", [], []),
        ("x = len(pods)", ["x"], ["pods", "x"]),
        ("data = 3", ["data"], ["data"]),  # rebound: probed once, as the newest
        ("total >= 3 and total <= 9 and total != 4", [], ["total"]),  # comparisons change nothing
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
