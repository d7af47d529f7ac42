"""A generated MCP server with thousands of tools, for catalog-scaling tests:
``python tests/fakes/big_server.py [--tools N]`` (default 3,000).

Tool names and descriptions look like a large cloud provider's API: for every product (KV
namespaces, D1 databases, R2 buckets, Workers scripts, DNS records, ...) the usual verbs (list,
get, create, update, delete) and a few specific ones, with parameters named like real ones. Every
call returns ``{"tool": name, "arguments": arguments}``, so a test can see what was called.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

PRODUCTS: list[tuple[str, str, str, list[str]]] = [
    # (name prefix, noun, what it is, specific verbs)
    ("kv_namespace", "KV namespace", "a Workers KV key-value store", ["rename"]),
    ("kv_key", "KV key", "a key in a Workers KV namespace", ["read_value", "write_value", "bulk_delete"]),
    ("d1_database", "D1 database", "a serverless SQLite database", ["query", "export", "import"]),
    ("r2_bucket", "R2 bucket", "an object storage bucket", ["set_cors", "set_lifecycle"]),
    ("r2_object", "R2 object", "an object stored in an R2 bucket", ["copy", "presign_url"]),
    (
        "worker_script",
        "Worker script",
        "JavaScript that runs on the edge",
        ["deploy", "rollback", "tail_logs"],
    ),
    ("worker_route", "Worker route", "a URL pattern that triggers a Worker", []),
    ("worker_cron", "Worker cron trigger", "a schedule that runs a Worker", []),
    (
        "dns_record",
        "DNS record",
        "an A, AAAA, CNAME, MX or TXT record of a zone",
        ["import_bind", "export_bind"],
    ),
    ("zone", "zone", "a domain managed by the account", ["purge_cache", "activation_check"]),
    ("page_rule", "page rule", "a rule that changes behaviour for matching URLs", []),
    ("firewall_rule", "firewall rule", "a rule that blocks or challenges requests", []),
    ("waf_package", "WAF package", "a managed web application firewall rule set", []),
    ("ssl_certificate", "SSL certificate", "a TLS certificate for a zone", ["renew"]),
    ("load_balancer", "load balancer", "a load balancer spreading traffic across pools", []),
    ("lb_pool", "load balancer pool", "a group of origin servers", ["health"]),
    ("lb_monitor", "load balancer monitor", "a health check for pools", ["preview"]),
    ("pages_project", "Pages project", "a static site deployed from a repository", ["purge_build_cache"]),
    ("pages_deployment", "Pages deployment", "one build of a Pages project", ["retry", "rollback"]),
    ("queue", "queue", "a message queue", ["send_message", "pull_messages", "ack_messages"]),
    ("queue_consumer", "queue consumer", "a Worker reading from a queue", []),
    ("stream_video", "Stream video", "a video uploaded to Stream", ["upload_from_url", "create_clip"]),
    ("stream_live_input", "live input", "a live video input", []),
    ("image", "image", "an image stored in Images", ["upload", "create_variant"]),
    ("access_application", "Access application", "an application protected by Zero Trust Access", []),
    ("access_policy", "Access policy", "a rule deciding who can reach an Access application", []),
    ("tunnel", "Cloudflare Tunnel", "an outbound-only connection from a private network", ["token"]),
    ("account_member", "account member", "a user with a role in the account", ["resend_invite"]),
    ("api_token", "API token", "a scoped token for the API", ["verify", "roll"]),
    ("audit_log", "audit log entry", "a record of a change made in the account", []),
    ("email_routing_rule", "email routing rule", "a rule forwarding email for a zone", []),
    ("rate_limit", "rate limit", "a threshold on requests per period", []),
    ("spectrum_app", "Spectrum application", "TCP/UDP proxying for an application", []),
    ("durable_object_namespace", "Durable Object namespace", "a class of strongly consistent objects", []),
    ("hyperdrive_config", "Hyperdrive configuration", "a connection pool in front of a database", []),
    ("vectorize_index", "Vectorize index", "a vector database index", ["query", "insert_vectors"]),
    ("ai_gateway", "AI Gateway", "a proxy in front of AI model providers", ["logs"]),
    ("turnstile_widget", "Turnstile widget", "a CAPTCHA alternative on a site", ["rotate_secret"]),
    ("logpush_job", "Logpush job", "a job pushing logs to a destination", []),
    ("healthcheck", "health check", "a standalone origin health check", []),
]
VERBS = {
    "list": "List every {noun} ({what}) in the account, page by page.",
    "get": "Get one {noun} ({what}) by its id.",
    "create": "Create a {noun} ({what}).",
    "update": "Update the settings of a {noun} ({what}).",
    "delete": "Delete a {noun} ({what}). This cannot be undone.",
}
REGIONS = ["", "_eu", "_us", "_apac", "_fedramp", "_china"]


def _schema(prefix: str, verb: str) -> dict[str, Any]:
    properties: dict[str, Any] = {"account_id": {"type": "string", "description": "the account"}}
    required = ["account_id"]
    if verb not in ("list", "create"):
        properties[f"{prefix}_id"] = {"type": "string", "description": f"which {prefix.replace('_', ' ')}"}
        required.append(f"{prefix}_id")
    if verb in ("create", "update"):
        properties["settings"] = {"type": "object", "description": "the settings to apply"}
    if verb == "list":
        properties["page"] = {"type": "integer", "description": "page number, from 1"}
    return {"type": "object", "properties": properties, "required": required}


def generate(count: int = 3000) -> list[types.Tool]:
    tools: list[types.Tool] = []
    for region in REGIONS:
        where = f" in the {region.strip('_').upper()} jurisdiction" if region else ""
        for prefix, noun, what, specific in PRODUCTS:
            verbs = {
                **VERBS,
                **{v: f"{v.replace('_', ' ').capitalize()} for a {{noun}} ({{what}})." for v in specific},
            }
            for verb, template in verbs.items():
                name = f"{prefix}_{verb}{region}"
                description = template.format(noun=noun, what=what).rstrip(".") + where + "."
                read_only = verb in (
                    "list",
                    "get",
                    "export",
                    "logs",
                    "preview",
                    "health",
                    "verify",
                    "tail_logs",
                )
                tools.append(
                    types.Tool(
                        name=name,
                        description=description,
                        input_schema=_schema(prefix, verb),
                        annotations=types.ToolAnnotations(
                            read_only_hint=read_only, destructive_hint=verb == "delete"
                        ),
                    )
                )
    filler = 0
    while len(tools) < count:  # pad with numbered report tools to the exact count
        filler += 1
        tools.append(
            types.Tool(
                name=f"analytics_report_{filler:04d}",
                description=f"Analytics report number {filler}: request counts for a custom dashboard.",
                input_schema={"type": "object", "properties": {"account_id": {"type": "string"}}},
                annotations=types.ToolAnnotations(read_only_hint=True),
            )
        )
    return tools[:count]


def build(count: int) -> Server[Any]:
    tools = generate(count)
    names = {tool.name for tool in tools}

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in names:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text="unknown tool")], is_error=True
            )
        value = {"tool": params.name, "arguments": params.arguments or {}}
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(value))])

    return Server("big-cloud", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=3000)
    count = parser.parse_args().tools
    server = build(count)

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
