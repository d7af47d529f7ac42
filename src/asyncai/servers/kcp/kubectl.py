"""Running ``kubectl``: where the binary is, an async runner, and pure argv builders.

Every object call selects its workspace with ``--server <base>/clusters/<workspace>`` (never
``kubectl ws``, which rewrites the kubeconfig) and asks for ``-o json``. ``get --raw`` gets the bare
base URL as ``--server`` and the whole ``/clusters/<workspace>/...`` path as its argument, because
kubectl versions disagree on whether the server's path is prepended to a raw path.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from asyncai.humanize import seconds

DEFAULT_TIMEOUT = 60.0
KUBECTL_ENV = "ASYNCAI_KUBECTL"
PATCH_TYPES = ("strategic", "merge", "json")

_WORKSPACE = re.compile(r"[a-z0-9]([a-z0-9_.:-]*[a-z0-9])?")
_KLOG_LINE = re.compile(r"^[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s")


def resolve_kubectl(explicit: str | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """``--kubectl PATH``, then ``$ASYNCAI_KUBECTL``, then ``kubectl`` on ``PATH``, then next to Python."""
    environ = os.environ if env is None else env
    for candidate in (explicit, environ.get(KUBECTL_ENV)):
        if candidate:
            return shutil.which(candidate) or candidate
    found = shutil.which("kubectl", path=environ.get("PATH"))
    if found:
        return found
    sibling = Path(sys.executable).parent / "kubectl"
    return str(sibling) if sibling.is_file() and os.access(sibling, os.X_OK) else None


@dataclass(frozen=True)
class KubectlResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def error_message(self) -> str:
        """kubectl's own message: stderr without klog noise when there is a real message."""
        lines = [line for line in self.stderr.strip().splitlines() if line.strip()]
        plain = [line for line in lines if not _KLOG_LINE.match(line)]
        text = "\n".join(plain or lines)
        if text:
            return text
        return f"kubectl exited with status {self.returncode}"


async def run_kubectl(
    kubectl: str, args: Sequence[str], stdin: bytes | None = None, timeout: float = DEFAULT_TIMEOUT
) -> KubectlResult:
    """Run ``kubectl args...`` without blocking the loop; stdout/stderr captured; killed on timeout."""
    argv = (kubectl, *args)
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        return KubectlResult(argv, 127, "", f"cannot run kubectl {kubectl!r}: {exc.strerror or exc}")
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        message = f"kubectl timed out after {seconds(timeout)}: {' '.join(args)}"
        return KubectlResult(argv, -9, "", message, timed_out=True)
    except asyncio.CancelledError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        raise
    code = proc.returncode if proc.returncode is not None else -1
    return KubectlResult(argv, code, out.decode(errors="replace"), err.decode(errors="replace"))


# ---------------------------------------------------------------------------------------------
# argv builders (pure)


def check_workspace(workspace: str) -> str:
    """A kcp workspace path such as ``root:app`` (a leading ``:`` is dropped); ValueError otherwise."""
    path = workspace.strip().removeprefix(":")
    if not _WORKSPACE.fullmatch(path):
        raise ValueError(f"bad workspace {workspace!r}: expected a kcp workspace path such as root:app")
    return path


def workspace_url(base_url: str, workspace: str) -> str:
    return f"{base_url.rstrip('/')}/clusters/{check_workspace(workspace)}"


def target_args(kubeconfig: str, base_url: str, workspace: str) -> list[str]:
    return ["--kubeconfig", kubeconfig, "--server", workspace_url(base_url, workspace)]


def _namespace_args(namespace: str | None, all_namespaces: bool) -> list[str]:
    if namespace:
        return ["-n", namespace]
    return ["-A"] if all_namespaces else []


def raw_get_argv(kubeconfig: str, base_url: str, workspace: str, path: str) -> list[str]:
    """``get --raw /clusters/<ws><path>`` with the bare base URL as ``--server``."""
    raw = f"/clusters/{check_workspace(workspace)}/{path.lstrip('/')}"
    return ["--kubeconfig", kubeconfig, "--server", base_url.rstrip("/"), "get", "--raw", raw]


def get_argv(
    kubeconfig: str,
    base_url: str,
    workspace: str,
    resource: str,
    name: str | None = None,
    namespace: str | None = None,
    selector: str | None = None,
) -> list[str]:
    """``get <resource> [name]``; a list without a namespace covers all namespaces (``-A``)."""
    argv = [*target_args(kubeconfig, base_url, workspace), "get", resource]
    if name:
        argv.append(name)
    argv += _namespace_args(namespace, all_namespaces=not name)
    if selector:
        argv += ["-l", selector]
    return [*argv, "-o", "json"]


def logs_argv(
    kubeconfig: str,
    base_url: str,
    workspace: str,
    pod: str,
    namespace: str | None = None,
    container: str | None = None,
    tail: int | None = None,
) -> list[str]:
    argv = [*target_args(kubeconfig, base_url, workspace), "logs", pod, *_namespace_args(namespace, False)]
    if container:
        argv += ["-c", container]
    if tail is not None:
        argv += ["--tail", str(tail)]
    return argv


def apply_argv(kubeconfig: str, base_url: str, workspace: str) -> list[str]:
    """``apply -f -`` (the manifest goes to stdin; kubectl parses JSON and YAML itself)."""
    return [*target_args(kubeconfig, base_url, workspace), "apply", "-f", "-", "-o", "json"]


def patch_argv(
    kubeconfig: str,
    base_url: str,
    workspace: str,
    resource: str,
    name: str,
    patch: str,
    namespace: str | None = None,
    patch_type: str = "merge",
) -> list[str]:
    if patch_type not in PATCH_TYPES:
        raise ValueError(f"bad patch_type {patch_type!r}: expected one of {', '.join(PATCH_TYPES)}")
    return [
        *target_args(kubeconfig, base_url, workspace),
        "patch",
        resource,
        name,
        *_namespace_args(namespace, False),
        "--type",
        patch_type,
        "-p",
        patch,
        "-o",
        "json",
    ]


def scale_argv(
    kubeconfig: str,
    base_url: str,
    workspace: str,
    resource: str,
    name: str,
    replicas: int,
    namespace: str | None = None,
) -> list[str]:
    if replicas < 0:
        raise ValueError(f"bad replicas {replicas}: must be >= 0")
    return [
        *target_args(kubeconfig, base_url, workspace),
        "scale",
        resource,
        name,
        *_namespace_args(namespace, False),
        f"--replicas={replicas}",
        "-o",
        "json",
    ]


def delete_argv(
    kubeconfig: str, base_url: str, workspace: str, resource: str, name: str, namespace: str | None = None
) -> list[str]:
    """``delete`` prints text (kubectl offers no ``-o json`` here); ``--wait=false`` returns at once."""
    return [
        *target_args(kubeconfig, base_url, workspace),
        "delete",
        resource,
        name,
        *_namespace_args(namespace, False),
        "--wait=false",
    ]


def config_view_argv(kubeconfig: str) -> list[str]:
    """The current context's facts as JSON, whatever format (YAML or JSON) the file is in."""
    return ["config", "view", "--kubeconfig", kubeconfig, "--minify", "--raw", "-o", "json"]


def probe_argv(kubeconfig: str, base_url: str, timeout_seconds: int = 5) -> list[str]:
    """A cheap request that tells whether the server answers."""
    return [*raw_get_argv(kubeconfig, base_url, "root", "/version"), f"--request-timeout={timeout_seconds}s"]
