"""The client the MCP conformance suite tests: ``python -m tests.conformance.client_driver URL``.

``conformance client --command CMD --scenario NAME`` starts the scenario's test server and runs
``CMD URL`` with ``MCP_CONFORMANCE_SCENARIO`` set to NAME (``MCP_CONFORMANCE_PROTOCOL_VERSION`` to
the spec version it tests, and for some scenarios ``MCP_CONFORMANCE_CONTEXT`` to a JSON object of
test data such as pre-registered client credentials). This program then does what a user would do
with asyncai against that server, through the ``asyncai`` command line only: ``asyncai tools``
to connect and list, ``asyncai run-code`` with the snippet a model would write to call the
scenario's tools (a tool is a Python function of its name), and for a server behind OAuth an
``.mcp.json``-style ``--mcp-config`` file with an ``"oauth"`` entry, sign-in happening in the
"browser" ``BROWSER`` names (``browser.py``, which follows the redirects back to asyncai's loopback
callback as a person's browser would).

asyncai picks its protocol version itself (``server/discover`` for a 2026-07-28 server, else the
``initialize`` handshake), as it does for a user, so ``MCP_CONFORMANCE_PROTOCOL_VERSION`` is not
passed on. Each run gets its own state directory (``XDG_STATE_HOME``: tokens, registrations) and an
empty settings file, so nothing of the person running the tests is used or changed.

The exit status is asyncai's last nonzero one (the suite counts a failing client as a failed
scenario, except in scenarios where refusing is the right answer).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

ASYNCAI = Path(sys.executable).with_name("asyncai")
BROWSER = Path(__file__).with_name("browser.py")
CIMD_URL = "https://conformance-test.local/client-metadata.json"
"""The client metadata document URL the suite's authorization servers accept as a client_id
(they never fetch it); the suite's own reference clients use the same one."""
SERVER = "conformance"
"""The name the server gets in the config file; with one server, tool names are not prefixed."""
RUN_TIMEOUT = 25.0
"""The suite gives the whole client 30 s; asyncai is stopped before so that what it printed is kept."""


@dataclass
class Run:
    """One scenario run: the server URL, the suite's context, a private directory."""

    url: str
    scenario: str
    context: dict[str, Any]
    home: Path
    status: int = 0
    env: dict[str, str] = field(default_factory=dict)

    def config(self, **oauth: str) -> str:
        """Write the ``.mcp.json`` a user would write for this server (with ``oauth`` settings when
        given) and return its path."""
        entry: dict[str, Any] = {"type": "http", "url": self.url}
        if oauth:
            entry["oauth"] = oauth
        path = self.home / ".mcp.json"
        path.write_text(json.dumps({"mcpServers": {SERVER: entry}}, indent=2) + "\n")
        return str(path)

    def asyncai(self, *args: str) -> int:
        """Run ``asyncai ARGS`` in this run's directory; its output goes to ours (the suite saves
        it). Returns its exit status and remembers the last nonzero one."""
        command = [str(ASYNCAI), *args]
        print(f"driver: $ {shlex.join(command)}", file=sys.stderr, flush=True)
        process = subprocess.Popen(command, cwd=self.home, env=self.env, stdin=subprocess.DEVNULL)
        _children.append(process)
        try:
            status = process.wait(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            print(f"driver: asyncai did not finish in {RUN_TIMEOUT:.0f} s", file=sys.stderr, flush=True)
            status = 124
        finally:
            _children.remove(process)
        print(f"driver: exit status {status}", file=sys.stderr, flush=True)
        if status:
            self.status = status
        return status

    def run_code(self, *snippets: str, config: str | None = None, options: tuple[str, ...] = ()) -> int:
        """``asyncai run-code`` with ``snippets`` in one REPL (a failing one does not stop the rest)."""
        servers = ["--mcp-config", config] if config else ["--mcp-http", self.url]
        code = [arg for snippet in snippets for arg in ("-c", snippet)]
        return self.asyncai("run-code", *self.settings(), *options, *servers, *code)

    def tools(self, config: str | None = None) -> int:
        servers = ["--mcp-config", config] if config else ["--mcp-http", self.url]
        return self.asyncai("tools", *self.settings(), *servers)

    def settings(self) -> list[str]:
        path = self.home / "config.toml"
        path.touch()
        return ["--config", str(path)]


_children: list[subprocess.Popen[bytes]] = []


def _stop_children(signum: int, frame: FrameType | None) -> None:
    """The suite stops a client that overruns with SIGTERM: stop asyncai with it."""
    for child in _children:
        child.kill()
    sys.exit(128 + signum)


# ---------------------------------------------------------------------------------------------
# Scenarios: what the user does


def _call(tool: str, arguments: Mapping[str, Any]) -> str:
    """``await tool(a=1, b='x')``: a tool call as a model writes it (``tool`` already a Python name;
    the arguments JSON values, whose ``repr`` is the Python literal: ``null`` is ``None``)."""
    keywords = ", ".join(f"{name}={value!r}" for name, value in arguments.items())
    return f"await {tool}({keywords})"


def connect_and_list(run: Run) -> None:
    """Connect (handshake or ``server/discover``) and list the tools: ``asyncai tools``."""
    run.tools()


def tools_call(run: Run) -> None:
    run.run_code("await add_numbers(a=5, b=3)")


def sse_retry(run: Run) -> None:
    """The server closes the call's SSE stream early and answers on the resumed GET stream."""
    run.run_code("await test_reconnection()")


UNATTENDED = ("--elicitation", "accept-defaults")
"""A run nobody watches that lets servers' questions be answered with their defaults."""


def elicitation_defaults(run: Run) -> None:
    """The tool asks the user a form question (elicitation) whose fields all have defaults; nobody is
    there to answer, so the user lets asyncai accept with the defaults (SEP-1034)."""
    run.run_code("await test_client_elicitation_defaults()", options=UNATTENDED)


def request_state(run: Run) -> None:
    """SEP-2322: two tools answer ``input_required`` (an elicitation) and are retried with the
    answers; another is called meanwhile (it must not carry their state); one answers without
    ``resultType`` (complete, not to be retried)."""
    run.run_code(
        "await asyncio.gather(test_mrtr_echo_state(), test_mrtr_unrelated())",
        "await test_mrtr_no_state()",
        "await test_mrtr_no_result_type()",
        options=UNATTENDED,
    )


def standard_headers(run: Run) -> None:
    """SEP-2243 ``Mcp-Method`` / ``Mcp-Name`` on every request asyncai makes: tools and resources
    (asyncai offers no prompts, so the suite skips those checks)."""
    run.run_code(
        "await test_headers()",
        "await my_hyphenated_tool()",
        "for r in await list_resources():\n    await read_resource(uri=r['uri'])",
    )


def custom_headers(run: Run) -> None:
    """SEP-2243 ``x-mcp-header``: call the annotated tools with the arguments the suite chose (its
    context), each in its own snippet; asyncai mirrors them into ``Mcp-Param-*`` headers."""
    calls = run.context.get("toolCalls") or []
    run.run_code(*(_call(call["name"], call.get("arguments") or {}) for call in calls))


INVALID_HEADER_TOOLS: dict[str, dict[str, Any]] = {
    "invalid_empty_header": {"value": "x"},
    "invalid_object_header": {"data": {"a": 1}},
    "invalid_array_header": {"items": ["a"]},
    "invalid_null_header": {"nil": None},
    "invalid_duplicate_same_case": {"field1": "a", "field2": "b"},
    "invalid_duplicate_diff_case": {"field1": "a", "field2": "b"},
    "invalid_space_in_name": {"value": "x"},
    "invalid_colon_in_name": {"value": "x"},
    "invalid_non_ascii_name": {"value": "x"},
    "invalid_control_char_name": {"value": "x"},
}


def invalid_tool_headers(run: Run) -> None:
    """SEP-2243: a tool whose ``x-mcp-header`` is malformed must not be offered, the valid one must.
    The snippets try every tool the server lists; asyncai must refuse the malformed ones (so this
    run ends with a failed snippet, which the scenario allows)."""
    run.run_code(
        "await valid_tool(region='us-west1')",
        *(_call(name, arguments) for name, arguments in INVALID_HEADER_TOOLS.items()),
    )


def json_schema_ref(run: Run) -> None:
    """SEP-2106: a tool's inputSchema has a ``$ref`` to a network URI that asyncai must not fetch;
    the test server answers nothing but ``tools/list``."""
    run.tools()


def schema_preservation(run: Run) -> None:
    """SEP-1613/SEP-2106: the inputSchema asyncai keeps for a tool must keep every JSON Schema 2020-12
    keyword. A model sees Python stubs, not schemas; where asyncai hands a tool's inputSchema on is
    ``asyncai serve-mcp --expose-direct``, which offers the wrapped tools to another MCP client. This
    driver is that client (plain JSON-RPC over stdio): it lists the tools through asyncai and calls
    the echo tool, through asyncai, with the schema asyncai gave it."""
    focal, echo = "json_schema_2020_12_tool", "json_schema_echo"
    with McpOverStdio(run, "serve-mcp", *run.settings(), "--expose-direct", "--mcp-http", run.url) as mcp:
        mcp.request(
            "initialize",
            protocolVersion="2025-11-25",
            capabilities={},
            clientInfo={"name": "conformance-driver", "version": "1"},
        )
        mcp.notify("notifications/initialized")
        tools = {tool["name"]: tool for tool in mcp.request("tools/list").get("tools", [])}
        if focal not in tools:
            print(f"driver: asyncai does not offer {focal}: {sorted(tools)}", file=sys.stderr)
            run.status = 1
            return
        result = mcp.request("tools/call", name=echo, arguments={"schema": tools[focal]["inputSchema"]})
        if result.get("isError"):
            print(f"driver: {echo} failed: {result}", file=sys.stderr)
            run.status = 1


class McpOverStdio:
    """``asyncai ARGS`` as a stdio MCP server, and this program as its MCP client (newline-delimited
    JSON-RPC, as an MCP host speaks it)."""

    def __init__(self, run: Run, *args: str) -> None:
        self.run = run
        self.args = args
        self.next_id = 0
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> McpOverStdio:
        command = [str(ASYNCAI), *self.args]
        print(f"driver: $ {shlex.join(command)}", file=sys.stderr, flush=True)
        self.process = subprocess.Popen(
            command, cwd=self.run.home, env=self.run.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        _children.append(self.process)
        self.deadline = time.monotonic() + RUN_TIMEOUT
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.process is not None
        with contextlib.suppress(OSError):
            self.process.stdin.close()  # type: ignore[union-attr]  # the client hangs up: serve-mcp ends
        try:
            status = self.process.wait(timeout=max(1.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.process.kill()
            status = self.process.wait()
        _children.remove(self.process)
        print(f"driver: exit status {status}", file=sys.stderr, flush=True)
        if status and not self.run.status:
            self.run.status = status

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def notify(self, method: str, **params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, **({"params": params} if params else {})})

    def request(self, method: str, **params: Any) -> dict[str, Any]:
        """Send a request and wait for its response (answering nothing asyncai asks meanwhile)."""
        assert self.process is not None and self.process.stdout is not None
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            remaining = self.deadline - time.monotonic()
            ready, _, _ = select.select([self.process.stdout], [], [], max(0.0, remaining))
            if not ready:
                raise SystemExit(f"driver: no answer to {method} from asyncai in time")
            line = self.process.stdout.readline()
            if not line:
                raise SystemExit(f"driver: asyncai closed stdout before answering {method}")
            message = json.loads(line)
            if message.get("id") == self.next_id and "method" not in message:
                if "error" in message:
                    raise SystemExit(f"driver: {method} failed: {message['error']}")
                result: dict[str, Any] = message.get("result") or {}
                return result


# -- Skills (SEP-2640) ----------------------------------------------------------------------------

SKILL_NAME = "pdf-processing"
"""The one skill every skills scenario's server lists."""


def list_skills(run: Run) -> None:
    """The user lists the server's skills; no skill is loaded, so none of its files may be read."""
    run.asyncai("skills", *run.settings(), "--mcp-http", run.url)


def load_a_tampered_skill(run: Run) -> None:
    """The server's SKILL.md fails verification (its digest, its size, or its frontmatter against
    the listed one). The user shows the skill, which asyncai refuses; then a snippet reads its
    instructions and, as a model goes on after an error, its reference file: refused as well, since
    a skill whose SKILL.md failed is never loaded (the scenario fails a client that reads it)."""
    run.asyncai("skills", *run.settings(), "show", SKILL_NAME, "--mcp-http", run.url)
    run.run_code(
        f"await skill(name={SKILL_NAME!r})",
        f"await skill_file(name={SKILL_NAME!r}, path='references/FORMS.md')",
    )


# -- OAuth ----------------------------------------------------------------------------------------


def sign_in(run: Run) -> None:
    """The authorization code flow: the user's config names the server and, for an authorization
    server that accepts client metadata documents, the client's metadata URL; asyncai discovers
    the rest (or registers dynamically), opens the browser, and calls the tool once signed in."""
    oauth = {"clientMetadataUrl": CIMD_URL}
    if run.context.get("client_id"):  # pre-registered (auth/pre-registration)
        oauth["clientId"] = run.context["client_id"]
        if run.context.get("client_secret"):
            oauth["clientSecret"] = run.context["client_secret"]
    run.run_code("await test_tool()", config=run.config(**oauth))


def client_credentials(run: Run) -> None:
    """The OAuth client credentials grant, for a program that acts as itself (no browser)."""
    config = run.config(
        clientId=run.context["client_id"],
        clientSecret=run.context["client_secret"],
        grantType="client_credentials",
    )
    run.run_code("await test_tool()", config=config)


HANDLERS: dict[str, Callable[[Run], None]] = {
    "initialize": connect_and_list,
    "tools_call": tools_call,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "sse-retry": sse_retry,
    "request-metadata": connect_and_list,
    "sep-2322-client-request-state": request_state,
    "http-standard-headers": standard_headers,
    "http-custom-headers": custom_headers,
    "http-invalid-tool-headers": invalid_tool_headers,
    "json-schema-ref-no-deref": json_schema_ref,
    "json-schema-2020-12-preservation": schema_preservation,
    "auth/client-credentials-basic": client_credentials,
    "sep-2640-client-no-prefetch": list_skills,
    "sep-2640-client-verify-digest": load_a_tampered_skill,
    "sep-2640-client-verify-size": load_a_tampered_skill,
    "sep-2640-client-verify-frontmatter": load_a_tampered_skill,
}
"""Scenario -> what the user does. Every other ``auth/`` scenario signs in with a browser."""


def handler_for(scenario: str) -> Callable[[Run], None] | None:
    if scenario in HANDLERS:
        return HANDLERS[scenario]
    return sign_in if scenario.startswith("auth/") else None


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.conformance.client_driver SERVER_URL", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    handler = handler_for(scenario)
    if handler is None:
        print(f"driver: no user action for scenario {scenario!r}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _stop_children)
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    with tempfile.TemporaryDirectory(prefix="asyncai-conformance-") as home:
        run = Run(url=argv[0], scenario=scenario, context=context, home=Path(home))
        (run.home / "state").mkdir()
        env = {key: value for key, value in os.environ.items() if not key.startswith("MCP_CONFORMANCE_")}
        # Its own state (tokens) and data (saved skills) directories: nothing of the person's is used.
        env.update(
            XDG_STATE_HOME=str(run.home / "state"), XDG_DATA_HOME=str(run.home / "data"), BROWSER=str(BROWSER)
        )
        run.env = env
        handler(run)
        return run.status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
