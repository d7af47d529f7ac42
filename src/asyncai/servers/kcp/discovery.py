"""Which kcps exist: kubeconfig paths, the facts kubectl reads from them, and the ``kcp`` rule.

Kubeconfigs come from ``--kubeconfig PATH`` (repeatable), ``$ASYNCAI_KCP_KUBECONFIGS``
(``os.pathsep``-separated) and ``~/.kcp/admin.kubeconfig`` when it exists. Their facts are read
with ``kubectl config view --minify --raw -o json``, so YAML kubeconfigs need no YAML library.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from asyncai.servers.kcp import kubectl as k

KUBECONFIGS_ENV = "ASYNCAI_KCP_KUBECONFIGS"
DEFAULT_KUBECONFIG = Path(".kcp") / "admin.kubeconfig"
PROBE_TIMEOUT = 5.0


class KcpSelectionError(Exception):
    """The ``kcp`` argument does not pick exactly one discovered kcp; the message says why."""


@dataclass(frozen=True)
class KcpTarget:
    id: str
    kubeconfig: str
    server: str
    running: bool


@dataclass(frozen=True)
class KubeconfigFacts:
    context: str
    server: str


@dataclass(frozen=True)
class Discovery:
    kcps: tuple[KcpTarget, ...]
    errors: tuple[str, ...]


def kubeconfig_paths(cli: Sequence[str], env: Mapping[str, str], home: Path) -> list[str]:
    """CLI paths, then the env list, then ``~/.kcp/admin.kubeconfig`` if present; no duplicates."""
    candidates = [*cli, *(p for p in env.get(KUBECONFIGS_ENV, "").split(os.pathsep) if p.strip())]
    default = home / DEFAULT_KUBECONFIG
    if default.is_file():
        candidates.append(str(default))
    seen: set[str] = set()
    paths: list[str] = []
    for raw in candidates:
        path = os.path.abspath(os.path.expanduser(raw.strip()))
        if path not in seen:
            seen.add(path)
            paths.append(path)
    return paths


def base_url(server: str) -> str:
    """``https://h:6443/clusters/root`` -> ``https://h:6443`` (scheme://host:port, path stripped)."""
    parts = urlsplit(server.strip())
    if not parts.scheme or not parts.netloc:
        raise ValueError(f"bad server URL {server!r}")
    return f"{parts.scheme}://{parts.netloc}"


def parse_config_view(doc: Any) -> KubeconfigFacts:
    """Facts from ``kubectl config view --minify -o json`` output (one context, one cluster)."""
    if not isinstance(doc, dict):
        raise ValueError("kubeconfig view is not an object")
    context = doc.get("current-context")
    if not isinstance(context, str) or not context:
        raise ValueError("no current-context")
    clusters = doc.get("clusters") or []
    server = None
    if clusters and isinstance(clusters[0], dict):
        server = (clusters[0].get("cluster") or {}).get("server")
    if not isinstance(server, str) or not server:
        raise ValueError(f"context {context!r} has no cluster server")
    return KubeconfigFacts(context=context, server=server)


def unique_ids(names: Sequence[str]) -> list[str]:
    """Context names made unique in order: ``a``, ``a-2``, ``a-3``..."""
    taken = set(names)
    counts: dict[str, int] = {}
    result: list[str] = []
    used: set[str] = set()
    for name in names:
        counts[name] = counts.get(name, 0) + 1
        candidate = name
        if counts[name] > 1 or candidate in used:
            n = counts[name]
            candidate = f"{name}-{n}"
            while candidate in used or candidate in taken:
                n += 1
                candidate = f"{name}-{n}"
        used.add(candidate)
        result.append(candidate)
    return result


def select_kcp(kcps: Sequence[KcpTarget], kcp: str | None, errors: Sequence[str] = ()) -> KcpTarget:
    """The optional-``kcp`` rule: with one kcp it is the default; else name one."""
    ids = ", ".join(t.id for t in kcps)
    if kcp:
        for target in kcps:
            if kcp in (target.id, target.kubeconfig):
                return target
        if not kcps:
            raise KcpSelectionError(f"unknown kcp {kcp!r}: no kcps found" + _error_note(errors))
        raise KcpSelectionError(f"unknown kcp {kcp!r}: {len(kcps)} kcps found: {ids}")
    if len(kcps) == 1:
        return kcps[0]
    if not kcps:
        raise KcpSelectionError(
            "no kcp found: pass --kubeconfig PATH to the server, set ASYNCAI_KCP_KUBECONFIGS, "
            "or create ~/.kcp/admin.kubeconfig" + _error_note(errors)
        )
    raise KcpSelectionError(f"kcp is required: {len(kcps)} kcps found: {ids}")


def _error_note(errors: Sequence[str]) -> str:
    return f" (errors: {'; '.join(errors)})" if errors else ""


async def read_facts(kubectl: str, path: str) -> KubeconfigFacts:
    """Facts of one kubeconfig; ValueError carries a one-line reason."""
    result = await k.run_kubectl(kubectl, k.config_view_argv(path), timeout=PROBE_TIMEOUT * 2)
    if not result.ok:
        raise ValueError(f"{path}: {result.error_message()}")
    try:
        facts = parse_config_view(json.loads(result.stdout))
        base_url(facts.server)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    return facts


async def probe(kubectl: str, kubeconfig: str, server: str) -> bool:
    """True when the server answered a cheap request (any HTTP answer counts) within a few seconds."""
    argv = k.probe_argv(kubeconfig, server, int(PROBE_TIMEOUT))
    result = await k.run_kubectl(kubectl, argv, timeout=PROBE_TIMEOUT + 3)
    if result.ok:
        return True
    text = result.stderr
    return "Error from server" in text or "Unauthorized" in text


async def discover(kubectl: str, paths: Sequence[str]) -> Discovery:
    """Read every kubeconfig and probe every server, all concurrently."""
    outcomes = await asyncio.gather(*(read_facts(kubectl, p) for p in paths), return_exceptions=True)
    found: list[tuple[str, KubeconfigFacts]] = []
    errors: list[str] = []
    for path, outcome in zip(paths, outcomes, strict=True):
        if isinstance(outcome, KubeconfigFacts):
            found.append((path, outcome))
        elif isinstance(outcome, ValueError):
            errors.append(str(outcome))
        elif isinstance(outcome, BaseException):
            errors.append(f"{path}: {type(outcome).__name__}: {outcome}")
    servers = [base_url(facts.server) for _, facts in found]
    running = await asyncio.gather(*(probe(kubectl, p, s) for (p, _), s in zip(found, servers, strict=True)))
    ids = unique_ids([facts.context for _, facts in found])
    kcps = tuple(
        KcpTarget(id=i, kubeconfig=p, server=s, running=r)
        for i, (p, _), s, r in zip(ids, found, servers, running, strict=True)
    )
    return Discovery(kcps=kcps, errors=tuple(errors))
