"""The rows a comparison gives: one verdict per metric of one benchmark case, and the comparison that holds them.

Reads no evidence of its own: a :class:`Row` records what the other parts decided (the two samples,
:mod:`.two_sample`; the series' history, :mod:`.history_evidence`; the run, :mod:`.run_part`). Two pieces of
outside evidence re-read a row here: a same-machine A/B run (:func:`settled_by_ab`) and detect's change point at
the same pair (:func:`detect_says`, :func:`reconciled_with_detect`), whose environment events are the run's part.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from ..vocabulary import Direction
from ..results import ChangePoint, Measurement, MetricKey
from .policy import EVIDENCE, ComparePolicy, Evidence

Verdict = Literal[
    "improved", "regressed", "unchanged", "ambiguous", "not comparable", "failed", "fixed", "new", "removed"
]


#: asv-like marks: ``+`` worse, ``-`` better, ``!`` failed, ``*`` fixed, ``x`` not comparable,
#: ``~`` ambiguous (asv prefixes the ratio with ``~``), ``n`` new, ``r`` removed.
MARKS: dict[str, str] = {
    "regressed": "+",
    "improved": "-",
    "failed": "!",
    "fixed": "*",
    "not comparable": "x",
    "ambiguous": "~",
    "unchanged": " ",
    "new": "n",
    "removed": "r",
}


Case = tuple[str, str, MetricKey]  # (benchmark, canonical params, metric): Measurement.case


@dataclass(frozen=True, slots=True)
class Row:
    """One metric of one benchmark case, before and after."""

    benchmark: str
    params: str  # canonical params
    metric: MetricKey
    direction: Direction
    verdict: Verdict
    before: Measurement | None
    after: Measurement | None
    ratio: float | None = None  # after / before (medians)
    p_value: float | None = None
    test: str = ""  # "mann-whitney", "quartiles", "ci-overlap", "range-overlap", "effect-only", ""
    threshold: float = 0.0
    history_z: float | None = None  # |deviation| / robust sd of the recent history
    note: str = ""
    state: Evidence | None = None  # None: judged on two samples alone (no history)
    near_threshold: bool = False  # the effect lies within EDGE_BAND of the threshold

    @property
    def mark(self) -> str:
        return MARKS[self.verdict]

    @property
    def name(self) -> str:
        m = self.after or self.before
        params = dict(m.params) if m else {}
        return f"{self.benchmark}({', '.join(params.values())})" if params else self.benchmark

    @property
    def metric_label(self) -> str:
        m = self.after or self.before
        return (m.display_name if m and m.display_name else self.metric.name) + f" [{self.metric.unit}]"


@dataclass(frozen=True, slots=True)
class Comparison:
    rows: tuple[Row, ...]
    before_label: str = "before"
    after_label: str = "after"
    policy: ComparePolicy = field(default_factory=ComparePolicy)
    # Earlier commits' suspected changes that the after commit decides (confirms or refutes).
    decided: tuple[Row, ...] = ()

    def counts(self) -> dict[str, int]:
        c = Counter(r.verdict for r in self.rows)
        return {v: c[v] for v in MARKS if c[v]}

    def states(self, *verdicts: str) -> dict[str, int]:
        """Rows (or those of ``verdicts``) per evidence state (history verdicts only): a refuted row is unchanged."""
        c = Counter(r.state for r in (self.by_verdict(*verdicts) if verdicts else self.rows) if r.state is not None)
        return {s: c[s] for s in EVIDENCE if c[s]}

    def near_threshold(self) -> int:
        return sum(r.near_threshold for r in self.rows)

    def by_verdict(self, *verdicts: str) -> list[Row]:
        return [r for r in self.rows if r.verdict in verdicts]

    @property
    def regressions(self) -> list[Row]:
        return self.by_verdict("regressed")

    def changed(self) -> list[Row]:
        return [r for r in self.rows if r.verdict != "unchanged"]


def detect_says(verdict: str, note: str, change: ChangePoint) -> tuple[str, str] | None:
    """The verdict and note a pair's row should read given detect's change point at the same pair of the same series
    (reads the stored change point: its kind, ratio, persistence and, from :mod:`.events`, whether an environment
    event holds it); None where the row stands as it is.

    A step an environment event holds is the run's, not the code's: a row that flagged it reads ambiguous, with the
    event's line. A code step detect found where the row did not flag one keeps the row's verdict and says in one line
    why the two differ."""
    if change.extra.get("cause") == "environment":
        event = change.extra.get("event_line") or change.extra.get("event")
        line = f"detect: an environment event, not the code ({event})"
        if verdict in ("regressed", "improved"):
            return "ambiguous", f"{line}; compare alone: {verdict}"
        return verdict, f"{line}; {note}" if note else line
    flagged = {"regression": "regressed", "improvement": "improved"}.get(change.kind)
    if flagged is None or verdict == flagged:
        return None
    step = f"detect: {'persisting ' if change.persists else ''}{change.kind} ×{change.ratio:.2f} at this pair"
    return verdict, f"{step}; compare: {verdict} ({note or 'the two commits alone do not cross the threshold'})"


def reconciled_with_detect(row: Row, change: ChangePoint) -> Row:
    """``row`` as detect's change point at the same pair of the same series bears on it (:func:`detect_says`); an
    environment event's row loses its evidence state, which history gave a change of the code."""
    said = detect_says(row.verdict, row.note, change)
    if said is None:
        return row
    verdict, note = said
    return dataclasses.replace(row, verdict=verdict, note=note, state=None if verdict != row.verdict else row.state)


def _changed(deviation: float, direction: Direction) -> Verdict:
    """The verdict on a move of ``deviation`` (log) from the series' level, for a metric of ``direction``."""
    return "regressed" if (deviation > 0) == (direction is Direction.LOWER) else "improved"


def _flagged(row: Row) -> bool:
    return row.verdict in ("regressed", "improved")


def settled_by_ab(row: Row, state: str, ratio: float | None, p_value: float | None = None, rounds: int = 0) -> Row:
    """``row`` as a same-machine A/B run of its pair settled it (``mmtrack run --confirm``): ``confirmed``, the change
    it measured (a row history left ambiguous reads as that change); ``refuted``, unchanged. The A/B evidence is the
    note now, not history's doubt; any other state leaves the row as history read it."""
    if state == "refuted":
        verdict: Verdict = "unchanged"
    elif state != "confirmed":
        return row
    elif row.verdict in ("regressed", "improved"):
        verdict = row.verdict
    elif ratio and ratio > 0 and ratio != 1:
        verdict = _changed(math.log(ratio), row.direction)
    else:
        return row
    evidence = (f"A/B ×{ratio:.3f}" if ratio else "A/B") + (f", p={p_value:.2g}" if p_value is not None else "") + (
        f", {rounds} rounds" if rounds else "")
    if state == "refuted" and row.verdict in ("regressed", "improved"):
        evidence = f"suspected {row.verdict}; {evidence} refuted it"
    return dataclasses.replace(row, verdict=verdict, state=state, note=evidence)  # type: ignore[arg-type]
