"""Every table at 80 and 200 columns: all headers shown, every benchmark's distinguishing tail present;
untrusted names (newline, ESC, OSC, ``<!--``, backticks) stay inside their cell or show escaped."""

from __future__ import annotations

import re

import numpy as np
import pytest
from rich.console import Console

from mmtrack.analysis.detect import DetectPolicy, SeriesReport
from mmtrack.analysis.render import render_markdown, render_table
from mmtrack.analysis.compare import compare_measurements
from mmtrack.commands.detect import DetectOutcome
from mmtrack.cli_results import detect_table
from mmtrack.measure.metrics import Direction, MetricSummary
from mmtrack.results import ChangePoint, Measurement, MetricKey, SeriesKey
from mmtrack.tables import left_ellipsis, wrap_at_dots
from mmtrack.textsafe import md_code, md_text, term

LONG = "benchmarks.suite_with_a_long_module_name.TimeSuiteWithALongClassName.time_"
TAILS = ("sort_quick", "sort_merge", "sort_heap")
EVIL = ("x\n## All clear\n<!--", "name`with`ticks", "erase\x1b[2Kline", "title\x1b]0;pwned\x07", "pipe|cell")


def _meas(bench: str, level: float, seed: int, unit: str = "s", name: str = "time_per_op") -> Measurement:
    values = level * (1 + np.random.default_rng(seed).normal(0, 0.01, 20))
    return Measurement.from_summary(bench, {"n": "1000"}, MetricSummary.from_values("timing", name, unit, list(values)))


def _comparison(names):
    before = [_meas(n, 1e-3, i) for i, n in enumerate(names)]
    after = [_meas(n, 1e-3 * (2.0 if i == 0 else 1.0), 100 + i) for i, n in enumerate(names)]
    return compare_measurements(before, after, before_label="abc12345", after_label="def67890")


def _text(renderable, width: int) -> str:
    console = Console(width=width, record=True, file=open("/dev/null", "w"), color_system=None)
    console.print(renderable)
    return console.export_text()


def _joined(text: str) -> str:
    """The table's text with wrapped cell lines glued back together (names wrap at dots)."""
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize("width", [80, 200])
def test_compare_table_fits(width):
    table = render_table(_comparison([LONG + t for t in TAILS]), where="m1/env-a")
    text = _text(table, width)
    assert max(len(line) for line in text.splitlines()) <= width
    for header in ("abc12345", "def67890", "ratio", "benchmark / metric", "verdict"):
        assert header in text, header
    for tail in TAILS:
        assert f"{tail}(1000)" in _joined(text), tail
    assert "regressed" in text and "unchanged" in text and "time_per_op [s]" in text
    assert "±" in text and " ms" in text  # spread beside the value, scaled unit
    assert "geometricmeanof3comparablemetrics" in _joined(text) and "m1/env-a" in text


def _detect_outcome(machines):
    reports = []
    for i, tail in enumerate(TAILS):
        for machine in machines:
            key = SeriesKey(machine, "env-a", LONG + tail, "{}", MetricKey("timing", "time_per_op", "s"))
            cp = ChangePoint(key, Direction.LOWER, "regression", "a" * 40, "b" * 40, 1e-3, 1.5e-3, 1.5)
            reports.append(SeriesReport(key, "ok", 30, (cp,)))
    return DetectOutcome(reports, None, DetectPolicy())


@pytest.mark.parametrize("width", [80, 200])
@pytest.mark.parametrize("machines", [("m1",), ("machine-one", "machine-two")])
def test_detect_table_fits(width, machines):
    text = _text(detect_table(_detect_outcome(machines)), width)
    assert max(len(line) for line in text.splitlines()) <= width
    headers = ["benchmark / metric", "before → after / began", "ratio", "persists"]
    if len(machines) > 1:
        headers.append("machine/env")
        assert all(f"{m}/env-a" in text for m in machines)
    for header in headers:
        assert header in text, header
    for tail in TAILS:
        assert tail in _joined(text)
    assert "1.000 ms → 1.500 ms" in text and "aaaaaaaa..bbbbbbbb" in text


def test_name_wrapping_keeps_the_tail():
    assert wrap_at_dots("a.b.c(1, 2)", 100) == ["a.b.c(1, 2)"]
    assert wrap_at_dots("suite.Class.time_x(1, 2)", 12) == ["suite.Class.", "time_x(1, 2)"]
    assert left_ellipsis("abcdefghij", 5) == "…ghij"
    assert all(len(line) <= 8 for line in wrap_at_dots(LONG + "sort_quick", 8))
    assert wrap_at_dots(LONG + "sort_quick", 8)[-1].endswith("quick")


# --------------------------------------------------------------------------- untrusted names


def test_term_escapes_controls():
    assert term("a\x1b[2Kb") == "a\\x1b[2Kb"
    assert term("t\x1b]0;pwned\x07") == "t\\x1b]0;pwned\\x07"
    assert term("a\nb\rc\td") == "a\\nb\\rc\\td"
    assert term("c1\x9bx") == "c1\\x9bx" and term("rtl\u202eok") == "rtl\\u202eok"
    assert term("plain µs ±") == "plain µs ±"


def test_markdown_cells():
    assert md_code("a|b") == "`a\\|b`"
    assert md_code("x`y``z") == "```x`y``z```"
    assert md_code("`start") == "`` `start ``"
    assert "\n" not in md_code("a\nb") and "<" in md_code("<!--")  # literal inside a code span
    assert md_text("<!-- [x](y) *b*") == "&lt;!-- \\[x\\](y) \\*b\\*"


@pytest.mark.parametrize("width", [80, 200])
def test_evil_names_in_the_terminal_table(width):
    text = _text(render_table(_comparison(list(EVIL))), width)
    assert "\x1b" not in text and "\x07" not in text
    assert "\\x1b[2K" in _joined(text) and "\\x1b]0;pwned\\x07" in _joined(text)
    rows = [line for line in text.splitlines() if "All clear" in line]
    assert rows and all("## All clear" not in line.strip()[:13] for line in rows)  # shown as \n, not a new line


def test_evil_names_stay_in_their_markdown_cell():
    md = render_markdown(_comparison(list(EVIL)))
    table_lines = [line for line in md.splitlines() if line.startswith("|")]
    # one line per row: a header, the rule, and one row per name, each with exactly 8 unescaped pipes
    rows = [line for line in table_lines if not line.startswith("| |") and not line.startswith("|---")]
    assert len(rows) == len(EVIL)
    for line in rows:
        assert len(re.findall(r"(?<!\\)\|", line)) == 8, line
    assert not any(line.startswith("## All clear") for line in md.splitlines())
    outside_code = re.sub(r"(`+).*?\1", "", md)
    assert "<!--" not in outside_code and "\x1b" not in md


@pytest.mark.parametrize("width", [80, 200])
def test_bench_metric_table_fits(width):
    from mmtrack.measure.report import metric_table

    metrics = [MetricSummary.from_values("custom", name, unit, [v, v * 1.1, v * 0.9])
               for name, unit, v in (("tflops", "TFLOP/s", 2.3e-5), ("cuda_event_ms", "ms", 98.7),
                                     ("a_rather_long_host_overhead_ms", "ms", 1234.5))]
    text = _text(metric_table("custom metrics:", metrics), width)
    assert max(len(line) for line in text.splitlines()) <= width
    header = next(line for line in text.splitlines() if "median" in line)
    for col in ("metric", "mean", "median", "p95", "min", "max", "n"):
        assert re.search(rf"\b{col}\b", header), col
    # Nothing is cut (issue 45): a name too long for its column wraps, at its slash and space where it can.
    for name in ("custom/tflops [TFLOP/s]", "custom/cuda_event_ms [ms]", "custom/a_rather_long_host_overhead_ms [ms]"):
        assert all(piece in _joined(text) for piece in re.split(r"[ /]", name)), name
    assert "2.3e-05" in text and "98.7" in text and "1,234" in text  # whole numbers, 3 significant digits


def test_cpu_time_counters_show_as_time():
    """perf's task-clock counts nanoseconds: per op it reads as CPU time, never a bare number."""
    from mmtrack.measure.units import format_quantity, scale_for

    assert format_quantity(1105.4, "task-clock/op") == "1.11 µs CPU/op"
    assert format_quantity(2.5e6, "task-clock/op") == "2.50 ms CPU/op"
    assert scale_for([1105.4, 1200.0], "task-clock/op").unit == "µs CPU/op"
    assert format_quantity(3.0, "page-faults/op").endswith(" page-faults/op")  # a count stays a count


def test_durations_beyond_ns_and_days_read_in_scientific_notation():
    """1e300 s printed as 301 digits in detect's table; 1e-300 s as "0.00 ns"."""
    from mmtrack.measure.units import format_duration

    assert format_duration(1e300) == "1.000e+300 s" and format_duration(1e-300) == "1.000e-300 s"
    assert format_duration(1.5) == "1.500 s" and format_duration(2e-9) == "2.00 ns" and format_duration(0.0) == "0.00 ns"


def test_a_name_wraps_before_its_arguments_never_inside_a_word():
    """networkx's `time_all_shortest_paths(10)` in a narrow column: the argument list opens its own line."""
    from mmtrack.tables import wrap_at_dots

    lines = wrap_at_dots("benchmark_algorithms.AlgorithmBenchmarks.time_all_shortest_paths(10)", 26)
    assert "time_all_shortest_paths" in lines and "(10)" in lines, lines
    assert not any(line.endswith("(") for line in lines)
    assert wrap_at_dots("a.b.c(1, 2)", 6) == ["a.b.c", "(1, 2)"]


def test_counts_take_their_number():
    from mmtrack.tables import plural

    assert (plural(1, "benchmark"), plural(2, "benchmark"), plural(0, "commit")) == ("1 benchmark", "2 benchmarks",
                                                                                     "0 commits")
    assert plural(1, "series", "series") == "1 series" and plural(3, "series", "series") == "3 series"


def test_list_titles_take_their_number():
    from rich.console import Console

    from mmtrack.cli_results import list_table

    machine = {"name": "ci-1", "runs": 3, "environments": ["py3.12"], "info": {"cpu": "x86", "os": "Linux"}}
    console = Console(width=80, record=True)
    console.print(list_table("machines", [machine]))
    console.print(list_table("machines", [machine, {**machine, "name": "ci-2"}]))
    titles = [line.strip() for line in console.export_text().splitlines() if line.strip().endswith(("machine", "machines"))]
    assert titles == ["1 machine", "2 machines"], titles
