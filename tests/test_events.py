"""Environment events: change points that follow the run date, or a whole environment, are grouped and reported once."""

from __future__ import annotations

import numpy as np
import pytest
from rich.console import Console

from mmtrack.analysis.detect import DetectPolicy
from mmtrack.analysis.events import EnvironmentEvent, RunPoints, find_events, is_environment, mark_events
from mmtrack.analysis.series import detect_values
from mmtrack.measure.metrics import Direction
from mmtrack.results import ChangePoint, MetricKey, SeriesKey

METRIC = MetricKey("timing", "time", "s")
N = 80


def sha(c: int) -> str:
    return f"{c:040x}"


def fleet(seed: int, *, shift_day: int | None, code_step: tuple[int, int] | None, reruns: bool):
    """Two machines x two environments x 12 benchmarks, one new commit a night; m0/py3.12 moves x1.5 from
    ``shift_day`` on (old commits re-measured then included, with ``reruns``); benchmark ``code_step[0]`` slows
    x1.3 at commit ``code_step[1]`` everywhere."""
    rng = np.random.default_rng(seed)
    days = {c: c for c in range(N)}
    if reruns:
        for c in rng.choice(40, size=8, replace=False):  # old commits measured again after the shift
            days[int(c)] = int(rng.integers(50, N))
    series = {}
    for machine in ("m0", "m1"):
        for env in ("py3.11", "py3.12"):
            for b in range(12):
                level = np.exp(rng.normal(0, 0.01, N)) * (1 + b)
                if code_step and b == code_step[0]:
                    level[code_step[1]:] *= 1.3
                if shift_day is not None and machine == "m0" and env == "py3.12":
                    level *= np.where(np.array([days[c] for c in range(N)]) >= shift_day, 1.5, 1.0)
                series[SeriesKey(machine, env, f"b{b}", "{}", METRIC)] = (level, days)
    return series


def run(series):
    reports, runs, commits = [], {}, {}
    for key, (values, days) in series.items():
        shas = [sha(c) for c in range(N)]
        reports.append(detect_values(key, shas, list(values), [None] * N, Direction.LOWER, DetectPolicy()))
        runs[key] = RunPoints(shas, np.array([float(days[c]) for c in range(N)]), np.asarray(values))
        commits[key] = shas
    events, held = find_events(reports, runs, {sha(c): c for c in range(N)}, commits)
    return mark_events(reports, held, events), events


def test_a_shift_on_a_run_date_with_old_commits_re_measured_is_one_event():
    reports, events = run(fleet(1, shift_day=50, code_step=None, reruns=True))
    assert len(events) == 1
    e = events[0]
    assert (e.machine, e.environments) == ("m0", ("py3.12",))
    assert e.evidence == "run date" and e.old_commits >= 2 and e.slower >= 10
    assert "old commits included" in e.describe() and "1970-02-20" in e.describe()
    open_code = [c for r in reports for c in r.changes if c.kind == "regression" and not is_environment(c)]
    assert not [c for c in open_code if c.series.environment == "py3.12" and c.series.machine == "m0"]


def test_a_shift_of_one_environment_its_siblings_do_not_share_is_one_event_without_reruns():
    reports, events = run(fleet(2, shift_day=50, code_step=None, reruns=False))
    assert len(events) == 1 and events[0].evidence == "environment-wide"
    assert sum(is_environment(c) for r in reports for c in r.changes) >= 10


def test_a_code_step_on_every_machine_stays_a_regression_beside_an_event():
    reports, events = run(fleet(3, shift_day=50, code_step=(4, 30), reruns=True))
    steps = [c for r in reports for c in r.changes if c.series.benchmark == "b4" and abs(c.extra["index"] - 30) <= 2]
    assert len(steps) == 4 and not any(is_environment(c) for c in steps)
    assert all(c.extra.get("cause") is None for c in steps)
    assert len(events) == 1


def test_a_small_wobble_elsewhere_at_the_same_commits_keeps_no_step_out_of_its_event():
    series = fleet(1, shift_day=50, code_step=None, reruns=True)
    values, days = series[SeriesKey("m1", "py3.12", "b0", "{}", METRIC)]
    wobble = values * np.where(np.arange(N) >= 50, 1.04, 1.0)  # the same commits, x1.04 against the shift's x1.5
    series[SeriesKey("m1", "py3.12", "b0", "{}", METRIC)] = (wobble, days)
    reports, _ = run(series)
    by_key = {r.series: r.changes for r in reports}
    assert [c for c in by_key[SeriesKey("m1", "py3.12", "b0", "{}", METRIC)] if c.ratio > 1.02]  # detect saw it
    shifted = [c for c in by_key[SeriesKey("m0", "py3.12", "b0", "{}", METRIC)] if c.ratio > 1.3]
    assert shifted and all(is_environment(c) for c in shifted)


def test_a_noisy_series_split_days_off_its_event_joins_it():
    from mmtrack.analysis.events import DateEvidence, _Found, _strays

    def found(day: float, commit_errors: int, date_errors: int, ratio: float = 1.5) -> _Found:
        cp = ChangePoint(SeriesKey("m0", "py3.12", f"b{day:g}", "{}", METRIC), Direction.LOWER,
                         "regression" if ratio > 1 else "improvement", "a" * 40, "b" * 40, 1.0, ratio, ratio)
        return _Found(cp, 0, 1, DateEvidence(commit_errors, date_errors, day, 0, 0))

    near, far, its_own, faster = found(56, 30, 31), found(80, 30, 30), found(55, 0, 6), found(55, 9, 9, ratio=0.7)
    event = EnvironmentEvent("", "m0", ("py3.12",), 50.0, 10, 10, 0, 4, "run date", "a" * 40, "b" * 40, 1.5)
    worse = {id(f): f.cp.ratio > 1 for f in (near, far, its_own, faster)}
    joined = _strays([(event, [])], {("m0", "py3.12"): [near, far, its_own, faster]}, {}, worse)
    assert [[f.cp.series.benchmark for f in group] for _, group in joined] == [["b56"]]
    assert joined[0][0].day == 50.0  # it takes its event's day, so that it merges into it


def one_environments_code_step(seed: int, run: float, code: float):
    """The issue's case: on m0/py3.12 only, every benchmark steps ``code`` at commit 50, the first measured on day 50,
    and every run from day 50 on reads ``run`` (old commits re-measured then included); elsewhere nothing moves."""
    series = fleet(seed, shift_day=None, code_step=None, reruns=True)
    for key, (values, days) in list(series.items()):
        if (key.machine, key.environment) == ("m0", "py3.12"):
            late = np.array([days[c] for c in range(N)]) >= 50
            series[key] = (values * np.where(np.arange(N) >= 50, code, 1.0) * np.where(late, run, 1.0), days)
    return series


@pytest.mark.parametrize("seed", range(3))
def test_an_event_holds_only_what_old_commits_re_measured_after_its_date_share(seed):
    """Old commits re-measured after day 50 read x0.96 (the run), new commits x1.25 (the run and the code): the step
    is the code's x1.3, not an environment event's, and says what the run's part was."""
    reports, events = run(one_environments_code_step(seed, run=0.96, code=1.3))
    steps = [c for r in reports for c in r.changes if (c.series.machine, c.series.environment) == ("m0", "py3.12")
             and abs(c.extra["index"] - 50) <= 2]
    assert len(steps) >= 10 and not any(is_environment(c) for c in steps)
    assert all(c.kind == "regression" and 1.2 < c.ratio < 1.45 for c in steps)
    assert all(0.9 < c.extra["run_part"] < 1.0 for c in steps if "run_part" in c.extra)
    assert not [e for e in events if e.median_ratio > 1.1]  # no event claims the code's slowdown


def test_a_run_part_beside_a_code_part_stays_an_event_for_the_run_and_a_regression_for_the_code():
    """Runs from day 50 read x1.12, and the code adds x1.4 at commit 50: the event holds x1.12, the code's x1.4 is a
    regression of its own."""
    reports, events = run(one_environments_code_step(5, run=1.12, code=1.4))
    assert len(events) == 1 and 1.08 < events[0].median_ratio < 1.16
    steps = [c for r in reports for c in r.changes if (c.series.machine, c.series.environment) == ("m0", "py3.12")
             and abs(c.extra["index"] - 50) <= 2]
    assert len(steps) >= 10 and not any(is_environment(c) for c in steps)
    assert all(1.3 < c.ratio < 1.5 and 1.08 < c.extra["run_part"] < 1.16 for c in steps)


def test_a_run_step_its_re_runs_share_stays_whole_in_its_event():
    """Runs from day 50 read x1.4, and the code adds x1.1 at commit 50: the old commits re-measured then read nearer
    the new level than the old one, and a few noisy re-runs cannot tell x1.1 from the runner's scatter: one event."""
    reports, events = run(one_environments_code_step(5, run=1.4, code=1.1))
    steps = [c for r in reports for c in r.changes if (c.series.machine, c.series.environment) == ("m0", "py3.12")
             and abs(c.extra["index"] - 50) <= 2]
    assert len(events) == 1 and len(steps) >= 10 and all(is_environment(c) for c in steps)


def test_a_temporary_period_of_faster_runs_old_commits_included_is_one_event_and_its_end_no_regression():
    """Runs of days 40-59 read x0.8 on m0/py3.12, old commits re-measured then included; then the level returns."""
    series = fleet(6, shift_day=None, code_step=None, reruns=False)
    rng = np.random.default_rng(6)
    days = {c: c for c in range(N)}
    for c in rng.choice(35, size=8, replace=False):
        days[int(c)] = int(rng.integers(40, 60))  # old commits measured again during the period
    for key, (values, _) in list(series.items()):
        period = np.array([40 <= days[c] < 60 for c in range(N)])
        shifted = (key.machine, key.environment) == ("m0", "py3.12")
        series[key] = (values * np.where(period & shifted, 0.8, 1.0), days)
    reports, events = run(series)
    assert len(events) == 1 and events[0].until is not None, [e.describe() for e in events]
    assert "in runs from 1970-02-10 to 1970-03-02" in events[0].describe()
    moved = [c for r in reports for c in r.changes if (r.series.machine, r.series.environment) == ("m0", "py3.12")]
    assert len(moved) >= 20 and all(is_environment(c) for c in moved)
    assert {c.extra["event"] for c in moved} == {events[0].id}


def test_code_steps_alone_make_no_event():
    reports, events = run(fleet(4, shift_day=None, code_step=(2, 40), reruns=True))
    assert events == []
    assert sum(c.kind == "regression" for r in reports for c in r.changes) >= 4


# --------------------------------------------------------------------------- one verdict per pair


def _meas(values):
    from mmtrack.measure.metrics import MetricSummary
    from mmtrack.results import Measurement

    summary = MetricSummary.from_values("timing", "time_per_op", "s", list(values))
    return Measurement.from_summary("suite.time_x", {}, summary, version="v1")


def _change(kind="regression", ratio=1.88, **extra):
    from mmtrack.results import ChangePoint

    key = SeriesKey("m", "e", "suite.time_x", "{}", MetricKey("timing", "time_per_op", "s"))
    return ChangePoint(key, Direction.LOWER, kind, "a" * 40, "b" * 40, 1.0, ratio, ratio, 1e-6, True, "rankseg", extra)


def test_a_significant_move_below_the_threshold_says_so():
    from mmtrack.analysis.compare import compare_pair

    rng = np.random.default_rng(0)
    row = compare_pair(_meas(1.0 + rng.normal(0, 0.002, 20)), _meas(1.037 + rng.normal(0, 0.002, 20)))
    assert row.verdict == "unchanged"
    assert row.note.startswith("×1.03") and "p < 0.001, below the 10% threshold" in row.note
    same = compare_pair(_meas(1.0 + rng.normal(0, 0.002, 20)), _meas(1.0 + rng.normal(0, 0.002, 20)))
    assert same.verdict == "unchanged" and same.note == ""


def test_compare_reads_detects_verdict_on_the_same_pair():
    from mmtrack.analysis.compare import compare_pair, reconciled_with_detect

    rng = np.random.default_rng(1)
    slower = compare_pair(_meas(1.0 + rng.normal(0, 0.002, 20)), _meas(1.5 + rng.normal(0, 0.002, 20)))
    assert slower.verdict == "regressed"
    event = reconciled_with_detect(slower, _change(cause="environment", event="m@2026-08-05#1",
                                                   event_line="m/e: 43 series slower from runs of 2026-08-05 on"))
    assert event.verdict == "ambiguous" and "environment event" in event.note and "2026-08-05" in event.note
    flat = compare_pair(_meas(1.0 + rng.normal(0, 0.002, 20)), _meas(1.0 + rng.normal(0, 0.002, 20)))
    said = reconciled_with_detect(flat, _change())
    assert said.verdict == "unchanged"
    assert said.note.startswith("detect: persisting regression ×1.88 at this pair; compare:")
    assert reconciled_with_detect(slower, _change()) == slower  # they agree: nothing to add


def test_a_change_point_off_the_commit_two_other_machines_agree_on_moves_there():
    from mmtrack.analysis.detect import SeriesReport
    from mmtrack.analysis.placement import align_to_agreement
    from mmtrack.results import ChangePoint

    rng = np.random.default_rng(5)
    shas = [sha(c) for c in range(N)]
    reports, columns = [], {}
    for machine, at in (("m0", 40), ("m1", 40), ("m2", 35)):  # m2's detector named a pair five commits early
        key = SeriesKey(machine, "py3.12", "b0", "{}", METRIC)
        values = list(np.where(np.arange(N) >= 40, 1.9, 1.0) * np.exp(rng.normal(0, 0.01, N)))
        values[37] = 1.9  # one commit on a slower runner before the step
        cp = ChangePoint(key, Direction.LOWER, "regression", shas[at - 1], shas[at], 1.0, 1.9, 1.9, 1e-9, True,
                         "rankseg", {"index": at, "points": N})
        reports.append(SeriesReport(key, "ok", N, (cp,)))
        columns[key] = (shas, values)
    aligned = align_to_agreement(reports, columns, {s: i for i, s in enumerate(shas)})
    moved = aligned[2].changes[0]
    assert (moved.before_sha, moved.after_sha) == (shas[39], shas[40]) and moved.extra["aligned_from"] == shas[35]
    assert 0.95 < moved.before_value < 1.05 and 1.8 < moved.after_value < 2.0
    assert aligned[0].changes == reports[0].changes  # the agreeing ones stay


def test_an_event_fails_no_gate_and_is_its_own_json_entry():
    import json

    from mmtrack.analysis.detect import DetectPolicy as Policy
    from mmtrack.cli_results import detect_json, detect_table
    from mmtrack.commands.detect import DetectOutcome

    reports, events = run(fleet(1, shift_day=50, code_step=None, reruns=True))
    outcome = DetectOutcome(reports, None, Policy(), ("regression",), events=events)
    assert any(is_environment(c) and c.persists and c.kind == "regression" for c in outcome.changes)
    assert outcome.open_regressions == [] and outcome.exit_code == 0
    data = json.loads(detect_json(outcome))
    assert [e["machine"] for e in data["events"]] == ["m0"] and data["events"][0]["old_commits_at_new_level"] >= 2
    causes = {c["cause"] for s in data["series"] for c in s["changes"]}
    assert "environment" in causes and all("before_sha" in c for s in data["series"] for c in s["changes"])
    assert data["commit_order"].startswith("commit dates")
    console = Console(width=120, record=True)
    console.print(detect_table(outcome))
    text = console.export_text()
    assert "environment event (not a regression of the code)" in text and "m0/py3.12" in text


def test_the_pages_run_verdict_of_a_pair_an_event_holds_says_so():
    from mmtrack.publish.verdict_rows import _agreeing

    row = {"verdict": "regressed", "state": "confirmed", "note": "", "kind": "regression", "after_sha": "b" * 40}
    event = _change(cause="environment", event="m@2026-08-05#1", event_line="m/e: 43 series slower")
    shown = _agreeing(row, [event])
    assert (shown["verdict"], shown["state"], shown["kind"]) == ("ambiguous", None, "change")
    assert "environment event" in shown["note"] and "43 series slower" in shown["note"]
    assert _agreeing(row, [_change()]) == row  # detect agrees: the row stands


@pytest.fixture(scope="module")
def conda_detect(tmp_path_factory):
    """detect over conda's real history (tests/data), imported into a fresh store once for the tests below."""
    from conftest import CONDA_RESULTS

    from mmtrack.commands.detect import DetectRequest, run_detect
    from mmtrack.store.asv_import import import_asv_results
    from mmtrack.store.db import open_store

    store = open_store(str(tmp_path_factory.mktemp("conda") / "conda.db"))
    try:
        import_asv_results(store, CONDA_RESULTS)
        return run_detect(DetectRequest(store_results=False), store)
    finally:
        store.close()


def test_condas_run_date_shift_is_one_event_beside_the_code_steps_of_that_days_newest_commits(conda_detect):
    """conda's real history (tests/data): the runs of 2019-01-11 read its old commit 41a54cec at the new level in 14
    series. That day also measured the newest commits, newest first, and some series step among them by commit: a
    day's cluster holding both is judged at each commit range too, so those code steps no longer sink the event."""
    out = conda_detect
    (event,) = out.events
    assert (event.date, event.series, event.slower, event.evidence) == ("2019-01-11", 14, 14, "run date")
    at_shift = [c for r in out.reports for c in r.changes if c.before_sha.startswith("2de50fd6")]
    assert len(at_shift) == 14 and all(is_environment(c) for c in at_shift)


def test_condas_return_from_the_events_phase_is_not_read_as_a_change_reverted(conda_detect):
    """conda's time_solve_anaconda_53 (tests/data) stepped x3.8 at the 2019-01-11 event (37f5ce41, old commits
    measured that day included) and read 36-38 s for 6 commits; its two newest commits, measured earlier that day,
    read 12 s. The gate's rules read the return as a change reverted (a suspected x0.33 improvement): the phase began
    at the event's step, so leaving it is the environment's, not the code's."""
    by_name = {r.series.benchmark: r for r in conda_detect.reports
               if r.series.machine == "benchmarkers-MacBook-Pro.local"}
    for name in ("time_solve_anaconda_53", "peakmem_solve_anaconda_53"):
        changes = by_name[name].changes
        assert is_environment(changes[-1]) and changes[-1].after_sha.startswith("37f5ce41")
        assert not any(c.before_sha.startswith("64bde065") for c in changes)
