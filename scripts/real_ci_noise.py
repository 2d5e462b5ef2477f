#!/usr/bin/env python3
"""A/A series whose noise is resampled from real per-commit asv histories recorded on CI runners.

``scripts/ci_noise.py`` draws CI noise from a parametric model (runner levels, AR(1) drift with Student-t
innovations). This module draws it from what real runners recorded instead, so that whatever the model leaves out
(the shape of the tails, outliers, how one runner's commits scatter, phases) is there as it was measured:

* **Sources.** Each series of the chosen machines of ``shared/data/asv-results`` (by default OpenBLAS's three CI
  machines: the GitHub-hosted ``gha-ubuntu-noble`` and the self-hosted ``gha-aws-skylake`` and ``gha-aws-graviton``
  GitHub Actions runners), in commit-date order. The code's own steps are taken out: each level
  :mod:`mmtrack.analysis.detect` finds is moved to 0 (log), so that what is left is the runner's noise around the
  code's level; a source with a long excursion detect did not split off (:data:`EXCURSION_RUN`) is left out, and so
  is each commit at which the same benchmark on another of the machines moved the same way (:data:`CODE_MOVE`).
* **Pool.** Each series' residuals are divided by their commit-to-commit robust spread and pooled per machine: one
  runner's noise, in units of its own spread, from every benchmark it ran (a series of 40 commits, bootstrapped
  into 130, would repeat each outlier three times, and a repeated outlier is a level the series "visits").
* **A series.** A stationary block bootstrap (geometric blocks, mean :data:`MEAN_BLOCK` commits, each from one source
  series, so neighbours stay neighbours), scaled to a commit-to-commit spread drawn in the tier's range; within-commit
  samples log-normal at a real commit's relative interquartile spread. Redrawn until its measured tier
  (:func:`ci_noise.tier_of`) is the one asked.
* **A suite** (:func:`real_ci_suite`): series of one machine that ran together, resampled in the same blocks of
  whole runs, so that what a run did to all of them stays together and each keeps its own benchmark's history.
  Each run is used once where the suite shares enough of them: repeated, a burst would be a level already visited.

Usage: ``python -m scripts.real_ci_noise [--machines M,...]`` prints the pooled sources' statistics.
"""

from __future__ import annotations

import argparse
import collections
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mmtrack.analysis.detect import segment_levels
from scripts.ci_noise import robust_cv, series_stats, tier_of
from scripts.eval_detect import _asv_points, shared_dir

#: The machines whose results are CI runners (GitHub Actions: hosted, and self-hosted on AWS).
CI_MACHINES = ("gha-ubuntu-noble", "gha-aws-skylake", "gha-aws-graviton")
#: Mean block length of the stationary bootstrap: keeps runs of a few commits (a runner's phase) together.
MEAN_BLOCK = 6
#: Commit-to-commit robust spread drawn (log-uniform) for each tier.
TIER_SPREAD = {"quiet": (0.008, 0.03), "mid": (0.03, 0.10), "noisy": (0.10, 0.25)}
#: Source series shorter than this are left out: too short for detect to find the code's steps.
MIN_COMMITS = 20
#: Sources whose commit-to-commit spread is below this are left out: ties of a coarse timer, whose residuals in units
#: of that spread are meaningless (thousands).
MIN_SPREAD = 0.002
#: A source holding this many commits in a row beyond EXCURSION spreads the same way is left out: a level detect did
#: not split off (a code change reverted within a few commits, a benchmark's warm-up), not the runner's noise.
EXCURSION_RUN = 4
EXCURSION = 6.0
#: Spreads beyond which a move at one commit, made the same way by the same benchmark on another machine, is the code's
#: (OpenBLAS's machines measured the same commits): that commit is left out.
CODE_MOVE = 2.5
#: Residuals are capped at this many spreads: a quiet source's 1% spread puts a runner's 30% phase there.
MAX_RESIDUAL = 30.0
#: ... and, once scaled to the tier's spread, at this (log; x3 either way): a quiet source's 30-spread phase is not a
#: x90 one on a noisy series, whose runner phases the real noisy histories show at x1.4-2.8 (docs/design/analysis.md).
MAX_LOG = math.log(3.0)


@dataclass(frozen=True)
class Source:
    """One real series: its residuals around the code's levels (log), in units of its commit-to-commit spread,
    and each commit's relative within-commit spread (interquartile range / 1.349 over the median)."""

    name: str
    residuals: np.ndarray
    within: np.ndarray


@dataclass
class _Raw:
    """One machine's series before the code's moves are taken out: its commits' dates (asv's commit date, the same on
    every machine), in order, and residuals (spreads)."""

    commits: list[float]
    residuals: np.ndarray
    within: np.ndarray
    spread: float


def load_sources(root: Path, machines: tuple[str, ...] = CI_MACHINES) -> dict[str, list[Source]]:
    """The sources of each machine found under ``root`` (any depth), by machine folder name; a commit at which the
    same benchmark on another machine moved the same way beyond :data:`CODE_MOVE` spreads is left out (the code's)."""
    raw = _load_raw(root, machines)
    out: dict[str, list[Source]] = {}
    for machine, series in raw.items():
        siblings = [other for m, other in raw.items() if m != machine]
        sources = []
        for name, r in series.items():
            keep = _not_code(r, [o[name] for o in siblings if name in o])
            sources.append(Source(name, r.residuals[keep], r.within[keep]))
        if sources:
            out[machine] = sources
    return out


def _load_raw(root: Path, machines: tuple[str, ...]) -> dict[str, dict[str, _Raw]]:
    raw: dict[str, dict[str, _Raw]] = {}
    for machine_json in sorted(root.rglob("machine.json")):
        machine = machine_json.parent.name
        if machines and machine not in machines:
            continue
        points: dict[str, list[tuple[float, float, float]]] = collections.defaultdict(list)
        for path in sorted(machine_json.parent.glob("*.json")):
            if path.name != "machine.json":
                for name, date, v, q1, q3 in _asv_points(path):
                    if v is not None and v > 0 and math.isfinite(v) and q1 is not None and q3 is not None:
                        points[name.split("/", 2)[-1]].append((date, v, max(q3 - q1, 0.0) / 1.349 / v))
        raw[machine] = {name: r for name, pts in sorted(points.items()) if (r := _raw(pts)) is not None}
    return raw


def _raw(pts: list[tuple[float, float, float]]) -> _Raw | None:
    if len(pts) < MIN_COMMITS:
        return None
    pts.sort()
    values = np.array([p[1] for p in pts])
    x = np.log(values)
    resid = np.concatenate([x[a:b] - np.median(x[a:b]) for a, b in segment_levels(list(values))])
    spread = robust_cv(values)
    if spread < MIN_SPREAD or _longest_excursion(resid / spread) >= EXCURSION_RUN:
        return None
    return _Raw([p[0] for p in pts], np.clip(resid / spread, -MAX_RESIDUAL, MAX_RESIDUAL),
                np.clip([p[2] for p in pts], 1e-4, None), spread)


def _not_code(r: _Raw, siblings: list[_Raw]) -> np.ndarray:
    """Which of ``r``'s commits no sibling shows moving the same way beyond :data:`CODE_MOVE` spreads."""
    moved = [dict(zip(o.commits, o.residuals)) for o in siblings]
    return np.array([not (abs(x) > CODE_MOVE and any(m.get(c, 0.0) * x > 0 and abs(m.get(c, 0.0)) > CODE_MOVE
                                                     for m in moved))
                     for c, x in zip(r.commits, r.residuals)], dtype=bool)


def _longest_excursion(r: np.ndarray) -> int:
    """The most residuals in a row beyond :data:`EXCURSION` spreads, one way."""
    best = run = 0
    for prev, x in zip(np.concatenate([[0.0], r[:-1]]), r):
        run = run + 1 if abs(x) > EXCURSION and (run == 0 or prev * x > 0) else (1 if abs(x) > EXCURSION else 0)
        best = max(best, run)
    return best


def _block_bootstrap(rng: np.random.Generator, sources: list[Source], n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` residuals (units of spread) and within-commit spreads, in geometric blocks each from one source."""
    res: list[float] = []
    within: list[float] = []
    while len(res) < n:
        s = sources[int(rng.integers(len(sources)))]
        length = min(int(rng.geometric(1.0 / MEAN_BLOCK)), s.residuals.size)
        start = int(rng.integers(0, s.residuals.size - length + 1))
        res.extend(s.residuals[start : start + length])
        within.extend(s.within[start : start + length])
    return np.array(res[:n]), np.array(within[:n])


def real_ci_series(rng: np.random.Generator, pool: list[Source], n: int, tier: str, samples_per_commit: int = 10,
                   base: float = 1e-3) -> tuple[np.ndarray, list[np.ndarray]]:
    """One A/A series of ``tier`` from ``pool`` (one machine's sources): the medians and each commit's samples."""
    lo, hi = TIER_SPREAD[tier]
    while True:
        resid, within = _block_bootstrap(rng, pool, n)
        resid = resid - np.median(resid)
        spread = math.exp(rng.uniform(math.log(lo), math.log(hi)))
        z = rng.standard_normal((n, samples_per_commit)) * within[:, None]
        samples = base * np.exp(np.clip(resid * spread, -MAX_LOG, MAX_LOG)[:, None] + z)
        values = np.median(samples, axis=1)
        if tier_of(values) == tier:
            return values, [row.copy() for row in samples]


@dataclass(frozen=True)
class MachineRuns:
    """One machine's series side by side, by run: residuals around the code's levels (log, not in spreads), one row
    per series and one column per commit (0 where a series has no result), and each commit's within-commit
    spreads. What one run did to every series stays in its column, as it does in a real suite."""

    machine: str
    names: list[str]
    residuals: np.ndarray  # series x commits, log
    within: np.ndarray  # series x commits, relative
    present: np.ndarray  # series x commits: whether the series has a result there


def load_runs(root: Path, machines: tuple[str, ...] = CI_MACHINES) -> dict[str, MachineRuns]:
    """:func:`load_sources`' series, kept aligned by commit so that a run's shared part survives resampling; a
    commit a sibling machine shows the same benchmark moving at (the code's) reads 0 for that series."""
    raw = _load_raw(root, machines)
    out: dict[str, MachineRuns] = {}
    for machine, series in raw.items():
        siblings = [other for m, other in raw.items() if m != machine]
        commits = sorted({c for r in series.values() for c in r.commits})
        column = {c: i for i, c in enumerate(commits)}
        res = np.zeros((len(series), len(commits)))
        within = np.full((len(series), len(commits)), 1e-4)
        present = np.zeros((len(series), len(commits)), dtype=bool)
        for row, (name, r) in enumerate(series.items()):
            keep = _not_code(r, [o[name] for o in siblings if name in o])
            cols = [column[c] for c in r.commits]
            res[row, cols] = np.where(keep, r.residuals * r.spread, 0.0)
            within[row, cols] = r.within
            present[row, cols] = True
        if len(series):
            out[machine] = MachineRuns(machine, list(series), res, within, present)
    return out


def real_ci_suite(rng: np.random.Generator, runs: MachineRuns, size: int, n: int, tier: str,
                  samples_per_commit: int = 10, base: float = 1e-3) -> list[tuple[np.ndarray, list[np.ndarray]]]:
    """``size`` A/A series of one machine resampled together: the same blocks of whole runs (:func:`runs_in_blocks`)
    for every member, so a runner burst that slowed the whole run slows the whole suite. A suite
    is the series that ran with one drawn series (a benchmark's names change over a history, so each ran for about a
    third of it): the runs they all have results for are those resampled. The suite is scaled by one factor (as a
    noisier runner would be) so that its members' median commit-to-commit spread falls in ``tier``'s range; each
    member's tier is then measured, not assumed."""
    members, shared = _suite_members(rng, runs.present, size, n)
    cols = runs_in_blocks(rng, shared, n)
    res = runs.residuals[np.ix_(members, cols)]
    within = runs.within[np.ix_(members, cols)]
    res = res - np.median(res, axis=1, keepdims=True)
    spread = float(np.median([robust_cv(np.exp(r)) for r in res]))
    lo, hi = TIER_SPREAD[tier]
    scale = math.exp(rng.uniform(math.log(lo), math.log(hi))) / max(spread, MIN_SPREAD)
    out = []
    for r, w in zip(res, within):
        z = rng.standard_normal((n, samples_per_commit)) * w[:, None]
        samples = base * np.exp(np.clip(r * scale, -MAX_LOG, MAX_LOG)[:, None] + z)
        out.append((np.median(samples, axis=1), [row.copy() for row in samples]))
    return out


def _suite_members(rng: np.random.Generator, present: np.ndarray, size: int, n: int,
                   tries: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """``size`` series that ran with one drawn series, and the runs they all have results for: the first draw with
    ``n`` such runs or more (each run used once), else the draw with the most."""
    best: tuple[np.ndarray, np.ndarray] | None = None
    for _ in range(tries):
        anchor = int(rng.integers(present.shape[0]))
        overlap = present[:, present[anchor]].sum(axis=1)
        members = np.argsort(-(overlap + rng.uniform(0, 0.5, overlap.size)))[:size]
        shared = np.flatnonzero(present[members].all(axis=0))
        if best is None or shared.size > best[1].size:
            best = (members, shared)
        if shared.size >= n:
            break
    assert best is not None
    return best


def runs_in_blocks(rng: np.random.Generator, runs: np.ndarray, n: int) -> list[int]:
    """``n`` of ``runs`` in geometric blocks (mean :data:`MEAN_BLOCK`). Where there are runs enough, the blocks are
    shuffled, each run used once: a run repeated is a level the series has visited before, which a real burst is
    not. Otherwise blocks are drawn with replacement."""
    cuts = np.flatnonzero(rng.random(runs.size - 1) < 1.0 / MEAN_BLOCK) + 1
    blocks = np.split(runs, cuts)
    if n <= runs.size:
        order = rng.permutation(len(blocks))
        return [int(c) for b in order for c in blocks[b]][:n]
    cols: list[int] = []
    while len(cols) < n:
        cols.extend(int(c) for c in blocks[int(rng.integers(len(blocks)))])
    return cols[:n]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=shared_dir() / "data" / "asv-results")
    ap.add_argument("--machines", default=",".join(CI_MACHINES))
    ap.add_argument("--seed", type=int, default=16)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    for machine, pool in load_sources(args.root, tuple(args.machines.split(","))).items():
        res = np.concatenate([s.residuals for s in pool])
        print(f"{machine}: {len(pool)} series, {res.size} commits; residuals beyond 4 / 8 spreads: "
              f"{np.mean(np.abs(res) > 4):.3f} / {np.mean(np.abs(res) > 8):.3f}")
        for tier in TIER_SPREAD:
            rows = [series_stats(*real_ci_series(rng, pool, 200, tier)) for _ in range(100)]
            print(f"  {tier:<6}" + "  ".join(f"{k} {np.median([r[k] for r in rows]):.3f}" for k in
                                             ("robust_cv", "pairs_over_10pct", "lag1_autocorr")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
