"""Part of the run stage: the skills a snippet loads (``await load_skill(name="...")``, the name a
literal) have their Python files fed to the worker before the snippet, so their functions exist
when it calls them, and run in the sandbox, under the same checks as a snippet's own code."""

from __future__ import annotations

from collections.abc import Callable

import pydantic_monty as pm

from asyncai.code_mode.catalog.skills import LOAD_SKILL
from asyncai.code_mode.engine.dispatch import SnippetDispatcher
from asyncai.code_mode.engine.finish import error_text
from asyncai.code_mode.engine.plan import refusal
from asyncai.code_mode.engine.preamble import HOST_CALL
from asyncai.code_mode.engine.read import SnippetScan, function_sources, literal_calls_in, scan_snippet
from asyncai.code_mode.engine.setup import Repl
from asyncai.code_mode.sandbox.interface import SnippetRaised, Worker
from asyncai.humanize import one_line
from asyncai.skills.skill import SkillError, defined_functions
from asyncai.skills.skillset import SkillSet

PrintCallback = Callable[[str, str], None]


async def feed_skills(
    repl: Repl, worker: Worker, scan: SnippetScan, dispatcher: SnippetDispatcher, unread: PrintCallback
) -> None:
    """Feed the skills ``scan`` loads; what each defined (or why it could not) is what its
    ``load_skill`` call returns (``dispatcher.loaded_skills``). What their files print goes to
    ``unread``: the snippet did not print it."""
    skills = repl.skills
    if skills is None or scan.nodes is None:
        return
    calls = literal_calls_in(scan.nodes, repl.setup.catalog, lambda entry: entry.tool is LOAD_SKILL)
    names = (call.keywords.get("name") for call in calls)
    for name in dict.fromkeys(name for name in names if isinstance(name, str)):
        dispatcher.loaded_skills[name] = await _feed_skill(repl, worker, skills, name, dispatcher, unread)


async def _feed_skill(
    repl: Repl,
    worker: Worker,
    skills: SkillSet,
    name: str,
    dispatcher: SnippetDispatcher,
    unread: PrintCallback,
) -> list[str] | str:
    try:
        await skills.ensure_loaded()
        sources = await skills.python_sources(name)
    except SkillError as exc:
        return str(exc)
    catalog = repl.setup.catalog
    signatures: list[str] = []
    for path, source in sources:
        scan = scan_snippet(source, catalog.keys())
        refused = refusal(scan, catalog)
        if refused is not None:
            reason = refused.text.removeprefix("error: ").removesuffix(" Nothing was run.")
            return f"skill {name!r}: {path} was not run: {reason}"
        try:
            await worker.feed_run(
                source,
                external_lookup={HOST_CALL: dispatcher.call},
                os=dispatcher.deny_os,
                print_callback=unread,
                skip_type_check=True,
            )
        except (pm.MontyError, SnippetRaised) as exc:
            return f"skill {name!r}: {path} does not run in the sandbox: {one_line(error_text(exc), 600)}"
        repl.known.remember(scan.bound, function_sources(source, scan.tree))
        signatures += defined_functions(source)
    return signatures
