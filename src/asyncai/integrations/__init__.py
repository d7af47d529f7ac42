"""Adapters for agent frameworks people already use; each needs its own optional extra."""
