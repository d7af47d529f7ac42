"""The command line honours what was typed: options before the subcommand are applied, mistakes
are one line naming them (exit 2), settings files warn about keys they do not know."""

from __future__ import annotations

from pathlib import Path

import pytest

from asyncai.cli.agent_command import backend_config
from asyncai.cli.main import parse_settings
from asyncai.cli.settings import Settings, UsageError, code_limits
from tests.cli.conftest import SIMPLE, asyncai
from tests.cli.helpers import assert_one_line_usage_error
from tests.fakes.openai_server import ScriptedOpenAI, text_reply
from tests.fakes.servers import server_command


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home without a config file and no model settings in the environment (in-process parsing)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ASYNCAI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def parsed(*argv: str) -> Settings:
    return parse_settings(list(argv))


def refused(*argv: str) -> str:
    with pytest.raises(UsageError) as caught:
        parse_settings(list(argv))
    return str(caught.value)


# Options before the subcommand ---------------------------------------------------------------


def test_options_before_the_subcommand_are_kept(home: Path) -> None:
    config = home / "c.toml"
    config.write_text('mcp_http = "http://h/mcp"\n')
    settings = parsed("-v", "--mcp-stdio", "a", "--tool-timeout", "5", "--config", str(config), "tools")
    assert settings.values["mcp_stdio"] == ["a"]
    assert settings.number("tool_timeout", 120) == 5
    assert settings.values["verbose"] is True
    assert settings.texts("mcp_http") == ["http://h/mcp"]
    assert settings.text("command") == "tools"
    run_code = parsed("--code-timeout", "5", "--code-max-memory", "64MiB", "run-code", "-c", "1")
    assert run_code.number("code_timeout", 30) == 5
    assert run_code.values["code_max_memory"] == "64MiB"
    assert run_code.texts("code") == ["1"]


@pytest.mark.usefixtures("home")
def test_a_repeatable_option_on_both_sides_of_the_subcommand_keeps_both() -> None:
    settings = parsed("--mcp-stdio", "a", "--mcp-http", "http://h/mcp", "tools", "--mcp-stdio", "b")
    assert settings.texts("mcp_stdio") == ["a", "b"]
    assert settings.texts("mcp_http") == ["http://h/mcp"]


@pytest.mark.usefixtures("home")
def test_an_option_after_the_subcommand_wins_over_the_same_option_before_it() -> None:
    settings = parsed("--code-timeout", "5", "run-code", "--code-timeout", "7", "-c", "1")
    assert settings.number("code_timeout", 30) == 7


def test_mcp_stdio_before_tools_is_applied() -> None:
    result = asyncai("--mcp-stdio", SIMPLE, "tools")
    assert result.status == 0, result.stderr
    assert "http_get" in result.stdout


def test_mcp_stdio_on_both_sides_of_tools_starts_both_servers() -> None:
    result = asyncai("--mcp-stdio", SIMPLE, "tools", "--mcp-stdio", server_command("first"))
    assert result.status == 0, result.stderr
    assert "http_get" in result.stdout and "whoami" in result.stdout


def test_config_before_run_code_is_applied(tmp_path: Path) -> None:
    preamble = tmp_path / "preamble.py"
    preamble.write_text("answer = 41\n")
    config = tmp_path / "config.toml"
    config.write_text(f'code_preamble = "{preamble}"\n')
    result = asyncai("--config", str(config), "run-code", "-c", "answer + 1")
    assert (result.status, result.stdout, result.stderr) == (0, "42\n", "")


# Misspelled options and commands -------------------------------------------------------------


def test_a_misspelled_option_is_one_line_naming_it() -> None:
    result = asyncai("--modle", "qwen", "-p", "hi")
    assert_one_line_usage_error(result, "unknown option --modle (did you mean --model?)")
    assert result.stderr == "asyncai: unknown option --modle (did you mean --model?)\n"


def test_a_misspelled_subcommand_is_one_line_with_a_suggestion() -> None:
    result = asyncai("tool", "--mcp-stdio", SIMPLE)
    assert result.stderr == "asyncai: unknown command 'tool' (did you mean tools?)\n"
    assert result.status == 2


@pytest.mark.usefixtures("home")
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run-code", "--cod", "1"], "unknown option --cod (did you mean --code?)"),
        (["--mcp-stdi", "x", "tools"], "unknown option --mcp-stdi (did you mean --mcp-stdio?)"),
        (["--mod", "m", "-p", "x"], "unknown option --mod (did you mean --model?)"),  # no abbreviations
        (["--modle=m", "-p", "x"], "unknown option --modle (did you mean --model?)"),
        (["tools", "--model", "m"], "tools does not take --model"),
        (["--model", "m", "tools"], "tools does not take --model"),
        (["-p", "hi", "run-code", "-c", "1"], "run-code does not take -p"),
        (["-vp", "hi", "tools"], "tools does not take -p"),
        (["-c", "1"], "unknown command '1'"),
        (["--code", "1"], "--code is an option of run-code"),
        (["hello", "world"], "unknown command 'hello': the commands are tools, run-code"),
        (["run-code", "-c", "1", "snippet.py"], "FILE: not allowed with argument -c/--code"),
        (["run-code", "-c"], "-c/--code: expected one argument"),
        (["--code-timeout", "abc", "run-code"], "--code-timeout: invalid float value: 'abc'"),
    ],
)
def test_mistakes_on_the_command_line_are_named(argv: list[str], message: str) -> None:
    assert message in refused(*argv)


def test_a_wrong_option_value_is_one_line_without_usage() -> None:
    assert_one_line_usage_error(asyncai("run-code", "--code-timeout", "abc", "-c", "1"), "--code-timeout")


# Unquoted server commands --------------------------------------------------------------------


QUOTE = "--mcp-stdio takes the whole server command as one argument: quote it, e.g. --mcp-stdio "


def test_an_unquoted_server_command_is_caught_with_a_hint() -> None:
    result = asyncai("--mcp-stdio", "server", "/path", "--port", "1")
    assert result.stderr == f'asyncai: {QUOTE}"server /path --port 1"\n'
    assert result.status == 2


@pytest.mark.usefixtures("home")
@pytest.mark.parametrize(
    ("argv", "quoted"),
    [
        (["--mcp-stdio", "npx", "-y", "pkg", "tools"], '"npx -y pkg"'),
        (["tools", "--mcp-stdio", "npx", "-y", "pkg"], '"npx -y pkg"'),
        (["--mcp-stdio=server", "--port", "1", "-v"], '"server --port 1"'),
        (["--mcp-stdio", "srv", "a b", "c"], "\"srv 'a b' c\""),
        (["--mcp-stdio", "server", "/path", "-c", "1"], '"server /path -c 1"'),  # -c is asyncai's flag
        (["--mcp-stdio", "server", "/path", "-v", "tools"], '"server /path"'),
        (["run-code", "--mcp-stdio", "server", "/path", "-c", "1"], '"server /path"'),
        (["run-code", "--mcp-stdio", "server", "a", "b"], '"server a b"'),
        (["run-code", "--mcp-stdio", "npx", "-y", "pkg", "-c", "1"], '"npx -y pkg"'),
    ],
)
def test_unquoted_server_commands(argv: list[str], quoted: str) -> None:
    assert refused(*argv) == QUOTE + quoted


@pytest.mark.usefixtures("home")
def test_run_code_file_after_a_server_command_is_the_snippet_file() -> None:
    settings = parsed("run-code", "--mcp-stdio", "server", "snippet.py")
    assert settings.texts("mcp_stdio") == ["server"]
    assert settings.values["file"] == "snippet.py"
    assert settings.hints["file"] == '--mcp-stdio "server snippet.py"'


def test_an_unreadable_file_after_a_server_command_suggests_quoting(tmp_path: Path) -> None:
    missing = str(tmp_path / "data")
    result = asyncai("run-code", "--mcp-stdio", "server", missing)
    assert_one_line_usage_error(
        result, "cannot read snippet file", f'quote it: --mcp-stdio "server {missing}"'
    )


# Model URL -----------------------------------------------------------------------------------


def test_base_url_without_a_scheme_is_refused_before_any_request() -> None:
    with ScriptedOpenAI([text_reply("never sent")]) as model:
        bare = model.base_url.removeprefix("http://")
        result = asyncai("--base-url", bare, "--model", "m", "-p", "hi")
        from_env = asyncai("--model", "m", "-p", "hi", env={"OPENAI_BASE_URL": bare})
        requests = model.requests
    assert_one_line_usage_error(result, f"--base-url {bare} has no scheme: did you mean http://{bare}?")
    assert_one_line_usage_error(from_env, "has no scheme")
    assert requests == []


@pytest.mark.usefixtures("home")
@pytest.mark.parametrize(
    ("url", "reason"),
    [
        (
            "localhost:8080/v1",
            "--base-url localhost:8080/v1 has no scheme: did you mean http://localhost:8080/v1?",
        ),
        ("ftp://h/v1", "--base-url ftp://h/v1 must start with http:// or https://, not ftp://"),
        ("http:///v1", "--base-url http:///v1 has no host"),
    ],
)
def test_base_url_must_be_http_with_a_host(url: str, reason: str) -> None:
    with pytest.raises(UsageError) as caught:
        backend_config(parsed("--base-url", url, "--model", "m", "-p", "hi"))
    assert str(caught.value) == reason


# Settings file -------------------------------------------------------------------------------


def test_an_unknown_config_key_is_a_warning_naming_it(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('modle = "x"\ncode-timeout = 5\nflavour = 1\n')
    result = asyncai("--config", str(config), "run-code", "-c", "6 * 7")
    assert result.status == 0, result.stderr
    assert result.stdout == "42\n"
    assert result.stderr.splitlines() == [
        f"asyncai: warning: config file {config}: unknown key 'modle' (did you mean 'model'?)",
        f"asyncai: warning: config file {config}: unknown key 'flavour'",
    ]


@pytest.mark.usefixtures("home")
def test_a_config_file_cannot_choose_the_command(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = home / "c.toml"
    config.write_text('command = "tools"\n')
    assert parsed("--config", str(config), "-p", "x").text("command") is None
    assert "unknown key 'command'" in capsys.readouterr().err


def test_tilde_is_expanded_in_paths_from_flags_and_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "preamble.py").write_text("base = 40\n")
    (tmp_path / "snippet.py").write_text("base + 2\n")
    (tmp_path / ".config" / "asyncai").mkdir(parents=True)
    (tmp_path / ".config" / "asyncai" / "config.toml").write_text('code_preamble = "~/preamble.py"\n')
    (tmp_path / "other.toml").write_text('code_preamble = "~/preamble.py"\n')
    home = {"HOME": str(tmp_path)}
    from_file = asyncai("run-code", "~/snippet.py", env=home)
    from_flags = asyncai("run-code", "--code-preamble", "~/preamble.py", "-c", "base + 1", env=home)
    named_config = asyncai("--config=~/other.toml", "run-code", "-c", "base", env=home)
    assert (from_file.status, from_file.stdout) == (0, "42\n"), from_file.stderr
    assert (from_flags.status, from_flags.stdout) == (0, "41\n"), from_flags.stderr
    assert (named_config.status, named_config.stdout) == (0, "40\n"), named_config.stderr


@pytest.mark.usefixtures("home")
def test_tilde_is_expanded_in_every_path_option(home: Path) -> None:
    settings = parsed("--mcp-config", "~/a.json", "--system-file", "~/s.txt", "--code-preamble", "~/p.py")
    assert settings.texts("mcp_config") == [f"{home}/a.json"]
    assert settings.text("system_file") == f"{home}/s.txt"
    assert settings.text("code_preamble") == f"{home}/p.py"


# Sizes and the preamble ----------------------------------------------------------------------


def test_a_memory_size_without_a_unit_below_1_mib_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("code_max_memory = 256\n")
    result = asyncai("--config", str(config), "run-code", "-c", "1")
    assert result.stderr == (
        "asyncai: --code-max-memory: 256 bytes is below the 1 MiB minimum "
        "(a number without a unit is bytes: did you mean 256MiB?)\n"
    )
    assert result.status == 2


@pytest.mark.usefixtures("home")
@pytest.mark.parametrize(
    ("size", "reason"),
    [
        ("512KiB", "512KiB is 524,288 bytes, below the 1 MiB minimum"),
        ("1000000", "1,000,000 bytes is below the 1 MiB minimum (a number without a unit is bytes)"),
        ("100b", "100b is 100 bytes, below the 1 MiB minimum"),
    ],
)
def test_memory_sizes_below_1_mib(size: str, reason: str) -> None:
    with pytest.raises(UsageError) as caught:
        code_limits(parsed("run-code", "--code-max-memory", size, "-c", "1"))
    assert str(caught.value) == f"--code-max-memory: {reason}"


@pytest.mark.usefixtures("home")
def test_one_mib_is_enough() -> None:
    assert code_limits(parsed("run-code", "--code-max-memory", "1MiB", "-c", "1")).max_memory == 2**20


def test_a_preamble_that_does_not_compile_fails_at_start_up(tmp_path: Path) -> None:
    preamble = tmp_path / "preamble.py"
    preamble.write_text("x = 1\ndef broken(:\n    pass\n")
    result = asyncai("run-code", "--code-preamble", str(preamble), "-c", "1")
    assert_one_line_usage_error(result, f"--code-preamble {preamble} does not compile:", "(line 2)")
    assert result.stdout == ""  # nothing ran


def test_a_preamble_with_top_level_await_compiles(tmp_path: Path) -> None:
    preamble = tmp_path / "preamble.py"
    preamble.write_text("import asyncio\nawait asyncio.sleep(0)\nready = True\n")
    result = asyncai("run-code", "--code-preamble", str(preamble), "-c", "ready")
    assert (result.status, result.stdout) == (0, "true\n"), result.stderr
