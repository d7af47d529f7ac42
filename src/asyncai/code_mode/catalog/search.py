"""Tool search for large catalogs: BM25 over tool names, descriptions and parameter names.

Names are split the way people say them (``kv_namespace_delete``, ``getKvNamespace`` and
``kv.namespace-get`` all give ``kv namespace ...``), words are stemmed (English Snowball) and
stop words dropped, and ``bm25s`` ranks. The index is built on the first search, once per tool
set: a catalog that never needs searching never pays for it (nor for importing numpy).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from asyncai.code_mode.catalog.entries import CatalogEntry
from asyncai.code_mode.catalog.host_functions import DESCRIBE_TOOL, SEARCH_TOOLS
from asyncai.code_mode.catalog.stubs import StubTypes, catalog_types, render_stub
from asyncai.code_mode.engine.crossing import Payload
from asyncai.log import dumps_compact
from asyncai.tools.types import ToolDefinition

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[_\-.:/]+")
SUMMARY_CHARS = 160


def words_of_name(name: str) -> str:
    """``kv_namespace-getValue.v2`` -> ``kv namespace get Value v2``."""
    return " ".join(_CAMEL.sub(" ", _SEPARATORS.sub(" ", name)).split())


def summary(description: str, limit: int = SUMMARY_CHARS) -> str:
    """The first sentence (or line) of a description, on one line and cut to ``limit``."""
    text = " ".join(description.strip().split("\n\n")[0].split())
    match = re.match(r"(.+?[.!?])(\s|$)", text)
    first = match.group(1) if match else text
    return first if len(first) <= limit else first[: limit - 3] + "..."


@dataclass(frozen=True)
class SearchHit:
    name: str
    score: float


class ToolIndex:
    """A BM25 index over one catalog's functions (by Python name)."""

    def __init__(self, catalog: Mapping[str, CatalogEntry]) -> None:
        self.names = [name for name, entry in catalog.items() if not entry.host_function]
        self._catalog = catalog
        self._retriever: Any = None
        self._stemmer: Any = None

    def _document(self, name: str) -> str:
        entry = self._catalog[name]
        parameters = " ".join(words_of_name(p) for p in entry.parameters)
        tool_name = words_of_name(entry.tool.name)
        # The name counts twice: it is the densest description a tool has.
        return f"{words_of_name(name)} {tool_name} {entry.tool.description} {parameters}"

    def _build(self) -> None:
        import bm25s
        import Stemmer

        self._stemmer = Stemmer.Stemmer("english")
        corpus = bm25s.tokenize(
            [self._document(name) for name in self.names],
            stopwords="en",
            stemmer=self._stemmer,
            show_progress=False,
        )
        retriever = bm25s.BM25()
        retriever.index(corpus, show_progress=False)
        self._retriever = retriever

    def search(self, query: str, limit: int) -> tuple[list[SearchHit], int]:
        """The best ``limit`` matches and how many functions matched at all."""
        if not self.names or not query.strip():
            return [], 0
        if self._retriever is None:
            self._build()
        import bm25s

        tokens = bm25s.tokenize(
            [words_of_name(query)], stopwords="en", stemmer=self._stemmer, show_progress=False
        )
        if not any(tokens.ids[0]) and not tokens.vocab:
            return [], 0
        documents, scores = self._retriever.retrieve(tokens, k=len(self.names), show_progress=False)
        ranked = [
            SearchHit(self.names[int(document)], float(score))
            for document, score in zip(documents[0], scores[0], strict=True)
            if score > 0
        ]
        return ranked[:limit], len(ranked)


def closest_names(name: str, names: Sequence[str], count: int = 5) -> list[str]:
    return difflib.get_close_matches(name, names, n=count, cutoff=0.4)


DEFAULT_LIMIT = 10


def signature(stub: str) -> str:
    """``name(*, a: str) -> T`` from a stub's ``async def`` line (after its TypedDicts, if any)."""
    start = 0 if stub.startswith("async def ") else stub.find("\nasync def ") + 1
    first = stub[start:].split("\n", 1)[0]
    return first.removeprefix("async def ").removesuffix(":")


class ToolFinder:
    """``search_tools`` and ``describe_tool`` over one catalog (built once per tool set)."""

    def __init__(self, catalog: Mapping[str, CatalogEntry]) -> None:
        self.catalog = catalog
        self.index = ToolIndex(catalog)
        self._types: StubTypes | None = None

    def _stub(self, name: str) -> str:
        """``name``'s stub, its TypedDicts named as in the description and the type check."""
        if self._types is None:  # made on the first describe or search, once per tool set
            self._types = catalog_types({py: entry.tool for py, entry in self.catalog.items()})
        return render_stub(name, self.catalog[name].tool, self._types)

    def describe(self, name: str) -> str:
        entry = self.catalog.get(name)
        if entry is None:
            close = closest_names(name, list(self.catalog))
            hint = (
                f"; the closest: {', '.join(close)}" if close else "; search_tools(query=...) finds functions"
            )
            raise NameError(f"no catalog function {name!r}{hint}")
        return self._stub(name)

    def search(self, query: str, limit: int = DEFAULT_LIMIT) -> list[dict[str, str]]:
        if not isinstance(query, str):
            raise TypeError("search_tools(query=...) takes a str")
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ValueError("search_tools(limit=...) must be a positive int")
        hits, total = self.index.search(query, limit)
        found: list[dict[str, str]] = []
        for hit in hits:
            entry = self.catalog[hit.name]
            found.append(
                {
                    "name": hit.name,
                    "summary": summary(entry.tool.description),
                    "signature": signature(self._stub(hit.name)),
                }
            )
        if found and total > len(found):
            # On the last match, not as an element of its own: a loop over the list sees only matches.
            found[-1]["more"] = f"showing {len(found)} of {total} matches: raise limit or narrow the query"
        return found

    def answer(self, definition: ToolDefinition, arguments: Mapping[str, Any]) -> Payload:
        """The sandbox call of ``search_tools`` or ``describe_tool``."""
        if definition is SEARCH_TOOLS:
            value: Any = self.search(arguments["query"], arguments.get("limit", DEFAULT_LIMIT))
        elif definition is DESCRIBE_TOOL:
            value = self.describe(str(arguments["name"]))
        else:
            raise NameError(f"not a finder function: {definition.name}")
        return Payload("json", dumps_compact(value))
