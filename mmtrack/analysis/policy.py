"""How strict a comparison is (:class:`ComparePolicy`), and the states a verdict with history goes through.

The knobs of :mod:`.compare` and of the series' noise model (:mod:`.noise`) in one place, apart from both, since
both read them (the JSON report shows the policy that judged it).
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field
from typing import Literal, Mapping

from ..results import MetricKey

#: How far a history verdict has got. ``suspected``: the commit's history alone flags it;
#: ``confirmed``: later commits (or a same-machine A/B re-measurement) agree; ``refuted``: they
#: do not. ``Row.state`` is None for a two-sample comparison without history.
Evidence = Literal["suspected", "confirmed", "refuted"]
EVIDENCE: tuple[Evidence, ...] = ("suspected", "confirmed", "refuted")

#: The order in which ``mmtrack compare`` lists verdicts, worst first (its tables and the pages' compare view).
VERDICT_ORDER = ("failed", "regressed", "ambiguous", "improved", "fixed", "not comparable", "new", "removed", "unchanged")

#: Commits of a series' history that judge a change against its own noise (``compare --history``): enough for a
#: runner type the series visits to have shown itself.
HISTORY_WINDOW = 100

# Environment events (:mod:`.events`), calibrated on the CI model's suites (scripts/eval_events.py, docs/design/).
#: Points the run-date order must misplace fewer than the commit order: one re-measured commit can be noise.
EVENT_DATE_MARGIN = 3
#: ... and a sign test over the group's change points (date-favouring against commit-favouring) this strong: on
#: the real histories the sign test decided every event the old share-of-gain test did (docs/design/analysis.md).
EVENT_SIGN_ALPHA = 0.001
#: Days apart that the new levels of one environment's change points may begin and still be one shift.
EVENT_DAYS = 2.0
#: Days from a larger event within which a few series' shift joins it: their own date splits scatter more.
EVENT_ATTACH_DAYS = 14.0
#: Commits apart (in commit order) that change points of one benchmark elsewhere may lie and still be one step.
EVENT_REACH = 3
#: Runs of old commits re-measured after an event's date that read its run's part (and call old commits included):
#: one is a stray (conda: one late run between the levels), two agree (docs/design/analysis.md).
RERUNS = 2
#: Change points an environment-wide group needs (and sibling series that must be seen): fewer is no pattern.
EVENT_MIN_SERIES = 5
#: Share of an environment's analysed series that must step together: a code change rarely moves most of them.
EVENT_SHARE = 0.5
#: Share of the same benchmarks elsewhere that may step there too: more, and the code is the likelier cause.
SIBLING_SHARE = 0.2
#: A move below the threshold but this significant is named as such, not called "unchanged".
SIGNIFICANT_BELOW = 0.001


# The rules' tuning constants, one reason each; how each was chosen: docs/design/analysis.md.
# compare
#: Percentage points within which a missed threshold is 'at the edge' (ambiguous), capped at half the threshold.
EDGE_BAND = 0.01
#: Share of a series' move its whole run must have made the same way to explain it (RunShift).
RUN_SHARE = 0.5
#: Samples a side needs before its quartiles stand in for them in the significance test.
QUARTILE_MIN_COUNT = 3
# detect
#: Robust sigmas beyond which a side's commits leave the second rank test (one-off levels).
MAIN_LEVEL_Z = 4.0
#: Factor on that second test's p-value: leaving commits out must pay for itself.
MAIN_LEVEL_PRICE = 30.0
#: Commits on each side of a refinement window whose residuals take part in its fit.
REFINE_CONTEXT = 30
#: Refinement passes at most; each moves a point up to ``reach`` commits.
REFINE_PASSES = 3
#: A step is settled only beyond this many 90th percentiles of its sides' absolute residuals.
SETTLE_Z = 2.0
#: Newest commits judged by the per-commit gate's rules (suspected, then settled by the next ones): the rank test
#: proves a step only once this many commits hold it.
NEWEST_COMMITS = 5
#: Log likelihood ratio of "a step" that the newest commits together, each within the series' own noise, must reach.
NEWEST_EVIDENCE = 3.5
#: ... where each of them lies beyond the threshold the same way: few A/A tails hold so (docs/design/analysis.md).
NEWEST_EVIDENCE_HELD = 2.0
#: Newest commits, each beyond the threshold, that hold a step onto a level the series visits or just after one commit
#: there: 2 can be a runner's visit; 3 or more are rarely one (docs/design/analysis.md).
NEWEST_HELD_VISITED = 3
#: Commits before the newest ones read for a level the series reached before (a step detect missed, read at its tail).
NEWEST_RECENT = 10
#: ... and how many of them beyond the threshold that way show it: more left a revert's missed step, fewer cost recall.
NEWEST_RECENT_SEEN = 4
#: Commits of the current segment before a newest level is read against its density: a young one has not shown its
#: runner levels yet (one step's tail read as the next step).
NEWEST_SEGMENT = 30
#: A series that only gained newer commits is searched from its last stored step on when that step lies this many
#: commits or more before the newest: a step nearer the newest still moves as commits arrive (refinement's
#: bandwidth and settling read the segment after it), so that series is searched whole.
KEPT_STEP_MIN_AFTER = 50
#: ...and when every stored step was proved at this p-value: a weaker one may drop out of, or move in, the whole
#: series' search as commits arrive (its candidates come from the rank statistic of the whole series), so that
#: series is searched whole (scripts/check_last_segment.py; docs/design/nightly-update-profile.md).
KEPT_STEP_MAX_P = 1e-12
# frames
#: A run within this (log) of the history's median shift ran on the usual runner.
RUN_SETTLED = 0.03
#: Runs of another runner type the history must hold before a run of that type is judged in its frame.
KNOWN_VISITS = 2
#: Sensitivities stay within [0, BETA_MAX]: a series never moves against its runner.
BETA_MAX = 3.0
#: Below this spread (log) of the history's shifts the suite never changed runner: sensitivity 1.
MIN_SHIFT_SPREAD = 0.01
# noise
#: Share of the window's density spread flat: a level no commit reached is unlikely, not impossible.
UNSEEN_FLOOR = 0.001
#: Step sizes weighed, log-evenly from the threshold to 100%, by the density's step evidence.
UNSEEN_SIZES = 25
#: Log likelihood ratio that suspects a commit whatever z and the gap say, where no commit came near; the newest
#: commits read together, whatever each of them did, and a newest step the other way that replaces a suspected one
#: (analysis/newest.py).
UNSEEN_BAR = 6.5
#: Newest commits of the history that must not already lie beyond the threshold the same way.
UNSEEN_QUIET = 3
#: Share of the segment's commits that may lie at a held new level for persistence to confirm it.
NEW_LEVEL_SEEN = 0.03
#: Deviations (the usual runner's MAD) within which a commit lies at that level.
NEW_LEVEL_RADIUS = 1.0
#: More than this share at a level shows a runner type the series visits.
NEW_LEVEL_OFTEN = 0.09
#: ... or a tight level: this share of the commits within NEW_LEVEL_SPREAD lies within the radius.
NEW_LEVEL_TIGHT = 0.5
#: Deviations that bound the neighbourhood the tight-level test reads.
NEW_LEVEL_SPREAD = 2.5
#: ... or a level held this many commits in a row.
NEW_LEVEL_RUN = 2
#: Next commits that may fall short of the threshold when a level no commit came near confirms.
NEW_LEVEL_UNSEEN_MISSES = 1
#: Commits before the segment at its level that show a series visits it (alternates): fewer, a return is a revert.
ALTERNATION_VISITS = 6
#: ... of which this many in a row: a level visited one commit at a time is a runner's strays, not a phase it holds.
ALTERNATION_RUN = 2
#: Commits a phase at the end of the history needs for segment_noise to split it off (detect's 8); a shorter one whose
#: step the gate confirmed is read with the spread of the segment before that step (history_evidence._confirmed_phase).
SHORT_PHASE = 8
#: The usual runner's and commit-to-commit spreads (in thresholds) from which the next commits cannot confirm: real CI
#: runners hold such a series 4-6 commits away from its level and leave, as a step holds (scripts/real_ci_noise.py).
PHASE_SPREAD = 1.0
# placement
#: Commits from the agreed commit within which a change point is the same step, and may move.
ALIGN_REACH = 8
#: Commits on the wrong side of the split the agreed commit may cost beyond the series' own split.
ALIGN_SLACK = 1
#: Other places that must name the agreed commit: one against one is a disagreement.
ALIGN_PLACES = 2
# ranking
#: A change point smaller than this (relative) is a small move: summarised, not listed first.
SMALL_MOVE = 0.05
#: Commits by which two places' change points of one benchmark may differ and still agree.
AGREE_REACH = 3


@dataclass(frozen=True, slots=True)
class ComparePolicy:
    """How strict the comparison is.

    ``thresholds`` maps fnmatch patterns to a minimum effect; a pattern is tried
    against the benchmark name, the metric name, ``str(MetricKey)`` and
    ``"benchmark:metric name"``; the first matching pattern wins, before the
    deterministic-counter and default thresholds.
    """

    threshold: float = 0.10
    counter_threshold: float = 0.01
    counter_sections: tuple[str, ...] = ("counters",)
    # Counters that do not depend on timing: same code, same count. Cycles, task-clock,
    # cache and branch misses vary from run to run and keep the default threshold.
    deterministic_counters: tuple[str, ...] = ("instructions", "branches")
    thresholds: Mapping[str, float] = field(default_factory=dict)
    alpha: float = 0.002
    # The history gate, calibrated with scripts/eval_gate.py on the CI noise model (docs/design/analysis.md).
    history_z: float = 4.0  # robust between-commit deviations from the segment's level
    # ... given this many commits seen; a younger history needs history_z * sqrt(history_points / n): its tail is unseen.
    history_points: int = 60
    # ... and from the nearest commit of the segment (runner levels seen before): wide, as the held level confirms.
    history_gap: float = 2.5
    history_alpha: float = 0.01  # the two commits' samples, with history (one outlier sample cost 0.002)
    min_history: int = 5
    # Persistence: ``confirm_agree`` of the first ``confirm_window`` later commits must stay on the
    # new side (past half the deviation) to confirm; once that can no longer happen, refuted. Fewer let
    # runner phases of a few commits through.
    confirm_window: int = 4
    confirm_agree: int = 4
    # A run whose series moved together (a runner change) explains the suspected changes that moved
    # with it, given at least this many series with history (0: off); :func:`.compare.run_shift`.
    min_suite: int = 10
    # ... and, given the commit of each history value, the runner levels the suite shares are taken out
    # of each series' history before the newest commit is judged (:mod:`.frames`).
    run_frames: bool = True
    # Deterministic counts under callgrind (analysis/deterministic.py): a change beyond this share and beyond this
    # many instructions (or cycles) per op is real at once. An unrelated one-line edit moved an untouched case by
    # 0.41% through memory layout, so a 1% change can read 0.59%: half-way (docs/design/callgrind.md).
    deterministic_tolerance: float = 0.005
    deterministic_floor: float = 64.0
    # ... est_cycles: beyond this share it is suspected only: in continuous, two builds of one commit moved
    # est_cycles and L1 data misses of unchanged sortedcontainers benchmarks while their instructions held
    # (docs/design/callgrind.md). Misses within this many per op are not worth a note.
    layout_tolerance: float = 0.05
    miss_floor: float = 1.0
    # Same-machine A/B: the significance its round test must reach (None: the A/B default,
    # mmtrack.ab.interleave.ROUND_ALPHA); `continuous --round-alpha`.
    round_alpha: float | None = None

    def z_needed(self, seen: int) -> float:
        """The robust deviations from the level that make a commit suspected, given ``seen`` commits of history."""
        return self.history_z * math.sqrt(max(1.0, self.history_points / max(seen, 1)))

    def threshold_for(self, benchmark: str, metric: MetricKey) -> float:
        names = (benchmark, metric.name, str(metric), f"{benchmark}:{metric.name}")
        for pattern, value in self.thresholds.items():
            if any(fnmatch.fnmatchcase(n, pattern) for n in names):
                return float(value)
        if metric.section in self.counter_sections and metric.name in self.deterministic_counters:
            return self.counter_threshold
        return self.threshold


__all__ = ["Evidence", "EVIDENCE", "HISTORY_WINDOW", "ComparePolicy", "EVENT_DATE_MARGIN", "EVENT_REACH", "EVENT_DAYS", "EVENT_SIGN_ALPHA", "EVENT_ATTACH_DAYS",
           "EVENT_MIN_SERIES", "EVENT_SHARE", "SIBLING_SHARE", "SIGNIFICANT_BELOW"]
