"""Choosing the latest compatible run as the baseline of a bench run."""

from mmtrack.analysis.baseline import CaseIdentity, RunIdentity, incompatibility, latest_compatible


def run(run_id, host="box", suite="benchmarks/examples", version="v1", name="a.A.track_x", label="timing only"):
    case = CaseIdentity(name, "{}", "1 ops", "cpu", label, version)
    return RunIdentity(run_id, host, suite, {(name, "{}"): case})


def test_identical_runs_are_compatible():
    assert incompatibility(run(2), run(1)) is None


def test_each_rule_gives_its_reason():
    assert "host is unknown" in incompatibility(run(2), run(1, host=None))
    assert "host 'other'" in incompatibility(run(2), run(1, host="other"))
    assert "suite" in incompatibility(run(2), run(1, suite="elsewhere"))
    assert "code version (v0 → v1)" in incompatibility(run(2), run(1, version="v0"))
    assert "backend" in incompatibility(run(2), run(1, label="timing + PMU"))
    reason = incompatibility(run(2, name="a.A.track_renamed"), run(1))
    assert "are new, e.g. a.A.track_renamed" in reason and "are gone, e.g. a.A.track_x" in reason


def test_latest_compatible_skips_and_says_why():
    current = run(5)
    choice = latest_compatible(current, [run(4, version="old"), run(3), run(2)])
    assert choice.baseline.run_id == 3
    skipped_run, reason = choice.skipped_latest
    assert skipped_run.run_id == 4 and "code version" in reason
    assert latest_compatible(current, [run(4, host="x")]).baseline is None
    assert latest_compatible(current, [run(4), run(3)]).skipped_latest is None
