"""Replies that are no answer (empty, a program instead of an answer, cut at a colon), the nudge that
asks again, and the reply when there is none. Pure functions."""

from __future__ import annotations

import ast
import re
from typing import Literal

from asyncai.backend.config import NO_ANSWER_TEXT
from asyncai.backend.decoding import PARSED_AS
from asyncai.humanize import one_line

LAST_RESULT_PREVIEW_CHARS = 500
UnfinishedReply = Literal["empty", "code", "cut_short"]
"""Why a reply is no answer (``unfinished_reply``): it has no text; it shows a program instead of
answering from the turn's tool results; it ends at a colon, before what it announced."""

_FENCED = re.compile(r"```([\w+-]*)[ \t]*\n(.*?)```", re.S)
_PROGRAM_NODES = (ast.Call, ast.Assign, ast.AugAssign, ast.Import, ast.ImportFrom, ast.For,
                  ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.Await)  # fmt: skip


def _is_program(code: str) -> bool:
    """Whether ``code`` is Python that does something (a value shown in a fence, such as a dict or
    a list of file names, is no program)."""
    try:
        tree = ast.parse(code, PARSED_AS)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return any(isinstance(node, _PROGRAM_NODES) for node in ast.walk(tree))


def _shows_program(reply: str) -> bool:
    """Whether ``reply`` has a Python (or untagged) fenced block that is a program."""
    fenced = _FENCED.findall(reply)
    return any(lang in ("", "python", "python3", "py") and _is_program(code) for lang, code in fenced)


def unfinished_reply(reply: str, *, code_is_no_answer: bool) -> UnfinishedReply | None:
    """Why ``reply`` (stripped) is no answer a user can read, or ``None`` when it is one. A program
    in a fenced block counts only with ``code_is_no_answer``: the turn ran a tool, so the answer
    was to come from its results (a user who asked for code gets it), and the reply's code does
    not run (it does in the text protocol)."""
    if not reply:
        return "empty"
    if code_is_no_answer and _shows_program(reply):
        return "code"
    if reply.endswith(":"):
        return "cut_short"
    return None


_UNFINISHED_OPENINGS: dict[UnfinishedReply, str] = {
    "empty": "Your reply was empty.",
    "code": "Your reply shows a program instead of an answer, and a program in a reply is not run.",
    "cut_short": "Your reply stopped at a colon, before what it announced.",
}


def unfinished_reply_nudge(why: UnfinishedReply, code_tool: str | None, question: str, *,
                           text_protocol: bool = False, after_failure: bool = False) -> str:  # fmt: skip
    """The user message after an unfinished reply with rounds left: the question again, since a
    small model that went astray after a tool result has often lost it, and how to go on.
    ``after_failure``: the last call failed, so there is nothing to answer from yet (a model told
    to answer from the results above then invents one)."""
    failed = "tool call" if code_tool is None else "program"
    opening = _UNFINISHED_OPENINGS[why] + (
        f" Your last {failed} failed (the error is above)." if after_failure else ""
    )
    asked = f"{opening} The question was: {one_line(question, LAST_RESULT_PREVIEW_CHARS)}\n"
    if after_failure:
        if code_tool is None:
            retry = "Call the tool again with corrected arguments"
        elif text_protocol:
            retry = "Reply with the corrected ```python program"
        else:
            retry = f"Call {code_tool} with the corrected program"
        return f"{asked}{retry}, or, if it cannot be fixed, say what went wrong."
    if code_tool is None:
        more = "call a tool"
    else:
        more = "reply with a ```python program" if text_protocol else f"call {code_tool}"
    return f"{asked}Answer it from the results above, in plain words, or {more} if you need more."


def no_answer_text(last_result: str | None) -> str:
    """The reply when the model gave none: never empty, and with the last tool result if there was one."""
    if last_result is None or not last_result.strip():
        return NO_ANSWER_TEXT
    shown = one_line(last_result, LAST_RESULT_PREVIEW_CHARS)
    return f"{NO_ANSWER_TEXT[:-1]}; the last tool result was: {shown})"
