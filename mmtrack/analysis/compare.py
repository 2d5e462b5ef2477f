"""Compare two sets of measurements (before, after): one verdict per metric.

This is the one comparison of mmtrack: ``mmtrack compare``, the end-of-run
analysis of ``mmtrack bench`` and the summary of ``mmtrack run`` all call
:func:`compare_measurements`. Pure functions over :mod:`mmtrack.results` records.

**Two samples, no history** (``bench``, A/B runs, ``compare --history 0``): a row is
flagged (improved / regressed) when

1. **Effect.** The ratio after/before moves beyond the minimum effect in either
   direction: ``max(r, 1/r) > 1 + threshold`` (asv's ``factor``; 10% by default,
   1% for deterministic counters such as instructions/op, overridable per
   benchmark or metric); and
2. **Significance on the samples.** Mann–Whitney U (two-sided, ``alpha`` = asv's
   0.002) when both sides have enough samples for the test to be able to reach
   ``alpha``; otherwise the 99% confidence intervals must not overlap (as asv
   does); with neither samples nor intervals, the effect alone decides.

**With the series' history** (``mmtrack run``, ``compare``): the newest commit is judged
against a noise model of the series' current segment (:func:`.noise.segment_noise`), not only
against the before commit's samples, because consecutive commits of unchanged code on
CI runners differ far more than one commit's samples suggest. The effect is measured
from the segment's level (and must move away from the before commit the same way by half
the threshold, so that a step is this commit's); it must also be significant on the two commits'
samples (at ``history_alpha``; without samples, on their quartiles: :func:`quartile_test`), at least
``history_z`` robust between-commit deviations from
the level (more with fewer than ``history_points`` commits of history), and at least
``history_gap`` of them from *every* commit of the segment: the level
of a runner type the series has visited before is its own noise, while one old spike no
longer hides a real step of another size (the old "beyond every excursion" rule did). A level
visited by one earlier commit only (a one-off spike, a change reverted and re-landed) is
ambiguous until persistence confirms it. With a full window, a commit that z and the gap leave
ambiguous is suspected still where the window's density puts no commit near it, a step from where
they lie (:func:`.noise.unseen_step`): on a series that flips between runner types, the spread spans
them, and z read a step beyond both as a few deviations.
A value back at the level of most commits before the current segment is ambiguous too where the
series had visited the segment's level before (it alternates): that segment was a phase (a run of
commits on another runner type), and against it a return to the usual level looked like a step that
later commits would "confirm". Where it had not (it stepped there; or the gate confirmed the step into
a phase of 5-7 commits, too short for detect, then read with the spread from before that step:
:func:`_confirmed_phase`), the return is a change reverted, judged as a step.
Such a verdict is only **suspected**: later commits **confirm** or **refute** it
(:func:`.noise.follow_up`), and the gate fails on confirmed regressions by default. The level that the
commit and the next ones hold confirms too, where one commit could not prove it (:func:`.noise.held_level`):
a level a few commits of the segment had reached, or one later commit on a faster runner.

**The whole run** (:func:`run_shift`): with at least ``min_suite`` series with history, the median
of their moves against their recent levels is the run's own. On CI each run lands on one runner,
and a runner of another type moves every benchmark of the run at once. A suspected change that the
run made too (the same way, at least :data:`RUN_SHARE` of it) is ambiguous until later commits
decide, and a confirmed one stays ambiguous when every later run moved with it as well: a runner
pool that changed, or a change to everything, which only the same-machine A/B tells apart.
Given the commit of each history value (:class:`RunLabels`), the same suite also takes its runner
levels out of each series' history before a run on the usual runner is judged (:mod:`.frames`): a step
onto a level that only other runner types reached before then stands out. A deterministic series (counts under
callgrind, :mod:`.deterministic`) takes no part in either: no runner moves it, its verdict is its two counts'.

**Contention** (:mod:`.contention`): where either side of a single-threaded CPU-domain case waited for a
CPU (its wall time well beyond its CPU time per op), its wall-clock rows take the verdict of its CPU time per op.

Near the edge: a change that misses the minimum effect by less than :data:`EDGE_BAND`
but passes every other test is **ambiguous**, never a silent unchanged.
Beyond the effect but failing a test: **ambiguous** (``~``). Neutral metrics (ids,
choices) are never flagged. A changed benchmark code version: **not comparable** (``x``).

**Where each part lives** (this module re-exports their public names; import from here):

- :mod:`.rows`: the verdicts, :class:`Row` and :class:`Comparison`, and a row re-read by A/B or by detect;
- :mod:`.two_sample`: the two commits' samples alone (:func:`significance`, :func:`quartile_test`);
- :mod:`.history_evidence`: one pair against its series' history and later commits (:func:`compare_pair`);
- :mod:`.run_part`: the run's shift and frames (:func:`run_shift`, :func:`runs_of`, :func:`judge_in_run`);
- :mod:`.code_part`: every case of a comparison, earlier commits settled later, the pages' steps
  (:func:`compare_measurements`, :func:`decided_in_run`, :func:`series_steps`);
- :mod:`.gate`: what ``--fail-on`` gates on (:func:`failing_rows`, re-exported here).
"""

from __future__ import annotations

from .code_part import (
    StepVerdict,
    compare_measurements,
    decided_by_last,
    decided_in_run,
    series_step_verdicts,
    series_steps,
)
from .gate import FAIL_ON, failing_rows  # noqa: F401 - the gate decides; re-exported for older imports
from .history_evidence import compare_pair, history_columns, series_history, series_history_at, series_later
from .policy import EDGE_BAND, EVIDENCE, HISTORY_WINDOW, ComparePolicy, Evidence
from .rows import MARKS, Case, Comparison, Row, Verdict, detect_says, reconciled_with_detect, settled_by_ab
from .run_part import InRun, RunLabels, RunShift, SuiteColumns, judge_in_run, run_shift, runs_of, suite_runs
from .two_sample import quartile_test, significance, significant_below

__all__ = [
    "MARKS",
    "Case",
    "history_columns",
    "quartile_test",
    "series_history_at",
    "FAIL_ON",
    "Verdict",
    "Evidence",
    "EVIDENCE",
    "EDGE_BAND",
    "ComparePolicy",
    "HISTORY_WINDOW",
    "RunShift",
    "RunLabels",
    "run_shift",
    "decided_by_last",
    "decided_in_run",
    "settled_by_ab",
    "reconciled_with_detect",
    "detect_says",
    "significant_below",
    "series_history",
    "series_history_at",
    "series_later",
    "series_steps",
    "series_step_verdicts",
    "StepVerdict",
    "suite_runs",
    "SuiteColumns",
    "InRun",
    "runs_of",
    "judge_in_run",
    "Row",
    "Comparison",
    "significance",
    "compare_pair",
    "compare_measurements",
    "failing_rows",
]
