"""Generated histories with known steps: for the publish and detect benchmarks, tests and the demo screenshot.

Not a benchmark and not part of the wheel: tests and the timing scripts import it as ``benchmarks.synthetic_history``.

The noise follows what DESIGN.md measured on real CI: little spread inside a
commit, a level that jumps between commits. Steps are injected at known commits
and returned as :class:`ChangePoint` records (ground truth, method
``"synthetic"``), so a page shows exactly where a regression was put.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from mmtrack.measure.metrics import Direction, MetricFormat, default_direction
from mmtrack.publish.model import SiteConfig, SiteModel
from mmtrack.results import ChangePoint, CommitInfo, Measurement, MetricKey, SeriesKey, SeriesPoint, canonical_params

METRICS = (
    (MetricKey("timing", "time_per_op", "s"), 2e-4, MetricFormat.NUMBER),
    (MetricKey("custom", "bandwidth", "GiB/s"), 12.0, MetricFormat.NUMBER),
    (MetricKey("perf", "instructions", "count"), 4.2e6, MetricFormat.INTEGER),
    (MetricKey("perf", "cache_misses", "count"), 1.8e4, MetricFormat.INTEGER),
    (MetricKey("custom", "peak_memory", "bytes"), 6.4e7, MetricFormat.INTEGER),
)
_MODULES = ("linalg", "fft", "io", "sparse", "stats", "interp", "signal", "ndimage")
_CLASSES = ("Solve", "Transform", "Read", "Reduce", "Filter", "Resample", "Sort", "Parse")


def synthetic_commits(n: int, seed: int = 0, start: datetime | None = None) -> list[CommitInfo]:
    rng = np.random.default_rng(seed)
    t = start or datetime(2025, 1, 6, 9, 0, tzinfo=timezone.utc)
    words = ("fix", "speed up", "refactor", "document", "vectorise", "cache", "simplify", "test")
    things = ("solver", "reader", "FFT plan", "index lookup", "parser", "allocator", "kernel launch", "buffer reuse")
    out = []
    for i in range(n):
        t += timedelta(hours=float(rng.uniform(2, 30)))
        sha = hashlib.sha1(f"{seed}:{i}".encode()).hexdigest()
        msg = f"{words[int(rng.integers(len(words)))].capitalize()} {things[int(rng.integers(len(things)))]} (#{1000 + i})"
        out.append(CommitInfo(sha=sha, date=t, message=msg))
    return out


def synthetic_model(
    n_benchmarks: int = 10,
    n_commits: int = 200,
    n_metrics: int = 5,
    *,
    seed: int = 0,
    machines: tuple[str, ...] = ("ci-linux-x86",),
    params: dict[str, tuple[str, ...]] | None = None,
    step_every: int = 3,
    config: SiteConfig | None = None,
    names: list[str] | None = None,
    commits: list[CommitInfo] | None = None,
) -> SiteModel:
    """``n_benchmarks`` benchmarks × ``n_commits`` commits × ``n_metrics`` metrics (× machines × params).

    Every ``step_every``-th benchmark gets a step in all its metrics at a known
    commit: a regression (slower, more instructions, less bandwidth) that persists.
    """
    rng = np.random.default_rng(seed)
    commits = commits if commits is not None else synthetic_commits(n_commits, seed)
    n_commits = len(commits)
    metrics = METRICS[:n_metrics] if n_metrics <= len(METRICS) else [
        *METRICS,
        *((MetricKey("custom", f"metric_{j}", "count"), 1e3 * (j + 1), MetricFormat.NUMBER) for j in range(n_metrics - len(METRICS))),
    ]
    param_sets = [dict()] if not params else _combinations(params)
    series: dict[SeriesKey, list[SeriesPoint]] = {}
    changes: list[ChangePoint] = []
    bench_names = names or [
        f"{_MODULES[b % len(_MODULES)]}.{_CLASSES[(b // len(_MODULES)) % len(_CLASSES)]}.time_case_{b:03d}"
        for b in range(n_benchmarks)
    ]
    for b, bench in enumerate(bench_names):
        step_at = int(rng.integers(n_commits // 3, n_commits - max(3, n_commits // 10))) if (
            n_commits >= 10 and b % step_every == 0) else None
        size = float(rng.uniform(1.15, 1.45))
        for machine in machines:
            for pset in param_sets:
                scale = 1.0 + 0.5 * len(canonical_params(pset)) / 20.0
                for key, base, fmt in metrics:
                    direction = default_direction(key.unit, fmt)
                    if fmt is MetricFormat.INTEGER and direction is Direction.NEUTRAL:
                        direction = Direction.LOWER
                    skey = SeriesKey(machine, "virtualenv-py3.12", bench, canonical_params(pset), key)
                    level = base * scale * float(rng.uniform(0.5, 2.0))
                    worse = size if direction is not Direction.HIGHER else 1.0 / size
                    levels = np.full(n_commits, level)
                    if step_at is not None:
                        levels[step_at:] *= worse
                    jitter = 1.0 + rng.choice([-0.02, 0.0, 0.0, 0.015, 0.03], n_commits) + rng.normal(0, 0.008, n_commits)
                    if fmt is MetricFormat.INTEGER and key.name == "instructions":
                        jitter = 1.0 + rng.normal(0, 0.0005, n_commits)
                    med = levels * jitter
                    spread = np.abs(rng.normal(0.015, 0.005, n_commits)) * med
                    pts = []
                    for i, c in enumerate(commits):
                        m = float(med[i])
                        pts.append(SeriesPoint(c, i + 1, Measurement(
                            benchmark=bench, params=pset, metric=key, direction=direction, median=m,
                            q1=m - float(spread[i]), q3=m + float(spread[i]), count=10, format=fmt,
                        )))
                    series[skey] = pts
                    if step_at is not None:
                        changes.append(ChangePoint(
                            series=skey, direction=direction, kind="regression",
                            before_sha=commits[step_at - 1].sha, after_sha=commits[step_at].sha,
                            before_value=level, after_value=level * worse, ratio=worse,
                            persists=True, method="synthetic",
                        ))
    return SiteModel(series=series, commits=commits, change_points=changes, config=config or SiteConfig(
        title="mmtrack demo", commit_url="https://github.com/example/project/commit/"))


def _combinations(params: dict[str, tuple[str, ...]]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = [{}]
    for name, values in params.items():
        out = [{**o, name: v} for o in out for v in values]
    return out


def asv_benchmark_name(key: SeriesKey) -> str:
    base = key.benchmark
    if key.metric.section == "timing":
        return base  # asv's own time_ benchmark
    mod, _, meth = base.rpartition(".")
    return f"{mod}.track_{meth}_{key.metric.section}_{key.metric.name}"


def write_asv_results(results: Path, model: SiteModel, machine: str = "ci-linux-x86", commits: list[CommitInfo] | None = None) -> list[Path]:
    """An asv results folder (benchmarks.json, machine.json, one file per commit in format 2) holding
    the model's values; ``commits`` limits which commits get a file. Returns the files written."""
    (results / machine).mkdir(parents=True, exist_ok=True)
    env_name = "virtualenv-py3.12"
    keys = sorted(model.series, key=lambda k: (k.benchmark, k.metric))
    benchmarks = {"version": 2}
    for k in keys:
        name = asv_benchmark_name(k)
        timing = k.metric.section == "timing"
        benchmarks[name] = {
            "code": f"def {name.rsplit('.', 1)[1]}(self):\n    pass\n", "name": name, "param_names": [], "params": [],
            "type": "time" if timing else "track", "unit": "seconds" if timing else k.metric.unit,
            "version": "1", "timeout": 60.0, **({"number": 0, "repeat": 0, "min_run_count": 2, "rounds": 2,
                                                  "sample_time": 0.01, "warmup_time": -1} if timing else {}),
        }
    (results / "benchmarks.json").write_text(json.dumps(benchmarks, indent=1))
    (results / machine / "machine.json").write_text(json.dumps(
        {"arch": "x86_64", "cpu": "bench", "machine": machine, "num_cpu": "2", "os": "Linux", "ram": "1", "version": 1}))
    columns = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b",
               "stats_q_25", "stats_q_75", "stats_number", "stats_repeat", "samples", "profile"]
    by_commit: dict[str, dict[str, list]] = {c.sha: {} for c in model.commits}
    for k in keys:
        name = asv_benchmark_name(k)
        for p in model.series[k]:
            m = p.measurement
            # Ten samples around the median, as asv records them (``samples`` column).
            samples = [m.median * (1 + 0.002 * (j - 4.5)) for j in range(10)]
            by_commit.setdefault(p.commit.sha, {})[name] = [[m.median], [], "1", 0, 0.1, [m.q1], [m.q3], [m.q1], [m.q3], [1], [10],
                                             [samples]]
    written = []
    for c in model.commits if commits is None else commits:
        ms = int(c.date.timestamp() * 1000)
        doc = {"commit_hash": c.sha, "env_name": env_name, "date": ms,
               "params": {"arch": "x86_64", "cpu": "bench", "machine": machine, "num_cpu": "2", "os": "Linux",
                          "ram": "1", "python": "3.12"},
               "python": "3.12", "requirements": {}, "env_vars": {}, "result_columns": columns,
               "results": by_commit[c.sha], "durations": {}, "version": 2}
        path = results / machine / f"{c.sha[:8]}-{env_name}.json"
        path.write_text(json.dumps(doc, separators=(",", ":")))
        written.append(path)
    return written


def write_asv_project(
    root: Path, model: SiteModel, machine: str = "ci-linux-x86", commits: list[CommitInfo] | None = None
) -> Path:
    """An asv project folder: results (:func:`write_asv_results`), an asv.conf.json pointing at ``root/repo``
    (the caller makes the git repository) and at ``root/html``. Returns the config's path."""
    write_asv_results(root / "results", model, machine, commits)
    conf = {"version": 1, "project": "bench", "project_url": "https://example.org/", "repo": str(root / "repo"),
            "branches": ["main"], "dvcs": "git", "environment_type": "virtualenv",
            "results_dir": str(root / "results"), "html_dir": str(root / "html"),
            "show_commit_url": "https://example.org/commit/"}
    (root / "asv.conf.json").write_text(json.dumps(conf, indent=1))
    return root / "asv.conf.json"
