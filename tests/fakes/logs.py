"""asyncai's NDJSON log captured in a string, for tests that read what was logged."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from typing import Any

from asyncai.log import configure_logging


@contextlib.contextmanager
def captured_log(verbose: bool = False) -> Iterator[io.StringIO]:
    """The log lines written while the block runs (warnings and errors, or everything when
    ``verbose``); afterwards logging goes back to stderr at the default level."""
    stream = io.StringIO()
    configure_logging(verbose=verbose, stream=stream)
    try:
        yield stream
    finally:
        configure_logging(verbose=False)


def events(stream: io.StringIO, name: str) -> list[dict[str, Any]]:
    """The logged events called ``name``, in order, each as its parsed NDJSON line."""
    lines = [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]
    return [line for line in lines if line["event"] == name]
