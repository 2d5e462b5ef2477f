"""Shared fixtures: paths, a subprocess runner for the real CLI, a fake clock."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # tests import the generated histories as benchmarks.synthetic_history
    sys.path.insert(0, str(REPO))
# Real asv results kept in the repository (tests/data/asv-results/README.md): tests never read ../shared.
ASV_DATA = REPO / "tests" / "data" / "asv-results"
METPY_DIR = ASV_DATA / "metpy"
METPY_RESULTS = METPY_DIR / "results"
CONDA_RESULTS = ASV_DATA / "conda" / "results"
#: What makes rich colour a pipe or treat it as a terminal. A CI job or shell may export them (FORCE_COLOR is
#: common on hosted CI); the tests read the CLI's plain text, so none of them reaches a test or its subprocesses.
FORCED_TERMINAL = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")


@pytest.fixture(autouse=True)
def _plain_output(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in FORCED_TERMINAL:
        monkeypatch.delenv(name, raising=False)


def cli_env(**extra: str) -> dict[str, str]:
    """Environment for subprocesses: this checkout first on sys.path, wide tables (whatever width the
    terminal that started the tests exported)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    env["COLUMNS"] = "160"
    env.update(extra)
    return env


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 300):
    """Run ``python -m mmtrack ARGS`` for real and return the CompletedProcess."""
    return subprocess.run(
        [sys.executable, "-m", "mmtrack", *args],
        cwd=cwd or REPO,
        env=env or cli_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def repo_root() -> Path:
    return REPO


class FakeClock:
    """A nanosecond clock that only moves when a workload says it spent time."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now

    def spend(self, ns: int) -> None:
        self.now += int(ns)


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()
