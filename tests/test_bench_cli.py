"""``mmtrack bench`` end to end: the real CLI in a subprocess on real suites."""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import run_cli
from mmtrack.asvbridge.discover import discover
from mmtrack.asvbridge.session import Status, SuiteSession, expand
from mmtrack.measure.backend import MeasurementDomain
from mmtrack.measure.diagnose import cpu_diagnostics
from mmtrack.measure.runner import RunOptions
from mmtrack.measure.stats import CounterSummary

QUICK = ["--quick", "--no-save", "--compare", "none"]  # never write into the checkout's store


def custom_metric_rows(output: str) -> list[str]:
    """Metric names in the rows of the 'custom metrics:' table."""
    lines = output.split("custom metrics:", 1)[1].splitlines()
    header = next(i for i, line in enumerate(lines) if "median" in line and "metric" in line)
    names = []
    for line in lines[header + 2 :]:  # skip the rule under the header
        cells = line.split()
        if len(cells) < 7:
            break
        names.append(cells[0].rsplit("/", 1)[-1])  # "section/name [unit] mean median p95 min max n"
    return names


def test_custom_backend_acceptance():
    proc = run_cli("bench", "examples", "-b", "custom_backend", *QUICK)
    assert proc.returncode == 0, proc.stderr
    assert "timing + CUDA events" in proc.stdout
    assert sorted(custom_metric_rows(proc.stdout)) == ["cuda_event_ms", "host_overhead_ms", "tflops"]
    assert proc.stdout.count("custom metrics:") == 1


def test_gpu_domain_prints_no_cpu_diagnostics():
    proc = run_cli("bench", "examples", "-b", "gpu_domain", *QUICK)
    assert proc.returncode == 0, proc.stderr
    assert "Domain        gpu" in proc.stdout or re.search(r"Domain\s+gpu", proc.stdout)
    assert "possible bottlenecks" not in proc.stdout


def test_every_example_runs(repo_root):
    proc = run_cli("bench", "examples", *QUICK)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = re.search(r"(\d+) benchmark cases: (\d+) ok, (\d+) failed, (\d+) skipped", proc.stdout)
    assert summary, proc.stdout[-2000:]
    total, ok, failed, skipped = map(int, summary.groups())
    assert failed == 0 and ok >= 9 and ok + skipped == total
    assert "lines/s" in proc.stdout and re.search(r"\d (Ki|Mi|Gi)?B/s", proc.stdout)  # throughput in its unit, bytes binary
    assert re.search(r"selected algorithm \[id\]\s+\d\s+\d\s+\d\s+\d\s+\d\s+\d+", proc.stdout)  # integers, no decimals


def _stats_with_counters(domain: MeasurementDomain, emits: bool = True):
    from mmtrack.measure.benchmark_stats import BenchmarkStats
    from mmtrack.measure.stats import Distribution
    from mmtrack.measure.throughput import Throughput

    counters = [
        CounterSummary("cycles", 2e9, 1e9, (1e9, 1e9), 100.0),
        CounterSummary("instructions", 4e8, 2e8, (2e8, 2e8), 100.0),  # IPC 0.2
        CounterSummary("branches", 2e7, 1e7, (1e7, 1e7), 100.0),
        CounterSummary("branch-misses", 4e6, 2e6, (2e6, 2e6), 100.0),  # 20 %
    ]
    d = Distribution.of([1.0, 1.0])
    return BenchmarkStats(
        "x", {}, Throughput.ops(), domain, "timing + PMU", emits, 1, True,
        (1.0, 1.0), (1.0, 1.0), (1, 1), d, d, counters=counters,
    )


def test_cpu_diagnostics_are_gated_by_domain_and_backend():
    cpu = cpu_diagnostics(_stats_with_counters(MeasurementDomain.CPU))
    assert any("low IPC" in line for line in cpu) and any("branch predictor" in line for line in cpu)
    assert cpu_diagnostics(_stats_with_counters(MeasurementDomain.GPU)) == []
    assert cpu_diagnostics(_stats_with_counters(MeasurementDomain.IO)) == []
    assert cpu_diagnostics(_stats_with_counters(MeasurementDomain.CPU, emits=False)) == []
    mixed = cpu_diagnostics(_stats_with_counters(MeasurementDomain.MIXED))
    assert mixed and all(line.startswith("[host] ") for line in mixed)


SUITE = {
    "__init__.py": "",
    "good.py": """
        import mmtrack

        class Good:
            params = [[1, 2], ["a"]]
            param_names = ["n", "tag"]
            log = []

            def setup_cache(self):
                return {"cached": 41}

            def setup(self, cache, n, tag):
                self.value = cache["cached"] + n

            def teardown(self, cache, n, tag):
                Good.log.append(("teardown", n, tag))

            @mmtrack.bench(chunk_size=10)
            def track_fine(self, ctx, chunk_size, chunk_num):
                sum(range(self.value))

        class Skipper:
            def setup(self):
                raise NotImplementedError("needs a GPU")

            @mmtrack.bench(chunk_size=10)
            def track_skipped(self, ctx, chunk_size, chunk_num):
                pass
    """,
    "bad.py": """
        import mmtrack
        from mmtrack import BenchSampleResult, MetricValue

        class Bad:
            @mmtrack.bench(chunk_size=10)
            def track_raises(self, ctx, chunk_size, chunk_num):
                raise RuntimeError("kaboom")

            @mmtrack.bench_sample(chunk_size=10)
            def track_nan_metric(self, ctx, chunk_size, chunk_num):
                return BenchSampleResult(1).push_metric(MetricValue("latency", float("nan"), "ms"))

            @mmtrack.bench(chunk_size=10)
            def track_wrong_type(self, ctx, chunk_size, chunk_num):
                return "oops"

            @mmtrack.bench(chunk_size=10)
            def track_after_failures(self, ctx, chunk_size, chunk_num):
                pass
    """,
    "broken.py": """
        import mmtrack
        def oops(:
    """,
}


@pytest.fixture
def suite_dir(tmp_path: Path) -> Path:
    root = tmp_path / "benchmarks"
    root.mkdir()
    for name, body in SUITE.items():
        (root / name).write_text(textwrap.dedent(body))
    return root


def test_failures_are_isolated_and_exit_code_is_2(suite_dir):
    proc = run_cli("bench", str(suite_dir), *QUICK, cwd=suite_dir.parent)
    out = proc.stdout
    assert proc.returncode == 2
    assert re.search(r"could not import .*broken\.py: SyntaxError", out)
    assert "failed bad.Bad.track_raises: RuntimeError: kaboom" in out
    assert re.search(r"failed bad\.Bad\.track_nan_metric: benchmark '.*track_nan_metric', metric 'latency'", out)
    assert re.search(r"failed bad\.Bad\.track_wrong_type: .*returns None, got str", out)
    assert "skipped good.Skipper.track_skipped: needs a GPU" in out
    # the benchmarks around the failures still ran and reported
    assert "bad.Bad.track_after_failures" in out and "good.Good.track_fine(1, 'a')" in out
    assert "7 benchmark cases: 3 ok, 3 failed, 1 skipped; 1 files failed to import" in out


@pytest.fixture
def own_benchmarks_package(monkeypatch):
    """In-process discovery imports the suite as the package ``benchmarks``, the name of this repository's own
    suite, which other test modules import: each gets it while this test runs (a CLI discovers in a worker)."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in [n for n in sys.modules if n == "benchmarks" or n.startswith("benchmarks.")]:
        monkeypatch.delitem(sys.modules, name)
    yield
    for name in [n for n in sys.modules if n == "benchmarks" or n.startswith("benchmarks.")]:
        del sys.modules[name]


def test_asv_class_semantics_in_process(suite_dir, own_benchmarks_package):
    suite = discover(suite_dir)
    selected = suite.select(r"Good\.track_fine")
    cases = expand(selected)
    assert [c.params for c in cases] == [(1, "a"), (2, "a")]
    outcomes = SuiteSession(RunOptions.quick()).run(cases)
    assert [o.status for o in outcomes] == [Status.OK, Status.OK]
    assert [o.params for o in outcomes] == [{"n": "1", "tag": "'a'"}, {"n": "2", "tag": "'a'"}]
    good_cls = selected[0].owner
    assert good_cls.log == [("teardown", 1, "a"), ("teardown", 2, "a")]


def test_unknown_path_and_empty_filter_are_one_line_errors(tmp_path):
    proc = run_cli("bench", str(tmp_path / "nope"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "no such benchmark" in proc.stderr
    proc = run_cli("bench", "examples", "-b", "no_such_benchmark_anywhere")
    assert proc.returncode == 2 and "no engine benchmark matches" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_decorators_declare_a_benchmark_bare_too():
    """`@mmtrack.bench` without parentheses was "bench() takes 0 positional arguments", and the file did not import."""
    import mmtrack
    from mmtrack.asvbridge.declaration import declaration_of

    class Bare:
        @mmtrack.bench
        def track_plain(self, ctx, chunk_size, chunk_num):
            pass

        @mmtrack.bench_sample
        def track_sample(self, ctx, chunk_size, chunk_num):
            return mmtrack.BenchSampleResult(chunk_size)

        @mmtrack.bench(chunk_size=3)
        def track_options(self, ctx, chunk_size, chunk_num):
            pass

    plain, sample, options = (declaration_of(f) for f in (Bare.track_plain, Bare.track_sample, Bare.track_options))
    assert (plain.returns_sample, plain.chunk_size, plain.fn.__name__) == (False, None, "track_plain")
    assert (sample.returns_sample, sample.fn.__name__) == (True, "track_sample")
    assert (options.returns_sample, options.chunk_size) == (False, 3)
