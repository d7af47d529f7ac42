"""The quick-start demo: a fixture kcp on loopback, the bundled kcp MCP server on real kubectl, and
two questions answered through code mode, each in one ``run_code``, with bytes in versus bytes out.

Without a model it runs the programs a model would write (``python -m tests.kcp.demo``). With a
model configured (``--model`` or ``ASYNCAI_MODEL``, and ``--base-url`` or ``OPENAI_BASE_URL``) the
model writes them: the same questions go to ``asyncai -p``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from asyncai.code_mode import CodeMode
from asyncai.tools import McpServers, stdio_spec

from .fake_kcp import serve, write_kubeconfig

BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Question:
    text: str
    program: str


QUESTIONS = (
    Question(
        "Which socialweb.computer kinds exist in root:app?",
        'resources = await get_api_resources(workspace="root:app")\n'
        'sorted({r["kind"] for r in resources["resources"] if r["api_version"].startswith("socialweb.computer/")})',
    ),
    Question(
        "What are the names of all configmaps in every namespace?",
        'cms = await list_objects(workspace="root:app", resource="configmaps")\n'
        "by_namespace = {}\n"
        'for cm in cms["items"]:\n'
        '    by_namespace.setdefault(cm["metadata"]["namespace"], []).append(cm["metadata"]["name"])\n'
        "by_namespace",
    ),
)


def server_command(kubeconfig: Path, read_write: bool = False) -> str:
    name = "socialweb-computer-kcp-readwrite" if read_write else "socialweb-computer-kcp-readonly"
    return f"{BIN / name} --kubeconfig {kubeconfig} --kubectl {BIN / 'kubectl'}"


async def answer_without_model(kubeconfig: Path) -> None:
    async with (
        McpServers([stdio_spec(server_command(kubeconfig))]) as mcp,
        CodeMode(mcp) as code_mode,
    ):
        for question in QUESTIONS:
            output = await code_mode.call_tool("run_code", {"code": question.program})
            nested = (output.audit or {}).get("nested_calls", [])
            bytes_in = sum(call["bytes"] for call in nested)
            answer = output.content if len(output.content) < 400 else output.content[:400] + " ..."
            print(f"\nQ: {question.text}\nrun_code:\n    " + question.program.replace("\n", "\n    "))
            print(f"A: {answer}")
            print(
                f"   {len(nested)} MCP call(s) inside one run_code: {bytes_in:,} bytes in -> "
                f"{len(output.content.encode()):,} bytes out to the model"
            )


def answer_with_model(kubeconfig: Path, extra: list[str]) -> int:
    status = 0
    for question in QUESTIONS:
        command = [
            str(BIN / "asyncai"),
            "--mcp-stdio",
            server_command(kubeconfig),
            "-v",
            *extra,
            "-p",
            question.text,
        ]
        result = subprocess.run(command, capture_output=True, text=True)
        summary: dict[str, Any] = next(
            (json.loads(line) for line in result.stderr.splitlines() if '"model.turn_summary"' in line), {}
        )
        print(f"\nQ: {question.text}\nA: {result.stdout.strip() or result.stderr.strip().splitlines()[-1:]}")
        if summary:
            print(
                f"   {summary['rounds']} round(s), {summary['run_code_calls']} run_code, "
                f"{summary['nested_calls']} MCP call(s): {summary['bytes_in']:,} bytes in -> "
                f"{summary['bytes_out']:,} bytes out"
                + (f", {summary['repaired']} call(s) repaired" if summary.get("repaired") else "")
            )
        status = status or result.returncode
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.kcp.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="answer with this model instead of the built-in programs")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint for --model")
    args = parser.parse_args(argv)
    model = args.model or os.environ.get("ASYNCAI_MODEL")
    with tempfile.TemporaryDirectory() as tmp, serve() as (base_url, _):
        kubeconfig = write_kubeconfig(Path(tmp) / "fake-kcp.kubeconfig", base_url)
        print(f"fake kcp on {base_url} (workspaces root, root:app, root:team); kubeconfig {kubeconfig}")
        if model:
            extra = ["--model", model] + (["--base-url", args.base_url] if args.base_url else [])
            return answer_with_model(kubeconfig, extra)
        asyncio.run(answer_without_model(kubeconfig))
    return 0


if __name__ == "__main__":
    sys.exit(main())
