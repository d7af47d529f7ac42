"""``TerminalPerson``: the chat's person answering a server's form field by field (typed as the
schema says, defaults on empty input, asked again after a bad answer), declining, cancelling at
end of input, opening a URL, and allowing the model to be sampled. A scripted ``ask`` stands in
for the terminal."""

from __future__ import annotations

import contextlib
import webbrowser
from collections.abc import Iterator
from typing import Any

import pytest

from asyncai.cli.questions import PREVIEW_CHARS, TerminalPerson, field_value
from asyncai.tools.mcp.asking import FormAnswer

pytestmark = pytest.mark.anyio

EOF = object()
"""In a script: the terminal's input ends here."""


class Terminal:
    """Answers each question with the next scripted line and records the questions; ``EOF`` (or
    running out) raises ``EOFError``, an exception instance is raised."""

    def __init__(self, *lines: object) -> None:
        self.lines = list(lines)
        self.questions: list[str] = []
        self.paused = 0
        self.asked_while_paused = True

    async def ask(self, question: str) -> str:
        self.questions.append(question)
        self.asked_while_paused = self.asked_while_paused and self.paused > 0
        if not self.lines or self.lines[0] is EOF:
            raise EOFError
        line = self.lines.pop(0)
        if isinstance(line, BaseException):
            raise line
        assert isinstance(line, str)
        return line

    @contextlib.contextmanager
    def pause(self) -> Iterator[None]:
        self.paused += 1
        try:
            yield
        finally:
            self.paused -= 1

    def person(self) -> TerminalPerson:
        return TerminalPerson(ask=self.ask, pause=self.pause)


TYPED = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name"},
        "age": {"type": "integer"},
        "ratio": {"type": "number"},
        "agree": {"type": "boolean"},
        "friend": {"type": "string", "enum": ["Monica", "Joey"]},
        "hero": {"type": "string", "oneOf": [{"const": "hero-1"}, {"const": "hero-2"}]},
        "instruments": {"type": "array", "items": {"type": "string", "enum": ["Guitar", "Piano", "Drums"]}},
        "fish": {"type": "array", "items": {"anyOf": [{"const": "fish-1"}, {"const": "fish-2"}]}},
    },
    "required": ["name"],
}

DEFAULTS = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "first_line": {"type": "string", "default": "It was a dark and stormy night."},
        "count": {"type": "integer", "default": 42},
        "agree": {"type": "boolean", "default": False},
        "friend": {"type": "string", "enum": ["Monica", "Joey"], "default": "Monica"},
        "instruments": {"type": "array", "items": {"enum": ["Guitar", "Piano"]}, "default": ["Guitar"]},
        "homepage": {"type": "string"},
    },
    "required": ["name"],
}


async def test_each_field_is_typed_as_its_schema_says(capsys: pytest.CaptureFixture[str]) -> None:
    terminal = Terminal("y", "Ada Lovelace", "36", "2.5", "yes", "Joey", "hero-2", "Piano, Drums", "fish-2")
    answer = await terminal.person().fill_form("everything", "Who are you?", TYPED)
    assert answer == FormAnswer(
        "accept",
        {
            "name": "Ada Lovelace",
            "age": 36,
            "ratio": 2.5,
            "agree": True,
            "friend": "Joey",
            "hero": "hero-2",
            "instruments": ["Piano", "Drums"],
            "fish": ["fish-2"],
        },
    )
    assert capsys.readouterr().out == "server everything asks: Who are you?\n"
    assert terminal.questions[0] == "answer? [y] fill in, [n] decline, [c] cancel: "
    assert terminal.questions[1:] == [
        "  Name (text, required): ",
        "  age (whole number): ",
        "  ratio (number): ",
        "  agree (yes/no): ",
        "  friend (one of Monica, Joey): ",
        "  hero (one of hero-1, hero-2): ",
        "  instruments (comma-separated, one of Guitar, Piano, Drums): ",
        "  fish (comma-separated, one of fish-1, fish-2): ",
    ]
    assert terminal.asked_while_paused, "the live display is paused while the person answers"


async def test_empty_answers_take_the_defaults_and_leave_out_optional_fields() -> None:
    terminal = Terminal("yes", "Ada", "", "", "", "", "", "")
    answer = await terminal.person().fill_form("s", "m", DEFAULTS)
    assert answer == FormAnswer(
        "accept",
        {
            "name": "Ada",
            "first_line": "It was a dark and stormy night.",
            "count": 42,
            "agree": False,
            "friend": "Monica",
            "instruments": ["Guitar"],
        },
    )
    assert "[It was a dark and stormy night.]" in terminal.questions[2]
    assert terminal.questions[3].endswith("[42]: ")


async def test_a_bad_answer_is_asked_again_saying_what_fits() -> None:
    terminal = Terminal(
        "y",
        "",  # required
        "Ada",
        "seven",
        "7",
        "lots",
        "1e3",
        "maybe",
        "no",
        "Ross",
        "Monica",
        "",  # hero: optional, no default
        "Piano, Banjo",
        "Guitar",
        "fish-3",
        "fish-1,fish-2",
    )
    answer = await terminal.person().fill_form("s", "m", TYPED)
    assert answer == FormAnswer(
        "accept",
        {
            "name": "Ada",
            "age": 7,
            "ratio": 1000.0,
            "agree": False,
            "friend": "Monica",
            "instruments": ["Guitar"],
            "fish": ["fish-1", "fish-2"],
        },
    )
    again = terminal.questions[2:]
    assert again[0] == "  name is required: "
    assert again[2] == "  a whole number, please: "
    assert again[4] == "  a number, please: "
    assert again[6] == "  answer yes or no: "
    assert again[8] == "  choose one of Monica, Joey: "
    assert again[11] == "  choose from Guitar, Piano, Drums: "
    assert again[13] == "  choose from fish-1, fish-2: "
    assert terminal.lines == []


async def test_the_first_question_is_asked_again_until_it_is_answered() -> None:
    terminal = Terminal("maybe", "n")
    assert await terminal.person().fill_form("s", "m", TYPED) == FormAnswer("decline")
    assert terminal.questions == [
        "answer? [y] fill in, [n] decline, [c] cancel: ",
        "please answer y, yes, n, no, c: ",
    ]


@pytest.mark.parametrize(
    ("line", "action"), [("n", "decline"), ("no", "decline"), ("", "decline"), ("c", "cancel")]
)
async def test_the_person_declines_or_cancels_without_filling_in(line: str, action: Any) -> None:
    terminal = Terminal(line, "Ada")
    assert await terminal.person().fill_form("s", "m", TYPED) == FormAnswer(action)
    assert len(terminal.questions) == 1 and terminal.lines == ["Ada"]


@pytest.mark.parametrize("end", [EOF, KeyboardInterrupt()])
async def test_end_of_input_cancels_the_form(end: object) -> None:
    assert await Terminal(end).person().fill_form("s", "m", TYPED) == FormAnswer("cancel")
    assert await Terminal("y", "Ada", "3", end).person().fill_form("s", "m", TYPED) == FormAnswer("cancel")


async def test_a_number_that_is_not_finite_is_asked_again() -> None:
    schema = {"type": "object", "properties": {"ratio": {"type": "number"}, "name": {"type": "string"}}}
    terminal = Terminal("y", "nan", "2.5", "Ada")
    assert await terminal.person().fill_form("s", "m", schema) == FormAnswer(
        "accept", {"ratio": 2.5, "name": "Ada"}
    )


def test_field_value_reads_what_was_typed() -> None:
    assert field_value({"type": "boolean"}, "TRUE") is True
    assert field_value({"type": "boolean"}, "n") is False
    assert field_value({"type": "integer"}, "-3") == -3
    assert field_value({"type": "number"}, "3") == 3.0
    assert field_value({"type": "string"}, "as typed") == "as typed"
    assert field_value({"type": "array", "items": {"type": "string"}}, "a, ,b,") == ["a", "b"]
    with pytest.raises(ValueError, match="choose one of a, b"):
        field_value({"type": "string", "enum": ["a", "b"]}, "c")


async def test_a_url_is_opened_only_when_the_person_says_yes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    opened: list[str] = []

    def open_url(url: str) -> bool:
        opened.append(url)
        return True

    monkeypatch.setattr(webbrowser, "open", open_url)
    url = "https://example.com/sign-in"
    assert await Terminal("y").person().visit_url("s", "Sign in", url, "e-1") == FormAnswer("accept")
    assert opened == [url]
    assert (
        "server s asks you to open a page: Sign in\n  https://example.com/sign-in" in capsys.readouterr().out
    )
    assert await Terminal("n").person().visit_url("s", "Sign in", url, None) == FormAnswer("decline")
    assert await Terminal("c").person().visit_url("s", "Sign in", url, None) == FormAnswer("cancel")
    assert await Terminal(EOF).person().visit_url("s", "Sign in", url, None) == FormAnswer("cancel")
    assert opened == [url]


@pytest.mark.parametrize(
    ("lines", "allowed"),
    [
        (("y",), True),
        (("yes",), True),
        (("n",), False),
        (("",), False),
        (("what?", "y"), True),
        ((EOF,), False),
    ],
)
async def test_allow_sampling_is_a_yes_or_no(lines: tuple[object, ...], allowed: bool) -> None:
    terminal = Terminal(*lines)
    assert await terminal.person().allow_sampling("everything", "What is 6 x 7?") is allowed
    assert terminal.questions[0] == "allow? [y] yes, [n] no: "
    assert terminal.asked_while_paused


async def test_the_sampling_preview_is_shown_and_cut_when_long(capsys: pytest.CaptureFixture[str]) -> None:
    await Terminal("n").person().allow_sampling("everything", "short prompt")
    assert capsys.readouterr().out == "server everything wants the model to answer:\n  short prompt\n"
    long = "x" * (PREVIEW_CHARS + 100)
    await Terminal("n").person().allow_sampling("everything", long)
    shown = capsys.readouterr().out.splitlines()[1]
    assert shown == "  " + "x" * PREVIEW_CHARS + "…"
