import ast
import copy
from typing import Any

import pytest

from asyncai.code_mode.catalog.description import run_code_description
from asyncai.code_mode.catalog.stubs import (
    HELPER_NAMES,
    PREIMPORTED,
    RUN_CODE_INPUT_SCHEMA,
    inline_local_refs,
    parameter_names,
    python_type,
    render_catalog,
    render_stub,
    sanitize_names,
    shape_sketch,
)
from asyncai.tools.types import ToolDefinition

NO_SCHEMA_RULE = "A function marked -> Any has no output schema: inspect a small sample"


def _tool(
    name: str = "t",
    *,
    description: str = "A tool.",
    properties: dict[str, Any] | None = None,
    required: list[str] | None = None,
    output: dict[str, Any] | None = None,
) -> ToolDefinition:
    schema: dict[str, Any] = {"type": "object", "properties": properties or {}}
    if required is not None:
        schema["required"] = required
    return ToolDefinition(name=name, description=description, input_schema=schema, output_schema=output)


def _kcp_tools() -> list[ToolDefinition]:
    return [
        ToolDefinition(
            name="list_kcps",
            description="""
                Discover running socialweb-computer kcp servers.
                Example: kcps = await list_kcps()
            """,
            input_schema={
                "type": "object",
                "properties": {"refresh": {"type": "boolean", "description": "re-scan"}},
            },
            output_schema={
                "type": "object",
                "properties": {
                    "kcps": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "id": {"type": "string"},
                                "kubeconfig": {"type": "string"},
                                "server": {"type": "string"},
                                "running": {"type": "boolean"},
                            },
                        },
                    },
                    "errors": {"type": "array", "items": {"type": "string"}},
                },
            },
            read_only=True,
        ),
        ToolDefinition(
            name="list-objects",
            description="List objects of one resource type in a workspace.",
            input_schema={
                "type": "object",
                "properties": {
                    "namespace": {"type": "string"},
                    "kcp": {"type": "string"},
                    "workspace": {"type": "string", "description": "e.g. root:app"},
                    "resource": {"type": "string"},
                    "selector": {"type": ["string", "null"]},
                },
                "required": ["workspace", "resource"],
            },
        ),
    ]


# --- python_type -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string"}, "str"),
        ({"type": "integer"}, "int"),
        ({"type": "number"}, "float"),
        ({"type": "boolean"}, "bool"),
        ({"type": "null"}, "None"),
        ({"type": "array", "items": {"type": "string"}}, "list[str]"),
        ({"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}, "list[list[int]]"),
        ({"type": "array"}, "list[Any]"),
        ({"type": "array", "items": True}, "list[Any]"),
        ({"type": "object"}, "dict[str, Any]"),
        ({"type": "object", "properties": {"a": {"type": "string"}}}, "dict[str, Any]"),
        ({"properties": {"a": {"type": "string"}}}, "dict[str, Any]"),
        ({"items": {"type": "number"}}, "list[float]"),
        (None, "Any"),
        ({}, "Any"),
        (True, "Any"),
        (False, "Any"),
        ({"description": "anything"}, "Any"),
        ({"type": "mystery"}, "Any"),
        ({"$ref": "#/$defs/Pod"}, "Any"),
        ({"enum": ["a", "b", 1]}, "Literal['a', 'b', 1]"),
        ({"type": "string", "enum": ["x"]}, "Literal['x']"),
        ({"enum": ["a", None]}, "Literal['a'] | None"),
        ({"enum": [{"a": 1}]}, "Any"),
        ({"const": "fixed"}, "Literal['fixed']"),
        ({"const": 3}, "Literal[3]"),
        ({"type": ["string", "null"]}, "str | None"),
        ({"type": ["null", "string"]}, "str | None"),
        ({"type": ["string", "integer"]}, "str | int"),
        ({"type": ["array", "null"], "items": {"type": "string"}}, "list[str] | None"),
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, "str | int"),
        ({"oneOf": [{"type": "string"}, {"type": "string"}, {"type": "null"}]}, "str | None"),
        ({"anyOf": [{"type": "null"}, {"type": "array", "items": {"type": "integer"}}]}, "list[int] | None"),
        ({"anyOf": [{"type": "string"}, {}]}, "Any"),
        ({"allOf": [{"type": "integer"}]}, "int"),
    ],
)
def test_python_type(schema: Any, expected: str) -> None:
    assert python_type(schema) == expected


# --- names -------------------------------------------------------------------------------------


def test_sanitize_names_collisions_keywords_and_reserved() -> None:
    tools = [_tool(n) for n in ("get-item", "get.item", "1st", "class", "items", "json", "list", "ok_name")]
    names = sanitize_names(tools)
    assert list(names) == [
        "get_item",
        "get_item_2",
        "_1st",
        "class_",
        "items_2",
        "json_2",
        "list_2",
        "ok_name",
    ]
    assert [t.name for t in names.values()] == [t.name for t in tools]


def test_sanitize_names_prefers_exact_identifiers() -> None:
    names = sanitize_names([_tool("get-item"), _tool("get_item")])
    assert names["get_item"].name == "get_item"
    assert names["get_item_2"].name == "get-item"


def test_sanitize_names_avoids_every_reserved_name() -> None:
    reserved = [*HELPER_NAMES, *PREIMPORTED]
    names = sanitize_names([_tool(n) for n in reserved])
    assert not set(names) & set(reserved)
    assert all(name.isidentifier() for name in names)


def test_sanitize_names_is_deterministic_and_unique() -> None:
    tools = [_tool(n) for n in ("a b", "a-b", "a_b", "a.b", "", "9", "for")]
    first = sanitize_names(tools)
    assert first == sanitize_names(list(tools))
    assert len(first) == len(tools)
    assert all(name.isidentifier() for name in first)


def test_parameter_names_map_python_to_schema() -> None:
    tool = _tool(
        properties={"from": {"type": "string"}, "max-items": {"type": "integer"}, "max_items": {}, "ok": {}},
        required=["ok"],
    )
    assert parameter_names(tool) == {
        "ok": "ok",
        "from_": "from",
        "max_items_2": "max-items",
        "max_items": "max_items",
    }


# --- stubs -------------------------------------------------------------------------------------


def test_stub_orders_required_first_in_schema_order() -> None:
    tool = _kcp_tools()[1]
    stub = render_stub("list_objects", tool)
    assert stub.splitlines()[0] == (
        "async def list_objects(*, workspace: str, resource: str, namespace: str | None = None, "
        "kcp: str | None = None, selector: str | None = None) -> Any:"
    )


def test_stub_enum_nullable_and_boolean_schemas() -> None:
    tool = _tool(
        properties={
            "level": {"enum": ["info", "warn"]},
            "tags": {"type": ["array", "null"], "items": {"type": "string"}},
            "anything": True,
            "mode": {"enum": ["a", "b"]},
        },
        required=["mode"],
    )
    line = render_stub("f", tool).splitlines()[0]
    assert line == (
        "async def f(*, mode: Literal['a', 'b'], level: Literal['info', 'warn'] | None = None, "
        "tags: list[str] | None = None, anything: Any = None) -> Any:"
    )


def test_stub_without_parameters_has_no_star() -> None:
    stub = render_stub("ping", ToolDefinition(name="ping", description="", input_schema={}))
    assert stub.splitlines()[0] == "async def ping() -> Any:"
    ast.parse(stub)


def test_stub_required_name_missing_from_properties() -> None:
    tool = _tool(properties={"a": {"type": "string"}}, required=["b"])
    assert render_stub("f", tool).splitlines()[0] == "async def f(*, b: Any, a: str | None = None) -> Any:"


def test_stub_with_output_schema_has_returns_sketch() -> None:
    stub = render_stub("list_kcps", _kcp_tools()[0])
    assert stub == (
        "async def list_kcps(*, refresh: bool | None = None) -> dict[str, Any]:\n"
        '    """\n'
        "    Discover running socialweb-computer kcp servers.\n"
        "    Example: kcps = await list_kcps()\n"
        "    Args:\n"
        "        refresh: re-scan\n"
        '    Returns: {"kcps": [{"id": str, "kubeconfig": str, "server": str, "running": bool}], '
        '"errors": [str]}\n'
        '    """'
    )


def test_stub_return_annotation_follows_output_schema() -> None:
    tool = _tool(output={"type": "array", "items": {"type": "string"}})
    stub = render_stub("f", tool)
    assert stub.splitlines()[0] == "async def f() -> list[str]:"
    assert "    Returns: [str]" in stub


def test_inspect_a_sample_is_said_once_in_the_rules_not_on_every_stub() -> None:
    stub = render_stub("f", _tool(output=None))
    assert stub.splitlines()[0].endswith("-> Any:")
    assert "Returns:" not in stub and "sample" not in stub
    tools = [_tool("a", output=None), _tool("b", output=None)]
    assert run_code_description(tools).count("inspect a small sample") == 1
    assert NO_SCHEMA_RULE in run_code_description(tools)


def test_stub_arg_descriptions_are_one_line_and_cut_between_sentences() -> None:
    first = "The path of the file to read, relative to one of the allowed directories of the server."
    second = "Symbolic links are followed and must stay inside those directories as well, or it fails."
    third = "A third sentence that no longer fits."
    endless = "word " * 120
    tool = _tool(
        properties={
            "a": {"type": "string", "description": "first\n   line"},
            "b": {"type": "integer", "default": 5},
            "c": {"type": "string", "description": f"{first} {second} {third}"},
            "d": {"type": "string"},
            "e": {"type": "string", "description": endless},
        }
    )
    lines = render_stub("f", tool).splitlines()
    assert "        a: first line" in lines
    assert "        b: default: 5" in lines
    assert f"        c: {first}" in lines, "whole sentences, never a cut inside one"
    e_line = next(line for line in lines if line.startswith("        e: "))
    assert e_line.endswith("word...") and len(e_line.strip()) <= len("e: ") + 400
    assert not any(line.startswith("        d:") for line in lines)


def test_stub_docstring_cannot_break_out() -> None:
    tool = _tool(description='Says """hi""" and matches \\d+ or \\N.')
    stub = render_stub("f", tool)
    tree = ast.parse(stub)
    func = tree.body[0]
    assert isinstance(func, ast.AsyncFunctionDef)
    doc = ast.get_docstring(func)
    assert doc is not None
    assert "\\d+" in doc


def test_catalog_is_valid_python_in_tool_order() -> None:
    tools = _kcp_tools()
    catalog = render_catalog(tools)
    tree = ast.parse(catalog)
    assert [node.name for node in tree.body if isinstance(node, ast.AsyncFunctionDef)] == [
        "list_kcps",
        "list_objects",
    ]
    assert "\n\nasync def list_objects(" in catalog


# --- shape sketches ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string"}, "str"),
        ({"type": "integer"}, "int"),
        ({"type": "number"}, "float"),
        ({"type": "boolean"}, "bool"),
        ({"type": "null"}, "None"),
        ({}, "Any"),
        (True, "Any"),
        ({"$ref": "#/x"}, "Any"),
        ({"enum": ["a", "b"]}, '"a"|"b"'),
        ({"enum": ["a", 1, None]}, '"a"|1|None'),
        ({"const": "x"}, '"x"'),
        ({"type": ["string", "null"]}, "str|None"),
        ({"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "integer"}]}, "int|str"),
        ({"type": "array"}, "list"),
        ({"type": "array", "items": {"type": "integer"}}, "[int]"),
        ({"type": "object"}, "dict"),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "{str: int}"),
        ({"type": "object", "additionalProperties": True}, "dict"),
        ({"type": "object", "properties": {"a": {"type": "string"}, "b": {}}}, '{"a": str, "b": Any}'),
    ],
)
def test_shape_sketch(schema: Any, expected: str) -> None:
    assert shape_sketch(schema) == expected


def _nested_objects(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for level in reversed(range(levels)):
        schema = {"type": "object", "properties": {f"l{level}": schema}}
    return schema


def test_shape_sketch_cuts_depth_at_four_levels() -> None:
    assert shape_sketch(_nested_objects(4)) == '{"l0": {"l1": {"l2": {"l3": str}}}}'
    assert shape_sketch(_nested_objects(5)) == '{"l0": {"l1": {"l2": {"l3": {...}}}}}'
    arrays: dict[str, Any] = {"type": "integer"}
    for _ in range(5):
        arrays = {"type": "array", "items": arrays}
    assert shape_sketch(arrays) == "[[[[[...]]]]]"


def test_shape_sketch_cuts_width_at_twelve_properties() -> None:
    schema = {"type": "object", "properties": {f"p{i:02d}": {"type": "integer"} for i in range(15)}}
    sketch = shape_sketch(schema)
    assert sketch.startswith('{"p00": int, ')
    assert sketch.endswith('"p11": int, ...}')
    assert '"p12"' not in sketch
    assert sketch.count(": int") == 12


# --- run_code description ----------------------------------------------------------------------


def test_run_code_input_schema_matches_the_adr() -> None:
    assert RUN_CODE_INPUT_SCHEMA == {
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "Python to run"},
            "restart": {"type": "boolean", "description": "reset REPL state first"},
        },
        "required": ["code"],
    }


def test_description_is_byte_stable() -> None:
    first = run_code_description(_kcp_tools())
    assert run_code_description(_kcp_tools()) == first
    assert run_code_description(copy.deepcopy(_kcp_tools())) == first
    assert first.encode() == run_code_description(_kcp_tools()).encode()


def test_description_has_rules_contract_and_catalog_in_order() -> None:
    text = run_code_description(_kcp_tools())
    rules, catalog = text.split("Functions:\n", 1)
    assert catalog.strip() == render_catalog(_kcp_tools())
    assert 1_500 <= len(rules) <= 3_000
    for needle in (
        "ONE complete program",
        "keyword arguments only",
        "await",
        "asyncio.gather",
        "return_exceptions",
        "RuntimeError",
        "asyncio, json and re",
        *HELPER_NAMES,
        "a variable of the same name hides one",
        "never define them or assign to their names",
        "ends with an assignment (x = ...) returns the value assigned",
        "restart: true",
        "Only what run_code returned stays in the chat history",
        "No filesystem, environment, network or subprocess",
        "class inheritance",
        "@property",
        "yield",
        "del",
        "globals()",
        "operator",
        "lambdas for key=",
        "a str is returned as-is",
        "compact JSON",
        "(no output; the last expression was None)",
        "print()",
        "20,000 characters",
        "structured result",
        '"type": "image"',
        NO_SCHEMA_RULE,
    ):
        assert needle in rules, needle
    assert rules.index("How to work:") < rules.index("Result:")


def test_description_changes_with_the_tool_set() -> None:
    tools = _kcp_tools()
    assert run_code_description(tools) != run_code_description(tools[:1])
    assert "async def list_objects(" not in run_code_description(tools[:1])


def test_local_refs_are_inlined_in_stubs_and_sketches() -> None:
    output = {
        "type": "object",
        "properties": {"source": {"$ref": "#/$defs/Time"}, "target": {"$ref": "#/$defs/Time"}},
        "required": ["source", "target"],
        "$defs": {"Time": {"type": "object", "properties": {"timezone": {"type": "string"}}}},
    }
    inputs = {
        "type": "object",
        "properties": {"mode": {"$ref": "#/definitions/Mode", "description": "how"}},
        "definitions": {"Mode": {"enum": ["fast", "slow"]}},
    }
    stub = render_stub("convert", ToolDefinition("convert", "", inputs, output))
    assert "mode: Literal['fast', 'slow'] | None = None" in stub
    assert "mode: how" in stub
    assert 'Returns: {"source": {"timezone": str}, "target": {"timezone": str}}' in stub


def test_recursive_refs_become_any_where_they_recur() -> None:
    tree = {
        "$ref": "#/$defs/Node",
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
            }
        },
    }
    assert inline_local_refs(tree) == {
        "type": "object",
        "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {}}},
    }
    assert shape_sketch(inline_local_refs(tree)) == '{"name": str, "children": list}'
