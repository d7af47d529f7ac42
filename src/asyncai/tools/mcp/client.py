"""``McpServers``: sessions to several MCP servers, kept open for the executor's life.

Each server connection lives in its own asyncio task, which owns the transport's context
managers (anyio cancel scopes must be entered and left in one task) and waits until the executor
closes. Calls go to the shared ``ClientSession`` from any task, without a lock, so gathered calls
run concurrently. Each request runs in a task of its own that is cancelled at most once, so a
cancelled call's ``notifications/cancelled`` reaches the server however often its caller is
cancelled (``_cancelled_once``). A dead server fails its own calls only, and a server that cannot
start is a warning as long as another one started.

Resources (``resources/list``, ``resources/read``) are routed like tools: a URI goes to the server
that listed it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import warnings
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx2
import mcp.types as mt
from mcp import Client, MCPError, StdioServerParameters
from mcp.client import IncomingMessage, Transport
from mcp.client.sse import sse_client
from mcp.client.stdio import get_default_environment, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict

from asyncai.arguments import check_choice, check_flag, check_instance, check_number, refusal
from asyncai.humanize import count, seconds
from asyncai.log import log_event
from asyncai.telemetry.spans import DEFAULT_TRACING
from asyncai.tools.mcp import stdio_patch
from asyncai.tools.mcp.early_start import EarlyServers
from asyncai.tools.mcp.environment import server_environment
from asyncai.tools.mcp.oauth import SIGN_IN_MODES, SignIn, SignInMode, sign_in_failure
from asyncai.tools.mcp.results import call_output, tool_definition
from asyncai.tools.mcp.server_requests import ServerRequests
from asyncai.tools.mcp.specs import (
    HttpServerSpec,
    ServerSpec,
    StdioServerSpec,
    launch_command,
    server_specs,
    unique_names,
)
from asyncai.tools.mcp.stderr_pump import StderrPump
from asyncai.tools.routing import RoutedTools
from asyncai.tools.types import (
    ResourceError,
    ServerStartError,
    ToolCallOutput,
    ToolDefinition,
    ToolsChangedListener,
    ToolSource,
)
from asyncai.version import __version__

DEFAULT_TOOL_TIMEOUT = 120.0
_CONNECTION_CLOSED_MESSAGE = "Connection closed"
"""What the SDK's dispatcher says when the transport ended (``jsonrpc_dispatcher``)."""
DEFAULT_CONNECT_TIMEOUT = 60.0
_SSE_READ_TIMEOUT = 24 * 3600.0  # an idle legacy SSE stream is normal; only the server ends it
_RESOURCE_PROBE_TIMEOUT = 10.0
_LISTEN_ATTEMPTS = 5
_CANCEL_NOTICE_GRACE = 6.0
"""How long a cancelled call waits for its ``notifications/cancelled`` write (the SDK bounds it at 5 s)."""
_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
"""In a notice's ``_meta``: it came on a ``subscriptions/listen`` stream."""
CLIENT_INFO = mt.Implementation(name="asyncai", version=__version__)

stdio_patch.apply()

_T = TypeVar("_T")


_abandoned: set[asyncio.Task[Any]] = set()
"""Cancelled requests still writing their cancel notice after the grace: kept until they end."""


async def _cancelled_once(request: Coroutine[Any, Any, _T]) -> _T:
    """Run one SDK request in a task of its own that is cancelled at most once, however often the
    caller is.

    On a cancel the SDK writes ``notifications/cancelled`` inside an anyio shield
    (``mcp/shared/jsonrpc_dispatcher.py``, ``send_raw_request``'s caller-cancelled arm), but anyio
    cannot shield a task from a second native ``Task.cancel()``: the notice is lost while it waits
    its turn on the transport, and the server's call runs on. The engine cancels twice (its wall
    clock, then ``settle``), and so can Ctrl-C or a shutdown after any first cancel."""
    task = asyncio.get_running_loop().create_task(request)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        task.cancel()
        await _outlast(task, _CANCEL_NOTICE_GRACE)
        raise


async def _outlast(task: asyncio.Task[Any], grace: float) -> None:
    """Wait up to ``grace`` for a cancelled request to end; further cancels of the caller wait too."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    while not task.done() and (left := deadline - loop.time()) > 0:
        with contextlib.suppress(asyncio.CancelledError):  # the caller's cancel is re-raised after
            await asyncio.wait({task}, timeout=left)
    if not task.done():
        _abandoned.add(task)
    task.add_done_callback(_forget)


def _forget(task: asyncio.Task[Any]) -> None:
    _abandoned.discard(task)
    if not task.cancelled():
        task.exception()  # nobody awaits it any more: its failure is not an unretrieved error


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _first_leaf(exc: BaseException) -> BaseException:
    """What failed, out of the SDK's nested exception groups (a cancellation only when nothing else)."""
    leaves = [leaf for leaf in _leaves(exc) if not isinstance(leaf, asyncio.CancelledError)] or [exc]
    return leaves[0]


SKILLS_EXTENSION = "io.modelcontextprotocol/skills"


class _AnyResult(BaseModel):
    """An extension method's result, every field kept (its shape is the caller's to check)."""

    model_config = ConfigDict(extra="allow")


def _describe(exc: BaseException) -> str:
    leaf = _first_leaf(exc)
    sign_in = sign_in_failure(leaf)
    if sign_in is not None:
        return sign_in
    if isinstance(leaf, MCPError) and leaf.code == mt.UNSUPPORTED_PROTOCOL_VERSION:
        return f"no protocol version in common: {_first_line(leaf.message)}"
    if isinstance(leaf, OSError) and leaf.strerror:
        return leaf.strerror
    text = str(leaf).strip().splitlines()
    return text[0] if text else type(leaf).__name__


class McpConnection(ToolSource):
    """One MCP server as a tool source: its session, its tools, its capabilities, and whether it is
    still alive."""

    def __init__(
        self,
        spec: ServerSpec,
        tool_timeout: float,
        secrets: tuple[str, ...] = (),
        early: EarlyServers | None = None,
        sign_in_mode: SignInMode = "never",
        state_home: Path | None = None,
        requests: ServerRequests | None = None,
    ) -> None:
        self.spec = spec
        self.requests = requests or ServerRequests()
        self.sign_in_mode = sign_in_mode
        self.state_home = state_home
        self._sign_in: SignIn | None = None
        self._refused_status: int | None = None
        self._early = early
        self.tool_timeout = tool_timeout
        self.secrets = secrets
        self._tools: list[ToolDefinition] = []
        self.capabilities: mt.ServerCapabilities | None = None
        self.initial_resources: list[dict[str, Any]] = []
        """What ``resources/list`` gave at start."""
        self.offers_resources = False
        self.dead_reason: str | None = None
        self._client: Client | None = None
        self.protocol_version: str | None = None
        """What was negotiated: ``2026-07-28`` (stateless) or a 2025-era handshake version."""
        self._ready: asyncio.Future[None] | None = None
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stderr: StderrPump | None = None
        self._listeners: list[ToolsChangedListener] = []
        self._refreshes: set[asyncio.Task[None]] = set()
        self._refreshing = asyncio.Lock()

    @property
    def name(self) -> str:
        return self.spec.name

    def tools(self) -> list[ToolDefinition]:
        return list(self._tools)

    def on_tools_changed(self, listener: ToolsChangedListener) -> None:
        self._listeners.append(listener)

    def resource_servers(self) -> list[str]:
        return [self.name] if self.has_resources else []

    @property
    def has_resources(self) -> bool:
        """Declares the ``resources`` capability and listed a resource or template at start (or its
        listing failed). Many servers declare the capability with nothing behind it."""
        return self.offers_resources

    @property
    def has_prompts(self) -> bool:
        return self.capabilities is not None and self.capabilities.prompts is not None

    @property
    def offers_skills(self) -> bool:
        """The server declared SEP-2640's skills extension (``skills/list``, ``skills/get``)."""
        extensions = self.capabilities.extensions if self.capabilities is not None else None
        return bool(extensions) and SKILLS_EXTENSION in (extensions or {})

    async def extension_request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """One request of an extension's method (the SDK types only the spec's); its result as a
        dict, every failure a one-line ``ResourceError``."""

        async def send(client: Client) -> dict[str, Any]:
            request = mt.Request[Any, Any](method=method, params=params)
            result = await client.session.send_request(request, _AnyResult)
            return dict(result.model_extra or {})

        return await self._request(method, send)

    async def start(self, timeout: float = DEFAULT_CONNECT_TIMEOUT) -> None:
        self._ready = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._serve(), name=f"mcp-{self.name}")
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), timeout)
        except TimeoutError:
            await self.close()
            raise ServerStartError(
                await self._start_error(f"no answer to initialize within {seconds(timeout)}")
            ) from None
        except asyncio.CancelledError:
            # Ctrl-C or SIGTERM while the server starts: stop it through the transport's own cancel
            # scopes now; left to asyncio.run's final cancel-all it can hang, and its start error
            # would be logged as "Future exception was never retrieved".
            await asyncio.shield(self.close())
            raise

    async def _start_error(self, reason: str) -> str:
        """The one-line start failure, with the last lines of the server's stderr once its pump has ended."""
        kind = "command" if isinstance(self.spec, StdioServerSpec) else "url"
        display = self.spec.display.replace("\r", "\\r").replace("\n", "\\n")  # the message is one line
        message = f"cannot start MCP server '{self.name}' ({kind}: {display}): {reason}"
        if self._stderr is not None:
            await asyncio.to_thread(self._stderr.wait, 2.0)
            if self._stderr.tail:
                message += " | stderr: " + " / ".join(self._stderr.tail)
        return message

    @contextlib.asynccontextmanager
    async def _open_client(self) -> AsyncIterator[Client]:
        spec = self.spec
        if isinstance(spec, StdioServerSpec):
            # The SDK alone passes only HOME, PATH and a few more; a server sees the user's
            # environment, minus asyncai's own secrets unless the server's config names them.
            env = server_environment(os.environ, spec.env, self.secrets)
            # A stray byte that is not UTF-8 must not wedge the connection (strict decoding does).
            command = launch_command(spec.command)
            params = StdioServerParameters(
                command=command, args=list(spec.args), env=env, encoding_error_handler="replace"
            )
            # A server started early is used only if it is what the SDK would start now.
            spawned_env = get_default_environment() | env
            early = self._early.take([command, *spec.args], spawned_env) if self._early else None
            self._stderr = early.stderr if early is not None else StderrPump(self.name)
            adopt = stdio_patch.adopting(early.process) if early is not None else contextlib.nullcontext()
            with adopt:
                transport = _closing_writer(stdio_client(params, errlog=self._stderr.writer), self._stderr)
                async with self._client_over(transport) as client:
                    yield client
        elif spec.transport == "sse":
            sign_in = self._sign_in_for(spec)
            transport = sse_client(
                spec.url,
                headers=spec.headers,
                timeout=30.0,
                sse_read_timeout=_SSE_READ_TIMEOUT,
                auth=sign_in.auth() if sign_in is not None else None,
            )
            async with self._client_over(transport) as client:
                yield client
        else:
            timeout = httpx2.Timeout(30.0, read=max(self.tool_timeout + 30.0, 300.0))
            sign_in = self._sign_in_for(spec)
            auth = sign_in.auth() if sign_in is not None else None
            async with httpx2.AsyncClient(
                headers=spec.headers,
                timeout=timeout,
                auth=auth,
                event_hooks={"response": [self._note_response]},
            ) as http:
                # The SDK caps one SSE event at 1 MiB; a tool's answer may be larger (the sandbox filters it).
                transport = streamable_http_client(spec.url, http_client=http, max_sse_event_size=None)
                async with self._client_over(transport) as client:
                    yield client

    async def _note_response(self, response: httpx2.Response) -> None:
        if response.status_code in (401, 403):
            self._refused_status = response.status_code

    def _refusal(self) -> str | None:
        """Why an HTTP server turned the connection away, when it did (401/403 without sign-in)."""
        if self.needs_sign_in and self._sign_in is not None:
            return self._sign_in.problem()
        if self._refused_status is None:
            return None
        if self._sign_in is None:  # the config sends its own Authorization header
            status = self._refused_status
            return f"the server refused the credentials in its config (HTTP {status}): check its headers"
        return f"the server refused access (HTTP {self._refused_status})"

    def _sign_in_for(self, spec: HttpServerSpec) -> SignIn | None:
        """OAuth for this server, unless its config already sends credentials of its own."""
        if any(key.lower() == "authorization" for key in spec.headers):
            return None
        self._sign_in = SignIn(self.name, spec.url, spec.oauth, self.sign_in_mode, self.state_home)
        return self._sign_in

    @property
    def needs_sign_in(self) -> bool:
        """It answered 401 and nobody could sign in here (``asyncai mcp login NAME`` can): no sign-in
        was attached, or the one attached needed a person."""
        sign_in = self._sign_in
        if sign_in is None:
            return False
        return sign_in.required or (self._refused_status == 401 and not sign_in.attached)

    @property
    def signed_in_now(self) -> bool:
        return self._sign_in is not None and self._sign_in.completed

    @property
    def signed_in_before(self) -> bool:
        return self._sign_in is not None and self._sign_in.signed_in_before

    def _client_over(self, transport: Transport) -> Client:
        """The SDK's client, negotiating the protocol era as ``mode="auto"`` does: ``server/discover``
        for 2026-07-28 servers, ``initialize`` for the 2025 era."""
        return Client(
            transport,
            mode="auto",
            client_info=CLIENT_INFO,
            message_handler=self._on_message,
            cache=None,  # tool lists are refetched on change notices; a cached page would hide them
            **self.requests.client_callbacks(self.name),
        )

    async def _serve(self) -> None:
        assert self._ready is not None
        try:
            async with self._open_client() as client:
                self.capabilities = client.server_capabilities
                self.protocol_version = client.protocol_version
                self._tools = await self._list_tools(client, self.name) if self._has_tools() else []
                await self._probe_resources(client)
                self._client = client
                self._ready.set_result(None)
                listening = self._start_listening(client)
                try:
                    await self._closing.wait()
                finally:
                    if listening is not None:
                        listening.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await listening
        except BaseException as exc:  # the task owns the transport: every failure ends here
            if not self._ready.done() and self._closing.is_set():
                self._ready.cancel()  # start() gave up waiting and reports the failure itself
            elif not self._ready.done():
                # A failed sign-in says why itself; else a 401/403 says more than the SDK's error.
                reason = sign_in_failure(_first_leaf(exc)) or self._refusal() or _describe(exc)
                self._ready.set_exception(ServerStartError(await self._start_error(reason)))
            elif not self._closing.is_set():
                self._mark_dead(_describe(exc))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self._client = None
            if self._stderr is not None:
                self._stderr.close_writer()
            if self._sign_in is not None:
                await self._sign_in.aclose()

    async def _on_message(self, message: IncomingMessage) -> None:
        """``tools/list_changed`` sent on its own (the 2025 era, or stdio): list the tools again, off
        the session's receive loop. One that came on a listen stream is ``_listen``'s."""
        if (
            isinstance(message, mt.ToolListChangedNotification)
            and self._client is not None
            and _SUBSCRIPTION_ID not in ((message.params.meta if message.params else None) or {})
        ):
            task = asyncio.get_running_loop().create_task(self._refresh_tools(self._client))
            self._refreshes.add(task)
            task.add_done_callback(self._refreshes.discard)

    def _start_listening(self, client: Client) -> asyncio.Task[None] | None:
        """Under 2026-07-28 change notices come on a ``subscriptions/listen`` stream, opened only
        when the server says its tool list can change."""
        tools = self.capabilities.tools if self.capabilities is not None else None
        if self.protocol_version not in MODERN_PROTOCOL_VERSIONS or tools is None or not tools.list_changed:
            return None
        return asyncio.get_running_loop().create_task(self._listen(client), name=f"mcp-{self.name}-listen")

    async def _listen(self, client: Client) -> None:
        lost = 0
        while lost < _LISTEN_ATTEMPTS:
            try:
                async with client.listen(tools_list_changed=True) as subscription:
                    # A change between the first listing and the acknowledgement has no event.
                    await self._refresh_tools(client)
                    async for _ in subscription:
                        lost = 0
                        await self._refresh_tools(client)
                return  # the server closed the stream gracefully: it will send no more notices
            except SubscriptionLost:
                if self._closing.is_set():
                    return
                lost += 1  # no replay: listen again (which lists again what changed meanwhile)
            except (ListenNotSupportedError, MCPError, TimeoutError) as exc:
                log_event("mcp.listen_failed", logging.WARNING, server=self.name, error=_describe(exc))
                return
        log_event("mcp.listen_failed", logging.WARNING, server=self.name, error="the stream kept dropping")

    async def _refresh_tools(self, client: Client) -> None:
        """List the tools again; listeners hear of it when the list changed. One at a time, so a
        notice and the listen stream's first listing never announce one change twice."""
        async with self._refreshing:
            await self._list_again(client)

    async def _list_again(self, client: Client) -> None:
        try:
            listed = await self._list_tools(client, self.name)
            if listed == self._tools:
                return
            self._tools = listed
        except Exception as exc:
            if not self._closing.is_set():  # a refresh cut short by closing is no news
                log_event("mcp.tools_refresh_failed", logging.WARNING, server=self.name, error=_describe(exc))
            return
        log_event("mcp.tools_changed", logging.INFO, server=self.name, tools=[t.name for t in self._tools])
        for listener in self._listeners:
            await listener()

    def _has_tools(self) -> bool:
        # A server that declares no capabilities at all gets asked anyway (lenient peers).
        capabilities = self.capabilities
        if capabilities is None or capabilities.tools is not None:
            return True
        return capabilities.resources is None and capabilities.prompts is None

    @staticmethod
    async def _list_tools(client: Client, server: str) -> list[ToolDefinition]:
        tools: list[ToolDefinition] = []
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools.extend(tool_definition(t, server) for t in page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    async def _probe_resources(self, client: Client) -> None:
        if self.capabilities is None or self.capabilities.resources is None:
            return
        try:
            async with asyncio.timeout(_RESOURCE_PROBE_TIMEOUT):
                listed = await _every_resource(client)
                templates = [] if listed else (await client.list_resource_templates()).resource_templates
        except Exception as exc:  # the server claims resources: let reads and listings report the failure
            log_event("mcp.resource_probe_failed", logging.INFO, server=self.name, error=_describe(exc))
            self.offers_resources = True
            return
        self.initial_resources = [_resource_entry(resource, self.name) for resource in listed]
        self.offers_resources = bool(listed or templates)

    def _mark_dead(self, reason: str) -> None:
        if self.dead_reason is None:
            self.dead_reason = reason
            log_event("mcp.server_died", logging.ERROR, server=self.name, reason=reason)

    def _not_running(self) -> str | None:
        if self._client is None or self.dead_reason is not None:
            return f"MCP server '{self.name}' is not running ({self.dead_reason})"
        return None

    async def roots_changed(self) -> None:
        client = self._client
        if client is None or self.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return
        try:
            with warnings.catch_warnings():  # deprecated in 2026-07-28, which this era predates
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                notice = client.session.send_roots_list_changed()
            await notice
        except Exception as exc:  # a notice that cannot be sent changes nothing else
            log_event("mcp.roots_notice_failed", logging.INFO, server=self.name, error=_describe(exc))

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolCallOutput:
        limit = self.tool_timeout
        client = self._client
        if client is None or self.dead_reason is not None:
            return ToolCallOutput.error(f"tool error: {self._not_running()}")
        try:
            result = await _cancelled_once(client.call_tool(name, arguments, read_timeout_seconds=limit))
        except MCPError as exc:
            if exc.code == mt.REQUEST_TIMEOUT:
                return ToolCallOutput.error(f"tool {name} timed out after {seconds(limit)}")
            # -32000 is also the spec's generic server error: only the SDK's own "Connection
            # closed" means the server is gone.
            if exc.code == mt.CONNECTION_CLOSED and exc.message == _CONNECTION_CLOSED_MESSAGE:
                self._mark_dead(exc.message)
            return ToolCallOutput.error(f"tool error: {name} on server '{self.name}': {exc.message}")
        except Exception as exc:  # transport or output-schema validation failures
            return ToolCallOutput.error(f"tool error: {name} on server '{self.name}': {_describe(exc)}")
        return call_output(result)

    async def _request(self, what: str, request: Callable[[Client], Coroutine[Any, Any, _T]]) -> _T:
        """Run ``request(client)`` within the tool timeout; every failure is a one-line ResourceError."""
        client = self._client
        if client is None or self.dead_reason is not None:
            raise ResourceError(f"cannot {what}: {self._not_running()}")
        try:
            async with asyncio.timeout(self.tool_timeout):
                return await _cancelled_once(request(client))
        except TimeoutError:
            raise ResourceError(
                f"cannot {what}: server '{self.name}' gave no answer within {seconds(self.tool_timeout)}"
            ) from None
        except MCPError as exc:
            # -32000 is also the spec's generic server error: only the SDK's own "Connection
            # closed" means the server is gone.
            if exc.code == mt.CONNECTION_CLOSED and exc.message == _CONNECTION_CLOSED_MESSAGE:
                self._mark_dead(exc.message)
            raise ResourceError(f"cannot {what}: server '{self.name}': {_first_line(exc.message)}") from None
        except Exception as exc:  # transport failures and malformed answers
            raise ResourceError(f"cannot {what}: server '{self.name}': {_describe(exc)}") from None

    async def list_resources(self, server: str | None = None) -> list[dict[str, Any]]:
        """Every resource of this server (all pages of ``resources/list``) as documented dicts."""
        listed = await self._request("list resources", _every_resource)
        return [_resource_entry(resource, self.name) for resource in listed]

    async def read_resource(self, uri: str) -> list[dict[str, Any]]:
        async def read(client: Client) -> mt.ReadResourceResult:
            return await client.read_resource(uri)

        result = await self._request(f"read {uri}", read)
        contents = [_resource_contents(part) for part in result.contents]
        log_event(
            "mcp.resource_read",
            logging.INFO,
            server=self.name,
            uri=uri,
            parts=len(contents),
            chars=sum(len(part.get("text") or part.get("data") or "") for part in contents),
        )
        return contents

    async def count_prompts(self) -> int:
        async def every_page(client: Client) -> int:
            total = 0
            cursor: str | None = None
            while True:
                page = await client.list_prompts(cursor=cursor)
                total += len(page.prompts)
                cursor = page.next_cursor
                if not cursor:
                    return total

        return await self._request("list prompts", every_page)

    async def close(self) -> None:
        self._closing.set()
        if self._task is not None:
            if self._ready is not None and not self._ready.done():
                self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task


async def _every_resource(client: Client) -> list[mt.Resource]:
    found: list[mt.Resource] = []
    cursor: str | None = None
    while True:
        page = await client.list_resources(cursor=cursor)
        found.extend(page.resources)
        cursor = page.next_cursor
        if not cursor:
            return found


@contextlib.asynccontextmanager
async def _closing_writer(transport: Transport, pump: StderrPump) -> AsyncIterator[Any]:
    """The stdio transport, closing the parent's copy of the child's stderr pipe once it has spawned
    (so the pump sees end of file when the server exits)."""
    async with transport as streams:
        pump.close_writer()
        yield streams


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else "(no message)"


def _resource_entry(resource: mt.Resource, server: str) -> dict[str, Any]:
    """``{"uri", "name", "server"}`` plus ``title``, ``description``, ``mime_type``, ``size`` when given."""
    entry: dict[str, Any] = {"uri": str(resource.uri), "name": resource.name, "server": server}
    optional = {
        "title": resource.title,
        "description": resource.description,
        "mime_type": resource.mime_type,
        "size": resource.size,
    }
    entry.update({key: value for key, value in optional.items() if value is not None})
    return entry


def _resource_contents(part: mt.TextResourceContents | mt.BlobResourceContents) -> dict[str, Any]:
    """``{"uri", "mime_type", "text"}`` or ``{"uri", "mime_type", "data"}`` (base64, as sent)."""
    if isinstance(part, mt.TextResourceContents):
        return {"uri": str(part.uri), "mime_type": part.mime_type, "text": part.text}
    return {"uri": str(part.uri), "mime_type": part.mime_type, "data": part.blob}


@dataclass(frozen=True)
class ServerSummary:
    """What one configured server offers (``asyncai tools``); counts are ``None`` when not offered."""

    name: str
    tools: int = 0
    resources: int | None = None
    prompts: int | None = None
    error: str | None = None
    """Why the server did not start, or why a listing failed."""
    started: bool = True
    needs_sign_in: bool = False


def _check_servers(
    tool_timeout: object,
    connect_timeout: object,
    secrets: object,
    sign_in: object,
    state_home: object,
    list_sign_in: object,
    requests: object,
) -> None:
    """``McpServers``' settings besides its specs: each of the kind it accepts, else a one-line error."""
    owner = "McpServers"
    check_number(tool_timeout, owner, "tool_timeout")
    check_number(connect_timeout, owner, "connect_timeout")
    # One string would be taken letter by letter: every letter a "secret" kept from the servers.
    if isinstance(secrets, str | bytes) or not isinstance(secrets, Iterable):
        raise TypeError(refusal(owner, "secrets", "a list of strings", secrets))
    check_choice(sign_in, SIGN_IN_MODES, owner, "sign_in")
    check_instance(state_home, Path | None, owner, "state_home", "a pathlib.Path or None")
    check_flag(list_sign_in, owner, "list_sign_in")
    check_instance(requests, ServerRequests | None, owner, "requests", "an asyncai.ServerRequests or None")


class McpServers(RoutedTools):
    """MCP servers as one tool source: each started, then routed (``RoutedTools``: the first server
    to declare a tool name wins it).

    Use as ``async with McpServers(specs) as executor: ...``. ``secrets`` are values no stdio
    server may inherit (the model API key); a server's config ``env`` can still pass them on.
    ``early`` holds stdio servers spawned before the SDK was imported (``early_start``).
    """

    def __init__(
        self,
        specs: Iterable[ServerSpec],
        tool_timeout: float = DEFAULT_TOOL_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        secrets: Iterable[str | None] = (),
        early: EarlyServers | None = None,
        sign_in: SignInMode = "never",
        state_home: Path | None = None,
        list_sign_in: bool = False,
        requests: ServerRequests | None = None,
    ) -> None:
        specs = server_specs(specs, "McpServers", "specs")
        _check_servers(tool_timeout, connect_timeout, secrets, sign_in, state_home, list_sign_in, requests)
        super().__init__()
        self.requests = requests or ServerRequests()
        """How elicitation, sampling and roots requests from the servers are answered."""
        self.list_sign_in = list_sign_in
        """Servers needing sign-in are listed, not a failure, even when no other server starts."""
        kept = tuple(secret for secret in secrets if secret)
        self._configured = [
            McpConnection(spec, tool_timeout, kept, early, sign_in, state_home, self.requests)
            for spec in unique_names(list(specs))
        ]
        self.connections: list[McpConnection] = []
        """The servers that started (after ``connect``), in configuration order."""
        self.failed: dict[str, str] = {}
        """Server name -> the one-line reason it did not start."""
        self.connect_timeout = connect_timeout
        self._offers_roots = bool(self.requests.roots)
        """Whether the servers are told of a roots capability (only when roots were given)."""

    async def __aenter__(self) -> McpServers:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def connect(self) -> None:
        """Start every server concurrently. A server that fails is a warning naming it while another
        one started; ``ServerStartError`` only when servers were configured and none started."""
        # One span for the start-up: the SDK's spans of every server's first requests (and of the
        # connection's own later ones) nest under it instead of each being a trace of its own.
        with DEFAULT_TRACING.tracer.start_as_current_span(
            "start MCP servers", attributes={"asyncai.servers": [c.name for c in self._configured]}
        ):
            results = await asyncio.gather(
                *(c.start(self.connect_timeout) for c in self._configured), return_exceptions=True
            )
        started: list[McpConnection] = []
        for connection, result in zip(self._configured, results, strict=True):
            if isinstance(result, BaseException):
                message = str(result) if isinstance(result, ServerStartError) else _describe(result)
                self.failed[connection.name] = message
            else:
                started.append(connection)
        self.connections = started
        waiting = self.list_sign_in and all(
            c.needs_sign_in for c in self._configured if c.name in self.failed
        )
        if self.failed and not started and not waiting:
            await self.aclose()
            first = next(iter(self.failed.values()))
            if len(self.failed) == 1:
                raise ServerStartError(first)
            self._warn_failures()
            raise ServerStartError(
                f"no MCP server could start ({count(len(self.failed))} failed, "
                f"see the warnings); the first: {first}"
            )
        self._warn_failures()
        self.route(started)
        for connection in started:
            self.learn_owners(connection, connection.initial_resources)

    def _warn_failures(self) -> None:
        for name, message in self.failed.items():
            log_event("mcp.server_start_failed", logging.WARNING, server=name, error=message)

    async def set_roots(self, directories: Iterable[str | Path]) -> None:
        """Offer other directories as roots; servers of the 2025 era are told the list changed (those
        of 2026-07-28 ask for it with each request that needs it)."""
        if not self._offers_roots:  # the capability is declared at start: no server would ever ask
            raise RuntimeError(
                "McpServers: no roots were offered when the servers started, so they keep the "
                "directories of their own command lines; pass ServerRequests(roots=[...]) to offer "
                "roots and change them later"
            )
        self.requests.roots = tuple(Path(d) for d in directories)
        for connection in self.connections:
            await connection.roots_changed()

    def server_names(self) -> set[str]:
        return {connection.name for connection in self.connections}

    def server(self, name: str) -> McpConnection:
        """The started server called ``name`` (``KeyError`` when none is)."""
        by_name = {c.name: c for c in self.connections}
        return by_name[name]

    async def summaries(self) -> list[ServerSummary]:
        """Per configured server: tools, resources and prompts, or why it is missing."""

        async def summary(connection: McpConnection) -> ServerSummary:
            if connection.name in self.failed:
                return ServerSummary(
                    connection.name,
                    error=self.failed[connection.name],
                    started=False,
                    needs_sign_in=connection.needs_sign_in,
                )
            resources: int | None = None
            prompts: int | None = None
            errors: list[str] = []
            if connection.has_resources:
                try:
                    resources = len(await self._list_from(connection))
                except ResourceError as exc:
                    errors.append(str(exc))
            if connection.has_prompts:
                try:
                    prompts = await connection.count_prompts()
                except ResourceError as exc:
                    errors.append(str(exc))
            return ServerSummary(
                connection.name, len(connection.tools()), resources, prompts, "; ".join(errors) or None
            )

        return list(await asyncio.gather(*(summary(c) for c in self._configured)))

    async def aclose(self) -> None:
        await asyncio.gather(*(c.close() for c in self._configured))
