"""Start the stdio MCP servers before asyncai loads the ``mcp`` SDK and the sandbox.

A Python MCP server spends most of its start importing (the ``mcp`` SDK alone takes about a
second here), and so does asyncai. Spawned only once asyncai's imports are done, the server's
start follows them; spawned first, it overlaps them. This module is light (``anyio`` and the
standard library), so the CLI can spawn every stdio server right after parsing its arguments.

A spawned server is handed to the SDK's stdio transport when its connection opens
(``stdio_patch.adopting``), and only if it is exactly what the transport would have started: the
same command, arguments and environment. Anything left unclaimed is stopped on exit.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass

import anyio
from anyio.abc import Process

from asyncai.tools.mcp.environment import server_environment
from asyncai.tools.mcp.specs import ServerSpec, StdioServerSpec, launch_command
from asyncai.tools.mcp.stderr_pump import StderrPump

_STOP_TIMEOUT = 2.0


@dataclass
class EarlyServer:
    argv: tuple[str, ...]
    env: dict[str, str]
    process: Process
    stderr: StderrPump


class EarlyServers:
    """Servers spawned ahead of their connection; ``take`` hands one over, ``aclose`` stops the rest."""

    def __init__(self) -> None:
        self._waiting: list[EarlyServer] = []

    @property
    def waiting(self) -> tuple[EarlyServer, ...]:
        """Spawned and not yet taken by a connection."""
        return tuple(self._waiting)

    async def spawn(self, specs: Iterable[ServerSpec], secrets: Iterable[str | None]) -> None:
        kept = tuple(secrets)
        for spec in specs:
            if not isinstance(spec, StdioServerSpec):
                continue
            argv = (launch_command(spec.command), *spec.args)
            env = server_environment(os.environ, spec.env, kept)
            stderr = StderrPump(spec.name)
            try:
                # What the SDK's stdio transport does on POSIX (mcp.client.stdio).
                process = await anyio.open_process(
                    list(argv), env=env, stderr=stderr.writer, start_new_session=True
                )
            except (OSError, ValueError):
                continue  # the connection spawns it again and reports why it fails
            finally:
                stderr.close_writer()  # the child has its own copy; the pump ends when it exits
            self._waiting.append(EarlyServer(argv, env, process, stderr))

    def take(self, argv: Iterable[str], env: Mapping[str, str]) -> EarlyServer | None:
        """The waiting server started as ``argv`` with exactly ``env``, if there is one."""
        wanted = tuple(argv)
        for index, server in enumerate(self._waiting):
            if server.argv == wanted and server.env == env and server.process.returncode is None:
                return self._waiting.pop(index)
        return None

    async def aclose(self) -> None:
        waiting, self._waiting = self._waiting, []
        for server in waiting:
            await _stop(server)


async def _stop(server: EarlyServer) -> None:
    server.stderr.close_writer()
    process = server.process
    with contextlib.suppress(ProcessLookupError):
        if process.returncode is None:
            process.terminate()
    with anyio.move_on_after(_STOP_TIMEOUT) as scope:
        await process.wait()
    if scope.cancelled_caught:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
    await process.aclose()


@contextlib.asynccontextmanager
async def early_servers(
    specs: Iterable[ServerSpec], secrets: Iterable[str | None]
) -> AsyncIterator[EarlyServers]:
    servers = EarlyServers()
    try:
        await servers.spawn(specs, secrets)
        yield servers
    finally:
        with anyio.CancelScope(shield=True):
            await servers.aclose()


__all__ = ["EarlyServer", "EarlyServers", "early_servers"]
