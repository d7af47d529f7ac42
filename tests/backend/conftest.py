"""What the backend tests share: the NDJSON log of a test, captured verbosely."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

from tests.fakes.logs import captured_log


@pytest.fixture
def log_stream() -> Iterator[io.StringIO]:
    with captured_log(verbose=True) as stream:
        yield stream
