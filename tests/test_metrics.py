"""MetricValue helpers, directions, aggregation and the statistics behind the report."""

from __future__ import annotations

import numpy as np
import pytest

from mmtrack import DiagnosticResult, Direction, MetricFormat, MetricValue
from mmtrack.measure.metrics import aggregate_metrics, default_direction
from mmtrack.measure.report import format_value
from mmtrack.measure.stats import Distribution


def test_helpers_compute_in_their_units():
    assert MetricValue.duration_ms("t", 0.0125) == MetricValue("t", 12.5, "ms")
    bw = MetricValue.bandwidth_gib_s("bw", 2 * 1024**3, 0.5)
    assert (bw.value, bw.unit) == (4.0, "GiB/s")
    tf = MetricValue.throughput_tflops("tf", 3e12, 1.5)
    assert (tf.value, tf.unit) == (2.0, "TFLOP/s")
    algo = MetricValue.integer("algo", 7, "id")
    assert algo.format is MetricFormat.INTEGER and algo.value == 7.0


def test_builders_return_copies_and_display_name_is_cosmetic():
    m = MetricValue("gpu_gib_s", 1.0, "GiB/s")
    shown = m.with_display_name("GPU bandwidth").with_section("gpu")
    assert m.display_name is None and m.section is None
    assert shown.label == "GPU bandwidth" and shown.key == ("gpu", "gpu_gib_s", "GiB/s")


@pytest.mark.parametrize(
    "unit, fmt, expected",
    [
        ("ms", MetricFormat.NUMBER, Direction.LOWER),
        ("s", MetricFormat.NUMBER, Direction.LOWER),
        ("instructions/op", MetricFormat.NUMBER, Direction.LOWER),
        ("GiB/s", MetricFormat.NUMBER, Direction.HIGHER),
        ("TFLOP/s", MetricFormat.NUMBER, Direction.HIGHER),
        ("lines/s", MetricFormat.NUMBER, Direction.HIGHER),
        ("id", MetricFormat.INTEGER, Direction.NEUTRAL),
        ("bytes", MetricFormat.INTEGER, Direction.LOWER),
    ],
)
def test_default_direction_follows_unit(unit, fmt, expected):
    assert default_direction(unit, fmt) is expected


def test_direction_can_be_overridden():
    m = MetricValue("accuracy", 0.9, "ratio").with_direction("higher")
    assert m.effective_direction() is Direction.HIGHER


def test_diagnostic_section_is_a_default_not_an_override():
    r = (
        DiagnosticResult("diagnostic")
        .push_metric(MetricValue("a", 1.0, "u"))
        .push_metric(MetricValue("b", 2.0, "u", section="profiler"))
    )
    assert [m.section for m in r.metrics] == ["diagnostic", "profiler"]


def test_aggregation_summaries():
    samples = [[MetricValue("x", float(v), "ms")] for v in [5, 1, 3, 2, 4]]
    (s,) = aggregate_metrics(samples)
    assert (s.mean, s.median, s.min, s.max, s.count) == (3.0, 3.0, 1.0, 5.0, 5)
    assert s.p95 == pytest.approx(np.percentile([5, 1, 3, 2, 4], 95))
    assert s.values == (5.0, 1.0, 3.0, 2.0, 4.0)


def test_a_metric_pushed_twice_in_a_sample_or_in_some_samples_counts_values():
    """As the README says: each value counts (a latency per request), and samples without the metric add none."""
    samples = [[MetricValue("lat", 1.0, "ms"), MetricValue("lat", 3.0, "ms")], [], [MetricValue("lat", 2.0, "ms")]]
    (s,) = aggregate_metrics(samples)
    assert (s.count, s.median, s.values) == (3, 2.0, (1.0, 3.0, 2.0))


def test_distribution_statistics_and_tukey_outliers():
    values = [10.0] * 18 + [10.5, 30.0]
    d = Distribution.of(values)
    assert d.median == 10.0 and d.mad == 0.0
    assert d.outliers == 2  # 10.5 and 30 are outside [Q1 - 1.5 IQR, Q3 + 1.5 IQR] with IQR 0
    assert d.cv == pytest.approx(np.std(values, ddof=1) / np.mean(values))
    assert Distribution.of([]).count == 0


@pytest.mark.parametrize(
    "value, fmt, text",
    [
        (3.0, MetricFormat.INTEGER, "3"),
        (1234567.4, MetricFormat.INTEGER, "1,234,567"),
        (0.5, MetricFormat.NUMBER, "0.500"),
        (2.5e-5, MetricFormat.NUMBER, "2.500e-05"),
    ],
)
def test_format_value(value, fmt, text):
    assert format_value(value, fmt) == text


def test_stats_round_trip_through_json(fake_clock):
    import json

    from mmtrack import BenchSampleResult, BenchSpec, RunOptions, run_benchmark
    from mmtrack.measure.serialize import stats_from_dict, stats_to_dict

    def fn(ctx, chunk_size, chunk_num):
        fake_clock.spend(1_000_000 + 1000 * chunk_num)
        return BenchSampleResult(chunk_size).push_metric(MetricValue.integer("algo", chunk_num % 2, "id"))

    opts = RunOptions(warm_up=0.01, duration=0.02, min_samples=5, max_samples=8)
    stats = run_benchmark(BenchSpec("rt", fn, returns_sample=True, chunk_size=3, params={"n": "3"}), opts, clock=fake_clock)
    again = stats_from_dict(json.loads(json.dumps(stats_to_dict(stats))))
    assert again == stats


def test_import_mmtrack_loads_no_numpy_and_no_backends():
    """`import mmtrack` stays cheap: asv imports benchmark suites in many processes."""
    import subprocess
    import sys

    from conftest import cli_env

    code = "import sys, mmtrack; print(sorted(m for m in ('numpy', 'cupy', 'sqlalchemy', 'mmtrack.measure.perf') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], env=cli_env(), capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_numpy_numbers_are_valid_metric_values():
    import numpy as np

    MetricValue("x", np.float64(1.5), "ms").validate("b")
    MetricValue("x", np.int64(3), "count").validate("b")
    with pytest.raises(Exception, match="not a number"):
        MetricValue("x", True, "ms").validate("b")
