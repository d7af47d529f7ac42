"""``import asyncai``: the public names are exactly ``__all__``, each one resolves, and importing the
package loads neither the ``mcp`` SDK nor pydantic-monty (the CLI's ``--help`` depends on it)."""

from __future__ import annotations

import subprocess
import sys

import asyncai

PUBLIC = {
    "Sample",
    "SampleRequest",
    "Sampler",
    "FormAnswer",
    "Person",
    "ServerRequests",
    "OAuthSettings",
    "Activity",
    "Approval",
    "ApprovalRequest",
    "Approver",
    "CodeMode",
    "CodeModeLimits",
    "ConfigError",
    "DirectoryStore",
    "FunctionTools",
    "HttpServerSpec",
    "McpServers",
    "MutationPolicy",
    "NestedCall",
    "ObservedShapes",
    "RedisStore",
    "ReplScope",
    "ReplScopes",
    "ResourceError",
    "RoutedTools",
    "SandboxConfig",
    "SandboxConfigError",
    "ScopeUse",
    "ServerStartError",
    "Skill",
    "SkillError",
    "SkillSet",
    "SkillSource",
    "DirectorySkills",
    "ServerSkills",
    "StateStore",
    "StdioServerSpec",
    "ToolCallOutput",
    "ToolDefinition",
    "ToolSource",
    "__version__",
    "http_spec",
    "specs_from_config",
    "stdio_spec",
    "tool",
}


def test_all_lists_exactly_the_public_names() -> None:
    assert set(asyncai.__all__) == PUBLIC
    assert len(asyncai.__all__) == len(PUBLIC), "a name is listed twice"
    assert sorted(dir(asyncai)) == sorted(PUBLIC)


def test_every_public_name_resolves_to_what_its_module_defines() -> None:
    for name in asyncai.__all__:
        value = getattr(asyncai, name)
        assert value is not None, name
    assert asyncai.CodeMode.__module__ == "asyncai.code_mode.executor"


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        asyncai.Nope  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "Nope" in str(exc)
    else:
        raise AssertionError("asyncai.Nope resolved")


def test_import_loads_no_heavy_dependency() -> None:
    probe = "import sys, asyncai; print(sorted(m for m in ('mcp', 'pydantic_monty', 'httpx2') if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"


def test_the_version_is_kept_in_one_place_and_printed() -> None:
    """pyproject.toml takes it from ``asyncai/version.py``; the installed metadata and ``asyncai
    --version`` say the same."""
    import importlib.metadata
    import tomllib
    from pathlib import Path

    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"] and pyproject["project"]["dynamic"] == ["version"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "asyncai.version.__version__"}
    assert importlib.metadata.version("asyncai") == asyncai.__version__
    printed = subprocess.run(
        [str(Path(sys.executable).with_name("asyncai")), "--version"], capture_output=True, text=True
    )
    assert (printed.returncode, printed.stdout) == (0, f"asyncai {asyncai.__version__}\n")
