"""Lazy package exports: a name whose module is heavy to import (the ``mcp`` SDK, ``httpx2``,
``pydantic-monty``) is imported when first used, so ``asyncai --help`` and argument errors never pay
for it. Each package lists its lazy names under ``TYPE_CHECKING`` too, for the type checker."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, modules: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``name`` from ``package.<modules[name]>`` on first use."""

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return __getattr__
