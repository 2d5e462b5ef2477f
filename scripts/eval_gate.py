#!/usr/bin/env python3
"""Evaluation of the per-commit gate: ``compare`` of commit i-1 vs i with its history.

This is what ``mmtrack run`` and ``mmtrack compare`` do on every commit. Scored on two
noise scenarios:

* **CI runners** (``scripts/ci_noise.py``): runner levels, heavy-tailed drift,
  autocorrelation and ties, calibrated on real GitHub-hosted asv histories;
* **MetPy/conda bootstrap** (``scripts/eval_detect.py``): residuals of the recorded
  asv results in ``../shared/data/asv-results``, much quieter.

Figures, per gate:

* false alarms per 100 commits per series on A/A series: commits flagged (regressed or
  improved) when they are the newest commit, regressions among them, and for mmtrack the
  commits the next commits confirm (whether or not the newest-commit verdict flagged them);
* after a step: the stepped series' later commits flagged as the newest commit, per 100 of them (the step
  flagged again, a false alarm; ``after``);
* recall of +20% steps: the step commit flagged regressed as the newest commit, overall, on
  quiet series (commit-to-commit robust CV < 3%), mid and noisy; for mmtrack also the share the
  next commits confirm (``confirm_window`` of them).
* on the CI model, the quiet series' recall split by the runner types their window visited (from
  the model, which no gate knows: :func:`recall_by_runner_visits`).

A third scenario, **suites** (``scripts/ci_noise.py`` with ``suite_runners``): suites of 20 series
whose runs share their runner, as the benchmarks of one CI job do, judged run by run as
``mmtrack run`` judges them (every series of the run in one ``compare_measurements``): the gate as a
lone series sees it (``min_suite=0``), with the run's common shift (:func:`mmtrack.analysis.compare.run_shift`)
explaining the changes it made, and the default, which also takes the runner levels the suite shares out of
each series' history (:mod:`mmtrack.analysis.frames`); under each gate, its missed steps by tier and why,
and its false alarms by where the commit ran (from the model). Its "fails" column counts what actually fails ``mmtrack run
--fail-on regression``: the A/A commits whose regression a later run confirms (``decided``, read across
that run by :func:`mmtrack.analysis.compare.decided_in_run`), per 100 commits. Its "after" column: the
stepped series' commits after their step flagged as the newest commit, per 100 such commits (the new level
is the series' own by then: every flag there is a false one, the step flagged again).

A fourth, **realsuites** (:func:`scripts.real_ci_noise.real_ci_suite`): suites of 20 series of one of OpenBLAS's
CI machines resampled run by run, whole runs in shuffled blocks, so that what a run did to every series stays in its
column and each benchmark keeps its own history; judged as the suites are. With ``--history 25 --length 33`` each
run is used once (no burst is seen twice): the suites are drawn among series sharing 33 runs or more.

Gates side by side, on the same series:

* ``mmtrack``: the gate of this checkout (:func:`mmtrack.analysis.compare.compare_pair`
  with ``window`` commits of history and the next commits for confirmation);
* ``mmtrack@REV``: the same function as it was at git revision ``--baseline`` (today's gate).
  Run from a checkout's root (``python -m scripts.eval_gate``), the harness scores that checkout's
  gate: to score another tree's gate, run it from that tree's root;
* ``asv compare``: asv's rule, factor 1.1 plus ``asv._stats.is_different`` on the two
  commits' samples (what ``asv compare`` does).

Usage: python -m scripts.eval_gate [--series N] [--suites N] [--seed S] [--baseline REV]
       [--scenarios ci,bootstrap,suites,reverts,realnoise,realsuites] [--revert-after 5,10,20] [--revert-paired]
       [--real-steps 0.05,0.1,0.2,0.5] [--show-alarms N] [--json PATH]
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Callable, Sequence

import numpy as np

from mmtrack.analysis import compare as gate_now
from mmtrack.results import Measurement
from scripts.ci_noise import (
    SeriesModel,
    ci_series,
    ci_series_with_model,
    inject_step,
    robust_cv,
    suite_runners,
    tier_of,
)
from scripts.eval_detect import load_noise_sources, make_history, measurement, shared_dir
from scripts.real_ci_noise import load_runs as load_real_runs
from scripts.real_ci_noise import load_sources as load_real_sources
from scripts.real_ci_noise import real_ci_series, real_ci_suite

ROOT = Path(__file__).resolve().parents[1]

WINDOW = gate_now.HISTORY_WINDOW  # commits of history, as mmtrack compare's default; scoring starts there
HISTORY = WINDOW  # commits of history each verdict reads (--history: fewer, as a shorter-lived store has)
# Whether each commit keeps its samples (--no-samples: as asv writes results without --record-samples, a
# median, quartiles, sample count and 99% interval only, which is what most real asv histories hold).
RECORD_SAMPLES = True
LATER = gate_now.ComparePolicy().confirm_window  # commits after the judged one that may confirm it

# (verdict when the commit is the newest, (verdict, state) once the later commits are in);
# a gate without states gives its one verdict and None.
Judgement = tuple[str, tuple[str, "str | None"]]
Gate = Callable[[Sequence[Measurement], Sequence[float], int], Judgement]


# --------------------------------------------------------------------------- the gates


def load_compare_at(rev: str) -> ModuleType:
    """mmtrack.analysis.compare as it was at git revision ``rev``, from that revision's package in a git worktree."""
    from scripts.revision import reference

    return reference(rev, "mmtrack.analysis.compare")  # type: ignore[return-value]


def mmtrack_gate(module: ModuleType, later: bool) -> Gate:
    def judge(ms: Sequence[Measurement], medians: Sequence[float], t: int) -> Judgement:
        history = list(medians[max(0, t - HISTORY) : t])  # ends with the before commit, t-1
        now = module.compare_pair(ms[t - 1], ms[t], None, history)
        if not later:  # a revision without states
            return now.verdict, (now.verdict, None)
        final = module.compare_pair(ms[t - 1], ms[t], None, history, list(medians[t + 1 : t + 1 + LATER]))
        return now.verdict, (final.verdict, final.state)

    return judge


def asv_gate(factor: float = 1.1) -> Gate:
    """asv compare's rule on the two commits: beyond ``factor`` and ``_stats.is_different``."""
    from asv import _stats
    from asv_runner.statistics import compute_stats

    def stats(m: Measurement) -> tuple[list[float] | None, float, dict]:
        """The samples, value and stats asv's results file holds for the commit (no samples: the rest alone)."""
        if m.samples:
            return list(m.samples), *compute_stats(list(m.samples), 1)
        return None, m.median, {"ci_99_a": m.ci_low, "ci_99_b": m.ci_high, "q_25": m.q1, "q_75": m.q3,
                                "repeat": m.count, "number": 1}

    def judge(ms: Sequence[Measurement], medians: Sequence[float], t: int) -> Judgement:
        (a, va, sa), (b, vb, sb) = stats(ms[t - 1]), stats(ms[t])
        verdict = "unchanged"
        if _stats.is_different(a, b, sa, sb):
            verdict = "regressed" if vb > va * factor else ("improved" if vb < va / factor else "unchanged")
        return verdict, (verdict, None)

    return judge


# --------------------------------------------------------------------------- populations


@dataclass
class Series:
    medians: np.ndarray
    samples: list[np.ndarray]
    tier: str  # by the A/A series' measured commit-to-commit CV
    step_at: int | None = None
    _ms: list[Measurement] = field(default_factory=list)
    model: SeriesModel | None = None  # what drew it (the CI model's lone series): the oracle's knowledge
    runners: np.ndarray | None = None  # the runner type of each commit, shared by its suite (suites only)
    source: str = ""  # the machine whose real noise it was resampled from (realnoise only)

    @property
    def measurements(self) -> list[Measurement]:
        if not self._ms:
            self._ms = [measurement(s) if RECORD_SAMPLES else dataclasses.replace(measurement(s), samples=())
                        for s in self.samples]
        return self._ms


def ci_population(rng: np.random.Generator, n: int, length: int, step: float | None) -> list[Series]:
    out = []
    for _ in range(n):
        values, samples, model = ci_series_with_model(rng, length)
        tier = tier_of(values)
        at = None
        if step is not None:
            at = int(rng.integers(WINDOW, length - LATER))
            values, samples = inject_step(values, samples, at, step)
        out.append(Series(values, samples, tier, at, model=model))
    return out


def bootstrap_population(
    rng: np.random.Generator, sources: list, n: int, length: int, step: float | None
) -> list[Series]:
    out = []
    for _ in range(n):
        h = make_history(rng, sources[int(rng.integers(len(sources)))], length, "aa", 0.0)
        values, samples = h.medians, h.samples
        tier = tier_of(values)
        at = None
        if step is not None:
            at = int(rng.integers(WINDOW, length - LATER))
            values, samples = inject_step(values, samples, at, step)
        out.append(Series(values, samples, tier, at))
    return out


# --------------------------------------------------------------------------- scoring


FLAGS = ("regressed", "improved")


@dataclass
class Tally:
    """The gate's verdicts over a population, counted one way for lone series and suites alike.

    A/A commits: flagged as the newest commit, of which regressions; confirmed by the next commits; and
    ``settled``: flagged, suspected or confirmed, once the next commits are in (what ``compare i-1 i`` says of an
    older pair, from a store that holds the commits after it: a suspicion they refuted reads ``unchanged
    (refuted)``). Step commits, per tier: flagged regressed as the newest commit, confirmed, and read ``regressed``
    once the next commits are in. Commits after a step: the new level is the series' own by then (a step flagged
    again), so every flag there is a false one, and a kind that A/A series never show: a young segment that has
    not seen the series' runner levels yet."""

    commits: int = 0
    flagged: int = 0
    regressions: int = 0
    confirmed: int = 0
    settled: int = 0
    after_commits: int = 0
    after_flags: int = 0
    after_confirmed: int = 0  # ... confirmed once the next commits are in: the step confirmed again, failing twice
    steps: list[tuple[str, bool, bool, bool]] = field(default_factory=list)  # tier, flagged, confirmed, settled
    # A/A commits and those confirmed flagged, per tier: the confirmed false alarms each tier's gate raises
    tier_commits: collections.Counter = field(default_factory=collections.Counter)
    tier_confirmed: collections.Counter = field(default_factory=collections.Counter)
    tier_confirmed_regressions: collections.Counter = field(default_factory=collections.Counter)  # what fails a gate
    seconds: float = 0.0  # judging the A/A commits and the step commits (:func:`tally_lone`)

    def aa(self, now: str, final: str, state: str | None, tier: str = "") -> None:
        self.commits += 1
        self.flagged += now in FLAGS
        self.regressions += now == "regressed"
        self.confirmed += final in FLAGS and state == "confirmed"
        self.settled += final in FLAGS
        self.tier_commits[tier] += 1
        self.tier_confirmed[tier] += final in FLAGS and state == "confirmed"
        self.tier_confirmed_regressions[tier] += final == "regressed" and state == "confirmed"

    def confirmed_by_tier(self, regressions: bool = False) -> dict[str, float]:
        """Confirmed false alarms per 100 A/A commits of each tier, either way or (``regressions``) regressions
        only (NaN: no commit of it)."""
        counts = self.tier_confirmed_regressions if regressions else self.tier_confirmed
        return {t: 100.0 * counts[t] / self.tier_commits[t] if self.tier_commits[t] else float("nan")
                for t in ("quiet", "mid", "noisy")}

    def step(self, tier: str, now: str, final: str, state: str | None) -> None:
        self.steps.append((tier, now == "regressed", final == "regressed" and state == "confirmed",
                           final == "regressed"))

    def after(self, now: str, final: str, state: str | None) -> None:
        self.after_commits += 1
        self.after_flags += now in FLAGS
        self.after_confirmed += final in FLAGS and state == "confirmed"

    def false_alarms(self) -> dict[str, float]:
        """Per 100 A/A commits (and per 100 commits after a step)."""
        per = 100.0 / max(self.commits, 1)
        return {"commits": self.commits, "any": self.flagged * per, "regressions": self.regressions * per,
                "confirmed": self.confirmed * per, "settled": self.settled * per,
                "after_step": 100.0 * self.after_flags / max(self.after_commits, 1),
                "after_step_confirmed": 100.0 * self.after_confirmed / max(self.after_commits, 1),
                "after_step_commits": self.after_commits}

    def recall(self) -> dict[str, dict[str, float]]:
        """Per tier (and "all"): the shares of step commits flagged, confirmed and settled (NaN: no step there)."""
        out = {}
        for tier in ("all", "quiet", "mid", "noisy"):
            picked = [j for j in self.steps if tier == "all" or j[0] == tier]
            flagged, confirmed, settled = (
                sum(j[k] for j in picked) / len(picked) if picked else float("nan") for k in (1, 2, 3))
            out[tier] = {"steps": len(picked), "flagged": flagged, "confirmed": confirmed, "settled": settled}
        return out


def tally_lone(aa: list[Series], steps: list[Series], gate: Gate, alarms: list | None = None) -> Tally:
    """Every judged commit of the A/A series, each stepped series' step commit, and the commits after it; ``alarms``
    gets each confirmed A/A false alarm's series and commit."""
    tally, t0 = Tally(), time.perf_counter()
    for s in aa:
        for t in range(WINDOW, len(s.medians) - LATER):
            now, (final, state) = gate(s.measurements, s.medians, t)
            tally.aa(now, final, state, s.tier)
            if alarms is not None and final in FLAGS and state == "confirmed":
                alarms.append((s, t))
    for s in steps:
        assert s.step_at is not None
        now, (final, state) = gate(s.measurements, s.medians, s.step_at)
        tally.step(s.tier, now, final, state)
    tally.seconds = time.perf_counter() - t0
    for s in steps:
        for t in range(s.step_at + 1, len(s.medians) - LATER):  # type: ignore[operator]
            now, (final, state) = gate(s.measurements, s.medians, t)
            tally.after(now, final, state)
    return tally


def evaluate(name: str, aa: list[Series], steps: list[Series], gates: dict[str, Gate], show: int = 0) -> dict:
    """Each gate's false alarms and recall on ``aa`` and ``steps``; the first ``show`` confirmed false alarms of
    today's gate, with their commits."""
    tiers = {t: sum(s.tier == t for s in aa) for t in ("quiet", "mid", "noisy")}
    print(f"\n== {name}: {len(aa)} A/A series, {len(steps)} series with a +20% step; A/A tiers {tiers}")
    print(
        f"{'gate':<18}{'A/A flag':>9}{'regr':>7}{'conf':>7}{'after':>7} | {'recall':>7}{'conf':>6} | {'quiet':>6}{'conf':>6}"
        f" | {'mid':>5}{'noisy':>6} | {'s/series':>8}"
    )
    out, alarms = {}, []
    for gname, gate in gates.items():
        tally = tally_lone(aa, steps, gate, alarms if gname == "mmtrack" else None)
        secs = tally.seconds / (len(aa) + len(steps))
        fa, rec = tally.false_alarms(), tally.recall()
        has_states = gname == "mmtrack"
        conf = lambda v: f"{v:.2f}" if has_states else "-"  # noqa: E731
        print(
            f"{gname:<18}{fa['any']:>9.2f}{fa['regressions']:>7.2f}{conf(fa['confirmed']):>7}{fa['after_step']:>7.2f} | "
            f"{rec['all']['flagged']:>7.2f}{conf(rec['all']['confirmed']):>6} | "
            f"{rec['quiet']['flagged']:>6.2f}{conf(rec['quiet']['confirmed']):>6} | "
            f"{rec['mid']['flagged']:>5.2f}{rec['noisy']['flagged']:>6.2f} | {secs:>8.3f}"
        )
        out[gname] = {"false_alarms_per_100": fa, "recall_20pct": rec, "seconds_per_series": secs,
                      "confirmed_by_tier": tally.confirmed_by_tier()}
    if "mmtrack" in out:
        fa, rec = out["mmtrack"]["false_alarms_per_100"], out["mmtrack"]["recall_20pct"]
        print("mmtrack, " + settled_line(fa, {t: r["settled"] for t, r in rec.items()}))
        print("mmtrack, confirmed false alarms per 100 A/A commits by tier: " + ", ".join(
            f"{t} {v:.2f}" for t, v in out["mmtrack"]["confirmed_by_tier"].items()))
    for s, t in alarms[:show]:
        print_alarm(s, t)
    return out


def settled_line(fa: dict[str, float], recall_by_tier: dict[str, float]) -> str:
    """The settled reading: ``compare i-1 i`` once the next commits are stored, flagged suspected or confirmed; and the
    commits after a step confirmed there (the step confirmed a second time)."""
    r = recall_by_tier
    return (f"settled (the next {LATER} commits stored; suspected or confirmed): A/A flagged {fa['settled']:.2f} "
            f"per 100 commits, recall {r['all']:.2f} (quiet {r['quiet']:.2f}, mid {r['mid']:.2f}, "
            f"noisy {r['noisy']:.2f}); after a step, confirmed again {fa['after_step_confirmed']:.2f} per 100 commits")


def recall_by_runner_visits(steps: list[Series], gate: Gate) -> dict[str, dict[str, float]]:
    """Recall of the quiet series' steps, split by what drew their window (the model, which no gate knows):
    every commit on the main runner type, or some on another one. A runner level the window visited near
    the stepped value is what leaves a quiet step unflagged (docs/design/analysis.md)."""
    groups: dict[str, list[tuple[bool, bool]]] = {"never another runner": [], "another runner, < 5%": [],
                                                  "another runner, >= 5%": []}
    for s in steps:
        if s.tier != "quiet" or s.model is None or s.step_at is None:
            continue
        visited = float(np.mean(s.model.runners[max(0, s.step_at - HISTORY) : s.step_at] != 0))
        name = "never another runner" if visited == 0 else ("another runner, < 5%" if visited < 0.05 else
                                                              "another runner, >= 5%")
        now, (final, state) = gate(s.measurements, s.medians, s.step_at)
        groups[name].append((now == "regressed", final == "regressed" and state == "confirmed"))
    out = {}
    print("quiet steps by the window's runners (from the model): series, recall as the newest commit, confirmed")
    for name, judged in groups.items():
        n = max(len(judged), 1)
        out[name] = {"steps": len(judged), "flagged": sum(j[0] for j in judged) / n,
                     "confirmed": sum(j[1] for j in judged) / n}
        print(f"  {name:<24}{len(judged):>5}{out[name]['flagged']:>7.2f}{out[name]['confirmed']:>7.2f}")
    return out


# --------------------------------------------------------------------------- the bound: an oracle


#: Step sizes an oracle that does not know the step's size weighs (log-uniform, 10%: the gate's threshold).
ANY_STEP = np.log(np.geomspace(1.10, 2.0, 25))


def oracle_scores(series: list[Series], known: float | None) -> tuple[np.ndarray, np.ndarray]:
    """(log likelihood ratio of "a step up here", of "a step down here") at each judged commit of
    ``series``: A/A series at every commit the gate judges, stepped ones at their step.

    The oracle knows every series' noise model (runner levels and their odds, the drift's scale, tails
    and autocorrelation) and its hidden state at the commit before (:meth:`SeriesModel.predictive_logpdf`):
    far more than any gate reading the history. Against the step's size ``known`` (log) it is the
    Neyman-Pearson test, the most powerful there is; with ``None`` it weighs :data:`ANY_STEP`, as a gate
    that must catch every step beyond its threshold."""
    sizes = ANY_STEP if known is None else np.array([known])
    up, down = [], []
    for s in series:
        assert s.model is not None, "the oracle needs the CI model's lone series"
        for t in ([s.step_at] if s.step_at is not None else range(WINDOW, len(s.medians) - LATER)):
            x = math.log(s.medians[t])
            h0 = float(s.model.predictive_logpdf(t, x)[0])
            shifted = lambda sign: float(np.logaddexp.reduce(s.model.predictive_logpdf(t, x - sign * sizes)))  # noqa: E731
            up.append(shifted(1.0) - math.log(sizes.size) - h0)
            down.append(shifted(-1.0) - math.log(sizes.size) - h0)
    return np.array(up), np.array(down)


def window_density_scores(series: list[Series]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`oracle_scores` for :data:`ANY_STEP` from what a gate can know: the density of the ``HISTORY``
    commits before the judged one, a Gaussian kernel on their log medians (bandwidth: their robust
    commit-to-commit spread; 0.1% of the mass spread flat over one unit of log). No model: a reference for
    how far a rule reading only the window can go, between the gate and the oracle (docs/design/analysis.md)."""
    def log_density(h: np.ndarray, x: np.ndarray, bw: float) -> np.ndarray:
        z = (x[:, None] - h[None, :]) / bw
        return np.log(0.999 * np.exp(-0.5 * z * z).mean(axis=1) / (bw * math.sqrt(2 * math.pi)) + 0.001)

    up, down = [], []
    for s in series:
        for t in ([s.step_at] if s.step_at is not None else range(WINDOW, len(s.medians) - LATER)):
            h, x = np.log(s.medians[t - HISTORY : t]), math.log(s.medians[t])
            bw = max(robust_cv(s.medians[t - HISTORY : t]), 1e-3)
            h0 = float(log_density(h, np.array([x]), bw)[0])
            up.append(float(np.logaddexp.reduce(log_density(h, x - ANY_STEP, bw))) - math.log(ANY_STEP.size) - h0)
            down.append(float(np.logaddexp.reduce(log_density(h, x + ANY_STEP, bw))) - math.log(ANY_STEP.size) - h0)
    return np.array(up), np.array(down)


def oracle_bound(aa: list[Series], steps: list[Series], rates: Sequence[float], step: float) -> dict:
    """Recall of the steps (flagged regressed: the step-up ratio beyond the bar and beyond the step-down
    one) when the oracle's bar lets through ``rate`` false alarms per 100 A/A commits (either way); and the
    same for the window's own density (:func:`window_density_scores`)."""
    tiers = np.array([s.tier for s in steps])
    out: dict = {}
    scorers: dict[str, Callable[[list[Series]], tuple[np.ndarray, np.ndarray]]] = {
        "step size known": lambda ss: oracle_scores(ss, math.log1p(step)),
        "any step size": lambda ss: oracle_scores(ss, None),
        "window density (no model)": window_density_scores,
    }
    for name, scores in scorers.items():
        aa_up, aa_down = scores(aa)
        st_up, st_down = scores(steps)
        aa_best = np.sort(np.maximum(aa_up, aa_down))[::-1]
        for rate in rates:
            k = int(rate / 100.0 * aa_best.size)
            bar = aa_best[k] if k < aa_best.size else -np.inf
            hit = (st_up > bar) & (st_up >= st_down)
            by_tier = {t: float(hit[tiers == t].mean()) if (tiers == t).any() else float("nan") for t in ("quiet", "mid", "noisy")}
            out.setdefault(name, {})[f"{rate:.2f}"] = {"all": float(hit.mean()), **by_tier}
    return out


def print_bound(bound: dict) -> None:
    print("the bound: an oracle that knows each series' noise model and its state at the commit before, its bar")
    print("set to let through the same false alarms (per 100 A/A commits); recall of the +20% steps. Beside it,")
    print("the same likelihood ratio from the density of the window's own commits, as a gate could read it:")
    print(f"{'oracle':<26}{'A/A flag':>9} | {'recall':>7} | {'quiet':>6}{'mid':>6}{'noisy':>6}")
    for name, by_rate in bound.items():
        for rate, r in by_rate.items():
            print(f"{name:<26}{float(rate):>9.2f} | {r['all']:>7.2f} | {r['quiet']:>6.2f}{r['mid']:>6.2f}{r['noisy']:>6.2f}")


# --------------------------------------------------------------------------- reverts: a step, then a step back


def tier_series(rng: np.random.Generator, length: int, tier: str) -> tuple[np.ndarray, list[np.ndarray]]:
    """A lone CI-model series drawn in ``tier`` whose measured commit-to-commit CV (:func:`ci_noise.tier_of`) puts it
    there too, so that each tier's figures read series of that tier only."""
    while True:
        values, samples, _ = ci_series_with_model(rng, length, tier)
        if tier_of(values) == tier:
            return values, samples


def revert_populations(rng: np.random.Generator, n: int, length: int, tier: str, after: Sequence[int],
                       step: float, paired: bool = False) -> dict[str, list[Series]]:
    """``n`` series of ``tier`` each: A/A ("aa"), a first step of +``step`` ("step"), and for each k of ``after`` an
    optimisation (×1/(1+``step``)) that a commit reverts k commits later ("revert k"; ``step_at`` is the reverting
    commit, a +``step`` regression judged against a series that held the faster level for k commits). ``paired``:
    also "step k", the same series as "revert k" with a first +``step`` at the same commit instead (the same draws:
    a revert's recall against a first step's without the noise of two populations)."""
    out: dict[str, list[Series]] = {"aa": [], "step": []}
    for _ in range(n):
        values, samples = tier_series(rng, length, tier)
        out["aa"].append(Series(values, samples, tier))
        values, samples = tier_series(rng, length, tier)
        at = int(rng.integers(WINDOW, length - LATER))
        out["step"].append(Series(*inject_step(values, samples, at, step), tier, at))
    for k in after:
        out[f"revert {k}"], out[f"step {k}"] = [], []
        for _ in range(n):
            values, samples = tier_series(rng, length, tier)
            at = int(rng.integers(WINDOW, length - LATER))
            if paired:
                out[f"step {k}"].append(Series(*inject_step(values, samples, at, step), tier, at))
            values, samples = inject_step(values, samples, at - k, 1.0 / (1.0 + step) - 1.0)
            out[f"revert {k}"].append(Series(*inject_step(values, samples, at, step), tier, at))
    return {kind: pop for kind, pop in out.items() if pop}


def evaluate_reverts(rng: np.random.Generator, n: int, length: int, after: Sequence[int], gate: Gate,
                     step: float = 0.20, paired: bool = False, show: int = 0) -> dict:
    """Per tier: confirmed false alarms per 100 A/A commits (and flagged as the newest commit), the recall of first
    +20% steps and of reverts after k commits (flagged regressed as the newest commit; confirmed by the next
    ``LATER``), and the reading of each revert the gate did not flag (its note's first words); the first ``show``
    confirmed false alarms of each tier, with their commits."""
    print(f"\n== reverts (CI-runner model, lone series, {n} series per tier and kind): an optimisation "
          f"×{1 / (1 + step):.3f} reverted k commits later (a +{step:.0%} regression), beside first +{step:.0%} steps")
    kinds = ["step", *(f"revert {k}" for k in after), *(f"step {k}" for k in after if paired)]
    print(f"{'tier':<7}{'A/A flag':>9}{'conf':>7} | " + " | ".join(f"{k:>10} conf" for k in kinds))
    out: dict = {}
    for tier in ("quiet", "mid", "noisy"):
        pops = revert_populations(rng, n, length, tier, after, step, paired)
        alarms: list = []
        tally = tally_lone(pops["aa"], [], gate, alarms)
        fa = tally.false_alarms()
        row: dict = {"aa_commits": fa["commits"], "aa_flagged_per_100": fa["any"], "aa_confirmed_per_100": fa["confirmed"]}
        readings: collections.Counter = collections.Counter()
        unconfirmed: collections.Counter = collections.Counter()
        for kind in kinds:
            judged = [(gate(s.measurements, s.medians, s.step_at), s) for s in pops[kind]]  # type: ignore[arg-type]
            row[kind] = {"series": len(judged),
                         "flagged": sum(now == "regressed" for (now, _), _ in judged) / len(judged),
                         "confirmed": sum(f == "regressed" and st == "confirmed" for (_, (f, st)), _ in judged) / len(judged)}
            if kind.startswith("revert"):
                readings.update(f"{kind}: {reading_of(s)}" for (now, _), s in judged if now != "regressed")
            unconfirmed.update(f"{kind}: {reading_of(s, later=True)}" for (_, (f, st)), s in judged
                               if not (f == "regressed" and st == "confirmed"))
        row["missed_reverts"] = dict(readings)
        row["unconfirmed"] = dict(unconfirmed)
        if paired:
            row["by_runner_phase"] = {k: paired_by_runner_phase(pops[f"revert {k}"], pops[f"step {k}"], gate) for k in after}
        out[tier] = row
        print(f"{tier:<7}{fa['any']:>9.2f}{fa['confirmed']:>7.2f} | " + " | ".join(
            f"{row[k]['flagged']:>10.2f}{row[k]['confirmed']:>5.2f}" for k in kinds))
        print_breakdown("reverts not flagged as the newest commit", readings)
        print_breakdown("not confirmed by the next commits", unconfirmed)
        for k, split in row.get("by_runner_phase", {}).items():
            print(f"  revert {k} / step {k} confirmed on the same series, by the gate's reading of the phase: " + "; ".join(
                f"{name} {v['series']} series, {v['revert']:.2f} / {v['step']:.2f}" for name, v in split.items()))
        for s, t in alarms[:show]:
            print_alarm(s, t)
    return out


RUNNER_PHASE = ("the series visits both levels", "a runner phase ended")


def paired_by_runner_phase(reverts: list[Series], steps: list[Series], gate: Gate) -> dict[str, dict[str, float]]:
    """The revert and the first step on the same series, confirmed (shares), split by whether the gate read the
    revert's phase as a runner level the series visits (its note, as the newest commit or once the next commits are
    in: "the series visits both levels", "a runner phase ended"): the reading issue 46 keeps for a series that has
    shown it alternates. On the other series a revert should confirm as often as the first step."""
    split: dict[str, list[tuple[bool, bool]]] = {"never visited": [], "visits the phase's level": []}
    for r, s in zip(reverts, steps):
        rows = [reading_row(r, later) for later in (False, True)]
        visits = any(phrase in (row.note or "") for row in rows for phrase in RUNNER_PHASE)
        confirmed = [(final, state) == ("regressed", "confirmed")
                     for _, (final, state) in (gate(x.measurements, x.medians, x.step_at) for x in (r, s))]  # type: ignore[arg-type]
        split["visits the phase's level" if visits else "never visited"].append((confirmed[0], confirmed[1]))
    return {name: {"series": len(pairs), "revert": float(np.mean([p[0] for p in pairs])) if pairs else float("nan"),
                   "step": float(np.mean([p[1] for p in pairs])) if pairs else float("nan")}
            for name, pairs in split.items()}


def reading_row(s: Series, later: bool = False):
    """The row of ``s``'s judged commit as the newest commit (``later``: once the next commits are in)."""
    t = s.step_at
    history = list(s.medians[max(0, t - HISTORY) : t])  # type: ignore[operator]
    after = list(s.medians[t + 1 : t + 1 + LATER]) if later else []  # type: ignore[operator]
    return gate_now.compare_pair(s.measurements[t - 1], s.measurements[t], None, history, after)  # type: ignore[index,operator]


def reading_of(s: Series, later: bool = False) -> str:
    """The verdict of ``s``'s judged commit as the newest commit (``later``: once the next commits are in, with its
    state), and its note's first words (what left it unflagged or unconfirmed)."""
    row = reading_row(s, later)
    note = row.note or ""
    state = f" {row.state}" if later and row.state else ""
    return f"{row.verdict}{state} ({'below the threshold' if note.startswith('×') else ' '.join(note.split()[:4]) or 'no note'})"


# --------------------------------------------------------------------------- real CI-runner noise, resampled


def real_noise_populations(rng: np.random.Generator, pools: dict, n: int, length: int, tier: str,
                           sizes: Sequence[float]) -> dict[str, list[Series]]:
    """``n`` series of ``tier`` each (:func:`scripts.real_ci_noise.real_ci_series`, each from a machine drawn at
    random): A/A ("aa"), and for each step size a +size step at a commit after the first ``WINDOW``."""
    machines = sorted(pools)

    def draw() -> tuple[np.ndarray, list[np.ndarray], str]:
        machine = machines[int(rng.integers(len(machines)))]
        return *real_ci_series(rng, pools[machine], length, tier), machine

    out: dict[str, list[Series]] = {"aa": []}
    for _ in range(n):
        values, samples, machine = draw()
        out["aa"].append(Series(values, samples, tier, source=machine))
    for size in sizes:
        out[f"+{size:.0%}"] = []
        for _ in range(n):
            values, samples, machine = draw()
            at = int(rng.integers(WINDOW, length - LATER))
            out[f"+{size:.0%}"].append(Series(*inject_step(values, samples, at, size), tier, at, source=machine))
    return out


def evaluate_real_noise(rng: np.random.Generator, pools: dict, n: int, length: int, sizes: Sequence[float],
                        gate: Gate, show: int, tiers: Sequence[str] = ("quiet", "mid", "noisy")) -> dict:
    """Per tier, on series resampled from real CI runners' noise (:mod:`scripts.real_ci_noise`): confirmed false
    alarms per 100 A/A commits (and flagged as the newest commit), and the recall of +5/10/20/50% steps (flagged
    regressed as the newest commit / confirmed by the next ``LATER``). The first ``show`` confirmed false alarms are
    printed with their note and the commits around them: what confirmed them. Every tier's series are drawn, and
    those of ``tiers`` judged: the same seed draws the same series whichever tiers are judged."""
    sources = ", ".join(f"{m} {len(p)} series" for m, p in sorted(pools.items()))
    print(f"\n== real CI-runner noise, resampled ({sources}): "
          f"{n} series per tier and kind, {length} commits")
    kinds = [f"+{size:.0%}" for size in sizes]
    print(f"{'tier':<7}{'A/A flag':>9}{'conf':>7}{'commits':>8} | " + " | ".join(f"{k:>5} conf" for k in kinds))
    out: dict = {}
    shown = 0
    for tier in ("quiet", "mid", "noisy"):
        pops = real_noise_populations(rng, pools, n, length, tier, sizes)
        if tier not in tiers:
            continue
        tally, alarms = Tally(), []
        for s in pops["aa"]:
            for t in range(WINDOW, len(s.medians) - LATER):
                now, (final, state) = gate(s.measurements, s.medians, t)
                tally.aa(now, final, state, tier)
                if final in FLAGS and state == "confirmed":
                    alarms.append((s, t))
        fa = tally.false_alarms()
        row: dict = {"aa_commits": fa["commits"], "aa_flagged_per_100": fa["any"],
                     "aa_confirmed_per_100": fa["confirmed"],
                     "confirmed_by_machine": dict(collections.Counter(s.source for s, _ in alarms))}
        for kind in kinds:
            judged = [gate(s.measurements, s.medians, s.step_at) for s in pops[kind]]  # type: ignore[arg-type]
            n_judged = len(judged)
            row[kind] = {"series": n_judged, "flagged": sum(now == "regressed" for now, _ in judged) / n_judged,
                         "confirmed": sum(f == "regressed" and st == "confirmed" for _, (f, st) in judged) / n_judged}
        out[tier] = row
        print(f"{tier:<7}{fa['any']:>9.2f}{fa['confirmed']:>7.2f}{fa['commits']:>8} | " + " | ".join(
            f"{row[k]['flagged']:>5.2f}{row[k]['confirmed']:>5.2f}" for k in kinds))
        for s, t in alarms:
            if shown < show:
                print_alarm(s, t)
                shown += 1
    return out


def print_alarm(s: Series, t: int) -> None:
    """One confirmed A/A false alarm: the row once the next commits are in, and the commits around it (×level)."""
    history = list(s.medians[max(0, t - HISTORY) : t])
    row = gate_now.compare_pair(s.measurements[t - 1], s.measurements[t], None, history,
                                list(s.medians[t + 1 : t + 1 + LATER]))
    level = float(np.median(history))
    around = " ".join(f"{v / level:.2f}" for v in s.medians[t - 8 : t + 1 + LATER])
    print(f"    {s.tier} {s.source} c{t}: {row.verdict} ({row.state}) z={row.history_z or 0:.1f} "
          f"{row.note[:150]!r}\n      x level, c{t - 8}..c{t + LATER}: {around}")


# --------------------------------------------------------------------------- suites: series sharing runners


def ci_suites(rng: np.random.Generator, n_suites: int, size: int, length: int, stepped: int) -> list[list[Series]]:
    """Suites of ``size`` series whose runs share their runner (:func:`ci_noise.suite_runners`); in each,
    the first ``stepped`` series get a +20% step at a commit of their own, the rest stay A/A."""
    suites = []
    for _ in range(n_suites):
        runners = suite_runners(rng, length)
        members = []
        for i in range(size):
            values, samples = ci_series(rng, length, suite=runners)
            tier, at = tier_of(values), None
            if i < stepped:
                at = int(rng.integers(WINDOW, length - LATER))
                values, samples = inject_step(values, samples, at, 0.20)
            s = Series(values, samples, tier, at, runners=runners.runners)
            s._ms = [dataclasses.replace(m, benchmark=f"bench_{i}") for m in s.measurements]
            members.append(s)
        suites.append(members)
    return suites


def real_suites(rng: np.random.Generator, runs: dict, n_suites: int, size: int, length: int,
                stepped: int) -> list[list[Series]]:
    """Suites of ``size`` series resampled run by run from one real CI machine (:func:`real_ci_suite`), an equal
    share in each tier's range; in each, the first ``stepped`` series get a +20% step at a commit of their own."""
    machines = sorted(runs)
    tiers = ("quiet", "mid", "noisy")
    suites = []
    for k in range(n_suites):
        machine = machines[int(rng.integers(len(machines)))]
        members = []
        for i, (values, samples) in enumerate(real_ci_suite(rng, runs[machine], size, length, tiers[k % 3])):
            tier, at = tier_of(values), None
            if i < stepped:
                at = int(rng.integers(HISTORY, length - LATER))
                values, samples = inject_step(values, samples, at, 0.20)
            s = Series(values, samples, tier, at, source=machine)
            s._ms = [dataclasses.replace(m, benchmark=f"bench_{i}") for m in s.measurements]
            members.append(s)
        suites.append(members)
    return suites


def judge_run(module: ModuleType, policy, suite: list[Series], t: int, later: bool) -> list:
    """One run's comparison (commit t against t-1, every series of the suite at once), as ``mmtrack run``."""
    first = max(0, t - HISTORY)
    history = {s.measurements[t].case: list(s.medians[first:t]) for s in suite}
    after_later = {s.measurements[t].case: list(s.medians[t + 1 : t + 1 + LATER]) for s in suite} if later else None
    labels = gate_now.RunLabels(
        f"c{t - 1}", f"c{t}", {k: [f"c{i}" for i in range(first, t)] for k in history},
        {k: [f"c{i}" for i in range(t + 1, t + 1 + len(v))] for k, v in (after_later or {}).items()})
    comparison = module.compare_measurements(
        [s.measurements[t - 1] for s in suite], [s.measurements[t] for s in suite], policy,
        history=history, later=after_later, labels=labels,
    )
    by_case = {(r.benchmark, r.params, r.metric): r for r in comparison.rows}
    return [by_case[s.measurements[t].case] for s in suite]


def gate_failures(module: ModuleType, policy, suite: list[Series], t: int) -> list:
    """The earlier commits' regressions that run t confirms (``decided``): what fails ``mmtrack run --fail-on
    regression`` there, read across the run as :func:`mmtrack.analysis.compare.decided_in_run` does."""
    labels = [f"c{k}" for k in range(t + 1)]
    lo = max(0, t - HISTORY - LATER)
    tails = {s.measurements[t].case: (s.measurements[lo : t + 1], labels[lo:]) for s in suite}
    rows = module.decided_in_run(tails, policy, HISTORY)
    return [r for r in rows if r.verdict == "regressed" and r.state == "confirmed"]


def miss_kind(row) -> str:
    """Why a step commit was not flagged regressed: its verdict, and for an ambiguous one the kind of note."""
    note = row.note or ""
    for kind in ("within the series' own noise", "the whole run moved", "not significant", "back to the level"):
        if note.startswith(kind):
            return f"{row.verdict} ({kind})"
    return row.verdict


def runner_kind(runners: np.ndarray, t: int) -> str:
    """Where commit ``t`` of a suite ran (from the model, which no gate knows): on the main runner type (after
    a commit on it, or not), or on another type, by how often the window of history before it visited that type."""
    if runners[t] == 0:
        return "main runner, after main" if runners[t - 1] == 0 else "main runner, after another"
    visits = int(np.count_nonzero(runners[max(0, t - HISTORY) : t] == runners[t]))
    return "another, window never" if visits == 0 else (
        "another, window 1-4 times" if visits < 5 else "another, window >= 5 times")


def print_breakdown(title: str, counts: collections.Counter) -> None:
    print(f"  {title}: " + "; ".join(f"{k} {v}" for k, v in counts.most_common()))


def evaluate_suites(suites: list[list[Series]], length: int, name: str = "CI-runner suites",
                    start: int = WINDOW) -> dict:
    """False alarms on the A/A series and recall of the stepped ones, judged run by run from commit ``start`` on: the
    gate as a lone series sees it (``min_suite=0``), with the run's common shift, and with its frames too (the default).
    Under each: the missed steps by tier and why (:func:`miss_kind`), the flagged A/A commits by where they
    ran (:func:`runner_kind`)."""
    n_series = sum(len(s) for s in suites)
    stepped = sum(x.step_at is not None for s in suites for x in s)
    print(f"\n== {name}: {len(suites)} suites of {len(suites[0])} series sharing their runners, "
          f"{stepped} of them with a +20% step")
    print(f"{'gate':<26}{'A/A flag':>9}{'regr':>7}{'conf':>7}{'fails':>7}{'after':>7} | {'recall':>7}{'conf':>6} | "
          f"{'quiet':>6}{'mid':>6}{'noisy':>6}")
    out = {}
    for name, policy in (("mmtrack, series alone", gate_now.ComparePolicy(min_suite=0)),
                         ("mmtrack, run shift", gate_now.ComparePolicy(run_frames=False)),
                         ("mmtrack, shift + frames", gate_now.ComparePolicy())):
        tally, failures = Tally(), 0
        misses: collections.Counter = collections.Counter()  # by tier and why
        alarms: collections.Counter = collections.Counter()  # by where the flagged A/A commit ran
        for suite in suites:
            aa_cases = {s.measurements[0].case for s in suite if s.step_at is None}
            for t in range(start + LATER, length):  # the runs whose gate settles commits start..length-LATER-1
                failures += sum(r.after is not None and r.after.case in aa_cases for r in gate_failures(gate_now, policy, suite, t))
            for t in range(start, length - LATER):
                now = judge_run(gate_now, policy, suite, t, later=False)
                final = judge_run(gate_now, policy, suite, t, later=True)
                for s, r, f in zip(suite, now, final):
                    if s.step_at is None:
                        tally.aa(r.verdict, f.verdict, f.state, s.tier)
                        if r.verdict in FLAGS and s.runners is not None:
                            alarms[runner_kind(s.runners, t)] += 1
                    elif t > s.step_at:  # the level after the step, seen already: a flag is a false one
                        tally.after(r.verdict, f.verdict, f.state)
                    elif s.step_at == t:
                        tally.step(s.tier, r.verdict, f.verdict, f.state)
                        if r.verdict != "regressed":
                            misses[f"{s.tier}: {miss_kind(r)}"] += 1
        fa, rec = tally.false_alarms(), tally.recall()
        fa["gate_failures"] = failures * 100.0 / max(tally.commits, 1)
        print(f"{name:<26}{fa['any']:>9.2f}{fa['regressions']:>7.2f}{fa['confirmed']:>7.2f}{fa['gate_failures']:>7.2f}"
              f"{fa['after_step']:>7.2f} | "
              f"{rec['all']['flagged']:>7.2f}{rec['all']['confirmed']:>6.2f} | {rec['quiet']['flagged']:>6.2f}"
              f"{rec['mid']['flagged']:>6.2f}{rec['noisy']['flagged']:>6.2f}")
        print("  " + settled_line(fa, {t: r["settled"] for t, r in rec.items()}))
        regressed = tally.confirmed_by_tier(regressions=True)
        print("  confirmed false alarms per 100 A/A commits by tier (of them regressions): " + ", ".join(
            f"{t} {v:.2f} ({regressed[t]:.2f})" for t, v in tally.confirmed_by_tier().items()))
        print_breakdown("steps missed as the newest commit", misses)
        print_breakdown("A/A commits flagged, by where they ran", alarms)
        out[name] = {"false_alarms_per_100": fa, "recall_20pct": rec, "series": n_series, "misses": dict(misses),
                     "confirmed_by_tier": tally.confirmed_by_tier(),
                     "confirmed_regressions_by_tier": regressed,
                     "false_alarms_by_runner": dict(alarms)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--series", type=int, default=200, help="series per population (A/A and stepped)")
    ap.add_argument("--length", type=int, default=WINDOW + 33, help=f"commits per series ({WINDOW} of history first)")
    ap.add_argument("--seed", type=int, default=1616)
    ap.add_argument("--baseline", default="cac3f5a", help="git revision whose gate is today's (side by side)")
    ap.add_argument(
        "--scenarios", default="ci,bootstrap,suites",
        help="comma-separated: ci (CI-runner model, lone series), bootstrap (MetPy/conda), suites (CI-runner "
        "model, series sharing their runners, judged run by run), reverts (CI-runner model, lone series per tier: "
        "a step reverted after --revert-after commits, beside first steps; not in the default), realnoise (series "
        "resampled from real CI runners' asv results, scripts/real_ci_noise.py, per tier; not in the default), "
        "realsuites (suites of those runners' series resampled run by run, scored from --history on; not in the "
        "default)",
    )
    ap.add_argument("--suites", type=int, default=20, help="suites in the suites scenario (20 series each)")
    ap.add_argument("--revert-after", default="5,10,20",
                    help="commits after which the reverts scenario reverts its step, comma-separated")
    ap.add_argument("--revert-paired", action="store_true",
                    help="the reverts scenario also judges a first step on each revert's own series ('step k')")
    ap.add_argument("--real-steps", default="0.05,0.10,0.20,0.50",
                    help="step sizes whose recall the realnoise scenario measures, comma-separated")
    ap.add_argument("--real-tiers", default="quiet,mid,noisy",
                    help="tiers the realnoise scenario judges, comma-separated (every tier's series are drawn)")
    ap.add_argument("--show-alarms", type=int, default=0,
                    help="print this many confirmed false alarms, with their commits: the realnoise scenario's, the "
                         "ci scenario's and each tier's of the reverts scenario")
    ap.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    ap.add_argument("--history", type=int, default=WINDOW, help=f"commits of history per verdict (default {WINDOW})")
    ap.add_argument("--no-samples", action="store_true",
                    help="commits keep no samples, only a median, quartiles, count and 99%% interval (asv's results "
                         "without --record-samples)")
    args = ap.parse_args(argv)
    global HISTORY, RECORD_SAMPLES
    HISTORY = args.history
    RECORD_SAMPLES = not args.no_samples
    scored_from = HISTORY if set(args.scenarios.split(",")) == {"realsuites"} else WINDOW  # realsuites: --history
    if args.series < 1 or args.length < scored_from + LATER + 2:
        ap.error(f"--series must be >= 1 and --length >= {scored_from + LATER + 2}")

    gates: dict[str, Gate] = {"mmtrack": mmtrack_gate(gate_now, later=True)}
    if args.baseline:
        gates[f"mmtrack@{args.baseline[:8]}"] = mmtrack_gate(load_compare_at(args.baseline), later=False)
    gates["asv compare"] = asv_gate()
    print(
        f"per-commit gate: commit i-1 vs i with {HISTORY} commits of history, {LATER} later commits to confirm; "
        f"{args.series} series of {args.length} commits per population, seed {args.seed}"
    )
    print("columns: false alarms per 100 commits per series on A/A (flagged as the newest commit, of which")
    print(f"regressions; confirmed by the next {LATER}); recall of +20% steps (flagged as the newest commit, then")
    print("confirmed), by tier; seconds per series judged")
    results: dict[str, dict] = {}
    t0 = time.perf_counter()
    scenarios = set(args.scenarios.split(","))
    if "ci" in scenarios:
        rng = np.random.default_rng(args.seed)
        aa = ci_population(rng, args.series, args.length, None)
        steps = ci_population(rng, args.series, args.length, 0.20)
        results["ci"] = evaluate("CI-runner noise (scripts/ci_noise.py)", aa, steps, gates, args.show_alarms)
        results["ci"]["quiet_by_runners"] = recall_by_runner_visits(steps, gates["mmtrack"])
        rates = sorted({0.3, round(results["ci"]["mmtrack"]["false_alarms_per_100"]["any"], 2)})
        results["ci"]["bound"] = oracle_bound(aa, steps, rates, 0.20)
        print_bound(results["ci"]["bound"])
    if "reverts" in scenarios:
        rng = np.random.default_rng(args.seed)
        after = [int(k) for k in args.revert_after.split(",")]
        results["reverts"] = evaluate_reverts(rng, args.series, args.length, after, gates["mmtrack"],
                                              paired=args.revert_paired, show=args.show_alarms)
    if "realnoise" in scenarios:
        pools = load_real_sources(shared_dir() / "data" / "asv-results")
        if not pools:
            print(f"\nno CI-runner asv results under {shared_dir() / 'data' / 'asv-results'}: realnoise skipped")
        else:
            rng = np.random.default_rng(args.seed)
            sizes = [float(x) for x in args.real_steps.split(",")]
            results["realnoise"] = evaluate_real_noise(rng, pools, args.series, args.length, sizes, gates["mmtrack"],
                                                       args.show_alarms, args.real_tiers.split(","))
    if "realsuites" in scenarios:
        runs = load_real_runs(shared_dir() / "data" / "asv-results")
        rng = np.random.default_rng(args.seed)
        results["realsuites"] = evaluate_suites(real_suites(rng, runs, args.suites, 20, args.length, 4),
                                                args.length, "real CI-runner runs, resampled whole", HISTORY)
    if "suites" in scenarios:
        rng = np.random.default_rng(args.seed)
        results["suites"] = evaluate_suites(ci_suites(rng, args.suites, 20, args.length, 4), args.length)
    data = shared_dir() / "data" / "asv-results"
    if "bootstrap" in scenarios and not data.is_dir():
        print(f"\nno MetPy/conda asv results at {data}: bootstrap scenario skipped (set MMTRACK_SHARED)")
    elif "bootstrap" in scenarios:
        sources = load_noise_sources(data)
        rng = np.random.default_rng(args.seed)
        aa = bootstrap_population(rng, sources, args.series, args.length, None)
        steps = bootstrap_population(rng, sources, args.series, args.length, 0.20)
        results["bootstrap"] = evaluate("MetPy/conda bootstrap (scripts/eval_detect.py)", aa, steps, gates)
    elapsed = time.perf_counter() - t0
    print(f"\ndone in {elapsed:.0f} s")
    if args.json:
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, **results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
