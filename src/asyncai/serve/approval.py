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
    """Asks the client of one request; a client without elicitation gets a refusal saying so. (Under
    the stateless protocol, where a request cannot carry a question, the snippet pauses instead:
    ``CodeModeServer._pausing``.)"""

    def __init__(
        self, session: ServerSession, request_id: mt.RequestId | None, timeout: float = APPROVAL_TIMEOUT
    ):
        self.session = session
        self.request_id = request_id
        self.timeout = timeout

    async def approve(self, request: ApprovalRequest) -> Approval:
        if not can_elicit(self.session):
            return Approval(
                False, f"{NEEDS_APPROVAL} and this MCP client cannot ask its user (no elicitation support)"
            )
        if not self.session.can_send_request:  # a run_code that became a task: no request to pause
            return Approval(
                False, f"{NEEDS_APPROVAL} and a run_code that runs as a task cannot ask its client"
            )
        try:
            answer = await asyncio.wait_for(
                self.session.elicit_form(question(request), ALLOW_SCHEMA, related_request_id=self.request_id),
                self.timeout,
            )
        except TimeoutError:
            return Approval(False, f"no answer from the user within {seconds(self.timeout)}")
        return decision(answer)


def question(request: ApprovalRequest) -> str:
    """What the person is asked about one call (the form is ``ALLOW_SCHEMA``)."""
    return f"asyncai: a run_code snippet wants to call {request.call_text()}. Allow it?"


def decision(answer: mt.ElicitResult) -> Approval:
    """The person's answer to ``question`` as an approval: only an accepted form that allows it runs."""
    if answer.action != "accept":
        return Approval(False, f"the user {'declined' if answer.action == 'decline' else 'cancelled'} it")
    if (answer.content or {}).get("allow") is False:
        return Approval(False, "the user did not allow it")
    return Approval(True)


def can_elicit(session: ServerSession) -> bool:
    """Whether the client said it can put a form to its user."""
    capabilities = session.client_capabilities
    return capabilities is not None and capabilities.elicitation is not None
