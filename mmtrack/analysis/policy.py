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

#: Commits of a series' history that judge a change against its own noise (``compare --history``).
#: Most false alarms of a 30-commit window were a commit on a runner type the window never showed; in
#: 100 commits such a type has shown itself: on the CI model, false alarms per 100 commits fell from
#: 0.85-1.23 to 0.24-0.26, recall of 20% steps from 0.53-0.55 to 0.44-0.47 (docs/analysis.md).
HISTORY_WINDOW = 100

# Environment events (:mod:`.events`), calibrated on the CI model's suites (scripts/eval_events.py, docs/design/).
#: Points the run-date order must misplace fewer than the commit order: one re-measured commit can be noise.
EVENT_DATE_MARGIN = 3
#: ... and this share of the points the commit order misplaces: on noisy labels both orders misplace many.
EVENT_DATE_GAIN = 0.3
#: ... or a sign test over the group's change points (date-favouring against commit-favouring) this strong.
EVENT_SIGN_ALPHA = 0.001
#: Days apart that the new levels of one environment's change points may begin and still be one shift.
EVENT_DAYS = 2.0
#: Days from a larger event within which a few series' shift joins it: their own date splits scatter more.
EVENT_ATTACH_DAYS = 14.0
#: Commits apart (in commit order) that change points of one benchmark elsewhere may lie and still be one step.
EVENT_REACH = 3
#: Change points an environment-wide group needs (and sibling series that must be seen): fewer is no pattern.
EVENT_MIN_SERIES = 5
#: Share of an environment's analysed series that must step together: a code change rarely moves most of them.
EVENT_SHARE = 0.5
#: Share of the same benchmarks elsewhere that may step there too: more, and the code is the likelier cause.
SIBLING_SHARE = 0.2
#: A move below the threshold but this significant is named as such, not called "unchanged".
SIGNIFICANT_BELOW = 0.001


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
    # The history gate, calibrated with scripts/eval_gate.py on the CI noise model (docs/analysis.md).
    history_z: float = 4.0  # robust between-commit deviations from the segment's level
    # ... given at least this many commits seen (SegmentNoise.seen); a young history has shown its tail hardly at
    # all, and a commit needs history_z * sqrt(history_points / n) to be suspected (30 commits: 5.7); persistence
    # still confirms it. On the CI model, 30 commits of history: false alarms 0.97 -> 0.87 per 100 commits, suites
    # with run frames 0.47 -> 0.32, for 0.03 of recall and none of confirmed recall (docs/analysis.md).
    history_points: int = 60
    # ... and from the nearest commit of the segment (runner levels seen before). Wide, since the held level
    # confirms what this leaves ambiguous. On 6 seeds of the CI model, 2 -> 2.25: false alarms 0.24-0.31 ->
    # 0.18-0.29 per 100 commits; 2.25 -> 2.5: 0.17-0.38 -> 0.15-0.31 (a seventh seed, 3, had 0.38), newest-commit
    # recall of 20% steps 0.01-0.03 lower each time, confirmed recall unchanged (docs/analysis.md).
    history_gap: float = 2.5
    history_alpha: float = 0.01  # the two commits' samples, with history (one outlier sample cost 0.002)
    min_history: int = 5
    # Persistence: ``confirm_agree`` of the first ``confirm_window`` later commits must stay on the
    # new side (past half the deviation) to confirm; once that can no longer happen, refuted.
    # 4 of 4: 2 of 3 let runner phases of a few commits through, and 3 of 3 confirmed 0.06-0.08
    # false alarms per 100 commits on the CI model, against 0.04 with 4 of 4 (docs/analysis.md).
    confirm_window: int = 4
    confirm_agree: int = 4
    # A run whose series moved together (a runner change) explains the suspected changes that moved
    # with it, given at least this many series with history (0: off); :func:`.compare.run_shift`.
    min_suite: int = 10
    # ... and, given the commit of each history value, the runner levels the suite shares are taken out
    # of each series' history before the newest commit is judged (:mod:`.frames`).
    run_frames: bool = True
    # Deterministic counts under callgrind (analysis/deterministic.py): a change beyond this share and beyond this
    # many instructions (or cycles) per op is real at once. A/A runs from one folder read identical counts; the
    # suite moved to another folder moved them by up to 0.08%, or 38 instructions per op (docs/design/callgrind.md).
    deterministic_tolerance: float = 0.002
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


__all__ = ["Evidence", "EVIDENCE", "HISTORY_WINDOW", "ComparePolicy", "EVENT_DATE_MARGIN", "EVENT_REACH", "EVENT_DAYS", "EVENT_DATE_GAIN", "EVENT_SIGN_ALPHA", "EVENT_ATTACH_DAYS",
           "EVENT_MIN_SERIES", "EVENT_SHARE", "SIBLING_SHARE", "SIGNIFICANT_BELOW"]
