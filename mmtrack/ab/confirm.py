"""``mmtrack run --confirm``: suspected regressions re-measured A/B, each confirmed or refuted.

History alone only *suspects* a regression (state ``suspected``): the new commit was
judged against the previous one measured on this machine and the series' own recent
noise. Here the previous commit and this one are built and measured interleaved, on
this machine, for the suspected benchmarks only, and every suspected row becomes:

- ``confirmed``: the A/B comparison regresses the same metric too;
- ``refuted``: the A/B comparison finds it unchanged, or changed the other way;
- ``suspected`` (kept): the A/B comparison cannot tell (ambiguous, failed, missing).

With ``--confirm-ambiguous`` the rows history could not decide (``ambiguous``: a move beyond the threshold to a
level the series has visited, a young history, samples that do not differ) are re-measured too, and become
``confirmed`` (the A/B run measures a change: the row now reads as that change), ``refuted`` (it measures none)
or stay ``ambiguous``.

The rows go in order of what an A/B run is most worth: suspected before ambiguous, a move the worse way before one
the better way, the larger move first. ``--confirm-max N`` keeps the first N benchmarks of that order, so a large
suite's many ambiguous rows cost a bounded run (the time of one round grows with the benchmarks in it; the
budget bounds only the rounds).

Each verdict is stored with its evidence (A/B ratio, p-value, rounds) in ``ab_verdict``,
tied to the stored A/B pair, for the pages. The rounds stop once ``budget`` seconds
are spent (at least one round per side always runs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

SUSPECTED, CONFIRMED, REFUTED, AMBIGUOUS = "suspected", "confirmed", "refuted", "ambiguous"
CHANGES = ("regressed", "improved")


@dataclass(frozen=True, slots=True)
class Confirmation:
    row: Any  # the history row re-measured (analysis.compare.Row): suspected, or ambiguous
    state: str
    ratio: float | None
    p_value: float | None
    rounds: int
    note: str = ""

    def settled(self) -> tuple[str, str] | None:
        """(verdict, state) the row reads once the A/B run settled it (:func:`..analysis.compare.settled_by_ab`, as
        the gate and ``compare`` read it); None while it is undecided."""
        from ..analysis.compare import settled_by_ab

        if self.state not in (CONFIRMED, REFUTED):
            return None
        row = settled_by_ab(self.row, self.state, self.ratio, self.p_value, self.rounds)
        return row.verdict, row.state  # type: ignore[return-value]


@dataclass(slots=True)
class ConfirmReport:
    before: str
    after: str
    confirmations: list[Confirmation] = field(default_factory=list)
    seconds: float = 0.0
    pair_id: int | None = None
    skipped: str = ""  # why nothing was re-measured


def rows_to_confirm(comparison: Any, *, ambiguous: bool = False) -> list[Any]:
    """Rows that history alone flagged: ``state == "suspected"`` where compare sets states, else the regressed rows
    of a history comparison; with ``ambiguous``, also the rows it could not decide (verdict ``ambiguous``)."""
    rows = []
    for r in comparison.rows:
        state = getattr(r, "state", None)
        if state == SUSPECTED or (state is None and r.verdict == "regressed") or (ambiguous and r.verdict == AMBIGUOUS):
            rows.append(r)
    return rows


def by_priority(rows: Sequence[Any]) -> list[Any]:
    """``rows`` most worth an A/B run first: suspected before ambiguous (a suspected row is what the gate may
    fail on), a move the worse way before one the better way, then the larger move; rows without a ratio last."""
    from ..vocabulary import Direction

    def key(r: Any) -> tuple[int, int, float]:
        ratio = r.ratio if r.ratio and r.ratio > 0 and math.isfinite(r.ratio) else None
        worse = ratio is not None and ((r.direction == Direction.LOWER and ratio > 1)
                                       or (r.direction == Direction.HIGHER and ratio < 1))
        return int(r.verdict == AMBIGUOUS), int(not worse), -abs(math.log(ratio)) if ratio else math.inf

    return sorted(rows, key=key)


def within_cap(rows: Sequence[Any], max_benchmarks: int | None) -> tuple[list[Any], list[Any]]:
    """(kept, left out): the rows of the first ``max_benchmarks`` benchmarks in ``rows``' order (a benchmark's rows
    are measured together, so they go together); None keeps them all."""
    if max_benchmarks is None:
        return list(rows), []
    chosen: set[str] = set()
    kept, left = [], []
    for r in rows:
        if r.benchmark not in chosen and len(chosen) < max_benchmarks:
            chosen.add(r.benchmark)
        (kept if r.benchmark in chosen else left).append(r)
    return kept, left


def state_for(history_row: Any, ab_row: Any | None) -> str:
    """The A/B verdict decides: the same change confirms, none or the opposite one refutes (a suspected
    improvement that the A/B run measures as a regression was the history's noise: the before commit read
    slow), anything else (ambiguous, failed) leaves it suspected. A row history left ambiguous is confirmed
    by any change the A/B run measures, refuted by none, and stays ambiguous otherwise."""
    undecided = AMBIGUOUS if history_row.verdict == AMBIGUOUS else SUSPECTED
    if ab_row is None:
        return undecided
    if history_row.verdict == AMBIGUOUS:
        return CONFIRMED if ab_row.verdict in CHANGES else REFUTED if ab_row.verdict == "unchanged" else undecided
    if ab_row.verdict == history_row.verdict:
        return CONFIRMED
    if ab_row.verdict in ("unchanged", *CHANGES):
        return REFUTED
    return SUSPECTED


def confirm(project: Path, config: Path | None, machine: str, before: str, after: str, rows: Sequence[Any],
            rounds: int, budget: float | None, round_alpha: float | None = None,
            progress: Callable[[str], None] | None = None) -> tuple[ConfirmReport, Any]:
    """Re-measure ``before`` and ``after`` A/B for ``rows``' benchmarks; (report, A/B result).
    ``round_alpha``: the significance the rounds must reach (None: :data:`.interleave.ROUND_ALPHA`)."""
    from .interleave import bench_regex, make_plan, measure_pair
    from .verdicts import pair_verdicts

    report = ConfirmReport(before, after)
    plan, repo = make_plan(project, config, machine, bench_regex(rows), rounds)
    plan.budget = budget
    plan.max_rounds = 2 * rounds
    result = measure_pair(plan, repo, before, after, progress)
    comparison = pair_verdicts(plan, repo, result, confirm_policy(round_alpha), progress)
    report.confirmations = confirmations(rows, comparison, len(result.order) // 2)
    report.seconds = result.seconds
    return report, result


def confirm_policy(round_alpha: float | None = None) -> Any:
    """The A/B policy of ``--confirm``: the history's own threshold (compare's default), since the A/B run settles
    what history suspected at it; the A/B rule and its A/A tolerance as ``continuous`` applies them."""
    from ..analysis.compare import ComparePolicy
    from .verdicts import ab_policy

    return ab_policy(ComparePolicy().threshold, round_alpha)


def confirmations(rows: Sequence[Any], comparison: Any, rounds: int) -> list[Confirmation]:
    """Each history row in ``rows`` settled by the A/B ``comparison`` of its pair (:func:`state_for`), the A/B row's
    words as its note."""
    by_case = {(r.benchmark, r.params, r.metric): r for r in comparison.rows}
    found = []
    for row in rows:
        ab = by_case.get((row.benchmark, row.params, row.metric))
        note = ab.note if ab else "not measured in the A/B run"
        if ab is not None and {ab.verdict, row.verdict} == set(CHANGES):  # the other way: say so
            note = "; ".join(filter(None, [f"the A/B run measured it {ab.verdict}, history {row.verdict}", note]))
        elif row.verdict == AMBIGUOUS:
            why = f"history left it ambiguous ({row.note})" if row.note else "history left it ambiguous"
            note = "; ".join(filter(None, [f"the A/B run measured it {ab.verdict}" if ab else "", why, note]))
        found.append(Confirmation(row, state_for(row, ab), ab.ratio if ab else None, ab.p_value if ab else None,
                                  rounds, note=note))
    return found


def store_report(store: Any, report: ConfirmReport, result: Any, machine: str, environment: str,
                 suite: str = "") -> None:
    """The A/B pair and one ``ab_verdict`` per re-measured row, with its evidence."""
    from ..store.models import ABVerdict
    from .record import record_pair

    report.pair_id = record_pair(store, result, "confirm", suite)
    now = datetime.now(timezone.utc)
    with store.session() as session:
        for c in report.confirmations:
            session.add(ABVerdict(
                pair_id=report.pair_id, machine=machine, environment=environment, benchmark=c.row.benchmark,
                params=c.row.params, section=c.row.metric.section, metric=c.row.metric.name, unit=c.row.metric.unit,
                before_sha=report.before, after_sha=report.after, state=c.state, ratio=c.ratio, p_value=c.p_value,
                rounds=c.rounds, note=c.note, created_at=now,
            ))
        session.commit()


def describe(c: Confirmation) -> str:
    ratio = f"×{c.ratio:.3f}" if c.ratio else "no ratio"
    p = f", p={c.p_value:.2g}" if c.p_value is not None else ""
    note = f"; {c.note}" if c.note else ""
    return f"{c.state}: {c.row.name} {c.row.metric_label}: A/B {ratio}{p}, {c.rounds} rounds{note}"
