"""A stdio MCP server that misbehaves on purpose: ``python rogue_mcp_server.py``.

It speaks just enough JSON-RPC (newline-delimited, stdlib only, so it starts in a few
milliseconds) to pass ``initialize`` and ``tools/list``; each tool then answers ``tools/call`` in
its own broken way:

``ok``             a well-formed text result ``"fine"`` (the control)
``hang``           never answers
``bad_utf8``       writes bytes that are not UTF-8 on stdout, then the real answer
``not_jsonrpc``    writes lines that are not JSON-RPC (text, JSON of other shapes), then the answer
``truncated``      a JSON-RPC answer cut off mid-object (looks like JSON, is not), and nothing else
``single_quoted``  a Python-repr "JSON" answer (single quotes, True/None), and nothing else
``nan``            an answer whose structured content holds ``NaN`` (not JSON)
``wrong_id``       the answer with an id nobody asked for
``result_not_object``  ``"result": "a string"``
``bad_schema``     structured content that contradicts the declared output schema
``no_structured``  declares an output schema, sends no structured content
``huge``           a text result of ``size`` characters (default 50 MB)
``huge_structured``  about ``size`` bytes (default 50 MB) of structured content: 500,000 records
``huge_error``     a JSON-RPC error whose message is 5 MB
``server_error``   a JSON-RPC error with code -32000 (the spec's generic "server error")
``surrogate``      text and structured content holding a lone surrogate (valid JSON: ``"\\ud800"``)
``crash``          exits the process mid-call
``stderr_flood``   writes 5 MB to stderr, then answers
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

OUT = sys.stdout.buffer

STRICT_SCHEMA = {
    "type": "object",
    "properties": {"count": {"type": "integer"}},
    "required": ["count"],
    "additionalProperties": False,
}


def _tool(name: str, schema: dict[str, Any] | None = None, **properties: Any) -> dict[str, Any]:
    tool: dict[str, Any] = {
        "name": name,
        "description": f"rogue tool {name}",
        "inputSchema": {"type": "object", "properties": properties},
        "annotations": {"readOnlyHint": True},
    }
    if schema is not None:
        tool["outputSchema"] = schema
    return tool


TOOLS = [
    _tool("ok"),
    _tool("hang"),
    _tool("bad_utf8"),
    _tool("not_jsonrpc"),
    _tool("truncated"),
    _tool("single_quoted"),
    _tool("nan", schema={"type": "object"}),
    _tool("wrong_id"),
    _tool("result_not_object"),
    _tool("bad_schema", schema=STRICT_SCHEMA),
    _tool("no_structured", schema=STRICT_SCHEMA),
    _tool("huge", size={"type": "integer"}),
    _tool("huge_structured", schema={"type": "object"}, size={"type": "integer"}),
    _tool("huge_error"),
    _tool("server_error"),
    _tool("surrogate", schema={"type": "object"}),
    _tool("crash"),
    _tool("stderr_flood"),
]


def send_raw(data: bytes) -> None:
    OUT.write(data)
    OUT.flush()


def send(message: dict[str, Any]) -> None:
    send_raw(json.dumps(message).encode() + b"\n")


def text_result(request_id: Any, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}}


def call(request_id: Any, name: str, arguments: dict[str, Any]) -> None:
    answer = text_result(request_id, "fine")
    if name == "ok":
        send(answer)
    elif name == "hang":
        return
    elif name == "bad_utf8":
        send_raw(b"\xff\xfe\xc3\x28 not utf-8 \x80\x81\n")
        send(answer)
    elif name == "not_jsonrpc":
        send_raw(b"hello, I am a log line on stdout\n")
        send_raw(b'{"some": "json", "but": "not json-rpc"}\n')
        send_raw(b"[1, 2, 3]\n")
        send_raw(b'{"jsonrpc": "2.0", "method": 42}\n')
        send(answer)
    elif name == "truncated":
        send_raw(json.dumps(answer).encode()[:-7] + b"\n")
    elif name == "single_quoted":
        send_raw(repr({**answer, "extra": [True, None]}).encode() + b"\n")
    elif name == "nan":
        send_raw(
            b'{"jsonrpc": "2.0", "id": %s, "result": {"content": [], "structuredContent": {"x": NaN}}}\n'
            % json.dumps(request_id).encode()
        )
    elif name == "wrong_id":
        send(text_result(987654321, "not for you"))
    elif name == "result_not_object":
        send({"jsonrpc": "2.0", "id": request_id, "result": "a string"})
    elif name == "bad_schema":
        result = {"content": [{"type": "text", "text": "{}"}], "structuredContent": {"count": "many"}}
        send({"jsonrpc": "2.0", "id": request_id, "result": result})
    elif name == "no_structured":
        send(text_result(request_id, "no structure here"))
    elif name == "huge":
        send(text_result(request_id, "z" * int(arguments.get("size", 50_000_000))))
    elif name == "huge_structured":
        count = int(arguments.get("size", 50_000_000)) // 100
        records = [{"n": i, "pad": "x" * 80} for i in range(count)]
        result = {"content": [], "structuredContent": {"items": records}}
        send({"jsonrpc": "2.0", "id": request_id, "result": result})
    elif name == "huge_error":
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32603, "message": "E" * 5_000_000}})
    elif name == "server_error":
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32000, "message": "database busy"}})
    elif name == "surrogate":
        result = {
            "content": [{"type": "text", "text": "a\ud800b"}],
            "structuredContent": {"k\udfff": "v\ud800"},
        }
        send({"jsonrpc": "2.0", "id": request_id, "result": result})
    elif name == "crash":
        os._exit(7)
    elif name == "stderr_flood":
        sys.stderr.write(("noise " * 100 + "\n") * 8_000)
        sys.stderr.flush()
        send(answer)
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": f"no tool {name}"}})


def main() -> None:
    for raw in sys.stdin.buffer:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "rogue", "version": "0.0.1"},
            }
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            params = message.get("params") or {}
            call(request_id, params.get("name", ""), params.get("arguments") or {})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        elif request_id is not None:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "not supported"}})


if __name__ == "__main__":
    main()
