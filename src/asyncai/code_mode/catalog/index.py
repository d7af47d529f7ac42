"""The compact catalog: what the ``run_code`` description lists when every stub would not fit the
budget. Pure functions: the same tools always give the same bytes (prompt caching).

The index says how many functions there are and how to reach the rest, then per server how many
tools it has and the areas they cover (the most common leading words of their names), then as many
functions as fit, one line each: ``name(required, params, optional=...) - summary`` (the summary
left out where the room is short).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from asyncai.code_mode.catalog.search import summary, words_of_name
from asyncai.code_mode.catalog.stubs import parameter_names
from asyncai.humanize import count
from asyncai.tools.types import ToolDefinition

AREAS_SHOWN = 12
LINE_SUMMARY_CHARS = 90

HOW_TO_FIND = """\
The catalog has {total} functions; their stubs would take {full} characters, so only an index \
follows{listed_note}. Every function can be called, listed or not, and its arguments are checked \
as usual. From a snippet, without a model round trip:
- await search_tools(query="delete a kv namespace", limit=10) -> list of {{"name", "summary", \
"signature"}}, best match first; when more matched, the last match's "more" key says how many.
- await describe_tool(name="...") -> the function's full stub (signature, docstring, Returns:).
- shape(x) -> one line sketching any value's structure (keys, types, list lengths), to read a \
result marked -> Any without printing it.
Search, describe and call in one run_code: r = await search_tools(query="..."); \
print(await describe_tool(name=r[0]["name"]))."""


def index_line(py_name: str, tool: ToolDefinition, *, with_summary: bool = True) -> str:
    """``kv_namespace_delete(account_id, kv_namespace_id) - Delete a KV namespace.``"""
    required = {str(name) for name in tool.input_schema.get("required", [])}
    params = [
        py if schema_name in required else f"{py}=..."
        for py, schema_name in sorted(parameter_names(tool).items(), key=lambda p: p[1] not in required)
    ]
    line = f"{py_name}({', '.join(params)})"
    description = summary(tool.description, LINE_SUMMARY_CHARS) if with_summary else ""
    return f"{line} - {description}" if description else line


def _areas(names: Sequence[str]) -> str:
    words = Counter(words_of_name(name).split(" ")[0].lower() for name in names if name)
    common = [word for word, _ in words.most_common(AREAS_SHOWN)]
    more = "" if len(words) <= AREAS_SHOWN else ", ..."
    return ", ".join(common) + more


def how_to_find(total: int, full_size: int) -> Callable[[int], str]:
    """The full description's intro to its index: what is listed and how to reach the rest."""

    def intro(listed: int) -> str:
        note = "" if listed == total else f", listing {count(listed)} of them"
        return HOW_TO_FIND.format(total=count(total), full=count(full_size), listed_note=note)

    return intro


def render_index(
    functions: Mapping[str, ToolDefinition],
    budget: int,
    intro: Callable[[int], str],
    *,
    with_summary: bool = True,
) -> str:
    """The index for ``functions`` (Python name -> tool, in catalog order) in at most ``budget``
    characters: ``intro`` (given how many functions are listed), then per server its count and
    areas and as many of its functions as fit, one line each."""
    by_server: dict[str, list[str]] = {}
    for py_name, tool in functions.items():
        by_server.setdefault(tool.server or "tools", []).append(py_name)
    headers = {
        server: f"# server {server}: {count(len(names))} functions ({_areas(names)})"
        for server, names in by_server.items()
    }
    total = len(functions)
    # The intro may grow when not all fit: reserve its longest form.
    room = budget - len(intro(max(total - 1, 0))) - sum(len(h) + 2 for h in headers.values())
    lines: dict[str, list[str]] = {server: [] for server in by_server}
    listed = 0
    # Round-robin over servers, so a small server is not crowded out by a large one.
    queues = {server: list(names) for server, names in by_server.items()}
    while room > 0 and any(queues.values()):
        for server, queue in queues.items():
            if not queue:
                continue
            line = index_line(queue[0], functions[queue[0]], with_summary=with_summary)
            if len(line) + 1 > room:
                queues[server] = []
                continue
            queue.pop(0)
            lines[server].append(line)
            room -= len(line) + 1
            listed += 1
    sections = [intro(listed)]
    for server, header in headers.items():
        sections.append("\n".join([header, *lines[server]]))
    return "\n\n".join(sections)
