"""MkDocs hooks: pages written from the code and from the repository's own files at build time, so
they cannot drift from what they describe.

- ``reference/cli.md``: every command and option, from the argument parser;
- ``reference/log-events.md``: every log event, from the ``log_event`` calls in the source;
- ``changelog.md``: ``CHANGELOG.md``;
- ``explanation/results/*``: the benchmark and eval reports and their charts, as ``make bench``
  and ``make eval`` write them under ``benchmarks/``.
"""

from __future__ import annotations

import ast
import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

from asyncai.cli.main import build_parser
from asyncai.cli.reference import cli_reference

ROOT = Path(__file__).resolve().parent.parent
COPIED = {
    "changelog.md": ROOT / "CHANGELOG.md",
    "explanation/results/benchmarks.md": ROOT / "benchmarks" / "RESULTS.md",
    "explanation/results/eval.md": ROOT / "benchmarks" / "EVAL.md",
    "explanation/results/eval-rules.md": ROOT / "benchmarks" / "EVAL-RULES.md",
    "explanation/results/eval-run-9.md": ROOT / "benchmarks" / "EVAL-run-9.md",
    "explanation/results/eval-run-10.md": ROOT / "benchmarks" / "EVAL-run-10.md",
    "explanation/results/eval-run-11.md": ROOT / "benchmarks" / "EVAL-run-11.md",
    "explanation/results/eval.png": ROOT / "benchmarks" / "eval.png",
}


_LINK = re.compile(r"\[([^\]]*)\]\(([^)\s#]+)(#[^)\s]*)?\)")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """A link to a repository file that the site copies goes to its page; a link to any other file
    outside ``docs/`` (source, tests) becomes its text: the site carries no source, and
    ``tests/docs/test_design_names.py`` checks those links in the repository."""
    docs = Path(config["docs_dir"]).resolve()
    page_dir = (docs / page.file.src_uri).parent
    copied = {source.resolve(): uri for uri, source in COPIED.items()}

    def rewrite(match: re.Match[str]) -> str:
        text, target, anchor = match[1], match[2], match[3] or ""
        if "://" in target or target.startswith("mailto:"):
            return match[0]
        resolved = (page_dir / target).resolve()
        if resolved in copied:
            relative = posixpath.relpath(copied[resolved], posixpath.dirname(page.file.src_uri) or ".")
            return f"[{text}]({relative}{anchor})"
        if not resolved.is_relative_to(docs):
            return text
        return match[0]

    return _LINK.sub(rewrite, markdown)


def _level(call: ast.Call) -> str:
    keyword = next((k.value for k in call.keywords if k.arg == "level"), None)
    given = call.args[1] if len(call.args) > 1 else keyword
    return given.attr.lower() if isinstance(given, ast.Attribute) else "info"


def log_events() -> str:
    """Markdown: each event name a ``log_event`` call in ``src/asyncai`` writes, with its level and
    the fields it carries, and the modules that write it."""
    found: dict[str, tuple[set[str], set[str], set[str]]] = {}
    source = ROOT / "src"
    for path in sorted((source / "asyncai").rglob("*.py")):
        module = ".".join(path.relative_to(source).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                continue
            if node.func.id == "log_event" and node.args and isinstance(event := node.args[0], ast.Constant):
                levels, fields, modules = found.setdefault(str(event.value), (set(), set(), set()))
                levels.add(_level(node))
                fields.update(k.arg for k in node.keywords if k.arg not in (None, "level"))
                modules.add(module.removesuffix(".__init__"))
    rows = [
        f"| `{event}` | {', '.join(sorted(levels))} | {', '.join(f'`{f}`' for f in sorted(fields))} | "
        f"{', '.join(f'`{m}`' for m in sorted(modules))} |"
        for event, (levels, fields, modules) in sorted(found.items())
    ]
    return "\n".join(
        [
            "# Log events",
            "",
            "Every event asyncai logs, written from the source when the site is built: each is one NDJSON "
            'line on stderr (`{"ts", "level", "event", ...}` and the fields below). Without `--verbose` only '
            "warnings and errors are written ([Exit status, signals and logs](exit-status-and-logs.md)).",
            "",
            "| event | level | fields | written by |",
            "|---|---|---|---|",
            *rows,
            "",
        ]
    )


def on_files(files: Files, config: Any) -> Files:
    files.append(File.generated(config, "reference/cli.md", content=cli_reference(build_parser())))
    files.append(File.generated(config, "reference/log-events.md", content=log_events()))
    for uri, source in COPIED.items():
        files.append(File.generated(config, uri, abs_src_path=str(source)))
    return files
