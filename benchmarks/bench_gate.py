"""bench_gate: what the per-commit gate costs on one run of a 500-series suite.

``RunGate.track_compare_run``: one ``compare_measurements`` of a run (every series' newest commit against
the one before, each with 100 commits of history), the way ``mmtrack run`` and ``mmtrack compare`` judge a
run once its series are read. ``history="alone"`` judges each series alone (no commit labels: the run's
shift only); ``history="frames"`` passes the commit labels, so the run's frames are fitted and each series
is judged in the newest run's frame (:mod:`mmtrack.analysis.frames`). The two side by side give what the
frames cost. ``recorded="asv stats"``: the two commits keep no samples, as asv's results files without
``--record-samples`` (an imported asv history), so each row's medians are tested on their quartiles instead of
Mann-Whitney on the samples. One operation is one comparison of the whole run.

The suite: 500 series of 101 commits whose runs share their runner; 15% of the runs landed on a runner
type 20% slower (each series follows it by its own amount), samples with 1% spread.

``RunDecisions.track_decided_run``: the other half of the gate, what ``mmtrack run --fail-on regression`` fails
on: ``decided_in_run`` over the same kind of suite, every series' 4 commits before the newest re-judged with
the commits after them (``follow_up`` and ``held_level``); 5% of the series stepped up 20% four commits
before the newest, which the newest commit confirms.

Run with ``python3 -m mmtrack bench benchmarks -b gate``. Nothing runs at import.
"""

from __future__ import annotations

import mmtrack
from mmtrack import BenchSampleResult

SERIES = 500
COMMITS = 101  # the newest commit and 100 of history


def _level(rng, slow):
    """One series' medians: 1 ms, each commit on a slower runner (``slow``) by the series' own factor, 1% noise."""
    import numpy as np

    return np.where(slow, 1.2 ** rng.uniform(0.6, 1.4), 1.0) * 1e-3 * (1 + rng.normal(0, 0.01, slow.size))


def _point(rng, s: int, median: float):
    """Series ``s``'s measurement of one commit: 10 samples with 1% spread around ``median``."""
    from mmtrack.measure.metrics import MetricSummary
    from mmtrack.results import Measurement

    return Measurement.from_summary(f"suite.time_{s:03d}", {}, MetricSummary.from_values(
        "timing", "time_per_op", "s", list(median * (1 + rng.normal(0, 0.01, 10)))), version="v1")


def build_run(series: int = SERIES, commits: int = COMMITS, seed: int = 1):
    """(before, after, history, labels) of one run of a synthetic suite sharing its runners."""
    import numpy as np

    from mmtrack.analysis.compare import RunLabels

    rng = np.random.default_rng(seed)
    slow = rng.random(commits) < 0.15
    slow[-2:] = False  # the compared commits ran on the usual runner
    labels = [f"{c:040x}" for c in range(commits)]
    before, after, history, history_labels = [], [], {}, {}
    for s in range(series):
        level = _level(rng, slow)
        last = [_point(rng, s, v) for v in level[-2:]]
        before.append(last[0])
        after.append(last[1])
        history[last[0].case] = [float(v) for v in level[:-1]]
        history_labels[last[0].case] = labels[:-1]
    return before, after, history, RunLabels(labels[-2], labels[-1], history_labels)


def as_asv_stats(m):
    """The measurement as an asv results file without ``--record-samples`` keeps it: no samples (the history
    gate then tests the medians on their quartiles)."""
    import dataclasses

    return dataclasses.replace(m, samples=())


class RunGate:
    params = (["alone", "frames"], ["samples", "asv stats"])
    param_names = ["history", "recorded"]

    def setup(self, history, recorded):
        self.before, self.after, self.history, labels = build_run()
        self.labels = labels if history == "frames" else None
        if recorded == "asv stats":
            self.before, self.after = [as_asv_stats(m) for m in self.before], [as_asv_stats(m) for m in self.after]

    @mmtrack.bench_sample(chunk_size=1, throughput=mmtrack.Throughput.per_operation(SERIES, "series"))
    def track_compare_run(self, ctx, chunk_size, chunk_num):
        from mmtrack.analysis.compare import compare_measurements

        comparison = compare_measurements(self.before, self.after, history=self.history, labels=self.labels)
        assert len(comparison.rows) == SERIES
        return BenchSampleResult(SERIES)


STEPPED = 0.05  # share of the series stepped up 20% at the 5th newest commit (RunDecisions)


def build_tails(series: int = SERIES, commits: int = COMMITS + 4, seed: int = 2):
    """Each series' measurements and commit labels, oldest first (``decided_in_run``'s tails): a suite sharing
    its runners as in :func:`build_run`, the first :data:`STEPPED` of its series 20% slower from the 5th newest
    commit on."""
    import numpy as np

    rng = np.random.default_rng(seed)
    slow = rng.random(commits) < 0.15
    labels = [f"{c:040x}" for c in range(commits)]
    tails = {}
    for s in range(series):
        level = _level(rng, slow)
        if s < STEPPED * series:
            level[-5:] *= 1.2
        points = [_point(rng, s, v) for v in level]
        tails[points[0].case] = (points, labels)
    return tails


class RunDecisions:
    def setup(self):
        self.tails = build_tails()

    @mmtrack.bench_sample(chunk_size=1, throughput=mmtrack.Throughput.per_operation(SERIES, "series"))
    def track_decided_run(self, ctx, chunk_size, chunk_num):
        from mmtrack.analysis.compare import decided_in_run

        decided_in_run(self.tails)
        return BenchSampleResult(SERIES)
