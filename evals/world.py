"""The world an eval task runs in: files, a web site, a fake kcp cluster, a knowledge graph, and
the real MCP servers over them. What a task can write (the files, the graph, and the servers over
them) is made afresh for each attempt, so no attempt sees another's writes; what no task writes is
shared by the attempts of a run (``services``).

Everything is on this machine (loopback and a temporary directory). The MCP servers are the npm
filesystem, memory and everything servers (installed by ``make test``'s set-up) and the bundled
read-only kcp server on real kubectl, over stdio, one process per attempt (the kcp server's replies
name the world's kubeconfig), and the bundled ``asyncai-mcp-simple`` (``http_get``), one process per
run over Streamable HTTP.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.fakes.loopback import listening_socket, url_of
from tests.kcp.fake_kcp import serve as serve_kcp
from tests.kcp.fake_kcp import write_kubeconfig
from tests.third_party import npm_server

from asyncai import HttpServerSpec, StdioServerSpec, http_spec, stdio_spec

BIN = Path(sys.executable).parent

FILES = {
    "docs/alpha.txt": "the quick brown fox\njumps over\nthe lazy dog\n",
    "docs/beta.txt": "apples and oranges\n",
    "docs/gamma.md": "# Gamma\nA fox in markdown does not count.\n",
    "docs/notes/delta.txt": "fox hunting season\nis over\n",
    "docs/notes/epsilon.txt": "nothing to see here\none\ntwo\nthree\nfour\n",
    "docs/zeta.txt": "Fox with a capital letter\n",
    "pointer.txt": "docs/notes/epsilon.txt\n",
    "numbers/a.txt": "3\n",
    "numbers/b.txt": "10\n",
    "numbers/c.txt": "29\n",
    "numbers/d.txt": "-4\n",
    "numbers/e.txt": "100\n",
    "big/report.csv": "id,value\n" + "".join(f"{i},{i * 7 % 13}\n" for i in range(400)),
    "big/events.log": "".join(
        f"2026-12-01T{i // 3600 % 24:02}:{i // 60 % 60:02}:{i % 60:02}Z "
        f"{'ERROR' if i % 37 == 5 else 'INFO'} worker-{i % 9} handled request {i:05} in {i * 13 % 997} ms\n"
        for i in range(6000)
    ),
}
"""The files of the world's directory (paths relative to it)."""

MEMORY = [
    {"type": "entity", "name": "Carol", "entityType": "person", "observations": ["likes jasmine tea"]},
    {"type": "entity", "name": "Dave", "entityType": "person", "observations": ["plays the cello"]},
    {"type": "relation", "from": "Carol", "to": "Dave", "relationType": "knows"},
]
"""The knowledge graph the memory server starts with."""

ITEMS = {"a1": 12, "b7": 30, "c3": 7, "d9": 41, "e2": 5, "f4": 18, "g8": 26, "h6": 9}
"""The site's items and their prices."""

PAGES: dict[str, object] = {
    "/page": {"title": "Loopback Gazette", "sections": ["news", "sport"]},
    "/start": {"next": "/answer-7"},
    "/answer-7": {"answer": 4217},
    "/items": {"ids": list(ITEMS)},
    "/config": {"file": "docs/beta.txt", "owner": "ops"},
    "/report": {"total": 977, "currency": "EUR"},
    **{f"/item/{key}": {"id": key, "price": price} for key, price in ITEMS.items()},
}


@dataclass(frozen=True)
class Services:
    """What the attempts of one run share, none of it written by a task: the web site, the fake
    kcp, and the MCP servers by name (``web``: its URL)."""

    site: str
    """``http://127.0.0.1:PORT`` of the web site."""
    kcp: str
    """The fake kcp API server's URL."""
    servers: Mapping[str, str]


@dataclass(frozen=True)
class World:
    root: Path
    """The directory the filesystem server may read (and the memory server's file lives beside)."""
    services: Services

    @property
    def site(self) -> str:
        return self.services.site

    @property
    def memory_file(self) -> Path:
        return self.root.parent / "memory.jsonl"

    @property
    def kubeconfig(self) -> Path:
        return self.root.parent / "kcp.kubeconfig"

    def server(self, name: str) -> StdioServerSpec | HttpServerSpec:
        """The MCP server ``name`` (filesystem, memory, everything, web, kcp) over this world."""
        if name in self.services.servers:
            return http_spec(self.services.servers[name], name=name)
        commands = {
            "filesystem": lambda: npm_server("filesystem", str(self.root)),
            "memory": lambda: f"env MEMORY_FILE_PATH={self.memory_file} {npm_server('memory')}",
            "everything": lambda: npm_server("everything", "stdio"),
            "kcp": lambda: (
                f"{BIN / 'socialweb-computer-kcp-readonly'} --kubeconfig {self.kubeconfig} "
                f"--kubectl {BIN / 'kubectl'}"
            ),
        }
        return stdio_spec(commands[name](), name=name)

    def placeholders(self) -> dict[str, str]:
        """What differs between two worlds, by the name a recording keeps in its place."""
        return {str(self.root.parent): "{WORLD}", self.site: "{SITE}", self.services.kcp: "{KCP}"}


def _site_handler(pages: dict[str, object]) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            page = pages.get(self.path)
            body = json.dumps(page if page is not None else {"error": "not found"}).encode()
            self.send_response(200 if page is not None else 404)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):
                self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextlib.contextmanager
def serving_site() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _site_handler(PAGES))
    thread = threading.Thread(target=server.serve_forever, name="eval-site", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def serving_web_server() -> Iterator[str]:
    """``asyncai-mcp-simple`` over Streamable HTTP (``evals.shared_server``) in a process of its
    own, on a socket listening before it starts: its URL."""
    sock = listening_socket()
    command = [sys.executable, "-m", "evals.shared_server", str(sock.fileno())]
    process = subprocess.Popen(command, pass_fds=[sock.fileno()], cwd=Path(__file__).resolve().parent.parent)
    try:
        yield f"{url_of(sock)}/mcp"
    finally:
        process.terminate()
        process.wait(10)
        sock.close()


@contextlib.contextmanager
def services() -> Iterator[Services]:
    """What the attempts of one eval run share (``Services``)."""
    with serving_site() as site, serve_kcp() as (kcp, _), serving_web_server() as web:
        yield Services(site, kcp, {"web": web})


@contextlib.contextmanager
def new_world(services: Services) -> Iterator[World]:
    """A fresh directory with the world's files, memory graph and kubeconfig, over ``services``."""
    with tempfile.TemporaryDirectory(prefix="asyncai-eval-") as directory:
        base = Path(directory)
        root = base / "files"
        for name, text in FILES.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        (base / "memory.jsonl").write_text("".join(json.dumps(line) + "\n" for line in MEMORY))
        world = World(root, services)
        write_kubeconfig(world.kubeconfig, services.kcp)
        yield world
