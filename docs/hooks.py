"""MkDocs hooks: pages written from the code and from the repository's own files at build time, so
they cannot drift from what they describe.

- ``reference/cli.md``: every command and option, from the argument parser;
- ``changelog.md``: ``CHANGELOG.md``;
- ``explanation/results/*``: the benchmark and eval reports and their charts, as ``make bench``
  and ``make eval`` write them under ``benchmarks/``.
"""

from __future__ import annotations

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


def on_files(files: Files, config: Any) -> Files:
    files.append(File.generated(config, "reference/cli.md", content=cli_reference(build_parser())))
    for uri, source in COPIED.items():
        files.append(File.generated(config, uri, abs_src_path=str(source)))
    return files
