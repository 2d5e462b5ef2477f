"""Issue 21: nothing of mmtrack runs while a sample is timed, and the report says what it measured."""

from __future__ import annotations

import io
import textwrap
import threading
from pathlib import Path

from rich.console import Console

from mmtrack.asvbridge.session import Status
from mmtrack.cli_progress import CaseBar
from mmtrack.commands.bench import BenchRequest, execute

THREADS_SUITE = """
    import threading
    import mmtrack

    SEEN = []

    class Threads:
        @mmtrack.bench()
        def track_threads_seen(self, ctx, chunk_size, chunk_num):
            SEEN.append(threading.active_count())
            sum(range(2000))

        @mmtrack.bench(chunk_size=1)
        def track_starts_a_thread(self, ctx, chunk_size, chunk_num):
            release = threading.Event()
            t = threading.Thread(target=release.wait)
            t.start()
            SEEN.append(-threading.active_count())
            release.set()
            t.join()
"""


def test_a_benchmark_sees_one_thread_while_timed_even_with_the_progress_bar(tmp_path: Path):
    root = tmp_path / "benchmarks"
    root.mkdir()
    (root / "bench_threads.py").write_text(textwrap.dedent(THREADS_SUITE))
    # A terminal console: the progress bar is live, as in an interactive `mmtrack bench`.
    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    # In-process: the bar is drawn in the very process that samples (in a worker, the parent draws it).
    request = BenchRequest(path=root, quick=True, save=False, compare="none", in_process=True)
    before = threading.active_count()
    run = execute(request, CaseBar(console))
    assert [o.status for o in run.outcomes] == [Status.OK, Status.OK]
    module = next(m for name, m in __import__("sys").modules.items() if name.endswith("bench_threads"))
    plain = [n for n in module.SEEN if n > 0]
    started = [-n for n in module.SEEN if n < 0]
    assert before == 1
    assert plain and set(plain) == {1}, f"threads seen inside timed calls: {sorted(set(plain))}"
    assert set(started) == {2}  # a benchmark's own thread is counted: the probe is real
    assert console.file.getvalue()  # the bar did draw, between samples


# -- the report says what it measured -----------------------------------------------------------

GC_SUITE = '''
import gc
import os

import mmtrack

GC_OFF = os.environ.get("TEST_GC_OFF") == "1"  # a module constant: not part of the code version


class Alloc:
    def setup(self):
        if GC_OFF:
            gc.disable()

    def teardown(self):
        gc.enable()

    @mmtrack.bench(chunk_size=2, backend=mmtrack.WallClockBackend)
    def track_tuples(self, ctx, chunk_size, chunk_num):
        for _ in range(chunk_size):
            [(i, i) for i in range(2000)]
'''


def test_conditions_are_recorded_at_the_start_of_sampling():
    import gc
    import sys

    from mmtrack import BenchSpec, RunOptions, run_benchmark
    from mmtrack.measure.serialize import stats_from_dict, stats_to_dict

    stats = run_benchmark(BenchSpec("noop", lambda ctx, n, i: None, chunk_size=10), RunOptions.quick())
    c = stats.conditions
    assert c is not None and c.process_model == "in-process"
    assert c.python_build.startswith(("CPython ", "PyPy ")) and sys.version.split()[0] in c.python_build
    assert c.gil_enabled is (sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True)
    assert c.gc_enabled is gc.isenabled() and len(c.gc_counts) == 3
    assert c.heap_rss_bytes is None or c.heap_rss_bytes > 1_000_000
    assert c.allocated_blocks > 0
    assert c.pinned_cpu is None or c.pinned_cpu >= 0  # pinned by default where the OS allows it
    assert stats_from_dict(stats_to_dict(stats)).conditions == c
    worker = run_benchmark(BenchSpec("noop", lambda ctx, n, i: None, chunk_size=10),
                           RunOptions(warm_up=0.01, duration=0.05, min_samples=3, process_model="worker per case"))
    assert worker.conditions.process_model == "worker per case"


def test_runs_under_other_conditions_are_not_compared():
    from mmtrack.analysis.baseline import CaseIdentity, RunIdentity, incompatibility

    def run(run_id, **conditions):
        case = CaseIdentity("b", "{}", "1 ops", "cpu", "timing", "v1", conditions=tuple(conditions.items()))
        return RunIdentity(run_id, "host", "benchmarks", {("b", "{}"): case})

    base = {"process_model": "in-process", "python_build": "CPython 3.12.3", "gil_enabled": "True", "gc_enabled": "True"}
    assert incompatibility(run(2, **base), run(1, **base)) is None
    assert incompatibility(run(2, **base), run(1)) is None  # stored before conditions were recorded
    for name, other in (("process_model", "worker per case"), ("python_build", "CPython 3.13.1 free-threaded"),
                        ("gil_enabled", "False"), ("gc_enabled", "False")):
        why = incompatibility(run(2, **base), run(1, **{**base, name: other}))
        assert why is not None and name.replace("_", " ") in why and other in why


def test_report_json_and_store_carry_the_conditions(tmp_path):
    import json
    import subprocess

    import jsonschema
    from conftest import cli_env, run_cli

    from mmtrack.benchruns.report import schema
    from mmtrack.store import reads
    from mmtrack.store.db import open_store

    root = tmp_path / "proj"
    (root / "benchmarks").mkdir(parents=True)
    (root / "benchmarks" / "alloc.py").write_text(GC_SUITE)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "suite"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    opts = ["--quick", "--min-samples", "5", "--max-samples", "8", "--no-pin"]
    out = tmp_path / "report.json"
    first = run_cli("bench", "benchmarks", *opts, cwd=root, env=cli_env(MMTRACK_OUTPUT=str(out)))
    assert first.returncode == 0, first.stderr
    assert "worker per case, unpinned · CPython" in first.stdout and "GC on" in first.stdout
    report = json.loads(out.read_text())
    jsonschema.validate(report, schema())
    conditions = report["results"][0]["stats"]["conditions"]
    assert conditions["process_model"] == "worker per case" and conditions["gc_enabled"] is True
    with open_store(f"sqlite:///{root / '.mmtrack' / 'mmtrack.db'}") as store:
        [run] = reads.runs(store, kind="bench")
        [case] = reads.case_setups(store, run.id)
        assert case.setup["conditions"]["gc_enabled"] is True
    gc_off = run_cli("bench", "benchmarks", *opts, cwd=root, env=cli_env(TEST_GC_OFF="1"))
    assert gc_off.returncode == 0, gc_off.stderr
    assert "GC off" in gc_off.stdout
    assert "measured under another gc enabled (True → False)" in gc_off.stdout, gc_off.stdout[-1500:]


NUMPY_FREE_SUITE = '''
import os
import sys

import mmtrack


class Plain:
    def teardown(self):
        # After sampling and the statistics: did anything of mmtrack import numpy in this worker?
        with open(os.path.join(os.path.dirname(__file__), "numpy.txt"), "w") as f:
            f.write(str("numpy" in sys.modules))

    @mmtrack.bench()
    def track_plain(self, ctx, chunk_size, chunk_num):
        sum(range(100))
'''


def test_a_worker_of_a_numpy_free_suite_never_imports_numpy(tmp_path):
    # Measure sooner: the fork server preloads only light modules and the statistics are plain
    # Python, so neither the first sample nor the case waits for numpy.
    root = tmp_path / "benchmarks"
    root.mkdir()
    (root / "bench_plain.py").write_text(NUMPY_FREE_SUITE)
    seen = root / "numpy.txt"  # written by the worker (the fork server's environment is not this test's)
    run = execute(BenchRequest(path=root, quick=True, save=False, compare="none"), None)
    assert [o.status for o in run.outcomes] == [Status.OK]
    assert run.outcomes[0].stats.samples >= 5
    assert seen.read_text() == "False"
