"""Snippets as models write them, for the differential harness: a Hypothesis grammar, a
collected corpus and the programs a real model wrote in the recorded eval attempts.

The grammar keeps track of what each name holds (an int, a list, a dict, ...) so that most
snippets run, and the method calls, loops and tool calls it writes are the ones that make sense
for the value; now and then it uses a name before it is bound, or an index that is not there, so
the error paths are walked too. The tools are those of ``corpus_server``.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field

from evals.recording import RECORDINGS, recorded_programs
from hypothesis import strategies as st

NAMES = ("a", "b", "n", "xs", "ys", "d", "s", "text", "total", "r", "f", "g", "out", "err")
"""Every name a generated snippet binds; the state probe looks for each of them, and for ``_``."""

Kind = str  # "int", "list", "dict", "set", "str", "func", "afunc", "any"


@dataclass
class Env:
    """What each bound name holds, as far as the grammar knows."""

    kinds: dict[str, Kind] = field(default_factory=dict)

    def of(self, *kinds: Kind) -> list[str]:
        return sorted(name for name, kind in self.kinds.items() if kind in kinds)


@dataclass(frozen=True)
class Program:
    """Snippets run one after another in one REPL."""

    snippets: tuple[str, ...]

    def __str__(self) -> str:
        return "\n# ---- next snippet ----\n".join(self.snippets)


small_ints = st.integers(min_value=-3, max_value=12)
words = st.sampled_from(["alpha", "beta", "x", "", "naïve", "日本", "a b", "it's", 'q"t', "back\\slash"])
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | words,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(words, inner, max_size=3),
    max_leaves=6,
)


def literal(value: object) -> str:
    """``value`` as a Python literal (JSON's ``null``/``true`` spelled the Python way)."""
    return repr(value)


@st.composite
def int_expr(draw: st.DrawFn, env: Env) -> str:
    ints = env.of("int")
    choices = [str(draw(small_ints))]
    if ints:
        name = draw(st.sampled_from(ints))
        choices += [f"{name} + {draw(small_ints)}", f"{name} * 2", f"{name} // 3", name]
    lists = env.of("list")
    if lists:
        choices.append(f"len({draw(st.sampled_from(lists))})")
    return draw(st.sampled_from(choices))


@st.composite
def list_expr(draw: st.DrawFn, env: Env) -> str:
    options = [
        literal(draw(st.lists(small_ints, max_size=4))),
        f"list(range({draw(st.integers(0, 6))}))",
        "[\n    1,\n    2,  # two\n    3,\n]",
    ]
    lists = env.of("list")
    if lists:
        name = draw(st.sampled_from(lists))
        options += [
            f"[v * 2 for v in {name} if isinstance(v, int) and v % 2 == 0]",
            f"sorted({name}, key=str)",
            f"{name}[1:]",
        ]
    dicts = env.of("dict")
    if dicts:
        options.append(f"list({draw(st.sampled_from(dicts))}.keys())")
    return draw(st.sampled_from(options))


@st.composite
def tool_call(draw: st.DrawFn, env: Env) -> str:
    """An awaited tool call (as an expression)."""
    options = [
        f"await echo(value={literal(draw(json_values))})",
        f"await numbers(n={draw(st.integers(0, 5))})",
        "await pods()",
        f"await pods(namespace={literal(draw(words))})",
        f"await wait(tag={literal(draw(words))})",
        "await asyncio.gather(echo(value=1), numbers(n=2), wait(tag='g'))",
        f"await asyncio.gather(*[echo(value=i) for i in range({draw(st.integers(0, 4))})])",
    ]
    return draw(st.sampled_from(options))


@st.composite
def statement(draw: st.DrawFn, env: Env) -> str:
    """One top-level statement (possibly spanning lines); ``env`` learns what it binds."""
    kinds = ["assign_int", "assign_list", "assign_dict", "assign_set", "assign_str", "tool", "print",
             "for", "while", "try", "def", "if", "comment", "mutate", "augment", "item", "record", "fail",
             "while_break", "try_else", "comprehension", "closure", "strings", "gather_errors"]  # fmt: skip
    kind = draw(st.sampled_from(kinds))
    lists, dicts, sets, ints = env.of("list"), env.of("dict"), env.of("set"), env.of("int")
    if kind == "assign_int":
        name = draw(st.sampled_from(["n", "total", "a", "b"]))
        source = f"{name} = {draw(int_expr(env))}"
        env.kinds[name] = "int"
        return source
    if kind == "assign_list":
        name = draw(st.sampled_from(["xs", "ys", "out"]))
        source = f"{name} = {draw(list_expr(env))}"
        env.kinds[name] = "list"
        return source
    if kind == "assign_dict":
        options = [
            "{'a': 1, 'b': [2, 3]}",
            "{}",
            "{k: len(k) for k in ['one', 'three']}",
            '{\n    "k": 1,\n}',
        ]
        env.kinds["d"] = "dict"
        return f"d = {draw(st.sampled_from(options))}"
    if kind == "assign_set":
        env.kinds["s"] = "set"
        return f"s = {draw(st.sampled_from(['{1, 2}', 'set()', 'set(range(3))']))}"
    if kind == "assign_str":
        options = [f"f'{{{draw(int_expr(env))}}} items'", literal(draw(words)), "'''\nfirst\n  second\n'''"]
        env.kinds["text"] = "str"
        return f"text = {draw(st.sampled_from(options))}"
    if kind == "tool":
        name = draw(st.sampled_from(["r", "out", "ys"]))
        env.kinds[name] = "any"
        return f"{name} = {draw(tool_call(env))}"
    if kind == "print":
        bound = sorted(env.kinds)
        what = draw(st.sampled_from([*bound, "'hello'", "f'n={1 + 1}'"])) if bound else "'hello'"
        return f"print({what})"
    if kind == "for" and lists:
        name = draw(st.sampled_from(lists))
        env.kinds["total"] = "int"
        tail = "\nelse:\n    total = -1" if draw(st.booleans()) else ""
        return (
            f"total = 0\nfor v in {name}:\n    if v == {draw(small_ints)}:\n        break\n"
            f"    total += 1{tail}"
        )
    if kind == "while":
        env.kinds["n"] = "int"
        return f"n = 0\nwhile n < {draw(st.integers(0, 20))}:\n    n += 3"
    if kind == "try":
        env.kinds["err"] = "str"
        body = draw(st.sampled_from(["x = [1][5]", "await fail(message='bad')", "y = {}['k']", "z = 1 // 1"]))
        return (
            f"err = ''\ntry:\n    {body}\nexcept (IndexError, KeyError, RuntimeError) as e:\n    err = str(e)"
        )
    if kind == "def":
        if draw(st.booleans()):
            env.kinds["f"] = "func"
            return "def f(v, k=2):\n    '''Twice, plus k.'''\n    return v * 2 + k"
        env.kinds["g"] = "afunc"
        return "async def g(t):\n    return await echo(value=t)"
    if kind == "if" and ints:
        name = draw(st.sampled_from(ints))
        return f"if {name} > 2:\n    {name} -= 1\nelif {name} < 0:\n    {name} = 0\nelse:\n    pass"
    if kind == "comment":
        return draw(st.sampled_from(["# a comment", "", "# first\n\n# second"]))
    if kind == "mutate":
        options = []
        for name in lists:
            options += [f"{name}.append({draw(small_ints)})", f"{name}.extend([7, 8])", f"{name}.insert(0, 'h')",
                        f"{name}.reverse()", f"{name}.pop()"]  # fmt: skip
        for name in dicts:
            options += [
                f"{name}.update({{'u': 1}})",
                f"{name}.setdefault('k', []).append(1)",
                f"{name}.pop('a', None)",
            ]
        for name in sets:
            options += [f"{name}.add({draw(small_ints)})", f"{name}.discard(1)"]
        if options:
            return draw(st.sampled_from(options))
    if kind == "augment":
        options = [f"{name} += {draw(small_ints)}" for name in ints] + [f"{name} += [9]" for name in lists]
        options += [f"{name} += '!'" for name in env.of("str")]
        if options:
            return draw(st.sampled_from(options))
    if kind == "item" and (dicts or lists):
        if draw(st.booleans()) and dicts:
            return f"{draw(st.sampled_from(dicts))}['k'] = {draw(small_ints)}"
        if lists:
            return f"{draw(st.sampled_from(lists))}[0] = 'first'"
    if kind == "record":
        env.kinds["r"] = "any"
        return f"r = await record(text={literal(draw(words))})"
    if kind == "while_break":
        env.kinds["n"] = "int"
        limit = draw(st.integers(-1, 5))
        return f"n = 0\nwhile True:\n    n += 1\n    if n > {limit}:\n        break\nelse:\n    n = -1"
    if kind == "try_else":
        env.kinds["total"] = "int"
        body = f"total = len({draw(st.sampled_from(lists))})" if lists else "total = len(missing)"
        return f"try:\n    {body}\nexcept NameError:\n    total = 0\nelse:\n    total += 1\nfinally:\n    print('checked')"
    if kind == "comprehension":
        name, source = draw(
            st.sampled_from(
                [
                    ("d", "{k: v for k, v in zip('abc', range(3))}"),
                    ("s", "{x % 3 for x in range(10)}"),
                    ("ys", "sorted([3, 1, 2], key=lambda v: -v)"),
                    ("ys", "[[i, j] for i in range(2) for j in range(i + 1)]"),
                ]
            )
        )
        env.kinds[name] = {"d": "dict", "s": "set"}.get(name, "list")
        return f"{name} = {source}"
    if kind == "closure":
        env.kinds["f"] = "func"
        return "def make(k):\n    def inner(v, k2=0):\n        return v + k + k2\n    return inner\n\nf = make(2)"
    if kind == "strings":
        env.kinds["text"] = "str"
        strings = env.of("str")
        options = [
            "', '.join(str(v) for v in range(3))",
            "'-'.join(['a', 'b']).upper()",
            "f'{3.5:.1f}|{\"x\"!r}'",
        ]
        options += [f"{name}.strip().title()" for name in strings] + [
            f"{name}.replace('a', 'A')[:5]" for name in strings
        ]
        return f"text = {draw(st.sampled_from(options))}"
    if kind == "gather_errors":
        env.kinds["r"] = "any"
        return (
            "r = await asyncio.gather(fail(message='no'), echo(value=1), return_exceptions=True)\n"
            "r = [type(v).__name__ if isinstance(v, Exception) else v for v in r]"
        )
    if kind == "fail" and draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(["await fail(message='stop')", "q = missing_name", "n = 1 / 0"]))
    env.kinds["a"] = "int"
    return f"a = {draw(small_ints)}"


@st.composite
def last_expression(draw: st.DrawFn, env: Env) -> str | None:
    bound = sorted(env.kinds)
    options: list[str | None] = [None, "None", f"{draw(small_ints)} + 1"]
    options += bound
    options += [f"len({name})" for name in env.of("list", "dict", "set", "str")]
    options += [f"sorted({name})" for name in env.of("set")]
    options += [f"f({name})" for name in env.of("int") if "f" in env.kinds]
    options += [f"await g({name})" for name in bound if "g" in env.kinds and name != "g"]
    options += [f"[{', '.join(bound[:3])}]"] if bound else []
    options += ["await echo(value=[])", "await numbers(n=1)", "_"]
    return draw(st.sampled_from(options))


@st.composite
def snippet(draw: st.DrawFn, env: Env) -> str:
    lines = ["import asyncio"] if draw(st.integers(0, 3)) == 0 else []
    for _ in range(draw(st.integers(1, 5))):
        lines.append(draw(statement(env)))
    last = draw(last_expression(env))
    if last is not None:
        lines.append(last)
    return "\n".join(lines) + ("\n" if draw(st.booleans()) else "")


@st.composite
def programs(draw: st.DrawFn) -> Program:
    env = Env()
    return Program(tuple(draw(snippet(env)) for _ in range(draw(st.integers(1, 2)))))


# -- collected: snippets from the tests, the docs and the scripted-model cases --------------------
# Rewritten for the corpus server's tools where they named others; kept as the models wrote them
# otherwise. The first five are the shapes of the held-out set that broke the streamed chat.
COLLECTED = (
    "xs = []\nxs.append(1)\nlen(xs)",
    "d = {}\nd.update({'a': 1})\nd.setdefault('b', []).append(2)\nd",
    "s = set()\ns.add(3)\ns.discard(4)\nsorted(s)",
    "xs = [3, 1]\nxs.extend([2])\nxs.insert(0, 9)\nxs.sort()\nxs",
    "out = []\nfor p in (await pods())['items']:\n    out.append(p['name'])\nout[:2]",
    "x = 1\ny = x + 1\n[x, y]",
    "a = await pods()\nrunning = [p for p in a['items'] if p['phase'] == 'Running']\nlen(running)",
    "print('one')\nprint('two')\nz = 3",
    "a = await pods()\nb = await fail(message='boom')\nc = 1",
    "import asyncio\nr = await asyncio.gather(wait(tag='p'), wait(tag='q'))\n[t['tag'] for t in r]",
    "for i in range(3):\n    print(i)\nelse:\n    done = True\ndone",
    "n = 0\nwhile n < 3:\n    n += 1\nn",
    "q = undefined_name\nq",
    "def double(v):\n    return v * 2\nr = double(21)\nr",
    "import json\ns = json.dumps({'a': 1})\ntext = '''\nmulti\nline\n'''\n[s, text]",
    "try:\n    await fail(message='x')\nexcept RuntimeError as e:\n    caught = str(e)\ncaught",
    "p = await pods(namespace='a', bogus=1)\np",
    "w = await wait(tag='t')\nw['tag'] * 2\n",
    "big = list(range(10))\nsum(big)\n_",
    "a = await pods()\nb = await pods()\nc = len(a['items']) + len(b['items'])\nprint(c)\nc",
    "r = await asyncio.gather(*[wait(tag=str(i)) for i in range(3)])\n[t['tag'] for t in r]",
    "r = await record(text='note')\nr['recorded']",
    "counts = {}\nfor p in (await pods())['items']:\n    counts[p['phase']] = counts.get(p['phase'], 0) + 1\ncounts",
    "names = [p['name'] for p in (await pods(namespace='web'))['items']]\nnames.sort(reverse=True)\nnames[0]",
    "total = 0\nfor v in await numbers(n=5):\n    total += v\ntotal",
    "result = await echo(value={'nested': [[1, 2], [], ['only']]})\nresult['nested'][2]",
    "x = 10\nx",
    "x = 10",
    "await echo(value='last')",
    "seen = set()\nfor v in [1, 2, 2, 3]:\n    if v in seen:\n        continue\n    seen.add(v)\nlen(seen)",
    "items = (await pods())['items']\nby_phase = {}\nfor item in items:\n    by_phase.setdefault(item['phase'], []).append(item['name'])\nby_phase['Running']",
    "text = f'''{1 + 1}\n  indented\n'''\nprint(text)\ntext.strip()",
    "def f(v):\n    return [v] * 2\n\n\n# after a gap\nf(3)",
    "n = 5\nn += 2\nn *= 3\nn",
    "err = None\ntry:\n    [][1]\nexcept IndexError as e:\n    err = type(e).__name__\nfinally:\n    done = True\n[err, done]",
    # Values over the result limit: only their JSON's length and head leave the worker.
    "rows = [{'n': i, 'pad': 'x' * 60} for i in range(400)]",
    "print('first')\n[{'n': i, 'ok': i % 3 == 0, 'load': i / 7} for i in range(900)]",
    "rows = [{'n': i, 'pad': 'x' * 60} for i in range(400)]\nrows.append({'n': -1})\nlen(rows)",
    # A real model's count of files: os.walk finds none in Monty, so every door refuses it.
    "import os\nn = 0\nfor root, dirs, files in os.walk('/data'):\n    n += len(files)\nn",
    # A real model's: a comment, then a tool function defined (refused); streamed, the comment
    # once counted as a statement that had run.
    "# the functions\n\nasync def pods(namespace: str = 'default') -> dict:\n    return {}",
)


# -- recorded: what a real model wrote (make eval --record), as the harness ran it -----------------
# They call the eval's servers' functions, which the corpus server lacks: every door must fail them
# alike (type check, unknown names, pasted stubs, missing modules), and run the rest alike.
FOUND_BY_FUZZING = (
    # A statement that ran early raised: the note must order the names as after the whole snippet.
    Program(
        (
            "import asyncio\nd = {'a': 1, 'b': [2, 3]}\ns = {1, 2}",
            "text = text.strip().title()\nd = {'a': 1, 'b': [2, 3]}",
        )
    ),
    # ``text += ...`` of a name never bound: Monty placed the NameError on another line, or in a
    # file named "\x00" when the statement began a feed (as the rest of a streamed snippet does).
    Program(
        (
            "import asyncio\na = 0\ntext = text.strip().title()",
            "try:\n    total = len(missing)\nexcept NameError:\n    total = 0\nelse:\n    total += 1\n"
            "finally:\n    print('checked')\ntext += '!'",
        )
    ),
)
"""Programs in which ``make fuzz`` found two doors that disagreed, kept as examples once fixed."""

RECORDED = tuple(
    recorded_programs(json.loads(path.read_text()) for path in sorted(RECORDINGS.glob("*.json")))
)


def bound_names(program: Program) -> list[str]:
    """The names a program binds anywhere (CPython's parser; a snippet it cannot parse binds none)."""
    names: set[str] = set()
    for code in program.snippets:
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.ExceptHandler):
                names.add(node.name or "")
            elif isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[0])
    names.discard("")  # a bare ``except:`` binds nothing
    return sorted(names)


def state_probe(names: list[str]) -> str:
    """A snippet that reports each of ``names`` (and ``_``) that is bound, with its type and value:
    the REPL's state after a program."""
    rows = ["_diff_rows = []"]
    for name in ("_", *names):
        rows.append(
            f"try:\n    _diff_value = {name}\n    _diff_rows.append(({name!r}, type(_diff_value).__name__, "
            f"repr(_diff_value)))\nexcept NameError:\n    pass"
        )
    rows.append("_diff_rows")
    return "\n".join(rows)


def dumps(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=repr)
