"""scripts/eval_real.py: the per-commit gate on real asv histories (the MetPy results kept in tests/data)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN_SCRIPT = [sys.executable, "-m", "scripts.eval_real"]
METPY = ROOT / "tests" / "data" / "asv-results" / "metpy"


def test_it_judges_every_commit_of_a_real_history_and_tallies_what_the_next_commits_say():
    proc = subprocess.run([*RUN_SCRIPT, str(METPY / "results"), "--start", "20"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if line.startswith("asv-results/metpy/results"))
    series, judged, rate, confirmed, refuted, other = row.split()[1:7]
    assert int(series) > 100 and int(judged) > 2000  # 128 series of about 60 commits
    flagged = int(confirmed) + int(refuted) + int(other)
    assert abs(float(rate) - 100 * flagged / int(judged)) < 0.01
    assert float(rate) < 1.0  # a quiet single-machine history: few flags as the newest commit
    assert re.search(r"\d+ / \d+$", row)


def test_a_project_root_is_refused_in_one_line_naming_its_results_folder():
    proc = subprocess.run([*RUN_SCRIPT, str(METPY)], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"error: {METPY} is a project, not an asv results folder; pass its results folder: "
                                   f"mmtrack import-asv {METPY / 'results'}")
