"""The code-mode catalog: tools rendered as typed Python ``async def`` stubs, so a model writes
calls it has seen the signature of.

Everything here is a pure function of the tool definitions, so the ``run_code`` description is
byte-stable for a given tool set (it sits in the cached prompt prefix).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import keyword
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from asyncai.code_mode.catalog.host_functions import HOST_FUNCTIONS
from asyncai.code_mode.engine.crossing import unwrapped_output_schema
from asyncai.tools.types import ToolDefinition

__all__ = [
    "COMPACT_HELPERS",
    "HELPER_NAMES",
    "PREIMPORTED",
    "RESERVED_HELPERS",
    "RUN_CODE",
    "RUN_CODE_INPUT_SCHEMA",
    "StubTypes",
    "catalog_types",
    "parameter_names",
    "python_type",
    "render_catalog",
    "render_stub",
    "sanitize_names",
    "shape_sketch",
    "signature_line",
]

HELPER_NAMES: Final = ("items", "names", "dig", "count_by", "to_json")
COMPACT_HELPERS: Final = ("shape",)
"""Helpers the full description does not mention (it stays as it was); the compact one does."""
RESERVED_HELPERS: Final = (*HELPER_NAMES, *COMPACT_HELPERS)
PREIMPORTED: Final = ("asyncio", "json", "re")

RUN_CODE: Final = "run_code"
RUN_CODE_INPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "description": "Python to run"},
        "restart": {"type": "boolean", "description": "reset REPL state first"},
    },
    "required": ["code"],
}

# Builtins a tool must not shadow: the sandbox resolves builtins before asking the host for a name,
# so a tool called ``list`` or ``open`` would be unreachable. Fixed here (not ``dir(builtins)``) so
# the catalog does not change with the host's Python version.
_BUILTIN_NAMES: Final = frozenset(
    """abs aiter all anext any ascii bin bool breakpoint bytearray bytes callable chr classmethod
    compile complex copyright credits delattr dict dir divmod enumerate eval exec exit filter float
    format frozenset getattr globals hasattr hash help hex id input int isinstance issubclass iter
    len license list locals map max memoryview min next object oct open ord pow print property quit
    range repr reversed round set setattr slice sorted staticmethod str sum super tuple type vars zip
    """.split()  # noqa: SIM905 (one readable block)
)
_RESERVED_TOOL_NAMES: Final = (
    frozenset(RESERVED_HELPERS) | frozenset(PREIMPORTED) | frozenset(HOST_FUNCTIONS) | _BUILTIN_NAMES
)
TYPING_NAMES: Final = ("Any", "Literal", "NotRequired", "TypedDict")
"""What the stubs import from ``typing``: no TypedDict may take one of these names."""
# Capitalised builtins a TypedDict named after a schema could otherwise shadow in the stubs.
_BUILTIN_CLASSES: Final = frozenset(
    """ArithmeticError AssertionError AttributeError BaseException BlockingIOError BrokenPipeError
    BufferError BytesWarning ChildProcessError ConnectionError DeprecationWarning EOFError Ellipsis
    EnvironmentError Exception ExceptionGroup BaseExceptionGroup False FileExistsError
    FileNotFoundError FloatingPointError FutureWarning GeneratorExit IOError ImportError
    ImportWarning IndentationError IndexError InterruptedError IsADirectoryError KeyError
    KeyboardInterrupt LookupError MemoryError ModuleNotFoundError NameError None
    NotADirectoryError NotImplemented NotImplementedError OSError OverflowError
    PendingDeprecationWarning PermissionError ProcessLookupError RecursionError ReferenceError
    ResourceWarning RuntimeError RuntimeWarning StopAsyncIteration StopIteration SyntaxError
    SyntaxWarning SystemError SystemExit TabError TimeoutError True TypeError UnboundLocalError
    UnicodeDecodeError UnicodeEncodeError UnicodeError UnicodeTranslateError UnicodeWarning
    UserWarning ValueError Warning ZeroDivisionError""".split()  # noqa: SIM905 (one readable block)
)

OBSERVED_MARK: Final = "x-asyncai-observed"
"""Set on every object of an observed shape: its sketch marks keys that were sometimes missing."""
_MAX_SKETCH_DEPTH: Final = 4
_MAX_SKETCH_PROPERTIES: Final = 12
_ARG_DESCRIPTION_SOFT_LIMIT: Final = 160
"""Whole sentences are kept while they fit; the first sentence is always kept whole..."""
_ARG_DESCRIPTION_HARD_LIMIT: Final = 400
"""...unless it is longer than this, when it is cut at a word."""

_SCALAR_TYPES: Final = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "null": "None",
}

# ---------------------------------------------------------------------------------------------
# Names


def _identifier(name: str) -> str:
    """``name`` as an identifier: ``[^A-Za-z0-9_]`` -> ``_``, a leading digit gets a ``_`` prefix."""
    ident = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not ident:
        return "_"
    if ident[0].isdigit():
        ident = "_" + ident
    return ident


def _assign_names(names: Sequence[str], reserved: frozenset[str]) -> list[str]:
    """A unique identifier for each name, in order.

    Names that are already usable identifiers keep themselves; the others are claimed in order.
    Keywords get a trailing ``_`` (PEP 8), reserved names and collisions a ``_2``, ``_3``, ... suffix.
    """

    def usable(ident: str) -> bool:
        return not keyword.iskeyword(ident) and ident not in reserved

    taken = {name for name in names if name.isidentifier() and usable(name)}
    assigned: list[str] = []
    kept: set[str] = set()
    for name in names:
        if name in taken and name not in kept:
            kept.add(name)
            assigned.append(name)
            continue
        base = _identifier(name)
        if keyword.iskeyword(base):
            base += "_"
        candidate, n = base, 1
        while candidate in taken or not usable(candidate):
            n += 1
            candidate = f"{base}_{n}"
        taken.add(candidate)
        assigned.append(candidate)
    return assigned


def sanitize_names(tools: Sequence[ToolDefinition]) -> dict[str, ToolDefinition]:
    """Python identifier -> tool, in the tools' order (deterministic).

    Avoids keywords, the helper names, the pre-imported modules and the builtins.
    """
    idents = _assign_names([tool.name for tool in tools], _RESERVED_TOOL_NAMES)
    return dict(zip(idents, tools, strict=True))


def _properties(schema: Any) -> dict[str, Any]:
    props = schema.get("properties") if isinstance(schema, dict) else None
    return props if isinstance(props, dict) else {}


def _required(schema: Any) -> list[str]:
    required = schema.get("required") if isinstance(schema, dict) else None
    if not isinstance(required, list):
        return []
    return [name for name in required if isinstance(name, str)]


def _ordered_properties(schema: Any) -> list[tuple[str, Any, bool]]:
    """(property name, schema, required) with required properties first, each group in schema order."""
    props = _properties(schema)
    required = set(_required(schema))
    extra_required = [name for name in _required(schema) if name not in props]
    first = [(name, props[name], True) for name in props if name in required]
    first += [(name, {}, True) for name in dict.fromkeys(extra_required)]
    rest = [(name, sub, False) for name, sub in props.items() if name not in required]
    return first + rest


def parameter_names(tool: ToolDefinition) -> dict[str, str]:
    """Python parameter name -> input-schema property name, in stub order."""
    ordered = [name for name, _, _ in _ordered_properties(tool.input_schema)]
    return dict(zip(_assign_names(ordered, frozenset()), ordered, strict=True))


# ---------------------------------------------------------------------------------------------
# Types


def _literal(values: Iterable[Any]) -> list[str]:
    """Union members for an enum/const: ``Literal[...]`` of the scalars, ``None`` last."""
    scalars: list[str] = []
    has_none = False
    for value in values:
        if value is None:
            has_none = True
        elif isinstance(value, (str, int, float)):
            scalars.append(repr(value))
        else:
            return ["Any"]
    members = [f"Literal[{', '.join(dict.fromkeys(scalars))}]"] if scalars else []
    return [*members, "None"] if has_none else members


def _union(members: Iterable[str]) -> list[str]:
    """Deduplicated members, ``None`` last; ``Any`` absorbs everything."""
    unique = list(dict.fromkeys(members))
    if not unique or "Any" in unique:
        return ["Any"]
    if "None" in unique:
        unique = [m for m in unique if m != "None"] + ["None"]
    return unique


@dataclass(frozen=True)
class _Where:
    """Where a schema sits in a stub, for naming the TypedDict of an object found there."""

    types: StubTypes
    owner: str
    """The function's Python name (a prefix when the plain name is taken)."""
    hint: str
    """The TypedDict name an object here gets when its schema has no usable ``title``."""
    depth: int = 0
    used: list[str] | None = None
    """Collects the TypedDicts the stub names directly."""

    def parameter(self, key: str) -> _Where:
        """At a parameter: an object there is named after it, and the stub names it."""
        return dataclasses.replace(self, hint=_class_name(key))

    def field(self, key: str, used: list[str]) -> _Where:
        """At a field of a TypedDict: one level deeper, named by the TypedDict (``used``)."""
        return dataclasses.replace(self, hint=_class_name(key), depth=self.depth + 1, used=used)


def _single_type(type_name: str, schema: dict[str, Any], where: _Where | None = None) -> str:
    if type_name in _SCALAR_TYPES:
        return _SCALAR_TYPES[type_name]
    if type_name == "array":
        items = schema.get("items")
        if not isinstance(items, dict):
            return "list[Any]"
        if where is None:
            return f"list[{python_type(items)}]"
        inner = dataclasses.replace(where, hint=_singular(where.hint))
        return f"list[{' | '.join(_type_members(items, inner))}]"
    if type_name == "object":
        if where is not None and _properties(schema) and where.depth < TYPED_DICT_DEPTH:
            return where.types.declare(schema, where)
        return "dict[str, Any]"
    return "Any"


def _type_members(schema: Any, where: _Where | None = None) -> list[str]:
    """The union members of the Python type for a JSON schema; with ``where``, an object with
    properties is a TypedDict declared in ``where.types``."""
    if not isinstance(schema, dict) or not schema or "$ref" in schema:
        return ["Any"]
    if "const" in schema:
        return _literal([schema["const"]])
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return _literal(schema["enum"])
    for combinator in ("anyOf", "oneOf"):
        options = schema.get(combinator)
        if isinstance(options, list) and options:
            return _union(m for option in options for m in _type_members(option, where))
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1:
        return _type_members(all_of[0], where)
    declared = schema.get("type")
    if isinstance(declared, str):
        return [_single_type(declared, schema, where)]
    if isinstance(declared, list) and declared:
        return _union(_single_type(t, schema, where) if isinstance(t, str) else "Any" for t in declared)
    if "properties" in schema or "additionalProperties" in schema:
        return [_single_type("object", schema, where)]
    if "items" in schema:
        return [_single_type("array", schema, where)]
    return ["Any"]


def python_type(schema: Any) -> str:
    """The Python annotation for a JSON schema (what the model reads in a stub)."""
    return " | ".join(_type_members(schema))


# ---------------------------------------------------------------------------------------------
# TypedDicts: nested objects of the input schemas, so the model reads (and the type check sees)
# which fields the server requires.

TYPED_DICT_DEPTH: Final = 3
"""Levels of nested objects rendered as TypedDicts; deeper ones stay ``dict[str, Any]``."""
_FIELD_COMMENT_LIMIT: Final = 100
_TITLE: Final = re.compile(r"[A-Z][A-Za-z0-9_]*")


def _class_name(key: str) -> str:
    """``metadata`` -> ``Metadata``, ``from-date`` -> ``FromDate``: CamelCase of the key's words."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", re.sub(r"[^A-Za-z0-9]+", " ", key)).split()
    name = "".join(word[:1].upper() + word[1:] for word in words) or "Item"
    return "T" + name if name[0].isdigit() else name


def _singular(name: str) -> str:
    """The name of one element of ``name`` (a plural): ``Entities`` -> ``Entity``,
    ``Relations`` -> ``Relation``; ``Data`` -> ``DataItem`` when no plural ending shows."""
    for plural, single in (("ies", "y"), ("sses", "ss"), ("xes", "x"), ("ches", "ch"), ("shes", "sh")):
        if name.endswith(plural) and len(name) > len(plural) + 1:
            return name[: -len(plural)] + single
    if name.endswith("s") and not name.endswith(("ss", "us", "is")) and len(name) > 2:
        return name[:-1]
    return name if name.endswith("Item") else name + "Item"


def _field_comment(schema: Any) -> str:
    description = schema.get("description") if isinstance(schema, dict) else None
    if not isinstance(description, str) or not description.strip():
        return ""
    return f"  # {_sentences_within(description, _FIELD_COMMENT_LIMIT, _ARG_DESCRIPTION_SOFT_LIMIT)}"


class StubTypes:
    """The TypedDicts one set of stubs declares, in the order they are first needed (an inner one
    before the one holding it). Names are unique in the set: the object's ``title``, else its
    property's name in CamelCase (singular for an array's items); a name taken by a different
    definition gets the function's name as a prefix, then a number. An identical definition
    under the same name is declared once and shared. Deterministic for a tool set."""

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        self._reserved = {*reserved, *TYPING_NAMES, *_BUILTIN_CLASSES, *_RESERVED_TOOL_NAMES}
        self.sources: dict[str, str] = {}
        """Name -> its definition, in declaration order."""
        self._bodies: dict[str, str] = {}
        self._inner: dict[str, list[str]] = {}

    def declare(self, schema: dict[str, Any], where: _Where) -> str:
        """The name of the TypedDict for the object ``schema`` (declared on first sight)."""
        required = set(_required(schema))
        inner: list[str] = []
        fields: list[tuple[str, str, bool, str]] = []
        for key, sub in _properties(schema).items():
            nested = where.field(key, inner)
            fields.append((key, " | ".join(_type_members(sub, nested)), key in required, _field_comment(sub)))
        title = schema.get("title")
        base = title if isinstance(title, str) and _TITLE.fullmatch(title) else where.hint
        body = _typed_dict_body(fields)
        for name in self._candidates(base, where.owner):
            if name in self._bodies:
                if self._bodies[name] != body:
                    continue
            else:
                self._bodies[name] = body
                self._inner[name] = list(dict.fromkeys(inner))
                self.sources[name] = _typed_dict_source(name, fields)
            if where.used is not None:
                where.used.append(name)
            return name
        raise AssertionError("unreachable: the candidates never end")

    def _candidates(self, base: str, owner: str) -> Iterator[str]:
        prefixed = _class_name(owner) + base
        for name in (base, prefixed):
            if name not in self._reserved and not keyword.iskeyword(name):
                yield name
        n = 2
        while True:
            yield f"{prefixed}{n}"
            n += 1

    def needed(self, names: Iterable[str]) -> list[str]:
        """``names`` and every TypedDict they hold, in declaration order."""
        found: set[str] = set()
        stack = list(names)
        while stack:
            name = stack.pop()
            if name not in found:
                found.add(name)
                stack.extend(self._inner.get(name, ()))
        return [name for name in self.sources if name in found]


def _typed_dict_body(fields: list[tuple[str, str, bool, str]]) -> str:
    return "\n".join(
        f"{key!r}: {annotation} {required}{comment}" for key, annotation, required, comment in fields
    )


def _typed_dict_source(name: str, fields: list[tuple[str, str, bool, str]]) -> str:
    """``class Name(TypedDict): ...``, or ``Name = TypedDict("Name", {...})`` when a key is no
    identifier (``from``); all optional: ``total=False``; some optional: ``NotRequired[...]``."""
    total = any(required for _, _, required, _ in fields)
    closing = "" if total else ", total=False"

    def annotation(text: str, required: bool) -> str:
        return text if required or not total else f"NotRequired[{text}]"

    # A key written in a class body must be an identifier, and one starting ``__`` would be mangled.
    if all(
        key.isidentifier() and not keyword.iskeyword(key) and not key.startswith("__") for key, *_ in fields
    ):
        lines = [f"class {name}(TypedDict{closing}):"]
        lines += [f"    {key}: {annotation(t, req)}{comment}" for key, t, req, comment in fields]
        return "\n".join(lines)
    lines = [f"{name} = TypedDict({json.dumps(name)}, {{"]
    lines += [
        f"    {json.dumps(key, ensure_ascii=False)}: {annotation(t, req)},{comment}"
        for key, t, req, comment in fields
    ]
    lines.append(f"}}{closing})")
    return "\n".join(lines)


def catalog_types(functions: Mapping[str, ToolDefinition]) -> StubTypes:
    """The TypedDicts of every stub of ``functions`` (Python name -> tool, in catalog order):
    the description, ``describe_tool`` and the type check name each one alike."""
    types = StubTypes(functions)
    for py_name, tool in functions.items():
        _signature(tool, _where(types, py_name))
    return types


def _where(types: StubTypes, owner: str) -> _Where:
    return _Where(types, owner, "Item", used=[])


# ---------------------------------------------------------------------------------------------
# Shape sketches


def _sketch_literal(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    return "Any"


def _sketch_union(parts: Iterable[str]) -> str:
    unique = list(dict.fromkeys(parts))
    return "Any" if "Any" in unique else "|".join(unique)


def _sketch_object(schema: dict[str, Any], depth: int) -> str:
    props = _properties(schema)
    if depth >= _MAX_SKETCH_DEPTH:
        return "{...}" if props or isinstance(schema.get("additionalProperties"), dict) else "dict"
    if props:
        names = list(props)
        # An observed shape marks the keys some results lacked (a declared one stays as it was).
        optional = set(names) - set(_required(schema)) if schema.get(OBSERVED_MARK) else set()
        fields = [
            f"{json.dumps(name, ensure_ascii=False)}{'?' if name in optional else ''}: "
            f"{shape_sketch(props[name], depth + 1)}"
            for name in names[:_MAX_SKETCH_PROPERTIES]
        ]
        if len(names) > _MAX_SKETCH_PROPERTIES:
            fields.append("...")
        return "{" + ", ".join(fields) + "}"
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict) and extra:
        return "{str: " + shape_sketch(extra, depth + 1) + "}"
    return "dict"


def _sketch_array(schema: dict[str, Any], depth: int) -> str:
    items = schema.get("items")
    if not isinstance(items, dict) or not items:
        return "list"
    if depth >= _MAX_SKETCH_DEPTH:
        return "[...]"
    return "[" + shape_sketch(items, depth + 1) + "]"


def _sketch_type(type_name: str, schema: dict[str, Any], depth: int) -> str:
    if type_name == "object":
        return _sketch_object(schema, depth)
    if type_name == "array":
        return _sketch_array(schema, depth)
    return _SCALAR_TYPES.get(type_name, "Any")


def shape_sketch(schema: Any, depth: int = 0) -> str:
    """A compact, deterministic sketch of the data a JSON schema describes.

    Objects as ``{"key": <sketch>, ...}`` (at most 12 properties, then ``...``), arrays as
    ``[<item>]``, scalars as type names, enums as ``"a"|"b"``, unions joined by ``|``; containers
    below 4 levels are cut to ``{...}`` / ``[...]``.
    """
    if not isinstance(schema, dict) or not schema or "$ref" in schema:
        return "Any"
    if "const" in schema:
        return _sketch_literal(schema["const"])
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return _sketch_union(_sketch_literal(v) for v in schema["enum"])
    for combinator in ("anyOf", "oneOf"):
        options = schema.get(combinator)
        if isinstance(options, list) and options:
            return _sketch_union(shape_sketch(option, depth) for option in options)
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1:
        return shape_sketch(all_of[0], depth)
    declared = schema.get("type")
    if isinstance(declared, str):
        return _sketch_type(declared, schema, depth)
    if isinstance(declared, list) and declared:
        return _sketch_union(
            _sketch_type(t, schema, depth) if isinstance(t, str) else "Any" for t in declared
        )
    if "properties" in schema or "additionalProperties" in schema:
        return _sketch_object(schema, depth)
    if "items" in schema:
        return _sketch_array(schema, depth)
    return "Any"


# ---------------------------------------------------------------------------------------------
# Stubs


_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+")


def _sentences_within(text: str, soft_limit: int, hard_limit: int) -> str:
    """``text`` on one line, cut after the last whole sentence that fits ``soft_limit``.

    The first sentence is kept whole up to ``hard_limit`` characters, then cut at a word with ``...``.
    """
    flat = " ".join(text.split())
    if len(flat) <= soft_limit:
        return flat
    sentences = _SENTENCE_END.split(flat)
    kept = sentences[0]
    for sentence in sentences[1:]:
        if len(kept) + 1 + len(sentence) > soft_limit:
            break
        kept = f"{kept} {sentence}"
    if len(kept) <= hard_limit:
        return kept
    return kept[: hard_limit - 3].rsplit(" ", 1)[0].rstrip(" ,;:") + "..."


def _docstring(lines: list[str]) -> str:
    """An indented docstring; raw when the text has backslashes, so ``\\d`` reads as written."""
    text = "\n".join(lines)
    quote = 'r"""' if "\\" in text else '"""'
    text = text.replace('"""', '\\"""') if quote == 'r"""' else text.replace('"""', '\\"\\"\\"')
    body = "\n".join(f"    {line}" if line else "" for line in text.split("\n"))
    return f'    {quote}\n{body}\n    """'


def _parameter(py_name: str, schema: Any, required: bool, where: _Where | None = None) -> str:
    members = _type_members(schema, where)
    if required:
        return f"{py_name}: {' | '.join(members)}"
    if "None" not in members and members != ["Any"]:
        members = [*members, "None"]
    return f"{py_name}: {' | '.join(members)} = None"


def _arg_line(py_name: str, schema: Any) -> str | None:
    if not isinstance(schema, dict):
        return None
    description = schema.get("description")
    text = description.strip() if isinstance(description, str) else ""
    if "default" in schema:
        default = json.dumps(schema["default"], ensure_ascii=False)
        text = f"{text} (default: {default})" if text else f"default: {default}"
    if not text:
        return None
    return (
        f"    {py_name}: {_sentences_within(text, _ARG_DESCRIPTION_SOFT_LIMIT, _ARG_DESCRIPTION_HARD_LIMIT)}"
    )


_LOCAL_REF_PREFIXES: Final = ("#/$defs/", "#/definitions/")


def inline_local_refs(schema: Any) -> Any:
    """``schema`` with local ``$ref``s (``#/$defs/X``, ``#/definitions/X``) replaced by their targets.

    Generated schemas (pydantic, zod) put every nested model in ``$defs``; inlined, the stubs and
    ``Returns:`` sketches show the real shape instead of ``Any``. A recursive reference becomes ``{}``
    (Any) where it recurs; unknown or remote references stay as they are (rendered as Any).
    """
    if not isinstance(schema, dict):
        return schema
    definitions: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        found = schema.get(key)
        if isinstance(found, dict):
            definitions.update(found)

    def resolve(node: Any, active: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [resolve(item, active) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_LOCAL_REF_PREFIXES):
            name = ref.split("/", 2)[2]
            if name in active:
                return {}
            if name in definitions:
                siblings = {k: v for k, v in node.items() if k != "$ref"}
                return resolve({**definitions[name], **siblings}, active | {name})
        return {k: resolve(v, active) for k, v in node.items() if k not in ("$defs", "definitions")}

    return resolve(schema, frozenset())


def _signature(
    tool: ToolDefinition, where: _Where | None = None, positional: int = 0
) -> tuple[dict[str, str], dict[str, tuple[Any, bool]], str]:
    """(Python name -> property, property -> (schema, required), ``*, a: str, b: int | None = None``,
    the first ``positional`` parameters before the ``*``); with ``where``, nested objects are
    TypedDicts declared there."""
    py_params = parameter_names(tool)
    input_schema = inline_local_refs(tool.input_schema)
    props = {name: (sub, req) for name, sub, req in _ordered_properties(input_schema)}
    params = [
        _parameter(py, *props[prop], where.parameter(prop) if where is not None else None)
        for py, prop in py_params.items()
    ]
    if not params:
        return py_params, props, ""
    leading, named = params[:positional], params[positional:]
    return py_params, props, ", ".join([*leading, *(["*", *named] if named else [])])


def render_signature(py_name: str, tool: ToolDefinition, types: StubTypes | None = None) -> str:
    """The stub's signature alone, returning ``Any``: what the type check needs of a tool
    (its TypedDicts are in ``types``, which the caller renders before it). Unlike the
    description's stubs, it takes the ``tool.positional`` leading parameters by position too."""
    where = _where(types, py_name) if types is not None else None
    return f"async def {py_name}({_signature(tool, where, tool.positional)[2]}) -> Any: ..."


SHORT_RETURN_CHARS: Final = 60
"""A return shape sketched this short stands as the annotation of a one-line signature."""


def signature_line(py_name: str, tool: ToolDefinition) -> str:
    """A stub in one line, for a description that must be short: ``async def`` with its parameters
    (nested objects as dicts, no TypedDicts) and, when short, the shape it returns."""
    output_schema = inline_local_refs(unwrapped_output_schema(tool.output_schema))
    returns = "Any"
    if output_schema:
        sketch = shape_sketch(output_schema)
        returns = sketch if len(sketch) <= SHORT_RETURN_CHARS else python_type(output_schema)
    return f"async def {py_name}({_signature(tool)[2]}) -> {returns}"


def observed_sketch(schema: dict[str, Any]) -> str:
    """The sketch of an observed shape, keys that some results lacked marked ``"key"?``."""

    def mark(node: Any) -> Any:
        if isinstance(node, list):
            return [mark(item) for item in node]
        if not isinstance(node, dict):
            return node
        marked = {key: mark(value) if key != "required" else value for key, value in node.items()}
        return {**marked, OBSERVED_MARK: True} if node.get("type") == "object" else marked

    return shape_sketch(mark(schema))


def render_stub(py_name: str, tool: ToolDefinition, types: StubTypes | None = None) -> str:
    """An ``async def`` stub with keyword-only parameters, a return annotation and a docstring,
    after the TypedDicts its parameters name (from ``types``, the catalog's, when given)."""
    classes, stub = _stub_parts(py_name, tool, types)
    return "\n\n".join([*classes, stub])


def _stub_parts(py_name: str, tool: ToolDefinition, types: StubTypes | None) -> tuple[list[str], str]:
    """(the definitions of the TypedDicts the stub needs, the stub)."""
    types = types if types is not None else StubTypes([py_name])
    where = _where(types, py_name)
    py_params, props, signature = _signature(tool, where)
    output_schema = inline_local_refs(unwrapped_output_schema(tool.output_schema))
    returns = python_type(output_schema) if output_schema else "Any"

    doc: list[str] = []
    description = inspect.cleandoc(tool.description or "")
    if description:
        doc.extend(description.splitlines())
    arg_lines = [line for py, prop in py_params.items() if (line := _arg_line(py, props[prop][0]))]
    if arg_lines:
        doc.append("Args:")
        doc.extend(arg_lines)
    if output_schema:
        doc.append(f"Returns: {shape_sketch(output_schema)}")
    elif tool.observed_output_schema:  # declared schemas win; this is only what came back so far
        doc.append(f"Returns (observed): {observed_sketch(tool.observed_output_schema)}")

    classes = [types.sources[name] for name in types.needed(where.used or ())]
    return classes, f"async def {py_name}({signature}) -> {returns}:\n{_docstring(doc)}"


def render_catalog(tools: Sequence[ToolDefinition]) -> str:
    """Every tool's stub, in the tools' order, separated by blank lines; each TypedDict once,
    before the first stub that needs it."""
    functions = sanitize_names(tools)
    types = StubTypes(functions)  # declared in this same order: the names ``catalog_types`` gives
    shown: set[str] = set()
    parts: list[str] = []
    for py_name, tool in functions.items():
        classes, stub = _stub_parts(py_name, tool, types)
        parts += [source for source in classes if source not in shown]
        shown.update(classes)
        parts.append(stub)
    return "\n\n".join(parts)
