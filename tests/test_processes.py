"""Issue 21: samples of a case taken in several worker processes, pooled, with the between-process spread."""

from __future__ import annotations

import io
import json
import math
import textwrap
from pathlib import Path

import pytest
from rich.console import Console

from mmtrack.asvbridge.session import Status
from mmtrack.commands.bench import BenchRequest, execute
from mmtrack.measure.processes import ProcessSpread, pool
from mmtrack.measure.report import render_stats
from mmtrack.measure.runner import BenchSpec, RunOptions, run_benchmark
from mmtrack.measure.serialize import stats_from_dict, stats_to_dict
from mmtrack.store.ingest import measurement_setup

# Both benchmarks sleep 2, 3 or 4 ms per op by sample index: every process draws the same sequence,
# so their medians agree, and the spread within a process (~20%) is larger than what machine load
# adds to a sleep. The first benchmark also runs 3x slower in every other process: a per-process
# offset, counted by a file that each import (the parent's discovery, then each worker) bumps.
SUITE = """
    import os
    import time
    from pathlib import Path

    import mmtrack

    _counter = Path(__file__).with_name("imports.txt")
    _seen = int(_counter.read_text()) if _counter.exists() else 0
    _counter.write_text(str(_seen + 1))
    SLOWDOWN = 3 if _seen % 2 else 1


    def _sleep(chunk_num, factor):
        time.sleep(0.001 * (2 + chunk_num % 3) * factor)


    class Spread:
        @mmtrack.bench(chunk_size=1)
        def track_per_process(self, ctx, chunk_size, chunk_num):
            _sleep(chunk_num, SLOWDOWN)

        @mmtrack.bench(chunk_size=1)
        def track_stable(self, ctx, chunk_size, chunk_num):
            _sleep(chunk_num, 1)
"""


def _run(tmp_path: Path, processes: int, **overrides):
    root = tmp_path / "benchmarks"
    root.mkdir()
    (root / "bench_spread.py").write_text(textwrap.dedent(SUITE))
    request = BenchRequest(path=root, quick=True, save=False, compare="none", processes=processes,
                           overrides={"max_samples": 32, "pin_cpu": False, **overrides})
    run = execute(request, None)
    assert [o.status for o in run.outcomes] == [Status.OK, Status.OK], [o.message for o in run.outcomes]
    return {o.name.rsplit(".", 1)[1]: o.stats for o in run.outcomes}


def _report(stats) -> str:
    console = Console(file=io.StringIO(), width=200)
    console.print(render_stats(stats))
    return console.file.getvalue()


def test_a_per_process_offset_is_reported_as_between_process_variation(tmp_path: Path):
    stats = _run(tmp_path, processes=4)
    offset, stable = stats["track_per_process"], stats["track_stable"]
    for s in (offset, stable):
        spread = s.process_spread
        assert spread is not None and spread.processes == 4
        assert sum(spread.samples) == s.samples == len(s.durations) == len(s.operations)
        assert min(spread.samples) >= 2  # each process took its share, not the whole run
    # Every other process is 3x slower: the medians alternate, far beyond the noise within a process.
    one, other = offset.process_spread.medians[0::2], offset.process_spread.medians[1::2]
    assert min(one) > 2 * max(other) or min(other) > 2 * max(one)
    assert offset.process_spread.dominated
    assert "CV dominated by between-process variation" in _report(offset)
    # The same sleeps in every process: the medians agree within the per-sample noise.
    assert not stable.process_spread.dominated, stable.process_spread
    report = _report(stable)
    assert "4 processes" in report and "between-process variation" not in report


def test_one_process_records_no_spread_and_keeps_the_old_report(tmp_path: Path):
    stats = _run(tmp_path, processes=1)
    assert all(s.process_spread is None for s in stats.values())
    assert "Processes" not in _report(stats["track_stable"])


def test_later_processes_reuse_the_first_ones_chunk_size():
    calls: list[int] = []

    def fn(ctx, chunk_size, chunk_num):
        calls.append(chunk_size)
        sum(range(200))

    spec = BenchSpec(name="reuse", fn=fn)
    opts = RunOptions(warm_up=0.01, duration=0.05, min_samples=8, max_samples=8, target_chunk=0.002,
                      pin_cpu=False, sample_share=0.25, chunk_size=37)
    stats = run_benchmark(spec, opts)
    assert set(calls) == {37}  # neither calibrated nor re-sized
    assert stats.chunk_size == 37 and stats.samples == 2  # a quarter of 8 samples


def test_pool_joins_samples_counters_metrics_and_round_trips(tmp_path: Path):
    from mmtrack.measure.metrics import BenchSampleResult, MetricValue

    def fn(ctx, chunk_size, chunk_num):
        sum(range(100 * chunk_size))
        return BenchSampleResult(chunk_size).push_metric(MetricValue.integer("items", chunk_num, "count"))

    spec = BenchSpec(name="pooled", fn=fn, returns_sample=True, chunk_size=10)
    opts = RunOptions(warm_up=0.01, duration=0.02, min_samples=5, max_samples=5, pin_cpu=False)
    runs = [run_benchmark(spec, opts) for _ in range(3)]
    pooled = pool(runs)
    assert pooled.samples == 15 and pooled.durations == tuple(d for r in runs for d in r.durations)
    assert min(r.latency.min for r in runs) == pooled.latency.min
    assert max(r.latency.max for r in runs) == pooled.latency.max
    (items,) = [m for m in pooled.metrics if m.name == "items"]
    assert items.values == (0.0, 1.0, 2.0, 3.0, 4.0) * 3
    for c in pooled.counters:
        parts = [r.counter(c.name) for r in runs]
        assert c.total == pytest.approx(sum(p.total for p in parts))
        assert c.per_op == pytest.approx(c.total / sum(sum(r.operations) for r in runs))  # 0 stays 0, not n/a
        assert len(c.per_sample_per_op) == sum(len(p.per_sample_per_op) for p in parts)
    spread = pooled.process_spread
    assert spread == ProcessSpread.of(runs) and spread.medians == tuple(r.latency.median for r in runs)
    assert math.isfinite(spread.between_cv) and math.isfinite(spread.within_cv)
    # Recorded wherever the run goes: the JSON report (and spool) format, and the stored run's setup.
    back = stats_from_dict(json.loads(json.dumps(stats_to_dict(pooled))))
    assert back.process_spread == spread
    assert measurement_setup(pooled)["process_spread"] == spread.to_dict()
    assert pool(runs[:1]) is runs[0]


def test_processes_and_in_process_together_is_one_line_and_exit_2(tmp_path: Path):
    import subprocess
    import sys

    (tmp_path / "benchmarks").mkdir()
    proc = subprocess.run([sys.executable, "-m", "mmtrack", "bench", "benchmarks", "--in-process", "--processes", "3",
                           "--no-save"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["error: --processes 3 needs worker processes; drop --in-process"]


def test_the_spread_reaches_the_json_report_and_the_stored_run(tmp_path: Path):
    import subprocess

    import jsonschema
    from conftest import cli_env, run_cli

    from mmtrack.benchruns.report import schema
    from mmtrack.store import reads
    from mmtrack.store.db import open_store

    root = tmp_path / "proj"
    (root / "benchmarks").mkdir(parents=True)
    (root / "benchmarks" / "bench_spread.py").write_text(textwrap.dedent(SUITE))
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "suite"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    out = tmp_path / "report.json"
    done = run_cli("bench", "benchmarks", "-b", "per_process", "--quick", "--max-samples", "12", "--no-pin",
                   "--processes", "2", cwd=root, env=cli_env(MMTRACK_OUTPUT=str(out)))
    assert done.returncode == 0, done.stderr
    assert "2 processes × 6 samples" in done.stdout
    report = json.loads(out.read_text())
    jsonschema.validate(report, schema())
    spread = report["results"][0]["stats"]["process_spread"]
    assert spread["processes"] == 2 and spread["samples"] == [6, 6] and len(spread["medians"]) == 2
    with open_store(f"sqlite:///{root / '.mmtrack' / 'mmtrack.db'}") as store:
        [run] = reads.runs(store, kind="bench")
        [case] = reads.case_setups(store, run.id)
        assert case.setup["process_spread"] == spread


def test_the_fork_server_preloads_numpy_only_for_a_suite_that_imports_it(tmp_path: Path):
    from mmtrack.asvbridge.worker import heavy_imports

    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "bench_a.py").write_text("import json\n# numpy is not imported here\n")
    (tmp_path / "sci" / "sub").mkdir(parents=True)
    (tmp_path / "sci" / "sub" / "bench_b.py").write_text("import os\n\n    from numpy import ones\n")
    assert heavy_imports(tmp_path / "plain") == []
    assert heavy_imports(tmp_path / "sci") == ["numpy"]
    assert heavy_imports(tmp_path / "sci" / "sub" / "bench_b.py") == ["numpy"]
    assert heavy_imports(tmp_path / "missing") == []


def test_full_runs_default_to_several_processes_and_quick_runs_to_one(tmp_path: Path):
    from mmtrack.commands.bench import DEFAULT_PROCESSES

    assert DEFAULT_PROCESSES > 1
    assert BenchRequest(tmp_path).worker_processes() == DEFAULT_PROCESSES
    assert BenchRequest(tmp_path, quick=True).worker_processes() == 1
    assert BenchRequest(tmp_path, quick=True, processes=3).worker_processes() == 3
    assert BenchRequest(tmp_path, processes=1).worker_processes() == 1
