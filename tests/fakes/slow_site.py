"""A loopback web site whose answers a test holds back: ``GET /slow/NAME`` sets ``entered[NAME]``
and answers only once the test sets ``release[NAME]`` (so a test knows a tool call is in flight,
and ends it when it chooses, without sleeping). Any other path answers at once."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class SlowSite:
    url: str = ""
    entered: defaultdict[str, threading.Event] = field(default_factory=lambda: defaultdict(threading.Event))
    release: defaultdict[str, threading.Event] = field(default_factory=lambda: defaultdict(threading.Event))


@contextmanager
def slow_site() -> Iterator[SlowSite]:
    site = SlowSite()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.startswith("/slow/"):
                name = self.path.removeprefix("/slow/")
                site.entered[name].set()
                site.release[name].wait(120)
            body = json.dumps({"path": self.path}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):  # the caller gave up
                self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    site.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        for event in list(site.release.values()):
            event.set()
        server.shutdown()
        server.server_close()
