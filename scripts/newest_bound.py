#!/usr/bin/env python3
"""How often any test could find a +20% step 2-5 commits before the newest one on the CI noise model, at a given
rate of false tail points on A/A series: the bound ``detect``'s newest-commit rule is judged against (issue 46).

The oracle knows each series' noise model (``ci_noise.ci_series_with_model``: its runner levels, their odds and
stickiness, the drift's scale and tails) and that the step is exactly +20%, but not which runner ran each commit. It
filters the runner chain forward over the series (the AR(1) drift, phi <= 0.25, read as independent) and scores the
log likelihood ratio of "+20% from commit n-k on" against "no step", taking the largest over k = 2..5 (where the
step lies is not known). Its bar is set on A/A series drawn with the real tier mix, so that ``rate`` of them get a
false point (one test per 100-commit series: ``rate`` per 100 commits, as ``eval_detect``'s A/A figure).

Usage: python -m scripts.newest_bound [--series 2000] [--seed 4646]
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np
from scipy import stats

from scripts import ci_noise

LENGTH = 100
STEP = math.log(1.2)
POSITIONS = range(2, 6)
RATES = (0.01, 0.02, 0.05)


def tail_scores(model: ci_noise.SeriesModel, logs: np.ndarray) -> dict[int, float]:
    """Log likelihood ratio of "+20% from commit n-k on" for each k of :data:`POSITIONS`, given the model."""
    levels = model.level_logs
    moves = model.stick * np.eye(levels.size) + (1 - model.stick) * model.runner_probs[None, :]
    scale = math.hypot(model.t_scale / math.sqrt(1 - model.phi**2), model.median_sd)

    def emission(y: np.ndarray) -> np.ndarray:
        return stats.t.pdf((y[:, None] - levels[None, :]) / scale, model.df) / scale

    x = logs - model.log_base
    seen = emission(x)
    alpha, prior = model.runner_probs.copy(), []
    for t in range(x.size):  # forward filter: the runner's odds before each commit
        if t:
            alpha = alpha @ moves
        prior.append(alpha.copy())
        alpha = alpha * seen[t]
        alpha /= alpha.sum()

    def loglik(y: np.ndarray, start: np.ndarray) -> float:
        a, total, e = start.copy(), 0.0, emission(y)
        for i in range(y.size):
            if i:
                a = a @ moves
            p = a * e[i]
            total += math.log(max(float(p.sum()), 1e-300))
            a = p / p.sum()
        return total

    return {k: loglik(x[-k:] - STEP, prior[x.size - k]) - loglik(x[-k:], prior[x.size - k]) for k in POSITIONS}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--series", type=int, default=2000, help="A/A series, and stepped series per position (half)")
    ap.add_argument("--seed", type=int, default=4646)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)

    def draw() -> tuple[np.ndarray, ci_noise.SeriesModel, str]:
        values, _, model = ci_noise.ci_series_with_model(rng, LENGTH, None)
        assert model is not None
        return np.log(values), model, ci_noise.tier_of(values)

    aa = []
    for _ in range(args.series):
        logs, model, _tier = draw()
        aa.append(max(tail_scores(model, logs).values()))
    aa_sorted = np.sort(np.array(aa))[::-1]
    stepped: list[tuple[int, str, float]] = []
    for k in POSITIONS:
        for _ in range(args.series // 2):
            logs, model, tier = draw()
            logs[-k:] += STEP
            stepped.append((k, tier, max(tail_scores(model, logs).values())))
    print(f"oracle: +20% steps 2-5 commits before the newest found, {args.series} A/A series, seed {args.seed}")
    for rate in RATES:
        bar = aa_sorted[int(rate * aa_sorted.size)]
        cells = []
        for tier in ci_noise.TIERS:
            got = np.array([s for _, t, s in stepped if t == tier])
            cells.append(f"{tier} {np.mean(got > bar):.2f} ({got.size})")
        everything = np.mean(np.array([s for _, _, s in stepped]) > bar)
        print(f"  A/A false points {rate:.2f} per 100 commits: all {everything:.3f}; " + ", ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
