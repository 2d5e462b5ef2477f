"""A flagged benchmark's A/B tolerance, calibrated on an A/A of the base against a second build of itself.

Two builds of identical code can time several percent apart: where the code, the interpreter's objects
and the environment lie in memory moves a pure-Python kernel's time, and the rounds of each build agree
with one another, so the round test reads that offset as a change. Only a measurement of identical code
shows how large it is on this machine. For each benchmark the rounds flagged (either way), the base is
built a second time (:func:`mmtrack.ab.envs.build_env`, ``twin``) and measured against its first build,
interleaved; the flag stands only when the A/B change clears the threshold widened by what that A/A read.
Benchmarks the rounds did not flag cost nothing: an unchanged verdict needs no calibration, and a ratio
measured once is kept for the next run against the same base on the same machine.
"""

from __future__ import annotations

import dataclasses
import json
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from .envs import CommitEnv, build_env
from .interleave import MIN_ROUNDS, ABPlan, ABResult, bench_regex, env_cache, judge, round_ratios, run_rounds
from .rule import EQUIVALENCE_MIN_ROUNDS, MODE_GAP

#: Rounds of the A/A of the base against its second build, per side.
AA_ROUNDS = MIN_ROUNDS + 1
#: The most A/A rounds a side: an A/A its rounds leave ambiguous gets two more at a time up to this.
AA_MAX_ROUNDS = 2 * AA_ROUNDS
#: The farthest from 1 an A/A ratio is taken as two builds' offset: layout moves a timing by several percent, the
#: machine's slow state by far more (docs/design/archive/ab-settled-window.md).
AA_MOST_OFFSET = 1 + MODE_GAP
#: A/A rounds after which a flag that stands even at the tolerance the worst of them widens it to needs no more.
AA_EARLY_LOOK = EQUIVALENCE_MIN_ROUNDS
FLAGS = ("regressed", "improved")
#: Beside the second build: per machine, each benchmark's A/A ratio (:func:`load_offsets`).
OFFSETS = "aa-offsets.json"


def calibrate(plan: ABPlan, repo: Path, result: ABResult, comparison: Any, policy: Any,
              progress: Callable[[str], None] | None = None) -> Any:
    """``comparison`` with each flagged row re-judged at its A/A-calibrated tolerance, the row's note saying so.

    The A/A's ratio of each benchmark is kept beside the second build, per machine and benchmark version: the
    next run against the same base on this machine reads it instead of measuring it again; a ratio from an A/A
    stopped early is only a bound, so a flag it does not let stand is measured on all :data:`AA_ROUNDS`."""
    flagged = [r for r in comparison.rows if r.verdict in FLAGS]
    if not flagged or plan.instrument == "callgrind":  # counts carry their own A/A tolerance (analysis.deterministic)
        return comparison
    twin = build_env(repo, result.base.commit.sha, env_cache(plan), plan.config, twin=True)
    known = load_offsets(twin.path, plan.machine)
    missing = [r for r in flagged if not _settled_by(known.get(_name(r, result)), r, result, policy)]
    if missing:
        if progress:
            progress(f"{len({r.benchmark for r in missing})} benchmarks flagged: now an A/A of "
                     f"{result.base.commit.sha[:8]} against a second build of it, up to {AA_MAX_ROUNDS} rounds, to "
                     "widen their threshold by what two builds of one commit read (kept for later runs)")
        known.update(measure_offsets(plan, twin, result, missing, policy, progress))
        save_offsets(twin.path, plan.machine, known)
    rows = tuple(recheck(r, known.get(_name(r, result)), result, policy) if r.verdict in FLAGS else r
                 for r in comparison.rows)
    return dataclasses.replace(comparison, rows=rows)


def measure_offsets(plan: ABPlan, twin: CommitEnv, result: ABResult, rows: list[Any], policy: Any,
                    progress: Callable[[str], None] | None = None) -> dict[str, tuple[float, int]]:
    """Each flagged row's A/A ratio, the base's build against a second build of it, interleaved: :data:`AA_ROUNDS`
    rounds, as bisect's sequential test stops once decided, :data:`AA_EARLY_LOOK` for a row whose flag stands even
    at the tolerance the worst of its A/A rounds so far widens it to (that worst round is kept as its ratio)."""
    base = result.base
    first = dataclasses.replace(base, label="A", cases={}, environment="", run_seconds=0.0)
    second = dataclasses.replace(base, label="A2", env=twin, cases={}, environment="", run_seconds=0.0)
    aa = ABResult(first, second, 0, [], plan.machine, datetime.now(timezone.utc))
    run_rounds(plan, aa, AA_EARLY_LOOK, progress, bench_regex(rows), cap=AA_MAX_ROUNDS)
    offsets = {}
    for row in rows:
        worst = worst_round(aa, row)
        if worst is not None and recheck(row, (worst, aa.rounds), result, policy).verdict == row.verdict:
            offsets[_name(row, result)] = (worst, aa.rounds)
    still = [r for r in rows if _name(r, result) not in offsets]
    if still:
        run_rounds(plan, aa, AA_ROUNDS - aa.rounds, progress, bench_regex(still), cap=AA_MAX_ROUNDS)
        measured = _settled_aa(plan, aa, still, policy, progress)
        offsets.update({_name(r, result): (measured[_key(r)].ratio, aa.rounds) for r in still
                        if _key(r) in measured and _an_offset(measured[_key(r)])})
    result.seconds += aa.seconds
    return offsets


def _settled_aa(plan: ABPlan, aa: ABResult, rows: list[Any], policy: Any,
                progress: Callable[[str], None] | None = None) -> dict[tuple[Any, ...], Any]:
    """The A/A's rows of ``rows``' metrics, those its rounds leave ambiguous given two more rounds at a time up to
    :data:`AA_MAX_ROUNDS` (as :func:`.interleave.settle` does for the A/B rounds)."""
    wanted = {_key(r) for r in rows}
    while True:
        measured = {_key(r): r for r in judge(aa, policy).rows if _key(r) in wanted}
        open_rows = [r for r in measured.values() if r.verdict == "ambiguous"]
        before = aa.rounds
        if not open_rows or before >= AA_MAX_ROUNDS:
            return measured
        run_rounds(plan, aa, min(2, AA_MAX_ROUNDS - before), progress, bench_regex(open_rows), cap=AA_MAX_ROUNDS)
        if aa.rounds == before:  # the budget stopped it
            return measured


def _an_offset(row: Any) -> bool:
    """Whether an A/A row's ratio measures two builds' offset: its rounds decided it, and it lies within the layout's
    reach, not the machine's slow state's. Otherwise no ratio is kept, and the flag it would have judged stays
    ambiguous ("no A/A ... to calibrate") until a later run measures one."""
    return row.ratio is not None and row.verdict != "ambiguous" and _within_layout_reach(row.ratio)


def _within_layout_reach(ratio: float) -> bool:
    """Whether two builds' A/A ``ratio`` lies within :data:`AA_MOST_OFFSET` of 1 either way."""
    return ratio > 0 and abs(math.log(ratio)) <= math.log(AA_MOST_OFFSET)


def _settled_by(offset: tuple[float, int] | None, row: Any, result: ABResult, policy: Any) -> bool:
    """Whether a kept A/A ratio decides ``row``: a full A/A's always, an early-stopped one's (the worst round of
    :data:`AA_EARLY_LOOK`) only when the flag stands at its wider tolerance."""
    if offset is None:
        return False
    return offset[1] >= AA_ROUNDS or recheck(row, offset, result, policy).verdict == row.verdict


def worst_round(aa: ABResult, row: Any) -> float | None:
    """The A/A round ratio of ``row``'s metric farthest from 1 (None without rounds)."""
    ratios = [r for r in round_ratios(aa, (row.benchmark, row.params), row.metric) if r > 0]
    return max(ratios, key=lambda r: abs(math.log(r))) if ratios else None


def recheck(row: Any, offset: tuple[float, int] | None, result: ABResult, policy: Any) -> Any:
    """``row`` judged again with its threshold widened by the A/A's offset (the same judge, the same rounds)."""
    if offset is None:
        return dataclasses.replace(row, verdict="ambiguous", note=_joined(
            row.note, "no A/A of the base against a second build of it to calibrate the tolerance"))
    ratio, rounds = offset
    tolerance = (1 + row.threshold) * math.exp(abs(math.log(ratio))) - 1
    again = judge(result, dataclasses.replace(policy, threshold=tolerance))
    new = next((r for r in again.rows if _key(r) == _key(row)), row)
    how = f"tolerance {tolerance:.1%}: A/A-calibrated, two builds of the base read x{ratio:.3f} over {rounds} rounds"
    return dataclasses.replace(new, note=_joined(new.note, how))


def load_offsets(twin: Path, machine: str) -> dict[str, tuple[float, int]]:
    """The A/A ratios measured before on ``machine`` (an unreadable file: none), less a full A/A's ratio beyond
    :data:`AA_MOST_OFFSET` that an earlier version kept (an early look's worst round is a bound, and may be)."""
    try:
        data = json.loads((twin / OFFSETS).read_text()).get(machine, {})
        kept = {k: (float(v[0]), int(v[1])) for k, v in data.items()}
    except (OSError, ValueError, TypeError, AttributeError, IndexError):
        return {}
    return {k: (ratio, rounds) for k, (ratio, rounds) in kept.items()
            if ratio > 0 and (rounds < AA_ROUNDS or _within_layout_reach(ratio))}


def save_offsets(twin: Path, machine: str, known: dict[str, tuple[float, int]]) -> None:
    path = twin / OFFSETS
    try:
        data = json.loads(path.read_text()) if path.is_file() else {}
    except (OSError, ValueError):
        data = {}
    data = data if isinstance(data, dict) else {}
    data[machine] = {k: list(v) for k, v in known.items()}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    tmp.replace(path)  # atomic: a killed run leaves the old file or the new one


def _name(row: Any, result: ABResult) -> str:
    """The row's benchmark case, metric and benchmark code version: what an A/A ratio holds for."""
    case = result.base.cases.get((row.benchmark, row.params))
    return json.dumps([row.benchmark, row.params, str(row.metric), case.version if case else None])


def _key(row: Any) -> tuple[Any, ...]:
    return row.benchmark, row.params, row.metric


def _joined(note: str, more: str) -> str:
    return f"{note}; {more}" if note else more
