"""``--mutations ask`` in serve-mcp: the MCP client's user decides, through elicitation."""

from __future__ import annotations

import asyncio
from typing import Any

import mcp.types as mt
from mcp.server.session import ServerSession

from asyncai.approvals.gate import Approval, ApprovalRequest
from asyncai.humanize import seconds

APPROVAL_TIMEOUT = 600.0
NEEDS_APPROVAL = "mutating calls need approval (--mutations ask)"
ALLOW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"allow": {"type": "boolean", "title": "Allow this call", "default": True}},
    "required": ["allow"],
}


class ElicitationApprover:
    """Asks the client of one request; a client without elicitation, or a connection that cannot
    carry a server request (the stateless 2026-07-28 protocol), gets a refusal saying so."""

    def __init__(
        self, session: ServerSession, request_id: mt.RequestId | None, timeout: float = APPROVAL_TIMEOUT
    ):
        self.session = session
        self.request_id = request_id
        self.timeout = timeout

    async def approve(self, request: ApprovalRequest) -> Approval:
        capabilities = self.session.client_capabilities
        if capabilities is None or capabilities.elicitation is None:
            return Approval(
                False, f"{NEEDS_APPROVAL} and this MCP client cannot ask its user (no elicitation support)"
            )
        if not self.session.can_send_request:
            return Approval(
                False, f"{NEEDS_APPROVAL} and this connection cannot carry the question (stateless protocol)"
            )
        message = f"asyncai: a run_code snippet wants to call {request.call_text()}. Allow it?"
        try:
            answer = await asyncio.wait_for(
                self.session.elicit_form(message, ALLOW_SCHEMA, related_request_id=self.request_id),
                self.timeout,
            )
        except TimeoutError:
            return Approval(False, f"no answer from the user within {seconds(self.timeout)}")
        if answer.action != "accept":
            return Approval(False, f"the user {'declined' if answer.action == 'decline' else 'cancelled'} it")
        if (answer.content or {}).get("allow") is False:
            return Approval(False, "the user did not allow it")
        return Approval(True)
