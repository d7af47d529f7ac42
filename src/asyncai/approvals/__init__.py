"""Approvals: what a nested call to a tool that may change the world needs before it runs."""
