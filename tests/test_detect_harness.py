"""The evaluation harness (scripts/eval_detect.py), run small on the real asv results in tests/data."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
# The harness reads <MMTRACK_SHARED>/data/asv-results: tests/ holds that layout (tests/data/asv-results).
SHARED = ROOT / "tests"
DATA = SHARED / "data" / "asv-results"



def _harness():
    return importlib.import_module("scripts.eval_detect")


def test_noise_sources_come_from_the_real_files():
    E = _harness()
    sources = E.load_noise_sources(DATA)
    names = {s.name.split("/")[0] for s in sources}
    assert len(sources) > 100
    assert {"Docker_Container", "benchmarkers-MacBook-Pro.local"} <= names  # metpy and conda machines
    fig = E.noise_figures(sources)
    assert 0.001 < fig["within_median"] < 0.1 and 0.001 < fig["between_median"] < 0.1


def test_scoring_matches_within_tolerance():
    E = _harness()
    s = E.score([10, 30], [(8, 12)])
    assert (s.tp, s.fp, s.fn) == (1, 1, 0)
    assert E.score([], [(8, 12)]).fn == 1
    # creep split into two steps inside the ramp: one hit, no false alarm
    s = E.score([10, 15], [(8, 25)], ramp=True)
    assert (s.tp, s.fp, s.fn) == (1, 0, 0)


def test_injected_step_is_where_it_was_put():
    E = _harness()
    src = E.load_noise_sources(DATA)[0]
    h = E.make_history(np.random.default_rng(1), src, 40, "step", 0.5)
    pos = h.truth[0][0] + 2 if h.truth else h.improvements[0]
    m = h.medians
    ratio = np.median(m[pos:]) / np.median(m[:pos])
    assert ratio == pytest.approx(1.5 if h.truth else 1 / 1.5, rel=0.1)


def test_quick_run_prints_and_writes_figures(tmp_path):
    out = tmp_path / "eval.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT), MMTRACK_SHARED=str(SHARED))
    proc = subprocess.run(
        [sys.executable, "-m", "scripts.eval_detect", "--series", "6", "--length", "40",
         "--noisy-scale", "0", "--json", str(out), "--seed", "3", "--ci-series", "0",
         "--methods", "rankseg,edivisive+mannwhitney,edivisive-binseg+ttest,pelt"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "asv.step_detect" in proc.stdout and "compare on A/A" in proc.stdout
    data = json.loads(out.read_text())
    detect = data["recorded"]["detect"]
    assert set(detect) == {"rankseg", "edivisive+mannwhitney", "edivisive-binseg+ttest", "pelt", "asv.step_detect"}
    big = detect["rankseg"]["step 50%"]
    assert big["tp"] + big["fn"] > 0 and big["recall"] >= 0.75
    aa = data["recorded"]["compare_aa"]
    assert aa["rows"] > 0 and 0.0 <= aa["history"] <= aa["plain"] <= 1.0


def test_a_revert_steps_away_and_back_to_the_level_before():
    E = _harness()
    for seed in range(3):
        h = E.ci_history(np.random.default_rng(seed), 100, "quiet", "revert", 0.2)
        up, down = h.truth[0][0] + 3, h.improvements[0]  # the regression (within +-3) and the step back
        first, second = sorted((up, down))
        m = np.log(h.medians)
        away = np.median(m[first:second]) - np.median(m[:first])
        assert abs(abs(away) - np.log(1.2)) < 0.05 and (away > 0) == (first == up)
        assert abs(np.median(m[second:]) - np.median(m[:first])) < 0.05


def test_newest_misses_names_the_test_that_stops_a_step():
    """A step 3 commits before the newest whose next two commits went back under the threshold is "back"; one that
    begins 10 commits after detect's last step is too young a segment to read."""
    from mmtrack.analysis.policy import ComparePolicy
    from scripts.newest_misses import why_missed

    rng = np.random.default_rng(3)
    flat = list(np.exp(rng.normal(0.0, 0.01, 97)))
    assert why_missed(flat + [1.2, 1.0, 1.0], 97, 0, ComparePolicy()) == "back"
    assert why_missed(flat + [1.2, 1.2, 1.2], 97, 90, ComparePolicy()) == "segment < 30"
    assert why_missed(flat + [1.2, 1.2, 1.2], 97, 96, ComparePolicy()) == "detect's own step in the newest 5"
