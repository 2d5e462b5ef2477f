"""A flagged benchmark's A/B tolerance, calibrated on an A/A of the base against a second build of itself.

Two builds of identical code can time several percent apart: where the code, the interpreter's objects
and the environment lie in memory moves a pure-Python kernel's time, and the rounds of each build agree
with one another, so the round test reads that offset as a change. Only a measurement of identical code
shows how large it is on this machine. For each benchmark the rounds flagged (either way), the base is
built a second time (:func:`mmtrack.ab.envs.build_env`, ``twin``) and measured against its first build,
interleaved; the flag stands only when the A/B change clears the threshold widened by what that A/A read.
Benchmarks the rounds did not flag cost nothing: an unchanged verdict needs no calibration.
"""

from __future__ import annotations

import dataclasses
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from .envs import build_env
from .interleave import EARLY_LOOK, ABPlan, ABResult, bench_regex, env_cache, judge, run_rounds

#: Rounds of the A/A of the base against its second build, per side.
AA_ROUNDS = EARLY_LOOK + 1
FLAGS = ("regressed", "improved")


def calibrate(plan: ABPlan, repo: Path, result: ABResult, comparison: Any, policy: Any,
              progress: Callable[[str], None] | None = None) -> Any:
    """``comparison`` with each flagged row re-judged at its A/A-calibrated tolerance, the row's note saying so."""
    flagged = [r for r in comparison.rows if r.verdict in FLAGS]
    if not flagged:
        return comparison
    if progress:
        progress(f"{len({r.benchmark for r in flagged})} benchmarks flagged: A/A of {result.base.commit.sha[:8]} "
                 "against a second build of it, for their tolerance")
    aa = measure_twin(plan, repo, result, flagged, progress)
    aa_rows = {_key(r): r for r in judge(aa, policy).rows}
    rows = tuple(recheck(r, aa_rows.get(_key(r)), aa.rounds, result, policy) if r.verdict in FLAGS else r
                 for r in comparison.rows)
    return dataclasses.replace(comparison, rows=rows)


def measure_twin(plan: ABPlan, repo: Path, result: ABResult, rows: list[Any],
                 progress: Callable[[str], None] | None = None) -> ABResult:
    """:data:`AA_ROUNDS` interleaved rounds of ``rows``' benchmarks: the base's build against a second build of it."""
    base = result.base
    twin_env = build_env(repo, base.commit.sha, env_cache(plan), plan.config, twin=True)
    first = dataclasses.replace(base, label="A", cases={}, environment="", run_seconds=0.0)
    second = dataclasses.replace(base, label="A2", env=twin_env, cases={}, environment="", run_seconds=0.0)
    aa = ABResult(first, second, 0, [], plan.machine, datetime.now(timezone.utc))
    run_rounds(plan, aa, AA_ROUNDS, progress, bench_regex(rows))
    result.seconds += aa.seconds
    return aa


def recheck(row: Any, aa_row: Any, aa_rounds: int, result: ABResult, policy: Any) -> Any:
    """``row`` judged again with its threshold widened by the A/A's offset (the same judge, the same rounds)."""
    if aa_row is None or not aa_row.ratio or aa_row.ratio <= 0:
        return dataclasses.replace(row, verdict="ambiguous", note=_joined(
            row.note, "no A/A of the base against a second build of it to calibrate the tolerance"))
    tolerance = (1 + row.threshold) * math.exp(abs(math.log(aa_row.ratio))) - 1
    again = judge(result, dataclasses.replace(policy, threshold=tolerance))
    new = next((r for r in again.rows if _key(r) == _key(row)), row)
    how = (f"tolerance {tolerance:.1%}: A/A-calibrated, two builds of the base read x{aa_row.ratio:.3f} "
           f"over {aa_rounds} rounds")
    return dataclasses.replace(new, note=_joined(new.note, how))


def _key(row: Any) -> tuple[Any, ...]:
    return row.benchmark, row.params, row.metric


def _joined(note: str, more: str) -> str:
    return f"{note}; {more}" if note else more
