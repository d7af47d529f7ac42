"""The eval's tasks: a question, the MCP servers it needs, and a check of the answer.

Three sizes: ``one`` (one tool call answers it), ``few`` (two or three calls, each needing the one
before) and ``loop`` (a loop over many results). Each check reads the final reply (and, for a task
that writes, the world) and says whether the answer is right; a check never asks a model.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from tests.kcp.fixture_data import build_fixture_objects

from evals.world import FILES, ITEMS, World

Size = Literal["one", "few", "loop"]


@dataclass(frozen=True)
class Task:
    name: str
    size: Size
    servers: tuple[str, ...]
    question: str
    """With ``{root}`` and ``{site}`` for the world's directory and web site."""
    check: Callable[[str, World], bool]

    def prompt(self, world: World) -> str:
        return self.question.format(root=world.root, site=world.site)

    def passes(self, reply: str, world: World) -> bool:
        """Whether ``reply`` is right; the world's own paths in it are not read as the answer (a
        ``3`` in a temporary directory's name is no count of 3)."""
        return self.check(reply.replace(str(world.root), "{root}").replace(world.site, "{site}"), world)


def _words(text: str) -> str:
    return re.sub(r"[*_`]", "", text).lower()


def says(*needles: str) -> Callable[[str, World], bool]:
    """The reply names every one of ``needles`` (any case, markdown emphasis ignored)."""
    return lambda reply, world: all(needle.lower() in _words(reply) for needle in needles)


def number(expected: int) -> Callable[[str, World], bool]:
    """The reply gives ``expected`` as a number (not as part of a longer one)."""
    pattern = re.compile(rf"(?<![\d.]){re.escape(str(expected))}(?![\d])")
    return lambda reply, world: bool(pattern.search(reply.replace(",", "")))


def graph_has_alice_and_bob(reply: str, world: World) -> bool:
    """The memory server's file holds both entities with their observations, and the relation."""
    lines = [json.loads(line) for line in world.memory_file.read_text().splitlines() if line.strip()]
    entities = {line.get("name"): line for line in lines if line.get("type") == "entity"}
    relations = {(line.get("from"), line.get("to")) for line in lines if line.get("type") == "relation"}
    alice, bob = entities.get("Alice", {}), entities.get("Bob", {})
    return (
        "likes tea" in alice.get("observations", [])
        and "likes coffee" in bob.get("observations", [])
        and ("Alice", "Bob") in relations
    )


def file_says(path: str, needle: str) -> Callable[[str, World], bool]:
    """The file at ``path`` (relative to the world's directory) was written and holds ``needle``."""

    def check(reply: str, world: World) -> bool:
        written = world.root / path
        return written.is_file() and needle.lower() in written.read_text().lower()

    return check


def all_of(*checks: Callable[[str, World], bool]) -> Callable[[str, World], bool]:
    return lambda reply, world: all(check(reply, world) for check in checks)


ERRORS_LOGGED = sum(" ERROR " in line for line in FILES["big/events.log"].splitlines())
REPORT_VALUES = [int(line.split(",")[1]) for line in FILES["big/report.csv"].splitlines()[1:]]
WORDS_IN_DOCS = sum(len(FILES[f"docs/{name}"].split()) for name in ("alpha.txt", "beta.txt", "zeta.txt"))
POD_PHASES = Counter(
    pod["status"]["phase"]
    for workspace, pod in build_fixture_objects().objects
    if workspace == "root:app" and pod["kind"] == "Pod"
)


TASKS: tuple[Task, ...] = (
    # -- one call --------------------------------------------------------------------------------
    Task("read-a-file", "one", ("filesystem",), "What does the file {root}/docs/alpha.txt say?",
         says("quick brown fox")),
    Task("list-a-directory", "one", ("filesystem",),
         "Which files are directly in the directory {root}/docs? Name them.",
         says("alpha.txt", "beta.txt", "gamma.md", "zeta.txt")),
    Task("add-two-numbers", "one", ("everything",), "Use the tools to add 17 and 25. What is the sum?",
         number(42)),
    Task("echo", "one", ("everything",), "Echo the message 'hello asyncai' with the echo tool and tell me "
         "what came back.", says("hello asyncai")),
    Task("page-title", "one", ("web",), "What is the title of the JSON document at {site}/page?",
         says("loopback gazette")),
    Task("kcp-kinds", "one", ("kcp",), "Which socialweb.computer kinds exist in the kcp workspace root:app?",
         says("agent", "channel")),
    Task("what-carol-likes", "one", ("memory",), "According to the knowledge graph, what does Carol like?",
         says("jasmine tea")),
    Task("item-price", "one", ("web",), "What is the price of the item in the JSON at {site}/item/d9?",
         number(ITEMS["d9"])),
    Task("kcp-workspaces", "one", ("kcp",), "Which workspaces are there directly under root in kcp?",
         says("app", "team")),
    # -- two or three dependent calls ------------------------------------------------------------
    Task("follow-a-pointer", "few", ("filesystem",),
         "The file {root}/pointer.txt holds the path (relative to {root}) of another file. What is the "
         "first line of that other file?", says("nothing to see here")),
    Task("follow-a-link", "few", ("web",),
         "The JSON at {site}/start names the path of the next page in its 'next' field. Fetch that page "
         "from the same site and tell me its 'answer' field.", number(4217)),
    Task("create-entities", "few", ("memory",),
         "In the knowledge graph, create an entity Alice of type person with the observation 'likes "
         "tea', an entity Bob of type person with the observation 'likes coffee', and a relation "
         "'knows' from Alice to Bob. Then tell me it is done.", graph_has_alice_and_bob),
    Task("who-carol-knows", "few", ("memory",),
         "In the knowledge graph, whom does Carol know, and what does that person play?",
         says("dave", "cello")),
    Task("sum-two-pages", "few", ("web",),
         "Add the 'answer' field of the JSON at {site}/answer-7 to the price in the JSON at {site}/item/b7. "
         "What is the total?", number(4217 + ITEMS["b7"])),
    Task("web-then-file", "few", ("web", "filesystem"),
         "The JSON at {site}/config names a file, relative to {root}, in its 'file' field. What does "
         "that file say?", says("apples and oranges")),
    Task("memory-to-file", "few", ("memory", "filesystem"),
         "Look up in the knowledge graph what Carol likes, and write it into the file {root}/carol.txt. "
         "Then tell me what you wrote.", file_says("carol.txt", "jasmine tea")),
    Task("recover-from-a-missing-file", "few", ("filesystem",),
         "Read the file {root}/docs/omega.txt; if it does not exist, read {root}/docs/alpha.txt instead. "
         "What is the first line of the file you could read?", says("the quick brown fox")),
    Task("recover-from-a-missing-page", "few", ("web",),
         "Fetch the JSON at {site}/old-report; if that page is not found, fetch {site}/report instead. "
         "What is the report's 'total' field?", number(977)),
    # -- a loop over many results ----------------------------------------------------------------
    Task("count-files-with-a-word", "loop", ("filesystem",),
         "How many .txt files anywhere under {root}/docs contain the word fox, in any letter case?",
         number(3)),
    Task("sum-numbers-in-files", "loop", ("filesystem",),
         "Each file in {root}/numbers holds one integer. What is the sum of all of them?", number(138)),
    Task("most-lines", "loop", ("filesystem",),
         "Which .txt file anywhere under {root}/docs has the most lines?", says("epsilon.txt")),
    Task("count-csv-rows", "loop", ("filesystem",),
         "How many data rows of the CSV file {root}/big/report.csv have a value of 0 in the value "
         "column?", number(31)),
    Task("sum-item-prices", "loop", ("web",),
         "The JSON at {site}/items lists item ids; the item with id X is at {site}/item/X. What is the "
         "total of the prices of all items?", number(sum(ITEMS.values()))),
    Task("count-configmaps", "loop", ("kcp",),
         "How many configmaps are there in each namespace of the kcp workspace root:app?",
         lambda reply, world: says("web")(reply, world) and all(number(n)(reply, world) for n in (3, 360))),
    Task("largest-number", "loop", ("filesystem",),
         "Each file in {root}/numbers holds one integer. Which file holds the largest one?", says("e.txt")),
    Task("cheapest-item", "loop", ("web",),
         "The JSON at {site}/items lists item ids; the item with id X is at {site}/item/X. Which item is "
         "the cheapest? Give its id.", says(min(ITEMS, key=ITEMS.__getitem__))),
    Task("words-in-docs", "loop", ("filesystem",),
         "How many words are there in the .txt files directly in {root}/docs, all of them together?",
         number(WORDS_IN_DOCS)),
    Task("count-errors-in-a-big-log", "loop", ("filesystem",),
         "How many lines of the log file {root}/big/events.log are at level ERROR?", number(ERRORS_LOGGED)),
    Task("largest-csv-value", "loop", ("filesystem",),
         "What is the largest number in the value column of the CSV file {root}/big/report.csv, and in "
         "how many data rows does it appear?",
         all_of(number(max(REPORT_VALUES)), number(REPORT_VALUES.count(max(REPORT_VALUES))))),
    Task("count-pods-by-phase", "loop", ("kcp",),
         "How many pods are there in each phase in the kcp workspace root:app?",
         all_of(*(says(phase) for phase in POD_PHASES), *(number(n) for n in POD_PHASES.values()))),
)  # fmt: skip

BY_NAME = {task.name: task for task in TASKS}
