"""Ctrl-C, SIGTERM and SIGHUP end a command the same way.

``asyncio.run`` cancels the main task on SIGINT; ``run`` does the same for SIGTERM and SIGHUP. The
cancellation unwinds every ``async with``: in-flight runs stop, a busy sandbox worker is killed
(``ReplScope`` discards the worker of a cancelled feed), the worker pool and MCP servers are
closed. The exit status is then 128 + the signal number: 130, 143 and 129.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Coroutine
from typing import Any

TERMINATING = (signal.SIGTERM, signal.SIGHUP)


def run(command: Coroutine[Any, Any, int]) -> int:
    """``asyncio.run(command)``; a terminating signal cancels it and gives 128 + the signal number."""
    received: list[int] = []
    try:
        status = asyncio.run(_cancelled_on_signals(command, received))
    except KeyboardInterrupt:
        return 128 + signal.SIGINT
    except asyncio.CancelledError:
        if not received:
            raise
        return 128 + received[0]
    return 128 + received[0] if received else status


async def _cancelled_on_signals(command: Coroutine[Any, Any, int], received: list[int]) -> int:
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None

    def cancel(signum: int) -> None:
        if not received:  # a second signal does not interrupt the orderly shutdown
            received.append(signum)
            task.cancel()

    for signum in TERMINATING:
        loop.add_signal_handler(signum, cancel, signum)
    # The handlers stay until the loop closes, which removes them: a signal during the final
    # clean-up of asyncio.run is then still an orderly exit, not a sudden death.
    return await command
