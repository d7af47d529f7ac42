"""Nested objects of input schemas as TypedDicts in the stubs (issue 35: ``list[dict[str, Any]]``
hid that each entity needs ``observations``). Pure rendering, no sandbox."""

from __future__ import annotations

import ast
import dataclasses
from typing import Any

from asyncai.code_mode.catalog.description import (
    CLIENT_CATALOG_BUDGET,
    DEFAULT_CATALOG_BUDGET,
    is_short,
    run_code_description,
)
from asyncai.code_mode.catalog.entries import build_catalog, missing_key
from asyncai.code_mode.catalog.search import ToolFinder
from asyncai.code_mode.catalog.stubs import TYPED_DICT_DEPTH, python_type, render_catalog, render_stub
from asyncai.code_mode.engine.type_check import type_check_stubs
from asyncai.tools.types import ToolDefinition

# server-memory 2026.8.31's own input schemas (tools/list), as asyncai receives them.
ENTITY = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "The name of the entity"},
        "entityType": {"type": "string", "description": "The type of the entity"},
        "observations": {
            "type": "array",
            "items": {"type": "string"},
            "description": "An array of observation contents associated with the entity",
        },
    },
    "required": ["name", "entityType", "observations"],
}
RELATION = {
    "type": "object",
    "properties": {
        "from": {"type": "string", "description": "The name of the entity where the relation starts"},
        "to": {"type": "string", "description": "The name of the entity where the relation ends"},
        "relationType": {"type": "string", "description": "The type of the relation"},
    },
    "required": ["from", "to", "relationType"],
}


def _tool(name: str, properties: dict[str, Any], required: list[str] | None = None) -> ToolDefinition:
    schema: dict[str, Any] = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
    }
    return ToolDefinition(name, f"{name} things", schema)


CREATE_ENTITIES = _tool("create_entities", {"entities": {"type": "array", "items": ENTITY}})
CREATE_RELATIONS = _tool("create_relations", {"relations": {"type": "array", "items": RELATION}})
DELETE_RELATIONS = _tool("delete_relations", {"relations": {"type": "array", "items": RELATION}})


def test_each_entity_shows_its_required_fields() -> None:
    assert render_stub("create_entities", CREATE_ENTITIES) == (
        "class Entity(TypedDict):\n"
        "    name: str  # The name of the entity\n"
        "    entityType: str  # The type of the entity\n"
        "    observations: list[str]  # An array of observation contents associated with the entity\n"
        "\n"
        "async def create_entities(*, entities: list[Entity]) -> Any:\n"
        '    """\n'
        "    create_entities things\n"
        '    """'
    )


def test_a_key_that_is_no_identifier_gets_the_functional_form() -> None:
    stub = render_stub("create_relations", CREATE_RELATIONS)
    assert stub.startswith(
        'Relation = TypedDict("Relation", {\n'
        '    "from": str,  # The name of the entity where the relation starts\n'
        '    "to": str,  # The name of the entity where the relation ends\n'
        '    "relationType": str,  # The type of the relation\n'
        "})\n\n"
        "async def create_relations(*, relations: list[Relation]) -> Any:"
    )
    ast.parse(stub)


def test_optional_fields_are_not_required() -> None:
    mixed = {
        "type": "object",
        "properties": {"id": {"type": "string"}, "note": {"type": "string"}},
        "required": ["id"],
    }
    loose = {"type": "object", "properties": {"limit": {"type": "integer"}, "tag": {"type": "string"}}}
    tool = _tool("f", {"target": mixed, "options": loose}, required=["target"])
    stub = render_stub("f", tool)
    assert "class Target(TypedDict):\n    id: str\n    note: NotRequired[str]\n" in stub
    assert "class Options(TypedDict, total=False):\n    limit: int\n    tag: str\n" in stub
    assert "async def f(*, target: Target, options: Options | None = None) -> Any:" in stub


def test_nested_objects_refs_and_titles() -> None:
    schema = {
        "type": "object",
        "properties": {"orders": {"type": "array", "items": {"$ref": "#/$defs/Order"}}},
        "required": ["orders"],
        "$defs": {
            "Order": {
                "title": "Order",
                "type": "object",
                "properties": {
                    "lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}},
                    "address": {
                        "type": "object",
                        "properties": {
                            "city": {"type": "string"},
                            "geo": {
                                "type": "object",
                                "properties": {"point": {"type": "object", "properties": {"x": {}}}},
                            },
                        },
                        "required": ["city"],
                    },
                },
                "required": ["lines"],
            },
            "Line": {
                "title": "Line",
                "type": "object",
                "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
                "required": ["sku", "qty"],
            },
        },
    }
    stub = render_stub("place", ToolDefinition("place", "", schema))
    tree = ast.parse(stub)
    declared = [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
    assert declared == ["Line", "Geo", "Address", "Order"], "an inner one before the one that holds it"
    assert "    lines: list[Line]\n    address: NotRequired[Address]" in stub
    assert TYPED_DICT_DEPTH == 3 and "class Geo(TypedDict, total=False):\n    point: dict[str, Any]\n" in stub


def test_a_recursive_schema_ends_in_any() -> None:
    schema = {
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/Node"}},
        "required": ["tree"],
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
                "required": ["name"],
            }
        },
    }
    stub = render_stub("walk", ToolDefinition("walk", "", schema))
    assert "class Tree(TypedDict):\n    name: str\n    children: NotRequired[list[Any]]" in stub


def test_names_are_unique_in_a_catalog_and_an_identical_definition_is_shared() -> None:
    other_entity = _tool(
        "tag_entities",
        {
            "entities": {
                "type": "array",
                "items": {"type": "object", "properties": {"tag": {"type": "string"}}, "required": ["tag"]},
            }
        },
    )
    tools = [CREATE_ENTITIES, CREATE_RELATIONS, DELETE_RELATIONS, other_entity]
    catalog = render_catalog(tools)
    tree = ast.parse(catalog)
    assert [getattr(node, "name", None) for node in tree.body if isinstance(node, ast.ClassDef)] == [
        "Entity",
        "TagEntitiesEntity",
    ]
    assert catalog.count('Relation = TypedDict("Relation"') == 1, "declared once, before its first use"
    assert catalog.index("Relation = TypedDict") < catalog.index("async def create_relations")
    assert "async def delete_relations(*, relations: list[Relation])" in catalog
    assert "async def tag_entities(*, entities: list[TagEntitiesEntity])" in catalog
    # describe_tool and search_tools name them as the description does.
    finder = ToolFinder(build_catalog(tools))
    assert finder.describe("tag_entities").startswith("class TagEntitiesEntity(TypedDict):\n    tag: str\n")
    assert finder.describe("delete_relations").startswith('Relation = TypedDict("Relation", {')
    [hit] = [hit for hit in finder.search("tag entities") if hit["name"] == "tag_entities"]
    assert hit["signature"] == "tag_entities(*, entities: list[TagEntitiesEntity]) -> Any"


def test_a_name_that_would_shadow_something_is_prefixed() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    tools = [
        _tool("a", {"any": schema}),  # Any: what the stubs import
        _tool("b", {"exception": schema}),  # a builtin
        _tool("c", {"typedDict": schema}),
    ]
    catalog = render_catalog(tools)
    assert "class AAny(TypedDict)" in catalog and "class BException(TypedDict)" in catalog
    assert "class CTypedDict(TypedDict)" in catalog
    ast.parse(catalog)


def test_the_type_check_stubs_declare_the_same_names_and_compile() -> None:
    tools = [CREATE_ENTITIES, CREATE_RELATIONS]
    stubs = type_check_stubs(build_catalog(tools))
    assert "class Entity(TypedDict):" in stubs and 'Relation = TypedDict("Relation", {' in stubs
    assert "async def create_entities(*, entities: list[Entity]) -> Any: ..." in stubs
    assert stubs.index("class Entity") < stubs.index("async def create_entities")
    compile(stubs, "stubs", "exec")


def test_the_description_stays_byte_stable_and_within_its_budget() -> None:
    more = [dataclasses.replace(DELETE_RELATIONS, name=f"delete_relations_{n}") for n in range(30)]
    tools = [CREATE_ENTITIES, CREATE_RELATIONS, DELETE_RELATIONS, *more]
    first = run_code_description(tools)
    assert first == run_code_description([ToolDefinition(**vars(tool)) for tool in tools])
    assert "class Entity(TypedDict):" in first
    compact = run_code_description(tools, budget=len(first) - 1)
    assert len(compact) < len(first) and not is_short(len(first) - 1), "the full rules, with an index"
    assert "class Entity" not in compact and "describe_tool" in compact, "over the budget: the index"
    short = run_code_description(tools, budget=CLIENT_CATALOG_BUDGET)
    assert len(short) <= CLIENT_CATALOG_BUDGET and "class Entity" not in short
    assert short.index("create_entities") < short.index("Call functions with keyword arguments"), (
        "catalog first"
    )


def test_python_type_alone_keeps_plain_dicts() -> None:
    assert python_type({"type": "array", "items": ENTITY}) == "list[dict[str, Any]]"


def test_the_host_finds_a_missing_key_in_a_value_built_anywhere() -> None:
    [entry] = [e for name, e in build_catalog([CREATE_ENTITIES]).items() if name == "create_entities"]
    schema = entry.nested["entities"]
    good = {"name": "A", "entityType": "p", "observations": []}
    assert missing_key([good, {"name": "B", "entityType": "p"}], schema, "entities") == (
        "`entities[1]` is missing required key 'observations'"
    )
    assert missing_key([good, {**good, "extra": 1}], schema, "entities") is None, (
        "extra keys: the server's call"
    )
    assert missing_key("not a list", schema, "entities") is None, "a wrong kind: the server's to say"
    union = {"anyOf": [ENTITY, {"type": "string"}]}
    assert missing_key({"name": "A"}, union, "e") is None, "a union is never guessed at"
    assert build_catalog([CREATE_ENTITIES])["search_tools"].nested == {}


def test_the_short_form_begins_where_the_rules_would_take_half_the_budget() -> None:
    """The README names the number: under 5,308 characters, the short form."""
    assert is_short(5_307) and not is_short(5_308)
    assert not is_short(DEFAULT_CATALOG_BUDGET) and is_short(CLIENT_CATALOG_BUDGET)
