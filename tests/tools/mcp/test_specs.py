"""Server specs from the command line and from config files as Claude Code and Claude Desktop write them."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from asyncai.tools import (
    ConfigError,
    HttpServerSpec,
    StdioServerSpec,
    http_spec,
    specs_from_config,
    stdio_spec,
)
from asyncai.tools.mcp.specs import expand_variables
from tests.fakes.logs import captured_log


@pytest.fixture
def warnings() -> Iterator[io.StringIO]:
    with captured_log() as stream:
        yield stream


def _lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def _config(tmp_path: Path, servers: dict[str, Any], prefix: bytes = b"") -> Path:
    path = tmp_path / "mcp.json"
    path.write_bytes(prefix + json.dumps({"mcpServers": servers}).encode())
    return path


def test_name_equals_command_names_a_stdio_server() -> None:
    spec = stdio_spec("time=mcp-server-time --local-timezone UTC")
    assert (spec.name, spec.command, spec.args) == ("time", "mcp-server-time", ("--local-timezone", "UTC"))
    spaced = stdio_spec("my.server-1= /opt/bin/server --flag")
    assert (spaced.name, spaced.command, spaced.args) == ("my.server-1", "/opt/bin/server", ("--flag",))


def test_commands_with_equals_signs_later_keep_working() -> None:
    spec = stdio_spec("env FOO=1 BAR=x=y mcp-server-time")
    assert (spec.command, spec.args) == ("env", ("FOO=1", "BAR=x=y", "mcp-server-time"))
    assert spec.name == "mcp-server-time", "env assignments are skipped when naming the server"
    path_with_equals = stdio_spec("/opt/a=b/server")
    assert path_with_equals.command == "/opt/a=b/server", "'/' is not a name character"
    lone = stdio_spec("name=")
    assert lone.command == "name=", "NAME= with nothing after it is not a name"


def test_an_explicit_name_wins_over_name_equals() -> None:
    spec = stdio_spec("x=server", name="given")
    assert (spec.name, spec.command) == ("given", "x=server")


def test_name_equals_url_names_an_http_server() -> None:
    named = http_spec("kcp=http://127.0.0.1:8000/mcp?a=b")
    assert (named.name, named.url) == ("kcp", "http://127.0.0.1:8000/mcp?a=b")
    plain = http_spec("http://127.0.0.1:8000/mcp?a=b")
    assert (plain.name, plain.url) == ("http://127.0.0.1:8000/mcp?a=b",) * 2
    with pytest.raises(ConfigError, match="expected http"):
        http_spec("kcp=ftp://x")


def test_variable_expansion_matches_claude_code() -> None:
    environ = {"SET": "value", "EMPTY": ""}
    missing: list[str] = []
    assert expand_variables("${SET}/${EMPTY}|${UNSET:-fall:-back}|${SET:-no}", environ, missing) == (
        "value/|fall:-back|value"
    )
    assert missing == []
    assert expand_variables("a ${UNSET} $SET ${SET}", environ, missing) == "a ${UNSET} $SET value"
    assert missing == ["UNSET"]
    assert expand_variables("${SET}", {"SET": "${OTHER}", "OTHER": "x"}, missing) == "${OTHER}", (
        "no recursion"
    )


def test_config_expands_variables_in_every_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, warnings: io.StringIO
) -> None:
    monkeypatch.setenv("ASYNCAI_TEST_BIN", "/opt/bin")
    monkeypatch.setenv("ASYNCAI_TEST_TOKEN_VALUE", "tok")
    monkeypatch.delenv("ASYNCAI_TEST_UNSET", raising=False)
    config = _config(
        tmp_path,
        {
            "local": {
                "command": "${ASYNCAI_TEST_BIN}/server",
                "args": ["--root", "${ASYNCAI_TEST_UNSET:-/srv}", "${ASYNCAI_TEST_UNSET}"],
                "env": {"TOKEN": "${ASYNCAI_TEST_TOKEN_VALUE}", "PORT": 8080},
            },
            "remote": {
                "type": "http",
                "url": "https://${ASYNCAI_TEST_UNSET:-example.com}/mcp",
                "headers": {"Authorization": "Bearer ${ASYNCAI_TEST_TOKEN_VALUE}"},
            },
        },
    )
    local, remote = specs_from_config(config)
    assert local == StdioServerSpec(
        "local",
        "/opt/bin/server",
        ("--root", "/srv", "${ASYNCAI_TEST_UNSET}"),
        {"TOKEN": "tok", "PORT": "8080"},
    )
    assert remote == HttpServerSpec("remote", "https://example.com/mcp", {"Authorization": "Bearer tok"})
    [warning] = _lines(warnings)
    assert warning["level"] == "warn" and warning["event"] == "mcp.config_variable_unset"
    assert (warning["server"], warning["variable"]) == ("local", "ASYNCAI_TEST_UNSET")


def test_config_with_bom_disabled_entries_and_sse(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        {
            "off": {"command": "never-started", "disabled": True},
            "on": {"command": "server", "disabled": False},
            "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse", "headers": {"X-Key": "k"}},
            "desktop": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
        },
        prefix=b"\xef\xbb\xbf",
    )
    specs = specs_from_config(config)
    assert [spec.name for spec in specs] == ["on", "legacy", "desktop"]
    legacy = specs[1]
    assert (
        isinstance(legacy, HttpServerSpec) and legacy.transport == "sse" and legacy.headers == {"X-Key": "k"}
    )
    assert legacy.display == "http://127.0.0.1:9/sse (sse)"


def test_config_errors_are_one_line(tmp_path: Path) -> None:
    unknown = _config(tmp_path, {"w": {"type": "ws", "url": "ws://127.0.0.1:9"}})
    with pytest.raises(ConfigError, match=r"server type 'ws' is not supported") as info:
        specs_from_config(unknown)
    assert "\n" not in str(info.value)
    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes('{"mcpServers": {"caf\xe9": {"command": "x"}}}'.encode("latin-1"))
    with pytest.raises(ConfigError, match="not UTF-8 text"):
        specs_from_config(latin1)


def test_the_bundled_servers_are_the_scripts_beside_the_running_python() -> None:
    """Every bundled server is a script of ``[project.scripts]``, launched from beside the Python
    that runs (ahead of PATH); another command is launched as written."""
    import sys
    import tomllib

    from asyncai.tools.mcp.specs import BUNDLED_SERVERS, launch_command

    scripts = tomllib.loads((Path(__file__).parents[3] / "pyproject.toml").read_text())["project"]["scripts"]
    assert set(scripts) - {"asyncai"} == BUNDLED_SERVERS
    for name in BUNDLED_SERVERS:
        assert launch_command(name) == str(Path(sys.executable).with_name(name))
    assert launch_command("npx") == "npx"


def test_a_bundled_server_starts_without_its_environment_on_path() -> None:
    """As in a service unit or a client's MCP config: the venv's ``asyncai`` by its full path, a
    PATH that does not hold the venv (issue 49)."""
    from tests.cli.conftest import asyncai

    assert not (Path("/usr/bin") / "asyncai-mcp-simple").exists()
    listed = asyncai("tools", "--mcp-stdio", "asyncai-mcp-simple", env={"PATH": "/usr/bin:/bin"})
    assert listed.status == 0 and "http_get" in listed.stdout, listed.stderr
    assert "server asyncai-mcp-simple: 1 tool" in listed.stdout, listed.stdout
