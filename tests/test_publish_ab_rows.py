"""An A/B verdict (`mmtrack continuous`) shows on the regressions page by itself: on a new project no change point
or run verdict carries it, and it was invisible."""

from __future__ import annotations

import dataclasses
import json


def read_regressions(site) -> list[dict]:
    text = (site / "data" / "regressions.js").read_text()
    return json.loads(text[text.index("(") + 1 : text.rindex(")")])


def test_a_continuous_verdict_is_a_row_of_its_own(tmp_path):
    from benchmarks.synthetic_history import synthetic_model
    from mmtrack.publish import build_site

    model = dataclasses.replace(synthetic_model(1, 4, 1, seed=3), change_points=[])
    key = next(iter(model.series))
    base, head = model.commits[-2].sha, model.commits[-1].sha
    ab = {(key, head): {"state": "regressed", "ratio": 1.12, "p_value": 0.001, "rounds": 6, "before_sha": base}}
    build_site(dataclasses.replace(model, ab_verdicts=ab), tmp_path / "site")
    (row,) = read_regressions(tmp_path / "site")
    assert row["source"] == "ab" and row["kind"] == "regression" and row["after_sha"] == head
    assert row["ratio"] == 1.12 and row["ab"]["rounds"] == 6


def test_an_ab_verdict_of_the_ab_environment_shows_on_the_history_series(tmp_path):
    from benchmarks.synthetic_history import synthetic_model
    from mmtrack.publish import build_site

    model = dataclasses.replace(synthetic_model(1, 4, 1, seed=3), change_points=[])
    key = next(iter(model.series))
    ab_key = dataclasses.replace(key, environment="mmtrack-ab")  # not among the site's series
    ab = {(ab_key, model.commits[-1].sha): {"state": "improved", "ratio": 0.8, "p_value": 0.001, "rounds": 6,
                                            "before_sha": model.commits[-2].sha}}
    build_site(dataclasses.replace(model, ab_verdicts=ab), tmp_path / "site")
    (row,) = read_regressions(tmp_path / "site")
    assert row["source"] == "ab" and row["kind"] == "improvement" and row["env"] == key.environment


def test_a_run_verdict_of_the_same_pair_carries_the_ab_verdict(tmp_path):
    from benchmarks.synthetic_history import synthetic_model
    from mmtrack.publish import build_site
    from mmtrack.results import RunVerdict

    model = dataclasses.replace(synthetic_model(1, 4, 1, seed=3), change_points=[])
    key = next(iter(model.series))
    base, head = model.commits[-2].sha, model.commits[-1].sha
    run = RunVerdict(key, base, head, "regressed", "suspected", 1.2, 1.0, 1.2, 0.01, "")
    ab = {(dataclasses.replace(key, environment="mmtrack-ab"), head):
          {"state": "regressed", "ratio": 1.15, "p_value": 0.001, "rounds": 6, "before_sha": base}}
    build_site(dataclasses.replace(model, ab_verdicts=ab, run_verdicts=[run]), tmp_path / "site")
    (row,) = read_regressions(tmp_path / "site")
    assert row["source"] == "run" and row["ab"]["state"] == "regressed" and row["ab"]["ratio"] == 1.15


def test_a_refuted_confirmation_alone_makes_no_row(tmp_path):
    from benchmarks.synthetic_history import synthetic_model
    from mmtrack.publish import build_site

    model = dataclasses.replace(synthetic_model(1, 4, 1, seed=3), change_points=[])
    key = next(iter(model.series))
    ab = {(key, model.commits[-1].sha): {"state": "refuted", "ratio": 1.0, "p_value": 0.5, "rounds": 4,
                                         "before_sha": model.commits[-2].sha}}
    build_site(dataclasses.replace(model, ab_verdicts=ab), tmp_path / "site")
    assert read_regressions(tmp_path / "site") == []
