"""Command-line parsing that honours what was typed, and says in one line what it cannot honour.

argparse alone drops options given before a subcommand (the subparser's defaults overwrite them),
reports a misspelled option as "invalid choice" of the subcommand with a page of usage, and takes
the words of an unquoted ``--mcp-stdio server /path -c 1`` as unrelated arguments. Here:

- ``Parser`` raises every error as a one-line ``UsageError`` and never abbreviates options;
- ``MergingSubParsers`` keeps the options given before the subcommand and joins a repeatable option
  given on both sides (``suppress_defaults`` stops the subparser's defaults from overwriting);
- ``check_argv`` walks the arguments before argparse does and names what is wrong: an unknown
  option (with the closest known one), an unknown command, an option the chosen command does not
  take, or a server command whose arguments were not quoted.
"""

from __future__ import annotations

import argparse
import difflib
import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from asyncai.cli.settings import UsageError

SERVER_COMMAND_DEST = "mcp_stdio"
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")
_SHELL_SPECIAL = re.compile(r"[\"\\$`!]")
_TOP_LEVEL = "it is an option of asyncai without a command"


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one-line ``UsageError``s and which never abbreviates
    options (``--mod`` is not ``--model``). Subparsers inherit the class, so they behave the same."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(message.removeprefix("argument "))


if TYPE_CHECKING:
    _SubParsersAction = argparse._SubParsersAction[argparse.ArgumentParser]
else:  # not subscriptable at run time
    _SubParsersAction = argparse._SubParsersAction


class MergingSubParsers(_SubParsersAction):
    """A subcommand whose options add to those given before it: a list option given on both sides
    (``--mcp-stdio A tools --mcp-stdio B``) holds both, in the order typed."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        before = {key: value for key, value in vars(namespace).items() if isinstance(value, list)}
        super().__call__(parser, namespace, values, option_string)
        for key, earlier in before.items():
            later = getattr(namespace, key)
            if later is not earlier and isinstance(later, list):
                setattr(namespace, key, earlier + later)


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommand parsers of ``parser`` by name."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def suppress_defaults(parser: argparse.ArgumentParser) -> None:
    """Options the user did not give leave no value, so they cannot overwrite earlier ones."""
    for action in parser._actions:
        action.default = argparse.SUPPRESS


def known_keys(parser: argparse.ArgumentParser) -> set[str]:
    """Every option's dest over the parser and its subcommands: the keys a settings file may use."""
    parsers = [parser, *subcommands(parser).values()]
    return {
        action.dest
        for each in parsers
        for action in each._actions
        if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)
    }


@dataclass(frozen=True)
class ArgvNotes:
    """What the scan learned that later messages can use."""

    file_hint: str | None = None
    """When run-code's FILE directly followed a ``--mcp-stdio`` command: that command quoted with it,
    for the error if FILE cannot be read (it was probably one of the server's arguments)."""


@dataclass(frozen=True)
class _Option:
    """One option token as argparse will read it: several actions for a cluster such as ``-vi``."""

    spelled: tuple[str, ...]
    actions: tuple[argparse.Action, ...]
    takes_next: bool
    """Whether the next token is this option's value (``--model m``, not ``--model=m`` or ``-pQ``)."""
    value: str | None = None
    """An attached value (``--mcp-stdio=server``)."""


def _match(parser: argparse.ArgumentParser, token: str) -> _Option | None:
    """``token`` as an option of ``parser``, including ``--name=value``, ``-cCODE`` and ``-vi``."""
    options = parser._option_string_actions
    if token.startswith("--"):
        name, equals, value = token.partition("=")
        action = options.get(name)
        if action is None:
            return None
        takes_next = not equals and action.nargs != 0
        return _Option((name,), (action,), takes_next, value=value or None)
    if token in options:
        action = options[token]
        return _Option((token,), (action,), takes_next=action.nargs != 0)
    spelled: list[str] = []
    actions: list[argparse.Action] = []
    for index in range(1, len(token)):
        action = options.get("-" + token[index])
        if action is None:
            return None
        spelled.append("-" + token[index])
        actions.append(action)
        if action.nargs != 0:  # a value-taking short option ends the cluster: the rest is its value
            rest = token[index + 1 :].removeprefix("=")
            return _Option(tuple(spelled), tuple(actions), takes_next=not rest, value=rest or None)
    return _Option(tuple(spelled), tuple(actions), takes_next=False)


def _is_option(parser: argparse.ArgumentParser, token: str) -> bool:
    """Whether argparse reads ``token`` as an option (known or not) rather than as a value."""
    if not token.startswith("-") or token == "-":
        return False
    if _match(parser, token) is not None:
        return True
    return not _NEGATIVE_NUMBER.match(token) and " " not in token


def _quoted(words: Sequence[str]) -> str:
    text = shlex.join(words)
    return shlex.quote(text) if _SHELL_SPECIAL.search(text) else f'"{text}"'


def _closest(word: str, candidates: Sequence[str]) -> str | None:
    close = difflib.get_close_matches(word, candidates, n=1)
    return close[0] if close else None


def _closest_option(name: str, parser: argparse.ArgumentParser) -> str | None:
    """The long option of ``parser`` most like ``name``, compared without the dashes they share."""
    options = {
        option.lstrip("-"): option
        for option, action in parser._option_string_actions.items()
        if option.startswith("--") and not isinstance(action, argparse._HelpAction)
    }
    closest = _closest(name.lstrip("-"), list(options))
    return None if closest is None else options[closest]


@dataclass(frozen=True)
class _Server:
    """A ``--mcp-stdio COMMAND`` the tokens after it may still belong to (when its words were not
    quoted): set by the option, kept over run-code's FILE, cleared by any other token."""

    option: str
    command: str
    next_index: int


class _Scan:
    """One walk over argv: the top-level options, then the subcommand and its options."""

    def __init__(self, parser: argparse.ArgumentParser, argv: Sequence[str]) -> None:
        self.top = parser
        self.argv = list(argv)
        self.commands = subcommands(parser)
        self.parser = parser
        self.command: str | None = None
        self.index = 0
        self.top_options: list[_Option] = []
        self.sub_dests: set[str] = set()
        self.slots = 0
        self.server: _Server | None = None
        self.file: tuple[str, _Server] | None = None
        """run-code's FILE when it directly followed a ``--mcp-stdio`` command."""

    def run(self) -> ArgvNotes:
        while self.index < len(self.argv):
            token = self.argv[self.index]
            if token == "--":
                break  # the rest is positional: argparse judges it
            if not _is_option(self.parser, token):
                self._positional(token)
            elif not self._option(token):
                break
        return self._finish()

    def _option(self, token: str) -> bool:
        """Take the option at ``self.index``; False when its value is missing (argparse says so)."""
        option = _match(self.parser, token)
        if option is None:
            raise self._unknown_option(token)
        if self.parser is self.top:
            self.top_options.append(option)
        else:
            self.sub_dests.update(action.dest for action in option.actions)
        value, step = option.value, 1
        if option.takes_next:
            following = self.argv[self.index + 1 : self.index + 2]
            if not following or _is_option(self.parser, following[0]):
                return False
            value, step = following[0], 2
        self.index += step
        is_server = option.actions[-1].dest == SERVER_COMMAND_DEST
        self.server = _Server(option.spelled[-1], value, self.index) if is_server and value else None
        return True

    def _positional(self, token: str) -> None:
        if self.parser is self.top and token in self.commands:
            self._enter(token)
        elif self.parser is not self.top and self.slots > 0:
            self.slots -= 1
            if self.server is not None:
                self.file = (token, self.server)
        elif self.server is not None:
            raise self._unquoted(self.server)
        elif self.parser is self.top:
            raise self._unknown_command(token)
        else:
            raise UsageError(f"unexpected argument {token!r} for {self.command}")
        self.index += 1

    def _enter(self, command: str) -> None:
        subparser = self.commands[command]
        taken = {action.dest for action in subparser._actions}
        for option in self.top_options:
            for spelled, action in zip(option.spelled, option.actions, strict=True):
                if action.dest not in taken:
                    raise UsageError(f"{command} does not take {spelled} ({_TOP_LEVEL})")
        self.parser, self.command, self.server = subparser, command, None
        self.slots = sum(1 for action in subparser._actions if not action.option_strings)

    def _finish(self) -> ArgvNotes:
        if self.file is None:
            return ArgvNotes()
        token, server = self.file
        if self._sources_besides_file():
            raise self._unquoted(server)
        return ArgvNotes(file_hint=f"{server.option} {_quoted([server.command, token])}")

    def _sources_besides_file(self) -> bool:
        """Whether an option that excludes FILE (run-code's -c, -i, --catalog) was given too."""
        for group in self.parser._mutually_exclusive_groups:
            actions = group._group_actions
            given = {action.dest for action in actions if action.option_strings} & self.sub_dests
            if given and any(not action.option_strings for action in actions):
                return True
        return False

    def _server_words(self, start: int) -> Iterator[str]:
        """The tokens from ``start`` up to the next option this parser knows (or a subcommand).

        A known flag followed by a stray word is taken as the server's too: in
        ``--mcp-stdio server /path -c 1`` the ``1`` cannot be asyncai's, so ``-c`` was not either.
        """
        tokens = self.argv[start:]
        for index, token in enumerate(tokens):
            option = _match(self.parser, token) if token.startswith("-") else None
            following = tokens[index + 1] if index + 1 < len(tokens) else None
            stray = following is not None and not self._is_word_of_ours(following)
            if option is not None and not option.takes_next and option.value is None and stray:
                option = None
            if token == "--" or option is not None or (self.parser is self.top and token in self.commands):
                return
            yield token

    def _is_word_of_ours(self, token: str) -> bool:
        """Whether asyncai reads ``token`` as an option or a subcommand."""
        return _is_option(self.parser, token) or (self.parser is self.top and token in self.commands)

    def _unquoted(self, server: _Server) -> UsageError:
        words = _quoted([server.command, *self._server_words(server.next_index)])
        return UsageError(
            f"{server.option} takes the whole server command as one argument: quote it, "
            f"e.g. {server.option} {words}"
        )

    def _unknown_option(self, token: str) -> UsageError:
        if self.server is not None:
            return self._unquoted(self.server)
        name = token.partition("=")[0] if token.startswith("--") else token
        if self.command is not None and _match(self.top, token) is not None:
            return UsageError(f"{self.command} does not take {name} ({_TOP_LEVEL})")
        for command, subparser in self.commands.items():
            if subparser is not self.parser and _match(subparser, token) is not None:
                return UsageError(f"{name} is an option of {command}: asyncai {command} {name} ...")
        closest = _closest_option(name, self.parser)
        if closest is not None:
            return UsageError(f"unknown option {name} (did you mean {closest}?)")
        command = f"asyncai {self.command}" if self.command else "asyncai"
        return UsageError(f"unknown option {name} (see {command} --help)")

    def _unknown_command(self, token: str) -> UsageError:
        closest = _closest(token, list(self.commands))
        if closest is not None:
            return UsageError(f"unknown command {token!r} (did you mean {closest}?)")
        return UsageError(
            f"unknown command {token!r}: the commands are {', '.join(self.commands)} "
            "(a prompt for the model goes after -p)"
        )


def check_argv(parser: argparse.ArgumentParser, argv: Sequence[str]) -> ArgvNotes:
    """Refuse, in one line, what argparse would misread or drop; see the module docstring."""
    return _Scan(parser, argv).run()
