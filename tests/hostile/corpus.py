"""The hostile snippet corpus: what a model (or whoever steers it) might throw at ``run_code``, and
what must come back.

Each ``Case`` is one ``run_code`` call in a freshly restarted REPL. ``code`` is usually a snippet
(tokens such as ``CANARY_FILE`` are replaced by the real paths and names before it runs); a few
cases send a ``code`` that is not text at all. ``expect`` says what the result must be:

* ``"error"``: an error result whose text matches ``pattern`` (a regex, searched);
* ``"value"``: a normal result whose text matches ``pattern``: the snippet ran but reveals nothing;
* ``"any"``: either, as long as the text matches ``pattern``.

``deadline`` is the wall time the call may take. ``setup`` snippets run first in the same scope.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from asyncai.code_mode import CodeModeLimits

MIB = 1024 * 1024
LIMITS = CodeModeLimits(code_timeout=1.0, wall_timeout=5.0, tool_timeout=2.0, max_memory=256 * MIB)

# Deadlines, with room for a loaded 2-core machine.
FAST = 2.5  # a snippet that fails or finishes at once
HEAVY = 6.0  # real work: 10,000 gathered calls, 50 MB strings, big conversions
LOOP = LIMITS.code_timeout + 2.5  # stopped by the execution-time limit
KILLED = LIMITS.code_timeout + 1.0 + 2.5  # a native op: the pool kills the worker after limit + 1 s grace
WALL = LIMITS.wall_timeout + 2.5  # stopped by the wall clock

ABSENT = object()
"""``code`` value meaning: send no ``code`` key at all."""

# Patterns of the results.
PERM = r"PermissionError: os access disabled in asyncai code mode"
ATTR = r"AttributeError: "
MEMORY = r"MemoryError: memory limit exceeded[\s\S]*The REPL state was reset"
EXEC_LIMIT = r"TimeoutError: feed time limit exceeded"
WALL_LIMIT = r"wall-clock limit of 5\.0 s; in-flight tool calls were cancelled and the REPL state was reset"
TOO_LARGE = r"^error: result is [\d,]+ chars, over the 20,000-char limit[\s\S]*Preview"
BUDGET = r"RuntimeError: nested tool call budget exceeded: at most 100 per run_code"
SUSPENSIONS = r"RuntimeError: suspension limit exceeded: more than 10,000 tool or OS calls"
NOT_TEXT = r'^error: run_code needs \{"code": "<python source>"\}$'
RECURSION = r"RecursionError: maximum recursion depth exceeded"
SYNTAX = r"SyntaxError: "
NOTHING = r"^\(no output; the last expression was None\)$"
NO_DYNAMIC_CODE = r"PermissionError: exec\(\) and eval\(\) are disabled in asyncai code mode"


def no_module(name: str) -> str:
    return rf"ModuleNotFoundError: No module named '{name}'"


def undefined(name: str) -> str:
    return rf"NameError: name '{name}' is not defined"


@dataclass(frozen=True)
class Case:
    id: str
    code: Any
    expect: Literal["error", "value", "any"]
    pattern: str
    deadline: float = FAST
    setup: tuple[str, ...] = ()
    bug: str | None = None
    """Set for a case that shows a product bug: the test is a strict xfail with this reason."""
    tags: frozenset[str] = field(default_factory=frozenset)


def err(id: str, code: Any, pattern: str, **extra: Any) -> Case:
    return Case(id, code, "error", pattern, **extra)


def val(id: str, code: Any, pattern: str, **extra: Any) -> Case:
    return Case(id, code, "value", pattern, **extra)


FILES = [
    err("open-read", "open('CANARY_FILE').read()", PERM),
    err("open-binary", "open('CANARY_FILE', 'rb').read()", PERM),
    err("open-with", "with open('CANARY_FILE') as f:\n    data = f.read()\ndata", PERM),
    err(
        "open-in-try-then-leak",
        "try:\n    x = open('CANARY_FILE').read()\nexcept Exception as e:\n    x = repr(e)\nx[:0] + open('CANARY_FILE').read()",
        PERM,
    ),
    err("pathlib-read-text", "import pathlib\npathlib.Path('CANARY_FILE').read_text()", PERM),
    err("pathlib-read-bytes", "from pathlib import Path\nPath('CANARY_FILE').read_bytes()", PERM),
    err("pathlib-iterdir", "import pathlib\nlist(pathlib.Path('CANARY_DIR').iterdir())", PERM),
    err("pathlib-exists", "import pathlib\npathlib.Path('CANARY_FILE').exists()", PERM),
    err("os-listdir", "import os\nos.listdir('CANARY_DIR')", PERM),
    err("os-stat", "import os\nos.stat('CANARY_FILE')", PERM),
    err("os-path-exists", "import os\nos.path.exists('CANARY_FILE')", PERM),
    err("proc-self-environ", "open('/proc/self/environ').read()", PERM),
    err("proc-parent-cmdline", "open('/proc/1/cmdline').read()", PERM),
    err("etc-passwd", "open('/etc/passwd').read()", PERM),
    err("write-file", "open('CANARY_DIR/pwned.txt', 'w').write('pwned')", PERM),
    err("append-tmp", "open('/tmp/asyncai-hostile-pwned', 'a').write('pwned')", PERM),
    err(
        "pathlib-write-text", "import pathlib\npathlib.Path('CANARY_DIR/pwned.txt').write_text('pwned')", PERM
    ),
    err("pathlib-mkdir", "import pathlib\npathlib.Path('CANARY_DIR/pwned-dir').mkdir()", PERM),
    err("pathlib-unlink", "import pathlib\npathlib.Path('CANARY_FILE').unlink()", PERM),
    err("os-mkdir", "import os\nos.mkdir('CANARY_DIR/pwned-dir')", PERM),
    err("os-remove", "import os\nos.remove('CANARY_FILE')", PERM),
    err("os-rename", "import os\nos.rename('CANARY_FILE', 'CANARY_DIR/moved')", PERM),
    err("pathlib-touch", "import pathlib\npathlib.Path('CANARY_DIR/pwned.txt').touch()", ATTR),
    err("import-io", "import io\nio.open('CANARY_FILE')", no_module("io")),
    err(
        "import-shutil",
        "import shutil\nshutil.copy('CANARY_FILE', '/tmp/asyncai-hostile-pwned')",
        no_module("shutil"),
    ),
    err("import-glob", "import glob\nglob.glob('CANARY_DIR/*')", no_module("glob")),
    # These swallow the listing's PermissionError and answer []: refused before they run.
    err("os-walk", "import os\n[f for _, _, f in os.walk('CANARY_DIR')]", r"`os.walk\(\)` finds no files"),
    err("pathlib-rglob", "import pathlib\nlist(pathlib.Path('CANARY_DIR').rglob('*'))", r"`Path.rglob\(\)`"),
    err(
        "resource-file-uri",
        "await read_resource(uri='file://CANARY_FILE')",
        r"RuntimeError: cannot read file://",
    ),
]

ENVIRONMENT = [
    err("os-environ", "import os\nos.environ", PERM),
    err("os-environ-item", "import os\nos.environ['CANARY_ENV']", PERM),
    err("os-environ-get", "import os\nos.environ.get('CANARY_ENV')", PERM),
    err("os-environ-dict", "import os\ndict(os.environ)", PERM),
    err("os-getenv", "import os\nos.getenv('CANARY_ENV')", PERM),
    err("os-getenv-secret", "import os\nos.getenv('SECRET_ENV')", PERM),
    err("os-urandom", "import os\nos.urandom(16)", PERM),
    err("os-getpid", "import os\nos.getpid()", ATTR),
    err("os-uname", "import os\nos.uname()", ATTR),
    val("os-getcwd", "import os\nos.getcwd()", r"^/$"),
    val(
        "sys-facts",
        "import sys\n[sys.platform, sys.version, sys.argv]",
        r'^\["monty","3\.14\.0 \(Monty\)",\["run_code\.py"\]\]$',
    ),
    err("sys-modules", "import sys\nsys.modules['os']", ATTR),
    err("sys-getframe", "import sys\nsys._getframe().f_back.f_globals", ATTR),
    # The test server inherits the environment minus asyncai's secrets: a variable whose name marks
    # it secret, and any variable holding a secret value (the model API key), never reach it.
    val(
        "server-getenv-secret-name",
        "await getenv(name='SECRET_ENV')",
        r'^\{"name":"ASYNCAI_HOSTILE_CANARY_SECRET","value":null\}$',
    ),
    val(
        "server-getenv-secret-value",
        "await getenv(name='CANARY_ENV')",
        r'^\{"name":"HOSTILE_CANARY","value":null\}$',
    ),
]

NETWORK_AND_PROCESSES = [
    err("import-socket", "import socket\nsocket.create_connection(('127.0.0.1', 80))", no_module("socket")),
    err(
        "import-urllib",
        "import urllib.request\nurllib.request.urlopen('http://127.0.0.1/')",
        no_module("urllib"),
    ),
    err("import-http-client", "import http.client", no_module("http")),
    err("import-ssl", "import ssl", no_module("ssl")),
    err("import-select", "import select", no_module("select")),
    err("asyncio-open-connection", "await asyncio.open_connection('127.0.0.1', 80)", ATTR),
    err(
        "import-subprocess",
        "import subprocess\nsubprocess.run(['touch', '/tmp/asyncai-hostile-pwned'])",
        no_module("subprocess"),
    ),
    err("import-multiprocessing", "import multiprocessing", no_module("multiprocessing")),
    err("import-threading", "import threading", no_module("threading")),
    err("import-signal", "import signal", no_module("signal")),
    err("os-system", "import os\nos.system('touch /tmp/asyncai-hostile-pwned')", ATTR),
    err("os-popen", "import os\nos.popen('id').read()", ATTR),
    err("os-fork", "import os\nos.fork()", ATTR),
    err("os-execv", "import os\nos.execv('/bin/sh', ['sh', '-c', 'touch /tmp/asyncai-hostile-pwned'])", ATTR),
    err("os-kill", "import os\nos.kill(1, 9)", ATTR),
    err("getattr-spelled-system", "import os\ngetattr(os, 'sys' + 'tem')('id')", ATTR),
]

ESCAPES = [
    err("dunder-import", "__import__('os').system('id')", undefined("__import__")),
    err("dunder-import-subprocess", "__import__('subprocess')", undefined("__import__")),
    err("importlib", "import importlib\nimportlib.import_module('os').system('id')", no_module("importlib")),
    err("builtins-module", "import builtins\nbuiltins.open('CANARY_FILE').read()", no_module("builtins")),
    err("dunder-builtins", "getattr(__builtins__, 'open')('CANARY_FILE').read()", undefined("__builtins__")),
    err("mro-subclasses", "().__class__.__mro__[1].__subclasses__()", ATTR),
    err("str-base-subclasses", "''.__class__.__base__.__subclasses__()", ATTR),
    err("type-subclasses", "type(1).__subclasses__()", ATTR),
    err("function-globals", "(lambda: 0).__globals__['__builtins__']", ATTR),
    err("function-code", "(lambda: 0).__code__.co_consts", ATTR),
    err("builtin-self", "print.__self__", ATTR),
    err("globals", "globals()['__builtins__']", undefined("globals")),
    val(
        "locals-shows-only-the-repl",
        "sorted(locals())[:3]",
        r'^\["_asyncai_bounded","_asyncai_count_by","_asyncai_decode"\]$',
    ),
    err("locals-builtins", "locals()['__builtins__']", r"KeyError: __builtins__"),
    val(
        "locals-is-a-copy",
        "l = locals()\nl['_asyncai_decode'] = lambda r: 'forged'\nawait echo(text='hi')",
        r"^hi$",
    ),
    err("vars", "import os\nvars(os)", undefined("vars")),
    err("dir", "import os\ndir(os)", undefined("dir")),
    err("ctypes", "import ctypes\nctypes.CDLL(None).system(b'id')", no_module("ctypes")),
    err("cffi", "import cffi", no_module("cffi")),
    err("pickle", "import pickle\npickle.loads(b'cos\\nsystem\\n(S\\'id\\'\\ntR.')", no_module("pickle")),
    err("marshal", "import marshal", no_module("marshal")),
    err("eval-open", "eval(\"open('CANARY_FILE').read()\")", NO_DYNAMIC_CODE),
    err("eval-dunder-import", "eval(\"__import__('os').system('id')\")", NO_DYNAMIC_CODE),
    err("exec-import", "exec('import subprocess')", NO_DYNAMIC_CODE),
    err("exec-environ", "exec(\"import os\\nleak = os.environ['CANARY_ENV']\")\nleak", NO_DYNAMIC_CODE),
    err("exec-empty-builtins", "exec('x = 1', {'__builtins__': {}})", NO_DYNAMIC_CODE),
    err("exec-via-alias", "run = exec\nrun('x = 1')", NO_DYNAMIC_CODE),
    err("exec-rebound", "exec = print", r"`exec` is reserved for asyncai and cannot be rebound"),
    err("compile", "compile('1', 'f', 'eval')", undefined("compile")),
    err("help", "help(open)", undefined("help")),
    err("breakpoint", "breakpoint()", undefined("breakpoint")),
    err("input", "input()", undefined("input")),
    err("exit", "exit()", undefined("exit")),
    err("raise-system-exit", "raise SystemExit(3)", r"RuntimeError|SystemExit"),
    err("raise-keyboard-interrupt", "raise KeyboardInterrupt", r"KeyboardInterrupt"),
    err("host-call-unknown", "await _asyncai_tool('os_system', (), {})", undefined("os_system")),
    err(
        "host-call-positional",
        "await _asyncai_tool('whoami', ('x',), {})",
        r"TypeError: whoami\(\) takes keyword arguments only",
    ),
    # A helper's name may be bound (it shadows the helper in that REPL); a tool function's may not.
    val("rebind-helper", "names = []\nnames", r"^\[\]$"),
    err(
        "rebind-tool",
        "whoami = 1",
        r"^error: `whoami` is the name of a tool function[\s\S]*await whoami\(\.\.\.\)",
    ),
    err("rebind-host-call", "_asyncai_tool = print", r"^error: `_asyncai_tool` is reserved for asyncai"),
    err("unawaited-statement", "whoami()", r"^error: `whoami\(\.\.\.\)` is called without await"),
    err("unawaited-value", "x = whoami()\nx", r"un-awaited call \(<coroutine object whoami>\)"),
    val(
        "coroutine-from-earlier-snippet",
        "await c",
        r'^\{"server":"hostile","pid":\d+\}$',
        setup=("c = whoami()",),
    ),
    val(
        "exec-rebinds-decoder",
        "await echo(text='hi')",
        r"^hi$",
        setup=("exec(\"_asyncai_decode = lambda reply: 'forged'\")",),
    ),
]

RESOURCES = [
    err("alloc-6gib-str", "x = 'a' * (6 * 1024 ** 3)", MEMORY),
    err("alloc-1tib-bytes", "b'x' * (2 ** 40)", MEMORY),
    err("alloc-list-10g", "[0] * (10 ** 10)", MEMORY),
    err("alloc-2-62", "'x' * (2 ** 62)", MEMORY),
    err(  # 8 MiB a step: the heap cap comes well inside the 1 s limit even on a loaded machine
        "alloc-gradual-list",
        "xs = []\nwhile True:\n    xs.append('x' * 8 * 1024 * 1024)",
        MEMORY,
        deadline=LOOP,
    ),
    err(
        "alloc-gradual-dict",
        "d = {}\ni = 0\nwhile True:\n    d[i] = str(i) * 100_000\n    i += 1",  # the cap well inside 1 s
        MEMORY,
        deadline=LOOP,
    ),
    err(
        "native-bigint-power",
        "x = 7 ** (10 ** 8)",
        r"^error: the sandbox worker was killed[\s\S]*REPL state was reset",
        deadline=KILLED,
    ),
    err("recursion", "def r(n):\n    return r(n + 1)\nr(0)", RECURSION),
    err("mutual-recursion", "def a(n):\n    return b(n)\ndef b(n):\n    return a(n)\na(0)", RECURSION),
    err(
        "recursive-repr", "class C:\n    def __repr__(self):\n        return repr(self)\nrepr(C())", RECURSION
    ),
    err(
        "recursion-caught-and-retried",
        "def r(n):\n    try:\n        return r(n + 1)\n    except RecursionError:\n        return r(n + 1)\nr(0)",
        EXEC_LIMIT,
        deadline=LOOP,
    ),
    err("eval-deep-nesting", "eval('(' * 10000 + ')' * 10000)", NO_DYNAMIC_CODE),
    err("deep-nesting", "(" * 10000 + ")" * 10000, r"Error"),
    err(
        "json-deep-nesting",
        "import json\njson.loads('[' * 100000 + ']' * 100000)",
        r"recursion limit exceeded",
    ),
    err("while-true", "while True:\n    pass", EXEC_LIMIT, deadline=LOOP),
    err(
        "loop-in-finally",
        "try:\n    while True:\n        pass\nfinally:\n    while True:\n        pass",
        EXEC_LIMIT,
        deadline=LOOP,
    ),
    err(
        "loop-swallowing-everything",
        "while True:\n    try:\n        while True:\n            pass\n    except:\n        pass",
        EXEC_LIMIT,
        deadline=LOOP,
    ),
    err(
        "loop-raising-and-catching",
        "while True:\n    try:\n        1 / 0\n    except BaseException:\n        pass",
        EXEC_LIMIT,
        deadline=LOOP,
    ),
    err("iter-sentinel-forever", "for x in iter(int, 1):\n    pass", EXEC_LIMIT, deadline=LOOP),
    err(
        "async-spin",
        "async def spin():\n    while True:\n        pass\nawait asyncio.gather(spin(), spin())",
        EXEC_LIMIT,
        deadline=LOOP,
    ),
    err("sleep-zero-forever", "while True:\n    await asyncio.sleep(0)", EXEC_LIMIT, deadline=LOOP),
    err("time-sleep-100", "import time\ntime.sleep(100)", WALL_LIMIT, deadline=WALL),
    err("asyncio-sleep-100", "await asyncio.sleep(100)", WALL_LIMIT, deadline=WALL),
    err(
        "tool-sleep-100",
        "await sleep(seconds=100)",
        r"RuntimeError: tool sleep timed out after 2\.0 s",
        deadline=LIMITS.tool_timeout + 2.5,
    ),
    err(
        "os-calls-swallowing-the-budget",
        "while True:\n    try:\n        open('CANARY_FILE')\n    except BaseException:\n        pass",
        SUSPENSIONS,
        deadline=HEAVY,
    ),
]

FLOODS = [
    err("print-flood-forever", "while True:\n    print('flood ' * 100)", EXEC_LIMIT, deadline=LOOP),
    val(
        "print-200k-lines",
        "for i in range(200000):\n    print(i)",
        r"^\{\"output\":\"0\\n1\\n2\\n[\s\S]*chars omitted",
    ),
    val(
        "print-stderr-flood",
        "import sys\nfor i in range(200000):\n    print(i, file=sys.stderr)",
        r"chars omitted",
    ),
    val(
        "print-50mb",
        "print('x' * (50 * 1024 * 1024))\n'done'",
        r"print output truncated: [\d]+ more bytes[\s\S]*\"result\":\"done\"",
        deadline=HEAVY,
    ),
    # 10,000 gathered calls take ~2 s of host round trips here; on a loaded machine the wall clock
    # may end them first, which is as good: an error within the deadline.
    err(
        "gather-10000-tool-calls",
        "await asyncio.gather(*[whoami() for _ in range(10000)])",
        f"{BUDGET}|{WALL_LIMIT}",
        deadline=WALL,
    ),
    err("gather-150-tool-calls", "await asyncio.gather(*[echo(text=str(i)) for i in range(150)])", BUDGET),
    err("loop-101-tool-calls", "for i in range(101):\n    await echo(text=str(i))", BUDGET, deadline=HEAVY),
    err(
        "gather-10001-searches",
        "await asyncio.gather(*[search_tools(query='x') for _ in range(10001)])",
        f"{SUSPENSIONS}|{WALL_LIMIT}",
        deadline=WALL,
    ),
    err(
        "loop-20000-os-calls",
        "for i in range(20000):\n    try:\n        open('CANARY_FILE')\n    except PermissionError:\n        pass",
        SUSPENSIONS,
        deadline=HEAVY,
    ),
    err(
        "gather-10000-local-coroutines",
        "async def f():\n    return 1\nawait asyncio.gather(*[f() for _ in range(10000)])",
        TOO_LARGE,
    ),
    err("result-50mb-str", "'y' * (50 * 1000 * 1000)", TOO_LARGE, deadline=HEAVY),
    err("result-50mb-from-tool", "await text_blob(size=50_000_000)", TOO_LARGE, deadline=HEAVY),
    val("result-50mb-tool-filtered", "len(await text_blob(size=50_000_000))", r"^50000000$", deadline=HEAVY),
    err("result-big-list", "list(range(10 ** 5))", TOO_LARGE),
    err("result-big-dict", "{i: i for i in range(200_000)}", TOO_LARGE, deadline=HEAVY),
    err(
        "exception-50mb-message",
        "raise ValueError('x' * 50_000_000)",
        r"ValueError: x+\n\.\.\. \[[\d,]+ chars omitted\]",
        deadline=HEAVY,
    ),
    err("describe-1mb-name", "await describe_tool(name='x' * 1_000_000)", r"NameError: no catalog function"),
    val("search-1mb-query", "await search_tools(query='a' * 1_000_000)", r"^\[\]$"),
]

VALUES = [
    val("self-containing-list", "x = []\nx.append(x)\nx", r"^\[\"\[\.\.\.\]\"\]$"),
    val("self-containing-dict", "d = {}\nd['d'] = d\nd", r'^\{"d":"\{\.\.\.\}"\}$'),
    val("class-instance", "class C:\n    pass\nC()", r"MontyClassProxy\(name='C'"),
    val("lambda", "lambda: 0", r"^<function '<lambda>'"),
    val("module", "import json\njson", r"^<module 'json'>$"),
    val("builtins-as-values", "int, print", r"MontyStdTypeProxy\(kind='function', name='print'\)"),
    val("exception-instance", "ValueError('boom')", r"^\"ValueError\('boom'\)\"$"),
    val("mixed-set", "{1, 'a', None}", r'^\[null,1,"a"\]$'),
    val("nan-inf", "float('nan'), float('inf'), -float('inf')", r'^\["NaN","Infinity","-Infinity"\]$'),
    val("huge-int", "10 ** 5000", r'^"<int of 16610 bits>"$'),
    val("huge-int-key", "{10 ** 5000: 1}", r'^\{"<int object>":1\}$'),
    val("non-str-keys", "{(1, 2): 3, None: 1, 1.5: 2}", r'^\{"\(1, 2\)":3,"None":1,"1\.5":2\}$'),
    val(
        "odd-scalars",
        "import decimal, datetime\ncomplex(1, 2), decimal.Decimal('1.5'), datetime.datetime(2020, 1, 1)",
        r"Decimal\('1\.5'\)",
    ),
    val("bytes-not-utf8", "b'\\xff\\xfe\\x00'", r"^\"b'\\\\xff\\\\xfe\\\\x00'\"$"),
    Case("nest-100k-deep", "x = [1]\nfor i in range(100000):\n    x = [x]\nx", "any", r"^\[\[\[\["),
    err(
        "tool-arg-function",
        "await echo(text=open)",
        r"RuntimeError: tool error: echo on server 'hostile': Unable to serialize",
    ),
    err(
        "tool-arg-instance",
        "class C:\n    pass\nawait echo(text=C())",
        r"RuntimeError: tool error: echo on server 'hostile': Unable to serialize",
    ),
    err(
        "tool-arg-self-containing",
        "x = []\nx.append(x)\nawait echo(text=x)",
        r"RuntimeError: Error executing tool echo",
    ),
    err(
        "tool-arg-deep-nesting",
        "x = {}\nfor i in range(100000):\n    x = {'a': x}\nawait echo(text=x)",
        # The MCP client refuses to serialise it (logging it at --verbose fails first).
        r"RecursionError|Maximum serialization depth exceeded",
    ),
    err(
        "tool-arg-huge-int",
        "await write_note(text=10 ** 5000)",
        r"ValueError: Exceeds the limit \(4300 digits\)",
    ),
    err("tool-arg-nan", "await echo(text=float('nan'))", r"RuntimeError: Error executing tool echo"),
    val(
        "tool-arg-10mb", "(await echo(text='x' * 10_000_000)) == 'x' * 10_000_000", r"^true$", deadline=HEAVY
    ),
    err("print-fake-coroutine", "print('<gather(1)>')", r"un-awaited call \(<gather\(1\)>\)"),
]

TEXT = [
    val("nul-in-result", "'a\\x00b'", "^a\x00b$"),
    val("nul-tool-round-trip", "await echo(text='a\\x00b')", "^a\x00b$"),
    val("print-nul-flood", "print('\\x00' * 100000)", r"chars omitted"),
    val("print-quote-flood", "print('\"' * 100000)", r"chars omitted"),
    val("ansi-escape-result", "'\\x1b[2J\\x1b[31mred'", "^\x1b\\[2J"),
    err("chr-surrogate", "chr(0xD800)", r"ValueError: chr\(\) arg not in range"),
    err("json-lone-surrogate", "import json\njson.loads('\"\\\\ud800\"')", r"JSONDecodeError"),
    err(
        "surrogate-in-code",
        "x = '\ud800'\nlen(x)",
        r"^SyntaxError: source code is not valid UTF-8 \(contains lone surrogates\)$",
    ),
    err("surrogate-alone", "\udfff", r"lone surrogates"),
    err("nul-in-code", "1 + 1\x00", r"SyntaxError: Got unexpected token"),
    err("nul-only", "\x00", r"SyntaxError: Got unexpected token"),
    err("escape-sequences-as-code", "\x1b[2J\x1b[H", r"SyntaxError: Got unexpected token"),
    err("control-z", "1 + 1\x1a", SYNTAX),
    err("line-separator", "\u2028 1", SYNTAX),
    err("lone-carriage-return", "1 +\r 1", SYNTAX),
    val("crlf-lines", "x = 1\r\nx\r\n", r"^1$"),
    val("bom", "\ufeff1 + 1", r"^2$"),
    val("form-feed", "\x0c1 + 1", r"^2$"),
    err("escaped-bytes-as-text", "\\x00\\x01\\x02", SYNTAX),
    err("code-is-bytes", b"1 + 1", NOT_TEXT),
    err("code-is-none", None, NOT_TEXT),
    err("code-is-int", 123, NOT_TEXT),
    err("code-is-list", ["1 + 1"], NOT_TEXT),
    err("code-missing", ABSENT, NOT_TEXT),
    val("code-empty", "", NOTHING),
    val("code-1mb-comment", "#" * 1_000_000, NOTHING, deadline=HEAVY),
    err("syntax-def", "def (", SYNTAX),
    err("syntax-unterminated", "'unterminated", SYNTAX),
    err("syntax-indent", "   1 + 1\n2", SYNTAX),
    err("syntax-10000-parens", "(" * 10000 + ")" * 10000, SYNTAX),
    err("unsupported-del", "del x", r"NotImplementedError"),
    err("unsupported-inheritance", "class A(B):\n    pass", r"NotImplementedError"),
    err("unsupported-yield", "yield 1", r"NotImplementedError"),
]

CORPUS: list[Case] = [
    *FILES,
    *ENVIRONMENT,
    *NETWORK_AND_PROCESSES,
    *ESCAPES,
    *RESOURCES,
    *FLOODS,
    *VALUES,
    *TEXT,
]
