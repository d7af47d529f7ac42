"""Every door gives the same answer: generated and collected snippets, and the programs a real model
wrote in the recorded eval attempts, through every path into the engine, compared with the whole
snippet run on a library scope.

For each program (one or two snippets in one REPL) every door must give the same text for each
snippet (its value, printed output or error, feed numbers aside), the same error flag, the same
REPL state afterwards (each bound name's type and value) and the same variables note.
``make test`` runs a seeded, bounded set; ``make fuzz`` runs many more (``ASYNCAI_FUZZ_EXAMPLES``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings

from tests.differential.doors import DoorRig, Observation, normalized
from tests.differential.snippets import (
    COLLECTED,
    FOUND_BY_FUZZING,
    RECORDED,
    Program,
    bound_names,
    programs,
    state_probe,
)

EXAMPLES = int(os.environ.get("ASYNCAI_FUZZ_EXAMPLES", "20"))
FUZZING = "ASYNCAI_FUZZ_EXAMPLES" in os.environ
FUZZ_TIMEOUT = 120 + 2 * EXAMPLES
"""Seconds for ``make fuzz``'s run: the suite's 120, and 2 more a program (about 0.5 s each
here); the suite's limit alone stopped any run of more than about 150."""


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DoorRig]:
    with DoorRig.running(tmp_path_factory.mktemp("doors")) as running:
        yield running


def differences(observed: dict[str, Observation]) -> list[str]:
    """What each door answered that the first (the reference) did not."""
    (_, reference), *others = observed.items()
    found = []
    for name, seen in others:
        for number, (want, got) in enumerate(zip(reference.answers, seen.answers, strict=False), 1):
            if normalized(got.text) != normalized(want.text):
                found.append(f"{name}, snippet {number}:\n  want {want.text!r}\n  got  {got.text!r}")
            elif None not in (want.is_error, got.is_error) and got.is_error != want.is_error:
                found.append(f"{name}, snippet {number}: is_error {got.is_error}, want {want.is_error}")
        if len(seen.answers) != len(reference.answers):
            found.append(
                f"{name}: {len(seen.answers)} answers, want {len(reference.answers)}: {seen.answers}"
            )
            continue
        want_state, got_state = reference.state, seen.state
        if (
            want_state is not None
            and got_state is not None
            and normalized(got_state.text) != normalized(want_state.text)
        ):
            found.append(f"{name}, state after:\n  want {want_state.text!r}\n  got  {got_state.text!r}")
        for number, (want_note, got_note) in enumerate(zip(reference.notes, seen.notes, strict=True), 1):
            if got_note != want_note:
                after = "the state probe" if number > len(reference.answers) else f"snippet {number}"
                found.append(
                    f"{name}, variables note after {after}:\n  want {want_note!r}\n  got  {got_note!r}"
                )
    return found


def check(rig: DoorRig, program: Program) -> None:
    observed = rig.observe(program, state_probe(bound_names(program)))
    found = differences(observed)
    assert not found, f"program:\n{program}\n\n" + "\n".join(found)


FIXED = {
    **{f"found-by-fuzzing-{n}": program for n, program in enumerate(FOUND_BY_FUZZING)},
    **{f"collected-{n}": Program((code,)) for n, code in enumerate(COLLECTED)},
    **{f"recorded-{n}": Program((code,)) for n, code in enumerate(RECORDED)},
}
"""The programs every run checks, each a test of its own: the recorded ones grow with every eval run,
and one test for all of them outgrew the suite's time limit."""


@pytest.mark.parametrize("program", list(FIXED.values()), ids=list(FIXED))
def test_every_door_gives_the_same_answer_to_a_fixed_program(rig: DoorRig, program: Program) -> None:
    check(rig, program)


@pytest.mark.timeout(FUZZ_TIMEOUT if FUZZING else 120)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not FUZZING,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(program=programs())
def test_every_door_gives_the_same_answer(rig: DoorRig, program: Program) -> None:
    check(rig, program)
