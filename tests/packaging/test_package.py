"""A package people install (issue 49, item 4): the sdist and the wheel build from the checkout,
their metadata says what pyproject.toml says, and the wheel installs into a fresh virtual
environment outside the checkout, its dependencies resolved from the package index's wheels (the
set-up's cache, ``tests/packaging/wheelhouse.py``: no network here). From there, with that
environment not on ``PATH``, ``asyncai --version``, ``asyncai tools`` and ``asyncai run-code -c``
run against a bundled server, and ``serve-mcp`` answers a ``run_code`` over stdio."""

from __future__ import annotations

import email.parser
import os
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from packaging.requirements import Requirement

from asyncai.version import __version__
from tests.packaging.wheelhouse import WHEELHOUSE, dependencies

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

pytestmark = pytest.mark.skipif(
    not WHEELHOUSE.is_dir(), reason=f"no wheelhouse at {WHEELHOUSE}: make's set-up downloads it"
)


@dataclass(frozen=True)
class Built:
    wheel: Path
    sdist: Path


@dataclass(frozen=True)
class Installed:
    bin: Path
    home: Path
    """A directory outside the checkout, the commands' working directory."""

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bin / "asyncai"), *args], capture_output=True, text=True, timeout=120,
            cwd=self.home, env=self.env(),
        )  # fmt: skip

    def env(self) -> dict[str, str]:
        # Neither the checkout's environment nor the installed one on PATH: a service unit's view.
        return {"PATH": "/usr/bin:/bin", "HOME": str(self.home), "XDG_DATA_HOME": str(self.home / "data")}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--sdist", "--wheel", "--outdir", str(out), str(ROOT)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    [wheel] = out.glob("*.whl")
    [sdist] = out.glob("*.tar.gz")
    return Built(wheel, sdist)


@pytest.fixture(scope="module")
def installed(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    home = tmp_path_factory.mktemp("user")
    venv = home / "venv"
    # Without a pip of its own (the checkout's installs into it: faster, and the same resolver).
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q", "--no-compile",
         "--no-index", "--find-links", str(WHEELHOUSE), str(built.wheel)],
        check=True, capture_output=True, timeout=600, cwd=home,
    )  # fmt: skip
    yield Installed(venv / "bin", home)


def test_the_metadata_is_pyprojects(built: Built) -> None:
    project = PYPROJECT["project"]
    with zipfile.ZipFile(built.wheel) as wheel:
        names = wheel.namelist()
        [metadata_name] = [name for name in names if name.endswith(".dist-info/METADATA")]
        metadata = email.parser.Parser().parsestr(wheel.read(metadata_name).decode())
        [entry_points] = [name for name in names if name.endswith(".dist-info/entry_points.txt")]
        scripts = wheel.read(entry_points).decode()
    assert (metadata["Name"], metadata["Version"]) == ("asyncai", __version__)
    assert metadata["Requires-Python"] == project["requires-python"]
    required = [r for r in metadata.get_all("Requires-Dist") or [] if "extra ==" not in r]
    assert sorted(map(Requirement, required), key=str) == sorted(map(Requirement, dependencies()), key=str)
    assert set(metadata.get_all("Provides-Extra") or []) == set(project["optional-dependencies"])
    for script in project["scripts"]:
        assert f"{script} = " in scripts
    assert "asyncai/py.typed" in names and not any(name.startswith("tests/") for name in names)
    with tarfile.open(built.sdist) as sdist:
        members = sdist.getnames()
    top = f"asyncai-{__version__}"
    assert {f"{top}/pyproject.toml", f"{top}/src/asyncai/__init__.py", f"{top}/README.md"} <= set(members)


def test_the_installed_commands_run_outside_the_checkout(installed: Installed) -> None:
    version = installed.run("--version")
    assert (version.returncode, version.stdout) == (0, f"asyncai {__version__}\n"), version.stderr
    tools = installed.run("tools", "--mcp-stdio", "asyncai-mcp-simple")
    assert tools.returncode == 0 and "http_get" in tools.stdout, tools.stderr
    ran = installed.run("run-code", "--mcp-stdio", "asyncai-mcp-simple", "-c", "sum(range(10))")
    assert (ran.returncode, ran.stdout.splitlines()[0]) == (0, "45"), ran.stderr


@pytest.mark.anyio
async def test_the_installed_serve_mcp_answers_run_code(installed: Installed) -> None:
    server = StdioServerParameters(
        command=str(installed.bin / "asyncai"),
        args=["serve-mcp", "--mcp-stdio", "asyncai-mcp-simple"],
        env=installed.env(),
        cwd=str(installed.home),
    )
    async with Client(stdio_client(server)) as client:
        tools = await client.list_tools()
        assert [tool.name for tool in tools.tools] == ["run_code"]
        result = await client.call_tool("run_code", {"code": "[n * n for n in range(4)]"})
    assert not result.is_error
    assert result.structured_content is not None and result.structured_content["value"] == [0, 1, 4, 9]


def test_the_checkout_is_not_what_runs(installed: Installed) -> None:
    """The installed commands import the installed package, not the checkout's ``src``."""
    where = subprocess.run(
        [str(installed.bin / "python"), "-c", "import asyncai, sys; print(asyncai.__file__)"],
        capture_output=True, text=True, cwd=installed.home, env=installed.env(), timeout=60, check=True,
    )  # fmt: skip
    assert str(installed.home) in where.stdout and str(ROOT / "src") not in where.stdout
    assert os.path.isfile(installed.bin / "asyncai-mcp-simple")
