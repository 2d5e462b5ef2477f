"""The ``--fail-on`` gate: its words, which words each verb accepts, and both decisions it makes.

A verb that judges rows (``compare``, ``run``, ``bench``, ``continuous``) fails on the rows of a comparison; a verb
that judges change points (``detect``, ``update``) fails on the regressions that persist to the latest commit, and
with ``drift`` on the series that moved beyond the threshold since a baseline (analysis/drift.py). Both read the
same words here, so ``--help``, the check of what a user typed and the exit status cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Protocol, Sequence

from ..errors import EXIT_USAGE, UserError
from ..results import ChangePoint
from ..vocabulary import Direction

#: Every word ``--fail-on`` knows, in the order ``--help`` lists them, with what each one fails on.
MEANING: dict[str, str] = {
    "regression": "a confirmed regression or a newly failing benchmark",
    "suspected": "also a regression the history only suspects so far",
    "ambiguous": "a row the evidence could not decide",
    "failed": "a benchmark that failed",
    "drift": "a series that moved the worse way beyond --min-effect since --baseline",
}
WORDS: tuple[str, ...] = tuple(MEANING)
#: The words a comparison's rows can fail on (drift needs a series' history since a baseline).
ROW_WORDS: tuple[str, ...] = ("regression", "suspected", "ambiguous", "failed")

#: The words each verb accepts: a word whose verdict the verb cannot produce is not offered.
ACCEPTS: dict[str, tuple[str, ...]] = {
    "compare": ROW_WORDS,
    "run": ROW_WORDS,
    "bench": ("regression", "ambiguous", "failed"),  # a run against a run: no history suspects anything
    "continuous": ("regression", "ambiguous", "failed"),  # A/B on one machine decides; nothing stays suspected
    "detect": ("regression", "suspected", "drift"),
    "update": ("regression", "drift"),  # drift: of the series the update touched
}

#: Rows: the verdicts each word gates on. Regressions gate only when confirmed (or judged without history);
#: ``suspected`` opts in to the history's first word.
FAIL_ON: dict[str, frozenset[str]] = {
    "regression": frozenset({"regressed", "failed"}),  # a benchmark that starts failing regressed too
    "suspected": frozenset({"regressed", "failed"}),
    "failed": frozenset({"failed"}),
    "ambiguous": frozenset({"regressed", "failed", "ambiguous"}),
}

#: Change points: the states of a persisting regression each word fails on.
CHANGE_STATES: dict[str, frozenset[str]] = {
    "regression": frozenset({"confirmed"}),
    "suspected": frozenset({"confirmed", "suspected"}),
}


class _Row(Protocol):  # analysis.compare.Row, named by shape: the gate sits below the comparison it reads
    verdict: str
    direction: Direction
    note: str
    state: str | None


def accepted(verb: str) -> tuple[str, ...]:
    """The words ``verb``'s ``--fail-on`` accepts."""
    return ACCEPTS[verb]


def checked(verb: str, words: Iterable[str], where: str | None = None) -> tuple[str, ...]:
    """``words`` as ``verb`` received them, or one line (exit 2) naming the first it cannot gate on; ``where``: the
    command as the user typed it (click's command path), else ``mmtrack VERB``."""
    words = tuple(words)
    allowed = ACCEPTS[verb]
    for word in words:
        if word not in allowed:
            said = "gives no" if word in MEANING else "knows no"
            raise UserError(f"--fail-on {word}: {where or 'mmtrack ' + verb} {said} {word!r} verdict; use {' or '.join(allowed)}",
                            EXIT_USAGE)
    return words


def failing_rows(comparison: Any, fail_on: Iterable[str] = ("regression",)) -> list[Any]:
    """The rows of ``comparison`` (an :class:`~mmtrack.analysis.compare.Comparison`) that make ``--fail-on``
    fail; "failed" gates only newly failing rows.

    History verdicts gate once confirmed (also those of earlier commits that the after commit confirms);
    ``suspected`` also gates on suspected ones. Refuted ones never gate.
    """
    fail_on = tuple(fail_on)
    gates: set[str] = set()
    for name in fail_on:
        if name not in FAIL_ON:
            raise ValueError(f"unknown --fail-on value {name!r}; choose from {', '.join(FAIL_ON)}")
        gates |= FAIL_ON[name]
    opt_in = "suspected" in fail_on
    rows: Sequence[_Row] = (*comparison.rows, *comparison.decided)
    return [
        r
        for r in rows
        if r.verdict in gates
        and r.direction is not Direction.NEUTRAL
        and not (r.verdict == "failed" and r.note == "still failing")
        and (r.state in (None, "confirmed") or (opt_in and r.state == "suspected"))
    ]


def state_of(change: ChangePoint) -> str:
    """``suspected``: a step in the newest commits the next commits have not settled (analysis/newest.py);
    ``confirmed``: proved by the rank test, or confirmed by the next commits."""
    return str(change.extra.get("state", "confirmed"))


def persisting_regressions(changes: Iterable[ChangePoint], state: str) -> list[ChangePoint]:
    """The regressions among ``changes`` that persist to the latest commit, in ``state``."""
    return [c for c in changes if c.kind == "regression" and c.persists and state_of(c) == state]


def failing_changes(changes: Iterable[ChangePoint], fail_on: Iterable[str]) -> list[ChangePoint]:
    """The change points (code changes, environment events left out by the caller) that make ``--fail-on`` fail:
    a persisting regression in a state a given word names."""
    states: set[str] = set()
    for name in fail_on:
        states |= CHANGE_STATES.get(name, frozenset())
    return [c for c in changes if c.kind == "regression" and c.persists and state_of(c) in states]


@dataclass(frozen=True, slots=True)
class Gate:
    """One verb's ``--fail-on``: the words it was given, checked against what the verb accepts."""

    verb: str
    words: tuple[str, ...] = ()

    @classmethod
    def of(cls, verb: str, words: Iterable[str] = ()) -> Gate:
        return cls(verb, checked(verb, words))

    def __bool__(self) -> bool:
        return bool(self.words)

    def rows(self, comparison: Any) -> list[Any]:
        """The rows that fail this gate (compare, run, bench, continuous)."""
        return failing_rows(comparison, self.words) if self.words else []

    def changes(self, changes: Iterable[ChangePoint]) -> list[ChangePoint]:
        """The change points that fail this gate (detect, update)."""
        return failing_changes(changes, self.words)

    def drift(self, report: Any) -> list[Any]:
        """The drifted series that fail this gate (an :class:`~mmtrack.analysis.drift.DriftReport`; None: no
        baseline given): those of alerts marked invalid or won't fix left out."""
        return list(report.gated) if "drift" in self.words and report is not None else []


__all__ = ["ACCEPTS", "CHANGE_STATES", "FAIL_ON", "MEANING", "ROW_WORDS", "WORDS", "Gate", "accepted", "checked",
           "failing_changes", "failing_rows", "persisting_regressions", "state_of"]
