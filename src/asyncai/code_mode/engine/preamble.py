"""Python fed into every new REPL scope: pre-imports, the helpers and one sandbox-side
wrapper per catalog tool.

Tool results cross into the sandbox as *text* and are parsed there: measured on this machine,
an 11 MB result took 1.78 s to cross as a structured value but 0.35 s as text plus ``json.loads``
inside the sandbox (see benchmarks/bench_code_mode.py). The host sends ``(mode, text)``
(``crossing.Payload``); the wrappers make that invisible: the model calls ``await list_objects(...)``
and gets a ``dict``.
"""

from __future__ import annotations

from collections.abc import Iterable

from asyncai.code_mode.engine.contract import LARGE_VALUE_MARK

HOST_CALL = "_asyncai_tool"
"""The one host function the sandbox can reach; every wrapper goes through it."""
INTERNAL_PREFIX = "_asyncai_"

DYNAMIC_CODE_DISABLED = (
    "exec() and eval() are disabled in asyncai code mode: write the code in the snippet itself"
)
"""exec() could bind what the rebinding guard protects (``_asyncai_decode``, the tool wrappers), and
every later tool call in the REPL would then return what the snippet wanted; a snippet never needs
them, since the model writes the code itself."""
DISABLED_BUILTINS = ("exec", "eval")
BOUNDED = "_asyncai_bounded"
"""The helper a snippet's value passes through on its way out: a dict, list or tuple whose JSON is
over the result limit stays in the sandbox, and only its JSON's length and first characters cross
(``contract.LARGE_VALUE_MARK``); converting a value the model never sees whole cost a 134 KB
result 5.7 ms, and slowed the next snippet."""

HELPERS_SOURCE = '''
import asyncio
import json
import re
import json as _asyncai_json


def _asyncai_no_dynamic_code(*args, **kwargs):
    raise PermissionError("DYNAMIC_CODE_DISABLED")


exec = _asyncai_no_dynamic_code
eval = _asyncai_no_dynamic_code


def _asyncai_bounded(value, limit, shown):
    if not isinstance(value, (dict, list, tuple)):
        return value
    try:
        text = _asyncai_json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except Exception:
        return value
    if len(text) <= limit:
        return value
    return ("LARGE_VALUE_MARK", len(text), text[:shown])


def _asyncai_decode(reply):
    mode, payload = reply
    if mode == "value":
        return payload
    if mode == "json":
        return _asyncai_json.loads(payload)
    try:
        return _asyncai_json.loads(payload)
    except ValueError:
        return payload


def items(x):
    """The list in x: x itself, x["items"], the only list value of a dict, [] for None, else [x]."""
    if x is None:
        return []
    if isinstance(x, (list, tuple)):
        return list(x)
    if isinstance(x, dict):
        if isinstance(x.get("items"), list):
            return x["items"]
        lists = [v for v in x.values() if isinstance(v, list)]
        if len(lists) == 1:
            return lists[0]
    return [x]


def dig(obj, *path, default=None):
    """obj["a"]["b"][0]... for dig(obj, "a.b.0") or dig(obj, "a", "b", 0); default when missing.

    A trailing argument that is not a str or int is taken as the default: dig(x, "a", {}).
    """
    parts = list(path)
    if parts and not isinstance(parts[-1], (str, int)):
        default = parts.pop()
    current = obj
    for part in parts:
        keys = part.split(".") if isinstance(part, str) else [part]
        for key in keys:
            if isinstance(current, dict):
                if key not in current:
                    return default
                current = current[key]
            elif isinstance(current, (list, tuple)):
                try:
                    index = int(key)
                except (TypeError, ValueError):
                    return default
                if index < -len(current) or index >= len(current):
                    return default
                current = current[index]
            else:
                return default
    return current


def names(x):
    """metadata.name (else name, else id) of every element of items(x); strings as they are."""
    found = []
    for element in _asyncai_items(x):
        if isinstance(element, str):
            found.append(element)
        elif isinstance(element, dict):
            name = _asyncai_dig(element, "metadata.name")
            if name is None:
                name = element.get("name", element.get("id"))
            if name is not None:
                found.append(name)
    return found


def _asyncai_jsonable(x):
    if x is None or isinstance(x, (str, int, float, bool)):
        return x
    if isinstance(x, dict):
        return {(k if isinstance(k, str) else str(k)): _asyncai_jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set, frozenset)):
        return [_asyncai_jsonable(v) for v in x]
    return str(x)


def to_json(x, indent=None):
    """json.dumps that never fails: unknown types become str(x), non-str keys str(key)."""
    return _asyncai_json.dumps(_asyncai_jsonable(x), indent=indent)


def count_by(xs, *path):
    """{value: count} of dig(x, *path) over items(xs), most common first."""
    counts = {}
    for x in _asyncai_items(xs):
        key = _asyncai_dig(x, *path)
        if isinstance(key, (list, dict, set)):
            key = _asyncai_to_json(key)
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda pair: -pair[1]))


def _asyncai_shape_of(x, depth):
    if x is None or isinstance(x, (bool, int, float, str)):
        return "None" if x is None else type(x).__name__
    if isinstance(x, (list, tuple)):
        kind = "list" if isinstance(x, list) else "tuple"
        if not x or depth >= 3:
            return f"{kind}[{len(x)}]"
        return f"{kind}[{len(x)}] of " + _asyncai_shape_of(x[0], depth + 1)
    if isinstance(x, dict):
        if not x:
            return "{}"
        if depth >= 3:
            return "{...}"
        keys = list(x.keys())
        parts = [f"{k}: {_asyncai_shape_of(x[k], depth + 1)}" for k in keys[:8]]
        if len(keys) > 8:
            parts.append(f"... +{len(keys) - 8} keys")
        return "{" + ", ".join(parts) + "}"
    return type(x).__name__


def shape(x):
    """One line sketching x: dict keys with their value types, list lengths and the first element."""
    text = _asyncai_shape_of(x, 0)
    return text if len(text) <= 400 else text[:397] + "..."


# Helpers call each other only through these private aliases: a snippet may bind a helper's public
# name (the helper is then shadowed in its REPL) and every other helper still works. The functions
# keep their public names, so an error names the helper the model called.
_asyncai_items = items
_asyncai_names = names
_asyncai_dig = dig
_asyncai_count_by = count_by
_asyncai_to_json = to_json
_asyncai_shape = shape
'''

_WRAPPER = """
async def {py_name}(*args, **kwargs):
    return _asyncai_decode(await {host}({py_name!r}, args, kwargs))
"""


def wrappers_source(function_names: Iterable[str]) -> str:
    """One ``async def`` per catalog function that forwards to the host and decodes the JSON text."""
    return "".join(_WRAPPER.format(py_name=name, host=HOST_CALL) for name in function_names)


def typed_dicts_source(type_names: Iterable[str]) -> str:
    """``Entity = dict`` per TypedDict of the stubs: ``Entity(name=...)``, as the stub reads, builds
    the dict (Monty has no TypedDict)."""
    return "".join(f"{name} = dict\n" for name in type_names)


def scope_preamble(function_names: Iterable[str], type_names: Iterable[str] = ()) -> str:
    helpers = HELPERS_SOURCE.replace('"DYNAMIC_CODE_DISABLED"', repr(DYNAMIC_CODE_DISABLED)).replace(
        '"LARGE_VALUE_MARK"', repr(LARGE_VALUE_MARK)
    )
    return helpers + wrappers_source(function_names) + typed_dicts_source(type_names)


def keeping(preamble: str, names: Iterable[str]) -> str:
    """``preamble`` fed again into a REPL whose snippets bound ``names`` (a helper shadowed, say):
    their values are put back after it, so defining the current helpers and tools loses nothing."""
    kept = list(names)
    if not kept:
        return preamble
    save = "".join(
        f"try:\n    _asyncai_kept[{name!r}] = {name}\nexcept NameError:\n    pass\n" for name in kept
    )
    restore = "".join(
        f"if {name!r} in _asyncai_kept:\n    {name} = _asyncai_kept[{name!r}]\n" for name in kept
    )
    return f"_asyncai_kept = {{}}\n{save}{preamble}\n{restore}_asyncai_kept = None\n"
