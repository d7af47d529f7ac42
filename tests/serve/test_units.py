"""serve-mcp's pure parts and small shells, without a client process: the bind checks, the approval
text, and the wall clock's pause."""

from __future__ import annotations

import asyncio

import pytest

from asyncai.approvals.gate import ApprovalRequest
from asyncai.code_mode.engine.clock import WallClock
from asyncai.serve.http import BindError, HttpOptions, check_bind, is_loopback

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"])
def test_loopback_addresses(host: str) -> None:
    assert is_loopback(host)
    assert check_bind(HttpOptions(host, 0, tokens=())) == []


def test_beyond_loopback_needs_allow_remote_and_a_token() -> None:
    with pytest.raises(BindError, match="--allow-remote"):
        check_bind(HttpOptions("0.0.0.0", 8765, tokens=("t",)))
    with pytest.raises(BindError, match="--no-auth is only allowed on a loopback address"):
        check_bind(HttpOptions("0.0.0.0", 8765, tokens=(), allow_remote=True))
    [warning] = check_bind(HttpOptions("10.0.0.5", 8765, tokens=("t",), allow_remote=True))
    assert "10.0.0.5:8765" in warning and "every wrapped tool" in warning


def test_an_approval_question_shows_the_call_compactly() -> None:
    request = ApprovalRequest("delete-object", "delete_object", {"name": "web", "spec": {"x": [1] * 100}})
    text = request.call_text()
    assert text.startswith("delete_object(name='web', spec={\"x\":[1,1,")
    assert text.endswith("... (87 more chars))") and len(text) < 200


def test_an_approval_question_hides_nothing_silently() -> None:
    request = ApprovalRequest("d", "d", {"name": "web" + " " * 130 + "; and-prod", "m": {"x": "\u202eevil"}})
    text = request.call_text()
    assert "... (25 more chars)" in text  # the hidden tail is announced
    assert "\u202e" not in text and '"\\u202eevil"' in text  # a bidi override is shown escaped


async def test_a_paused_wall_clock_does_not_expire() -> None:
    async with WallClock(0.2) as clock:
        async with clock.paused():
            await asyncio.sleep(0.4)  # longer than the limit, while paused
        async with clock.paused(), clock.paused():  # nested pauses (two approvals at once)
            await asyncio.sleep(0.1)
    with pytest.raises(TimeoutError):
        async with WallClock(0.1):
            await asyncio.sleep(1)
