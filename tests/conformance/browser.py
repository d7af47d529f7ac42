#!/usr/bin/env python3
"""A stand-in for a person's web browser, for ``BROWSER``: ``browser.py URL``.

Like a browser that a sign-in link is handed to, it returns at once (exit 0) and loads the page in
the background: it GETs ``URL`` and follows every redirect, the last one usually to the client's
loopback callback (``http://127.0.0.1:PORT/...?code=...&state=...``), and GETs that too, as a
person's browser would after they approve the sign-in. Each hop and the final status go to
stderr. Standard library only, so any ``python3`` runs it.

``--wait`` loads the page in the foreground and exits 1 when it could not be loaded (to try it by
hand). ``webbrowser.open`` waits for a ``BROWSER`` program to exit, so returning at once is also
what keeps a client that opens the browser from its event loop from waiting on its own callback.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
from typing import Any

TIMEOUT = 20.0


class _LoggingRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
        print(f"browser: {code} -> {newurl}", file=sys.stderr, flush=True)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def visit(url: str) -> bool:
    """GET ``url`` following redirects; True when the last page answered 2xx/3xx."""
    opener = urllib.request.build_opener(_LoggingRedirects())
    opener.addheaders = [("User-Agent", "asyncai-conformance-browser/1"), ("Accept", "text/html,*/*")]
    print(f"browser: GET {url}", file=sys.stderr, flush=True)
    try:
        with opener.open(url, timeout=TIMEOUT) as response:
            response.read()
            print(f"browser: {response.status} at {response.geturl()}", file=sys.stderr, flush=True)
            return True
    except urllib.error.HTTPError as exc:  # a page that says no is still a page the browser showed
        print(f"browser: {exc.code} at {exc.geturl()}: {exc.read()[:300]!r}", file=sys.stderr, flush=True)
        return False
    except (urllib.error.URLError, OSError, ValueError) as exc:
        print(f"browser: could not load {url}: {exc}", file=sys.stderr, flush=True)
        return False


def main(argv: list[str]) -> int:
    wait = "--wait" in argv
    urls = [arg for arg in argv if arg != "--wait"]
    if len(urls) != 1:
        print("usage: browser.py [--wait] URL", file=sys.stderr)
        return 2
    if wait or not hasattr(os, "fork"):
        return 0 if visit(urls[0]) else 1
    if os.fork() != 0:
        return 0  # the launcher returns; the "browser window" goes on loading the page
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # keeps no hold on the caller's stdout, which its reader waits to see closed
    try:
        visit(urls[0])
    finally:
        os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
