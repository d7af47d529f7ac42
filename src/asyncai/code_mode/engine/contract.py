"""The ``run_code`` return contract as pure functions: what the model reads after a snippet.

The engine observes what a snippet produced (its trailing value and its print output, or a
traceback) and these functions turn that into the text the model gets.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Final

from asyncai.code_mode.catalog.stubs import RESERVED_HELPERS
from asyncai.code_mode.engine.values import compact_json, dump_json, to_json_value
from asyncai.humanize import count
from asyncai.log import preview

__all__ = [
    "HINTS",
    "IMPORTABLE_MODULES",
    "MAX_RESULT_CHARS",
    "NO_OUTPUT_TEXT",
    "PREVIEW_CHARS",
    "RunCodeText",
    "SnippetOutcome",
    "find_unawaited",
    "format_error",
    "format_outcome",
    "hint_for",
    "preview",
    "tool_name_taken",
]

MAX_RESULT_CHARS: Final = 20_000
PREVIEW_CHARS: Final = 2_000
NO_OUTPUT_TEXT: Final = "(no output; the last expression was None)"
EMPTY_STRING_TEXT: Final = '(the result is an empty string "")'
STATE_RESET_TEXT: Final = (
    "The REPL state was reset: all variables from earlier run_code calls are gone; fetch again what you need."
)

LARGE_VALUE_MARK: Final = "_asyncai_large_value"
"""First item of what the sandbox hands back in place of a value whose JSON is over the result limit
(``preamble.BOUNDED``): ``(LARGE_VALUE_MARK, its JSON's length, its first chars)``."""

_UNAWAITED: Final = re.compile(r"<coroutine external_future\(\d+\)>|<coroutine object [^>]*>|<gather\(\d+\)>")
_SCAN_LIMIT: Final = 1_000


@dataclass(frozen=True)
class SnippetOutcome:
    """What a snippet that completed produced, as the engine observed it."""

    value: Any
    """The trailing expression's host value; None when the snippet ended with a statement."""
    printed: str
    """Collected ``print()`` output, already capped by the engine."""
    printed_truncated_bytes: int = 0
    """How many bytes of print output the engine dropped."""


@dataclass(frozen=True)
class RunCodeText:
    """The ``run_code`` tool result as the model sees it."""

    text: str
    is_error: bool
    value: Any = field(default=None, compare=False)
    """The snippet's value as JSON data (``to_json_value``), beside the text; over the result limit,
    the text saying where it is kept; ``None`` for an error. Not compared: the text already says it."""
    output: str | None = field(default=None, compare=False)
    """What the snippet printed, as the text shows it (clipped); ``None`` when it printed nothing."""


def find_unawaited(value: Any, *, limit: int = _SCAN_LIMIT) -> str | None:
    """The first repr string of an un-awaited coroutine/gather in ``value``, if any.

    The sandbox returns un-awaited awaitables as strings such as ``'<gather(2)>'``. This scans
    breadth-first through lists, tuples, sets and dict keys/values, at most ``limit`` elements.
    """
    queue: deque[Any] = deque([value])
    seen = 0
    while queue and seen < limit:
        item = queue.popleft()
        seen += 1
        if isinstance(item, str):
            if _UNAWAITED.fullmatch(item):
                return item
        elif isinstance(item, dict):
            for key, child in item.items():
                queue.append(key)
                queue.append(child)
        elif isinstance(item, (list, tuple, set, frozenset)):
            queue.extend(item)
    return None


def _unawaited_error(found: str, where: str) -> RunCodeText:
    return RunCodeText(
        text=(
            f"error: the {where} contains an un-awaited call ({found}); add await, "
            "e.g. x = await f(...) or await asyncio.gather(...)"
        ),
        is_error=True,
    )


def _output_text(outcome: SnippetOutcome, budget: int) -> str:
    """The print output, clipped in the middle so that, JSON-escaped as it is sent, it takes at most
    ``budget`` chars and cannot crowd out the result (a NUL grows to six chars, a quote to two)."""
    limit = budget
    printed = _clip_middle(outcome.printed, limit)
    for _ in range(ESCAPE_FIT_ROUNDS):
        escaped = len(compact_json(printed)) - 2
        if escaped <= budget:
            break
        limit = max(limit * budget // escaped - 1, 0)
        printed = _clip_middle(outcome.printed, limit)
    if outcome.printed_truncated_bytes > 0:
        return f"{printed}... [print output truncated: {outcome.printed_truncated_bytes} more bytes]"
    return printed


def _shown_output(outcome: SnippetOutcome, max_chars: int) -> str | None:
    """The print output as a result shows it, or ``None`` when nothing was printed."""
    if not outcome.printed and outcome.printed_truncated_bytes <= 0:
        return None
    return _output_text(outcome, max(max_chars // 2, 1))


def _result_text(outcome: SnippetOutcome, data: Any, output: str | None) -> str:
    if outcome.value is None:
        return NO_OUTPUT_TEXT if output is None else dump_json({"output": output})
    if output is not None:
        return dump_json({"output": output, "result": data})
    if isinstance(outcome.value, str):
        return outcome.value or EMPTY_STRING_TEXT
    return dump_json(data)


def preview_chars(max_chars: int) -> int:
    """How much of a result over ``max_chars`` the model is shown."""
    return min(PREVIEW_CHARS, max(max_chars // 10, 0))


@dataclass(frozen=True)
class _Text:
    """A result's text by its length and its first characters (at least the preview's)."""

    length: int
    head: str

    @classmethod
    def of(cls, text: str) -> _Text:
        return cls(len(text), text)

    def preview(self, shown: int) -> str:
        """``log.preview`` of the whole text."""
        if self.length <= shown:
            return self.head
        return f"{self.head[:shown]}... [{count(self.length - shown)} more chars]"


def _too_large(text: _Text, max_chars: int, kept_as: str | None = None) -> RunCodeText:
    shown = preview_chars(max_chars)
    if kept_as is not None:
        advice = (
            f"The full value is in {kept_as}; return a filtered subset of it (a count, a few names, "
            f"selected fields: len({kept_as}), {kept_as}[:3]) without calling the tool again. "
        )
    else:
        advice = (
            "Assign the data to a variable and return a filtered subset "
            "(a count, a few names, selected fields). "
        )
    return RunCodeText(
        text=(
            f"error: result is {count(text.length)} chars, over the {count(max_chars)}-char limit for "
            f"what goes to the model. {advice}Preview (first {shown} chars): {text.preview(shown)}"
        ),
        is_error=True,
    )


def _assigned_too_large(text: _Text, max_chars: int, assigned: str) -> RunCodeText:
    """A closing assignment's value over the limit: not an error, since the snippet kept it in a
    variable as the description advises; the model reads its size, where it is and a preview."""
    where = assigned.removeprefix("(").removesuffix(",)")
    shown = preview_chars(max_chars)
    first = where.split(", ")[0]
    stand_in = (
        f"(the value assigned to {where} is {count(text.length)} chars, over the {count(max_chars)}-char "
        f"limit for what goes to the model, so it is not shown; it stays in {where}: return a "
        f"filtered subset of it (a count, a few names, selected fields: len({first}), {first}[:3]) "
        f"without calling the tool again. Preview (first {shown} chars): {text.preview(shown)})"
    )
    return RunCodeText(text=stand_in, is_error=False, value=stand_in)


def format_outcome(
    outcome: SnippetOutcome,
    max_chars: int = MAX_RESULT_CHARS,
    kept_as: str | None = None,
    assigned: str | None = None,
) -> RunCodeText:
    """The ``run_code`` result for a snippet that completed (its value, or its output when it
    has none, within the size limit); ``kept_as`` names the variable holding the value, and
    ``assigned`` says the value is what the snippet's closing assignment assigned (there)."""
    large = _large_value(outcome.value)
    found = None if large is not None else find_unawaited(outcome.value)
    if found is not None:
        return _unawaited_error(found, "result")
    match = _UNAWAITED.search(outcome.printed)
    if match is not None:
        return _unawaited_error(match.group(0), "print output")
    if large is not None:  # over the limit in any case: the text is known by its length and head
        text = _large_text(outcome, large, max_chars)
    else:
        data = to_json_value(outcome.value)  # converted once: for the text and as the value itself
        output = _shown_output(outcome, max_chars)
        whole = _result_text(outcome, data, output)
        if len(whole) <= max_chars:
            return RunCodeText(text=whole, is_error=False, value=data, output=output)
        text = _Text.of(whole)
    if assigned is not None and outcome.value is not None:
        return _assigned_too_large(text, max_chars, assigned)
    return _too_large(text, max_chars, kept_as if outcome.value is not None else None)


def _large_value(value: Any) -> _Text | None:
    """The JSON of a value left in the sandbox for its size (``LARGE_VALUE_MARK``), else ``None``."""
    if isinstance(value, tuple) and len(value) == 3 and value[0] == LARGE_VALUE_MARK:
        length, head = value[1], value[2]
        if isinstance(length, int) and isinstance(head, str):
            return _Text(length, head)
    return None


def _large_text(outcome: SnippetOutcome, value: _Text, max_chars: int) -> _Text:
    """``_result_text`` of a value known by its JSON's length and head."""
    output = _shown_output(outcome, max_chars)
    if output is None:
        return value
    # dump_json({"output": ..., "result": value}): the output first, then the value's JSON.
    printed = compact_json(output)
    before = f'{{"output":{printed},"result":'
    return _Text(len(before) + value.length + 1, before + value.head)


def tool_name_taken(names: list[str], defined: tuple[str, ...] = ()) -> str:
    """The refusal of a snippet that binds tool functions' ``names`` (``defined`` by ``def``: a stub
    pasted back). It says what to do, a call, and never invites a redefinition under a new name."""
    shown = [f"`{name}`" for name in names[:5]]
    listed = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"
    if len(names) > len(shown):
        listed = f"{', '.join(shown)} and {len(names) - len(shown)} more"
    one = len(names) == 1
    if any(name in defined for name in names):
        what = (
            f"{listed} {'is a tool function' if one else 'are tool functions'}, already defined in the "
            "sandbox and ready to call: the stubs in the run_code description only show how to call "
            "them, and a snippet never defines them."
        )
    else:
        what = (
            f"{listed} {'is the name of a tool function' if one else 'are names of tool functions'}, "
            f"so a snippet cannot assign to {'it' if one else 'them'}."
        )
    return (
        f"error: {what} Call {'it' if one else 'them'} and store the result under a name that is not "
        f"a tool's: `result = await {names[0]}(...)`. Nothing was run."
    )


IMPORTABLE_MODULES: Final = frozenset(
    [
        "asyncio",
        "base64",
        "binascii",
        "bisect",
        "collections",
        "copy",
        "csv",
        "dataclasses",
        "datetime",
        "decimal",
        "functools",
        "hashlib",
        "itertools",
        "json",
        "math",
        "os",
        "pathlib",
        "random",
        "re",
        "sys",
        "time",
        "tomllib",
        "typing",
        "unicodedata",
    ]
)
"""What ``import X`` finds in a Monty session (pydantic-monty 1.4); any other module is missing."""

# What a hint offers: the importable modules, less the OS ones (their functions are disabled) and
# those a snippet has no use for.
_AVAILABLE_MODULES: Final = " ".join(
    sorted(IMPORTABLE_MODULES - {"binascii", "os", "pathlib", "sys", "tomllib", "unicodedata"})
)

HINTS: Final[tuple[tuple[str, str], ...]] = (
    # (regex searched in the error text, multiline; hint, formatted with the named groups)
    (
        r"unexpected keyword argument 'default'",
        "json.dumps has no default= here; use to_json(x), which falls back to str() for unknown types.",
    ),
    (
        r"is not JSON serializable",
        "use to_json(x), which falls back to str(); turn sets into lists with sorted(...).",
    ),
    (
        r"unhashable type|as a dict key",
        "lists and dicts cannot be dict keys or set members; use a tuple or a str key, e.g. tuple(x).",
    ),
    (
        r"No module named '(?P<module>operator)'",
        "there is no operator module; use lambdas, e.g. key=lambda r: r['name'].",
    ),
    (
        r"No module named '(?P<module>(?:subprocess|socket|urllib|os|http|requests|httpx|aiohttp)\b[^']*)'",
        "there is no OS, subprocess or network access in the sandbox; use the catalog functions.",
    ),
    (
        r"No module named '(?P<module>[^']+)'",
        "module {module} is not available; available modules: " + _AVAILABLE_MODULES + ".",
    ),
    (
        r"cannot import name '(?P<name>[^']+)' from '(?P<module>[^']+)'",
        "{module}.{name} is not available in the sandbox; write it with plain dicts, lists and functions.",
    ),
    (
        r"does not yet support class inheritance",
        "no class inheritance (so no custom exception classes, Enum, NamedTuple or ABC): use dicts or "
        "@dataclass and plain functions; raise built-in exceptions such as ValueError.",
    ),
    (
        r"does not yet support method decorators",
        "no @property/@staticmethod/@classmethod: use plain methods or module-level functions.",
    ),
    (
        r"does not yet support yield",
        "no generators (yield): build and return a list instead.",
    ),
    (
        r"does not yet support the 'del' statement",
        "no del statement: use d.pop(key, None), rebind the name, or build a new list or dict.",
    ),
    (
        r"name '(?P<name>globals|locals|vars)' is not defined",
        "{name}() is not available; keep the values you need in your own dict.",
    ),
    (
        r"gather\(\) does not (?:yet )?support keyword arguments",
        "asyncio.gather takes no keyword arguments (no return_exceptions); to keep going on errors, wrap "
        "each call in an async def with try/except and gather those.",
    ),
    (
        r"module 'asyncio' has no attribute '(?P<name>[^']+)'",
        "asyncio.{name} is not available; run calls concurrently with await asyncio.gather(...) "
        "(gather a slice of the list at a time to limit concurrency).",
    ),
    (
        # Before the next: a helper awaited as if it were a tool (its value is no awaitable).
        r"(?s)\bawait\s+(?P<helper>" + "|".join(RESERVED_HELPERS) + r")\s*\(.*can't be awaited",
        "{helper}() is a helper, not a tool: it returns its value at once, so call it without "
        "await: x = {helper}(...).",
    ),
    (
        r"'coroutine' object|can't be awaited|No pending async tasks",
        "await each tool call exactly once, in the same run_code call that makes it: x = await f(...).",
    ),
    (
        r"type object 'str' has no attribute '(?P<name>[^']+)'",
        "use a lambda instead of str.{name}, e.g. key=lambda s: s.{name}().",
    ),
    (
        r"takes keyword arguments only",
        "call tools with keyword arguments only: await f(name=value).",
    ),
    (
        r"has no attribute 'write'",
        "sys.stdout.write is not available; use print(..., end='').",
    ),
    (
        r"^KeyError\b",
        'a key is missing; use dig(obj, "a.b", default=None) or obj.get("key") for optional fields.',
    ),
)

_COMPILED_HINTS: Final = tuple((re.compile(pattern, re.MULTILINE), hint) for pattern, hint in HINTS)


def hint_for(error_text: str) -> str | None:
    """One ``Hint:`` line for a known Monty gap in ``error_text`` (first match wins), or None."""
    for pattern, hint in _COMPILED_HINTS:
        match = pattern.search(error_text)
        if match is not None:
            return "Hint: " + hint.format(**match.groupdict())
    return None


ESCAPE_FIT_ROUNDS: Final = 6


def _clip_middle(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, the marker included: its start and its end."""
    if len(text) <= limit:
        return text
    marker = f"\n... [{count(len(text))} chars omitted] ...\n"  # the longest the count can be
    keep = max(limit - len(marker), 0)
    head = keep // 2
    tail = keep - head
    omitted = len(text) - head - tail
    clipped = f"{text[:head]}\n... [{count(omitted)} chars omitted] ...\n{text[len(text) - tail :]}"
    return clipped[:limit]


def hide_frames(traceback_text: str, filename: str) -> str:
    """The traceback without the frames of ``filename`` (a frame is its ``File`` line plus the
    indented source lines under it)."""
    kept: list[str] = []
    hiding = False
    for line in traceback_text.split("\n"):
        if line.startswith('  File "'):
            hiding = line.startswith(f'  File "{filename}"')
        elif not line.startswith("    "):
            hiding = False
        if not hiding:
            kept.append(line)
    return "\n".join(kept)


def format_error(
    traceback_text: str,
    *,
    state_reset: bool = False,
    max_chars: int = MAX_RESULT_CHARS,
    calls_report: str | None = None,
) -> RunCodeText:
    """An error result: the traceback (clipped in the middle to ``max_chars``), a hint, a reset
    note, and for an aborted snippet the report of its nested calls."""
    reset = STATE_RESET_TEXT if state_reset else None
    notes = [note for note in (hint_for(traceback_text), reset, calls_report) if note]
    room = max_chars - sum(len(note) + 1 for note in notes)  # the notes must survive the clip
    lines = [_clip_middle(traceback_text.rstrip(), max(room, 0)), *notes]
    return RunCodeText(text="\n".join(lines)[:max_chars], is_error=True)
