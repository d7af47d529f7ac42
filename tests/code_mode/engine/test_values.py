import datetime
import decimal
import json
import math
from typing import Any

import pytest

from asyncai.code_mode.engine.values import compact_json, to_json_value


def _nested_list(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def _depth(value: Any) -> int:
    depth = 0
    while isinstance(value, list) and value:
        value = value[0]
        depth += 1
    return depth


@pytest.mark.parametrize(
    "text",
    [
        "null",
        "true",
        "false",
        "0",
        "-12",
        "9223372036854775807",
        "1.5",
        "-0.25",
        '"text with \\"quotes\\" and ünïcödé ✓"',
        "[]",
        "{}",
        '[1,"a",null,true,2.5,[],{}]',
        '{"a":{"b":[{"c":1},{"d":[null]}]},"e":"f"}',
        '{"z":1,"a":2,"m":3}',
        '{"":"empty key","1":"digit key"}',
    ],
)
def test_json_values_round_trip_unchanged(text: str) -> None:
    assert compact_json(json.loads(text)) == text


def test_json_round_trip_of_a_realistic_document() -> None:
    doc = {
        "items": [
            {"metadata": {"name": f"pod-{i}", "labels": {"app": "web"}}, "status": {"phase": "Running"}}
            for i in range(50)
        ],
        "kind": "List",
        "ratio": 0.125,
    }
    assert json.loads(compact_json(doc)) == doc
    assert compact_json(doc) == json.dumps(doc, ensure_ascii=False, separators=(",", ":"))


def test_non_ascii_is_not_escaped() -> None:
    assert compact_json("café ✓") == '"café ✓"'


def test_scalars_pass_through() -> None:
    for value in (None, True, False, 0, -7, 2**70, "s", 1.5):
        assert to_json_value(value) == value
        assert type(to_json_value(value)) is type(value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(math.nan, "NaN"), (math.inf, "Infinity"), (-math.inf, "-Infinity")],
)
def test_non_finite_floats_become_strings(value: float, expected: str) -> None:
    assert to_json_value(value) == expected
    assert compact_json([value]) == f'["{expected}"]'


def test_tuples_become_lists() -> None:
    assert to_json_value((1, (2, 3), [4, (5,)])) == [1, [2, 3], [4, [5]]]
    assert compact_json((1, "a")) == '[1,"a"]'


def test_sets_become_sorted_lists() -> None:
    assert to_json_value({3, 1, 2}) == [1, 2, 3]
    assert to_json_value(frozenset({"b", "c", "a"})) == ["a", "b", "c"]
    assert to_json_value({(2, "b"), (1, "a")}) == [[1, "a"], [2, "b"]]


def test_unsortable_sets_are_ordered_by_type_and_repr() -> None:
    assert to_json_value({"b", 2, "a", 1}) == [1, 2, "a", "b"]


def test_non_str_dict_keys_use_repr() -> None:
    assert to_json_value({(1, 2): "x"}) == {"(1, 2)": "x"}
    assert to_json_value({1: "a", None: "n", 2.5: "f", False: "b"}) == {
        "1": "a",
        "None": "n",
        "2.5": "f",
        "False": "b",
    }
    assert compact_json({1: "a"}) == '{"1":"a"}'
    assert compact_json({"k": {(1, "x"): [1]}}) == '{"k":{"(1, \'x\')":[1]}}'


def test_other_objects_become_repr() -> None:
    when = datetime.datetime(2024, 5, 1, 12, 30)
    assert to_json_value(b"\x00ab") == "b'\\x00ab'"
    assert to_json_value(when) == repr(when)
    assert to_json_value(decimal.Decimal("1.10")) == "Decimal('1.10')"
    assert to_json_value(datetime.timedelta(seconds=5)) == "datetime.timedelta(seconds=5)"
    assert to_json_value(int) == "<class 'int'>"
    assert json.loads(compact_json({"at": when, "raw": b"x"})) == {"at": repr(when), "raw": "b'x'"}


class _ClassProxyLike:
    def __repr__(self) -> str:
        return "MontyClassProxy(name='Point', attributes={'x': 1})"


class _BrokenRepr:
    def __repr__(self) -> str:
        raise ValueError("no repr")


def test_proxies_and_broken_reprs() -> None:
    assert to_json_value([_ClassProxyLike()]) == ["MontyClassProxy(name='Point', attributes={'x': 1})"]
    assert to_json_value(_BrokenRepr()) == "<_BrokenRepr object>"


def test_huge_ints_do_not_crash_json() -> None:
    big = 10**5000
    assert isinstance(to_json_value(big), str)
    assert compact_json(big).startswith('"<int of ')


def test_deeply_nested_list_does_not_crash() -> None:
    deep = _nested_list(1000)
    converted = to_json_value(deep)
    assert _depth(converted) == 1000
    text = compact_json(deep)
    assert text == "[" * 1001 + "]" * 1001  # 1000 wrappers around []


def test_very_deep_mixed_nesting() -> None:
    value: Any = "leaf"
    for i in range(5000):
        value = {"k": value} if i % 2 else (value,)
    text = compact_json(value)
    assert text.count("[") == 2500
    assert text.count('{"k":') == 2500
    assert '"leaf"' in text


def test_self_referencing_list_is_cut() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    assert to_json_value(loop) == [1, "<cycle>"]


def test_shared_references_are_not_cycles() -> None:
    shared = [1, 2]
    assert to_json_value([shared, shared]) == [[1, 2], [1, 2]]
