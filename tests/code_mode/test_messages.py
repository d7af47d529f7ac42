"""Error texts that tell a model what to do (issue 35): a tool function's name bound or a stub
pasted back is answered with the call to write, never with an invitation to redefine it under
another name; an OS call points to the catalog's file tools; a helper's error names the helper,
not its internal alias; a helper awaited gets a helper's hint, not a tool's."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from asyncai.code_mode import CodeMode
from asyncai.code_mode.catalog.stubs import render_catalog
from asyncai.code_mode.sandbox.config import SandboxConfig
from asyncai.tools import McpServers, stdio_spec
from tests.code_mode.conftest import TEST_LIMITS, FakeExecutor, run
from tests.third_party import npm_server

pytestmark = pytest.mark.anyio

INVITATIONS = re.compile(r"another name|pick|e\.g\. `\w+_`|rename", re.IGNORECASE)
"""What made a real model paste the whole catalog again under new names."""


async def test_a_tool_name_bound_gets_the_call_to_write(code_mode: CodeMode, fake: FakeExecutor) -> None:
    output = await run(code_mode, "pods = await pods(namespace='web')\nlen(pods['items'])")
    assert output.is_error
    assert output.content == (
        "error: `pods` is the name of a tool function, so a snippet cannot assign to it. Call it and "
        "store the result under a name that is not a tool's: `result = await pods(...)`. Nothing was run."
    )
    assert not INVITATIONS.search(output.content)
    assert fake.spans == []


async def test_a_pasted_catalog_is_answered_with_a_call_not_a_rename(
    code_mode: CodeMode, fake: FakeExecutor
) -> None:
    stubs = render_catalog(fake.tools()[:3])  # what a small model copied out of the description
    output = await run(code_mode, f"from typing import Any\n\n{stubs}\n\nawait wait(seconds=0)")
    assert output.is_error and fake.spans == []
    assert output.content.startswith(
        "error: `wait`, `blob` and `fail` are tool functions, already defined in the sandbox and ready to "
        "call: the stubs in the run_code description only show how to call them, and a snippet never "
        "defines them."
    )
    assert "`result = await wait(...)`" in output.content
    assert not INVITATIONS.search(output.content)


async def test_many_tool_names_are_listed_briefly(code_mode: CodeMode) -> None:
    code = "\n".join(
        f"{name} = {n}" for n, name in enumerate(["wait", "blob", "fail", "hang", "pods", "search_tools"])
    )
    output = await run(code_mode, code)
    assert "`wait`, `blob`, `fail`, `hang`, `pods` and 1 more are names of tool functions" in output.content


@pytest.fixture
async def filesystem(tmp_path: Path) -> AsyncIterator[CodeMode]:
    (tmp_path / "notes.txt").write_text("hello")
    async with (
        McpServers([stdio_spec(npm_server("filesystem", str(tmp_path)))]) as mcp,
        CodeMode(mcp) as code_mode,
    ):
        yield code_mode


async def test_an_os_call_points_to_the_catalogs_file_tools(filesystem: CodeMode, tmp_path: Path) -> None:
    output = await run(filesystem, f"open({str(tmp_path / 'notes.txt')!r}).read()")
    assert output.is_error
    last = output.content.rstrip().splitlines()[-1]
    assert last.startswith(
        "PermissionError: os access disabled in asyncai code mode: the sandbox cannot open files "
        "itself; the file tools can: read_text_file, read_media_file, read_multiple_files, list_directory"
    ), last
    assert "`r = await read_text_file(path=...)`" in last, "the first one, as a call to copy"
    shown = last.split("can: ", 1)[1].split(" and ", 1)[0].split(", ")
    assert len(shown) == 8 and "and 6 more" in last
    assert "read_file" not in shown, "a deprecated tool comes last"
    assert not {"write_file", "edit_file", "move_file", "create_directory"} & set(shown), "read-only first"
    # What the message says works: the file tool reads the file.
    value = await run(filesystem, f"(await read_text_file(path={str(tmp_path / 'notes.txt')!r}))['content']")
    assert value.content == "hello"


async def test_an_os_call_without_file_tools_says_the_catalog_is_the_way_out(code_mode: CodeMode) -> None:
    for code in ("open('/etc/passwd').read()", "import os\nos.listdir('.')", "import os\nos.getenv('HOME')"):
        output = await run(code_mode, code)
        assert output.is_error
        assert output.content.rstrip().endswith(
            "PermissionError: os access disabled in asyncai code mode: the sandbox has no file, "
            "environment or network access; the catalog functions are the only way out"
        ), output.content


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("dig()", "TypeError: dig() missing 1 required positional argument: 'obj'"),
        ("items(1, 2)", "TypeError: items() takes 1 positional argument but 2 were given"),
        ("names()", "TypeError: names() missing 1 required positional argument: 'x'"),
        ("count_by()", "TypeError: count_by() missing 1 required positional argument: 'xs'"),
        ("to_json(1, 2, 3)", "TypeError: to_json() takes from 1 to 2 positional arguments but 3 were given"),
        ("shape()", "TypeError: shape() missing 1 required positional argument: 'x'"),
        ("count_by([1], key='a')", "TypeError: count_by() got an unexpected keyword argument 'key'"),
    ],
)
async def test_a_helpers_error_names_the_helper_not_its_internals(
    code_mode: CodeMode, code: str, error: str
) -> None:
    output = await run(code_mode, code)
    assert output.is_error and error in output.content
    assert "_asyncai" not in output.content


async def test_a_helper_as_a_value_shows_its_own_name(code_mode: CodeMode) -> None:
    output = await run(code_mode, "[str(count_by), str(names)]")
    assert "_asyncai" not in output.content and "count_by" in output.content


@pytest.mark.parametrize("type_check", [True, False])
async def test_an_awaited_helper_gets_a_helpers_hint(fake: FakeExecutor, type_check: bool) -> None:
    # With a tool in the snippet the type check runs first: it must not turn this into a tool's hint.
    code = "p = await pods()\nphases = await count_by(p, 'status.phase')\nphases"
    async with CodeMode(fake, TEST_LIMITS, sandbox=SandboxConfig(type_check=type_check)) as code_mode:
        output = await run(code_mode, code)
        plain = await run(code_mode, "await to_json([1])")
    for result, helper in ((output, "count_by"), (plain, "to_json")):
        assert result.is_error
        assert result.content.rstrip().endswith(
            f"Hint: {helper}() is a helper, not a tool: it returns its value at once, so call it "
            f"without await: x = {helper}(...)."
        ), result.content
        assert "tool call" not in result.content and "_asyncai" not in result.content


async def test_an_unbound_name_updated_in_place_is_reported_on_its_own_line(code_mode: CodeMode) -> None:
    """Monty placed the NameError of ``text += ...`` on the line before it, or in a file named
    "\\x00" when it began the feed (found by ``make fuzz``); the model needs the line it wrote."""
    for code, line in (("text += '!'", 1), ("x = 1\nprint(x)\ntext += '!'", 3)):
        output = await run(code_mode, code)
        assert output.is_error and "\x00" not in output.content
        assert output.content.rstrip().endswith(
            f"line {line}, in <module>\n    text += '!'\n    ~~~~\nNameError: name 'text' is not defined"
        ), output.content
