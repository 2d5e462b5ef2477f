"""The two-sample test: what two measurements of one metric say alone, without the series' history.

Reads each side's status, code version and counting method (:func:`_without_numbers`: new, removed, failed, fixed,
not comparable), a deterministic count's two values (:mod:`.deterministic`), and the two commits' samples: Mann-Whitney
U where the sample counts can reach ``alpha``, else the medians' quartiles (:func:`quartile_test`), else the 99%
intervals or the samples' ranges. The effect is ``max(r, 1/r) - 1`` of the medians' ratio against the threshold
(asv's ``factor``), with an edge band (:data:`.policy.EDGE_BAND`) where a near miss reads ambiguous.
"""

from __future__ import annotations

import math

import numpy as np

from ..results import Measurement
from . import deterministic
from .noise import finite
from .policy import EDGE_BAND, QUARTILE_MIN_COUNT, SIGNIFICANT_BELOW, ComparePolicy
from .rows import Row


def significance(before: Measurement, after: Measurement, alpha: float, *,
                 quartiles: bool = False) -> tuple[bool, float | None, str]:
    """(significant, p-value, test name) for two measurements of one metric.

    ``quartiles``: without samples, test the medians on the quartiles (:func:`quartile_test`) before
    falling back to the confidence intervals; the history gate asks for it (see there)."""
    if alpha >= 1.0:  # every p is below 1: no test can decide (A/B judges its rounds instead, ab/interleave.judge)
        return True, None, "effect-only"
    a, b = finite(before.samples), finite(after.samples)
    # the smallest p the exact test can reach is 1 / comb: compared as an int, which no sample count overflows
    if a.size and b.size and math.comb(a.size + b.size, min(a.size, b.size)) > 1.0 / alpha:
        significant, p = _mann_whitney(a, b, alpha)
        return significant, p, "mann-whitney"
    if quartiles and (p := quartile_test(before, after)) is not None:
        return p < alpha, p, "quartiles"
    return _overlap_test(before, after, a, b)


def _mann_whitney(a: np.ndarray, b: np.ndarray, alpha: float) -> tuple[bool, float]:
    """(significant, p) of the samples by Mann-Whitney U; two deterministic sides differ or not, p 0 or 1."""
    if np.ptp(a) == 0 and np.ptp(b) == 0:  # deterministic on both sides
        return bool(a[0] != b[0]), (0.0 if a[0] != b[0] else 1.0)
    from scipy import stats as sps  # seconds to import: only once samples are tested (detect's medians never are)

    p = float(sps.mannwhitneyu(a, b, alternative="two-sided").pvalue)
    p = 1.0 if math.isnan(p) else p
    return p < alpha, p


def _overlap_test(before: Measurement, after: Measurement, a: np.ndarray,
                  b: np.ndarray) -> tuple[bool, float | None, str]:
    """Without a test of the samples: apart when the 99% intervals, else the samples' ranges, do not overlap."""
    ci = [(m.ci_low, m.ci_high) for m in (before, after)]
    if all(lo is not None and hi is not None and math.isfinite(lo) and math.isfinite(hi) for lo, hi in ci):
        (alo, ahi), (blo, bhi) = ci
        return not (ahi >= blo and alo <= bhi), None, "ci-overlap"  # type: ignore[operator]
    if a.size >= 2 and b.size >= 2:
        return not (a.max() >= b.min() and a.min() <= b.max()), None, "range-overlap"
    return True, None, "effect-only"


def quartile_test(before: Measurement, after: Measurement) -> float | None:
    """Two-sided p of the medians' difference, each median's standard error from its quartiles; None
    unless both sides have the median, both quartiles and at least :data:`QUARTILE_MIN_COUNT` samples.

    For asv results recorded without ``--record-samples``, which keep a commit's median, quartiles,
    sample count and 99% interval only. asv's interval of a median over ~10 samples reaches from about
    the smallest sample to the largest, so one outlier sample of the before commit hides a 20% step
    (on the CI noise model, 7 of 300 steps; ``scripts/eval_gate.py --no-samples``). The quartiles ignore it:
    each side's spread is (q3 - q1) / 1.349 and its median's error 1.2533 spread / sqrt(n), as for normal
    samples, and the difference is read against Student's t with Welch's degrees of freedom, since ten samples
    estimate a spread loosely (a disturbed run's wide quartiles then count for what they are)."""
    sides = []
    for m in (before, after):
        if m.median is None or m.q1 is None or m.q3 is None or m.count < QUARTILE_MIN_COUNT:
            return None
        if not all(math.isfinite(v) for v in (m.median, m.q1, m.q3)):
            return None
        sides.append((m.median, 1.2533 * abs(m.q3 - m.q1) / 1.349 / math.sqrt(m.count), m.count - 1))
    from scipy.special import stdtr  # Student's t distribution function: a ufunc, 30x as fast as stats.t.sf

    (ma, ea, da), (mb, eb, db) = sides
    error = math.hypot(ea, eb)
    if error == 0:  # both sides tied at their median (a coarse timer): equal or not
        return 0.0 if ma != mb else 1.0
    df = 1.0 / ((ea / error) ** 4 / da + (eb / error) ** 4 / db)  # Welch-Satterthwaite, scaled: no underflow
    return float(2 * stdtr(df, -abs(mb - ma) / error))


def _failed(m: Measurement) -> bool:
    return m.status == "failed" or (m.status == "ok" and (m.median is None or not math.isfinite(m.median)))


def _not_measured(m: Measurement) -> bool:
    """An n/a metric of a case that ran (a counter the machine lacks, a metric this run did not return)."""
    return m.status == "ok" and (m.median is None or not math.isfinite(m.median))


def _unmeasured_note(before: Measurement, after: Measurement) -> str:
    """Why a pair with an n/a side is not comparable (n/a is no failure, so a value after it fixed nothing); "" else."""
    if after.status != "ok" or not (_not_measured(before) or _not_measured(after)):
        return ""
    if _not_measured(before):
        return "not measured in either run" if _not_measured(after) else "not measured before"
    return "not measured in this run"


def _edge(effect: float, threshold: float) -> bool:
    """Whether a relative effect (``max(r, 1/r) - 1``) sits within the edge band of its threshold."""
    return abs(effect - threshold) <= min(EDGE_BAND, threshold / 2)


def _is_step(ratio: float, threshold: float) -> bool:
    """Whether after/before moves by more than half the threshold: a step that can be this commit's."""
    return abs(math.log(ratio)) > math.log1p(threshold / 2)


def _without_numbers(base: dict, before: Measurement | None, after: Measurement | None, thr: float) -> Row | None:
    """The verdicts no number decides: new, removed, not comparable (the benchmark code version or the counting
    method changed, or a side was skipped), failed (still / started failing) and fixed. Reads each side's presence,
    status, code version, counting method and whether its median is a finite number; None where the medians must
    decide."""
    if before is None:
        return Row(**base, verdict="new", before=None, after=after, threshold=thr)
    if after is None:
        return Row(**base, verdict="removed", before=before, after=None, threshold=thr)
    if before.version is not None and after.version is not None and before.version != after.version:
        return Row(**base, verdict="not comparable", before=before, after=after, threshold=thr,
                   note="benchmark code changed")
    if before.method and after.method and before.method != after.method:  # a new method moves counts once
        return Row(**base, verdict="not comparable", before=before, after=after, threshold=thr,
                   note=f"measurement method changed ({before.method} → {after.method})")
    if "skipped" in (before.status, after.status):
        return Row(**base, verdict="not comparable", before=before, after=after, threshold=thr, note="skipped")
    if (note := _unmeasured_note(before, after)):
        return Row(**base, verdict="not comparable", before=before, after=after, threshold=thr, note=note)
    if _failed(after):
        note = "still failing" if _failed(before) else "started failing"
        return Row(**base, verdict="failed", before=before, after=after, threshold=thr, note=note)
    if _failed(before):
        return Row(**base, verdict="fixed", before=before, after=after, threshold=thr)
    return None


def _deterministic_row(base: dict, before: Measurement, after: Measurement, policy: ComparePolicy) -> Row | None:
    """The verdict on a deterministic count (:func:`.deterministic.judge`): reads the two sides' counts alone, no
    history and no test; None for any other metric."""
    if (settled := deterministic.judge(before, after, policy)) is None:
        return None
    return Row(**base, verdict=settled.verdict, before=before, after=after, ratio=settled.ratio,  # type: ignore[arg-type]
               test="deterministic", threshold=settled.tolerance, state=settled.state, note=settled.note)


def significant_below(ratio: float, p: float | None, threshold: float) -> str:
    """What an unchanged row says of a move its two commits' samples call significant (p below
    :data:`.policy.SIGNIFICANT_BELOW`) though it stays under the threshold, e.g. "×1.037, p < 0.001, below the 5%
    threshold"; "" for any other. Reads only the ratio and the samples' p-value: a bare "unchanged" hid such moves."""
    if p is None or p >= SIGNIFICANT_BELOW or not 0 < ratio < math.inf or ratio == 1.0:
        return ""
    return f"×{ratio:.3f}, p < {SIGNIFICANT_BELOW:g}, below the {threshold:.0%} threshold"
