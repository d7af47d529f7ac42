"""Approvals: what a nested call to a tool that may change the world needs before it runs."""

from typing import Literal

MutationPolicy = Literal["allow", "ask", "deny"]
"""What a nested call to a tool that may change the world needs (``mutations=``)."""
MUTATION_POLICIES: tuple[MutationPolicy, ...] = ("allow", "ask", "deny")
