#!/usr/bin/env python3
"""A noise model of per-commit benchmark histories recorded on CI runners (GitHub-hosted).

It reproduces, per series, the statistics measured on a large public asv history
(issue 16; p10 / median / p90 over series):

==========================================================  =====  ======  =====
commit-to-commit robust CV                                   1.4%   2.2%    10%
share of consecutive commits more than 10% apart             0.5%    21%    51%
within-commit CV of the samples                              1.0%   1.4%   2.3%
between-commit / within-commit spread                         0.9    1.6     12
lag-1 autocorrelation of the residuals                      -0.02   0.15   0.26
==========================================================  =====  ======  =====

How a series is made (all in log space, so every effect is a ratio):

* **Runner levels.** Each commit ran on one of a few runner types. The main one
  holds most commits; one to three others sit a discrete 8-40% away (either way)
  and are drawn with a small total probability. A sticky Markov chain picks the
  runner, so runs of one runner type give the residuals their lag-1 autocorrelation.
  These jumps make most of the ">10% apart" pairs while leaving the robust CV small,
  which is what the real data shows (median series: CV 2.2%, yet 21% of pairs jump).
* **Day-to-day drift.** An AR(1) process with Student-t innovations (heavy tails)
  around the runner level; its scale sets the tier.
* **Within-commit samples.** ``samples_per_commit`` log-normal samples around the
  commit's level, with a per-series CV near 1.4%, plus rare outlier samples.
* **Coarse timers.** In some series samples are rounded to a timer resolution, so
  medians of different commits tie exactly.

Tiers (by the commit-to-commit robust CV): ``quiet`` < 3%, ``mid`` 3-10%, ``noisy`` >= 10%.
``tier=None`` draws a tier with the mix of the real population.

API (stable; others depend on it, only ever add to it):
``ci_series``, ``ci_series_with_model``, ``SeriesModel``, ``inject_step``, ``inject_creep``, ``series_stats``, ``tier_of``, ``draw_tier``, ``TIERS``,
``suite_runners``, ``SuiteRunners``, ``ci_fleet``, ``Fleet``, ``FleetShift``.

**Runs as a factor** (:func:`ci_fleet`): several machines, each running several sibling environments (Python
versions) in one nightly job that shares the machine's runner, over the same commits. It adds what independent
series lack: run-date shifts (a runner image or dependency set changes on a date, for every series of a machine
or of some environments, each by its own amount of one sign), old commits re-measured on later dates (asv keeps
the latest run of a commit, so the old commit then reads the new level), and commits measured out of order.

``python -m scripts.ci_noise [--series N] [--commits N]`` prints the statistics of a
generated population beside the targets (the calibration evidence).
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

TIERS = ("quiet", "mid", "noisy")
# Share of each tier in the real population (median CV 2.2%, p90 10%).
TIER_MIX = {"quiet": 0.68, "mid": 0.24, "noisy": 0.08}
# Range (log-uniform) of each tier's drift scale: the robust sigma of the AR(1) part.
_DRIFT = {"quiet": (0.008, 0.02), "mid": (0.025, 0.07), "noisy": (0.10, 0.25)}

TARGETS = {  # p10, median, p90 per series, from the real history
    "robust_cv": (0.014, 0.022, 0.10),
    "pairs_over_10pct": (0.005, 0.21, 0.51),
    "within_cv": (0.010, 0.014, 0.023),
    "between_over_within": (0.9, 1.6, 12.0),
    "lag1_autocorr": (-0.02, 0.15, 0.26),
}


def draw_tier(rng: np.random.Generator) -> str:
    """A tier drawn with the mix of the real population."""
    return str(rng.choice(TIERS, p=[TIER_MIX[t] for t in TIERS]))


def _runner_chain(rng: np.random.Generator, n: int, p_alt: float, stick: float) -> tuple[np.ndarray, np.ndarray]:
    """Index of the runner level of each commit (0 = the main runner), a sticky Markov chain, and the
    probability of each level when a commit draws its runner afresh."""
    k = int(rng.integers(1, 4))
    weights = rng.dirichlet(np.ones(k)) * p_alt
    probs = np.concatenate([[1.0 - p_alt], weights])
    fresh = rng.choice(k + 1, size=n, p=probs)
    keep = rng.random(n) < stick
    out = np.empty(n, dtype=int)
    out[0] = fresh[0]
    for i in range(1, n):
        out[i] = out[i - 1] if keep[i] else fresh[i]
    return out, probs


def _runner_sequence(rng: np.random.Generator, n: int, p_alt: float, stick: float) -> np.ndarray:
    """Index of the runner level of each commit (0 = the main runner), a sticky Markov chain."""
    return _runner_chain(rng, n, p_alt, stick)[0]


def _level_offsets(rng: np.random.Generator, n_levels: int) -> np.ndarray:
    """Relative offset of each runner level (0 for the main one): 8-40% away, either way."""
    offsets = np.zeros(max(n_levels, 4))
    offsets[1:] = rng.choice([-1.0, 1.0], size=offsets.size - 1) * np.exp(
        rng.uniform(math.log(0.08), math.log(0.40), size=offsets.size - 1)
    )
    return offsets


@dataclass(frozen=True)
class SuiteRunners:
    """The runner of each commit of one suite's runs, shared by all its series, and each level's offset."""

    runners: np.ndarray
    offsets: np.ndarray


def suite_runners(rng: np.random.Generator, n_commits: int) -> SuiteRunners:
    """The runners of one suite's history, drawn as :func:`ci_series` draws a lone series' runners."""
    p_alt = 0.0 if rng.random() < 0.15 else float(rng.beta(1.2, 5.0)) * 0.75
    runners = _runner_sequence(rng, int(n_commits), p_alt, rng.uniform(0.0, 0.35))
    return SuiteRunners(runners, _level_offsets(rng, int(runners.max()) + 1))


@dataclass(frozen=True)
class SeriesModel:
    """Everything :func:`ci_series_with_model` drew for one lone series: what no gate knows, and what
    an oracle that knows it can do best (``scripts/gate_bound.py``). Levels are logs of value / base."""

    tier: str
    phi: float  # AR(1) coefficient of the day-to-day drift
    df: float  # degrees of freedom of its Student-t innovations
    t_scale: float  # their scale
    stick: float  # probability that a commit keeps the previous commit's runner
    runner_probs: np.ndarray  # probability of each runner level when a commit draws afresh
    level_logs: np.ndarray  # log level of each runner (0 for the main one)
    runners: np.ndarray  # the runner of each commit
    drift: np.ndarray  # the AR(1) drift of each commit (log)
    median_sd: float  # spread (log) of a commit's median around its level, from the within-commit samples
    log_base: float  # log of the main runner's value

    def predictive_logpdf(self, t: int, x: np.ndarray) -> np.ndarray:
        """log density of the log of commit ``t``'s value, ``x``, given the runner and drift of commit
        ``t - 1``: the best forecast of an A/A commit there (the samples' rounding left out)."""
        from scipy import stats

        again = (np.arange(self.level_logs.size) == self.runners[t - 1]).astype(float)
        weight = self.stick * again + (1.0 - self.stick) * self.runner_probs
        centre = self.level_logs + self.phi * self.drift[t - 1]
        scale = math.hypot(self.t_scale, self.median_sd)
        x = np.atleast_1d(np.asarray(x, dtype=float)) - self.log_base
        dens = stats.t.pdf((x[:, None] - centre[None, :]) / scale, self.df) / scale
        return np.log(np.maximum(dens @ weight, 1e-300))


def ci_series(
    rng: np.random.Generator, n_commits: int, tier: str | None = None, **options: Any
) -> tuple[np.ndarray, list[np.ndarray]]:
    """One A/A series of per-commit values (medians of that commit's samples) and each commit's samples
    (``options``: those of :func:`ci_series_with_model`)."""
    values, samples, _ = ci_series_with_model(rng, n_commits, tier, **options)
    return values, samples


def ci_series_with_model(
    rng: np.random.Generator,
    n_commits: int,
    tier: str | None = None,
    *,
    samples_per_commit: int = 10,
    base: float = 1e-3,
    suite: SuiteRunners | None = None,
) -> tuple[np.ndarray, list[np.ndarray], SeriesModel | None]:
    """:func:`ci_series`, and the model it drew (None in a suite: the suite's runners are not the series' own).

    ``tier``: quiet, mid or noisy (None: drawn with the real mix); ``suite``: the runners of the suite this
    series belongs to (:func:`suite_runners`); by default the series draws its own, as a lone series."""
    if tier is None:
        tier = draw_tier(rng)
    if tier not in TIERS:
        raise ValueError(f"unknown tier {tier!r}; choose one of {', '.join(TIERS)}")
    n = int(n_commits)
    lo, hi = _DRIFT[tier]
    drift = math.exp(rng.uniform(math.log(lo), math.log(hi)))
    phi = rng.uniform(-0.05, 0.25)
    df = rng.uniform(2.5, 8.0)
    # Student-t innovations scaled so the AR(1) process has robust sigma ~ drift.
    t_scale = drift * math.sqrt(1 - phi**2) / 1.05
    eps = rng.standard_t(df, size=n) * t_scale
    ar = np.empty(n)
    ar[0] = eps[0] / math.sqrt(1 - phi**2)
    for i in range(1, n):
        ar[i] = phi * ar[i - 1] + eps[i]

    if suite is None:
        # Runner levels: some series never change runner type, most do now and then.
        p_alt = 0.0 if rng.random() < 0.15 else float(rng.beta(1.2, 5.0)) * (0.9 if tier == "noisy" else 0.75)
        stick = rng.uniform(0.0, 0.35)
        runners, probs = _runner_chain(rng, n, p_alt, stick)
        offsets = _level_offsets(rng, int(runners.max()) + 1)
    else:
        # One run, one runner: every series of the suite changes level at the same commits, each
        # by its own amount of the same sign (a benchmark leans on the CPU more or less than another).
        runners = suite.runners[:n]
        offsets = suite.offsets * np.exp(rng.normal(0.0, 0.35, size=suite.offsets.size))
        # ... but no runner is more than 10x as fast: 1 in 7,000 scaled offsets fell to -100% or below, a level
        # of zero or NaN (seed 5 of the suites)
        offsets = np.maximum(offsets, -0.9)
        if rng.random() < 0.1:  # a benchmark bound by something else than the runner's CPU barely moves
            offsets = offsets * 0.1
    log_level = np.log1p(offsets)[runners] + ar

    within = float(np.exp(rng.normal(math.log(0.014), 0.32)))
    z = rng.standard_normal((n, samples_per_commit)) * within
    outliers = rng.random((n, samples_per_commit)) < 0.02
    z = z + outliers * np.abs(rng.standard_normal((n, samples_per_commit))) * 0.15
    samples = base * np.exp(log_level[:, None] + z)
    if rng.random() < 0.12:  # coarse timer: values land on a grid, medians tie
        resolution = base * math.exp(rng.uniform(math.log(0.005), math.log(0.03)))
        samples = np.maximum(np.round(samples / resolution), 1.0) * resolution
    sample_list = [row.copy() for row in samples]
    values = np.median(samples, axis=1)
    model = None
    if suite is None:
        model = SeriesModel(tier, phi, df, t_scale, stick, probs, np.log1p(offsets[: probs.size]), runners, ar,
                            1.2533 * within / math.sqrt(samples_per_commit), math.log(base))
    return values, sample_list, model


def _rescale(samples: list[np.ndarray], factors: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    out = [s * f for s, f in zip(samples, factors)]
    return np.array([float(np.median(s)) for s in out]), out


def inject_step(
    values: np.ndarray, samples: list[np.ndarray], at: int, size: float
) -> tuple[np.ndarray, list[np.ndarray]]:
    """A multiplicative step of relative ``size`` (0.1 = +10%, -0.1 = -10%) from index ``at`` on."""
    factors = np.ones(len(samples))
    factors[at:] = 1.0 + size
    return _rescale(samples, factors)


def inject_creep(
    values: np.ndarray, samples: list[np.ndarray], start: int, per_commit: float, n: int
) -> tuple[np.ndarray, list[np.ndarray]]:
    """A gradual change: ``per_commit`` (relative) more at each of ``n`` commits from ``start``; it stays after."""
    k = np.clip(np.arange(len(samples)) - start + 1, 0, n)
    return _rescale(samples, (1.0 + per_commit) ** k)


# --------------------------------------------------------------------------- runs as a factor


@dataclass(frozen=True)
class FleetShift:
    """A run-date shift: from ``day`` on, every series of ``machine``'s ``environments`` moves (log) by its own
    amount of the sign of ``size``."""

    machine: str
    environments: tuple[str, ...]
    day: int
    size: float


@dataclass(frozen=True)
class Fleet:
    """Nightly histories of one project on several machines and environments.

    ``runs[(machine, env, benchmark)]`` lists (commit index, run day, value) of the run each commit kept (its
    latest, as asv keeps one result file per commit), in commit order; ``steps`` holds the code changes
    (benchmark, commit index, relative size) and ``shifts`` the run-date shifts."""

    runs: dict[tuple[str, str, str], list[tuple[int, int, float]]]
    steps: list[tuple[str, int, float]]
    shifts: list[FleetShift]
    commits: int


def _fleet_schedule(rng: np.random.Generator, n: int, rerun_rate: float, late_rate: float) -> dict[int, int]:
    """The run day of each commit's kept run: one new commit a night, some measured a few nights late (out of
    order), and some old commits re-measured on a later night (their kept run is the later one)."""
    day_of = {}
    for c in range(n):
        day_of[c] = c + (int(rng.integers(1, 6)) if rng.random() < late_rate else 0)
    for night in range(n):
        if rng.random() < rerun_rate and night > 10:
            for c in rng.choice(night - 1, size=min(night - 1, int(rng.integers(1, 3))), replace=False):
                day_of[int(c)] = max(day_of[int(c)], night)
    return day_of


def ci_fleet(
    rng: np.random.Generator, *, machines: int = 2, environments: int = 3, benchmarks: int = 30, commits: int = 120,
    code_steps: int = 3, shifts: int = 2, rerun_rate: float = 0.15, late_rate: float = 0.05,
) -> Fleet:
    """A fleet history: ``code_steps`` benchmarks change at a commit on every machine and environment (sizes
    +-5-50%); ``shifts`` run-date shifts each move one machine's environments (one, some or all of them; 10-300%,
    either way). Runner levels are drawn per machine and night and shared by that night's environments."""
    envs = [f"py3.{10 + e}" for e in range(environments)]
    names = [f"m{k}" for k in range(machines)]
    steps = [(f"b{int(b)}", int(rng.integers(15, commits - 15)), float(rng.choice([-1, 1]) * math.exp(rng.uniform(math.log(0.05), math.log(0.5)))))
             for b in rng.choice(benchmarks, size=code_steps, replace=False)]
    drawn = []
    for _ in range(shifts):
        k = int(rng.integers(1, environments + 1))
        which = tuple(sorted(rng.choice(envs, size=k, replace=False).tolist()))
        size = float(rng.choice([-1, 1]) * math.log1p(math.exp(rng.uniform(math.log(0.10), math.log(3.0)))))
        drawn.append(FleetShift(str(rng.choice(names)), which, int(rng.integers(20, commits + 10)), size))
    runs: dict[tuple[str, str, str], list[tuple[int, int, float]]] = {}
    for machine in names:
        runner = suite_runners(rng, commits + 20)  # by night: one runner per machine and night
        schedule = {env: _fleet_schedule(rng, commits, rerun_rate, late_rate) for env in envs}
        for b in range(benchmarks):
            bench = f"b{b}"
            tier = draw_tier(rng)
            for env in envs:
                days = schedule[env]
                _, samples = ci_series(rng, commits + 20, tier, suite=runner)  # noise and runner level by night
                night = np.array([float(np.median(samples[days[c]])) for c in range(commits)])
                code = np.ones(commits)
                for sb, at, size in steps:
                    if sb == bench:
                        code[at:] *= 1.0 + size
                date = np.ones(commits)
                for sh in drawn:
                    if sh.machine == machine and env in sh.environments:
                        amount = sh.size * float(np.exp(rng.normal(0.0, 0.35)))
                        date *= np.where(np.array([days[c] for c in range(commits)]) >= sh.day, math.exp(amount), 1.0)
                runs[(machine, env, bench)] = [(c, days[c], float(night[c] * code[c] * date[c])) for c in range(commits)]
    return Fleet(runs, steps, drawn, commits)


# --------------------------------------------------------------------------- statistics


def robust_cv(values: np.ndarray) -> float:
    """Commit-to-commit robust CV: the robust sigma of consecutive log differences, over sqrt(2)."""
    d = np.diff(np.log(values))
    return float(1.4826 * np.median(np.abs(d)) / math.sqrt(2))


def series_stats(values: np.ndarray, samples: list[np.ndarray]) -> dict[str, float]:
    """The per-series statistics of the table in the module docstring."""
    logv = np.log(values)
    cv = robust_cv(values)
    within = float(np.median([np.std(s, ddof=1) / np.mean(s) for s in samples]))
    resid = logv - np.median(logv)
    r0, r1 = resid[:-1] - resid[:-1].mean(), resid[1:] - resid[1:].mean()
    denom = math.sqrt(float((r0 * r0).sum() * (r1 * r1).sum()))
    return {
        "robust_cv": cv,
        "pairs_over_10pct": float(np.mean(np.abs(np.diff(logv)) > math.log(1.1))),
        "within_cv": within,
        "between_over_within": cv / within if within > 0 else math.inf,
        "lag1_autocorr": float((r0 * r1).sum() / denom) if denom > 0 else 0.0,
        "ties": float(np.mean(np.diff(values) == 0)),
    }


def tier_of(values: np.ndarray) -> str:
    """The tier a series falls in by its measured commit-to-commit robust CV."""
    cv = robust_cv(values)
    return "quiet" if cv < 0.03 else ("mid" if cv < 0.10 else "noisy")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Print the statistics of a generated CI-noise population.")
    ap.add_argument("--series", type=int, default=2000)
    ap.add_argument("--commits", type=int, default=200)
    ap.add_argument("--seed", type=int, default=16)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    rows = [series_stats(*ci_series(rng, args.commits)) for _ in range(args.series)]
    print(f"{args.series} generated A/A series of {args.commits} commits (seed {args.seed}); p10 / median / p90")
    print(f"{'statistic':<24}{'generated':>26}{'target (real CI)':>26}")
    for key, target in TARGETS.items():
        col = np.array([r[key] for r in rows])
        got = np.percentile(col, [10, 50, 90])
        pct = key in ("robust_cv", "pairs_over_10pct", "within_cv")
        fmt = (lambda v: f"{v:6.1%}") if pct else (lambda v: f"{v:6.2f}")
        print(f"{key:<24}{' / '.join(fmt(v) for v in got):>26}{' / '.join(fmt(v) for v in target):>26}")
    cvs = np.array([r["robust_cv"] for r in rows])
    ties = np.array([r["ties"] for r in rows])
    print(
        f"tiers by measured CV: quiet {np.mean(cvs < 0.03):.0%}, mid {np.mean((cvs >= 0.03) & (cvs < 0.10)):.0%}, "
        f"noisy {np.mean(cvs >= 0.10):.0%}; series with tied consecutive medians: {np.mean(ties > 0):.0%}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
