"""The code's part: each commit's verdict on every series, what persists once the run's part is read out.

Reads a whole comparison (:func:`compare_measurements`: every case of the before and after runs, each judged in its
run, :func:`.run_part.judge_in_run`), the commits after a suspected change that settle it (:func:`decided_by_last`,
:func:`decided_in_run`, which read the later runs' shifts as well), and a series' newest commits as the pages show
them (:func:`series_steps`, :func:`series_step_verdicts`). Contention (:mod:`.contention`): where either side of a
single-threaded CPU-domain case waited for a CPU, its wall-clock rows take the verdict of its CPU time per op.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Callable, Collection, Iterable, Mapping, Sequence

from ..results import Measurement
from . import contention, deterministic
from .history_evidence import _history, _ok_median, compare_pair, history_columns, series_later
from .policy import HISTORY_WINDOW, ComparePolicy, Evidence
from .rows import Case, Comparison, Row, Verdict, _flagged
from .run_part import (
    InRun,
    RunLabels,
    RunShift,
    _explained_by_run,
    _runner_moves,
    judge_in_run,
    run_shift,
    runs_of,
)
from .two_sample import _edge, _is_step

if TYPE_CHECKING:
    from .frames import SuiteFrames

def compare_measurements(
    before: Iterable[Measurement],
    after: Iterable[Measurement],
    policy: ComparePolicy | None = None,
    *,
    history: Mapping[Case, Sequence[float]] | None = None,
    later: Mapping[Case, Sequence[float]] | None = None,
    labels: RunLabels | None = None,
    decided: Sequence[Row] = (),
    before_label: str = "before",
    after_label: str = "after",
) -> Comparison:
    """Compare every metric of every benchmark case present on either side.

    ``history`` optionally maps a case (``Measurement.case``) to the medians of its
    series' recent commits, oldest first, ending with the before commit; ``later`` to the
    medians of the commits measured after the after commit (see :func:`.noise.follow_up`).
    ``labels``: the commit of each of those values; with them, and a run on its usual runner,
    every case is judged in the after run's frame (:mod:`.frames`, ``policy.run_frames``).
    ``decided`` carries the rows of earlier commits that the after commit decides
    (:func:`decided_by_last`).
    """
    policy = policy or ComparePolicy()
    bmap = {m.case: m for m in before}
    amap = {m.case: m for m in after}
    keys = sorted(set(bmap) | set(amap), key=lambda k: (k[0], k[1], k[2]))
    history, later = history or {}, later or {}
    timed = {k: m for k, m in amap.items() if _runner_moves(k)}
    runs = runs_of({k: _ok_median(m) for k, m in timed.items()},
                   {k: _ok_median(m) for k, m in bmap.items() if _runner_moves(k)},
                   {k: m.direction for k, m in timed.items()},
                   {k: h for k, h in history.items() if _runner_moves(k)}, later, labels, policy)
    rows = tuple(judge_in_run(bmap.get(k), amap.get(k), policy, history.get(k), later.get(k, ()), runs.get(k))
                 for k in keys)
    rows = contention.read_cpu_time_where_contended(rows, bmap, amap)
    return Comparison(rows, before_label, after_label, policy, tuple(decided))


def _decisions(
    points: Sequence[Measurement], labels: Sequence[str], policy: ComparePolicy, window: int,
    frames: "SuiteFrames | None" = None, settled: Collection[str] = (),
) -> list[tuple[int, Row, list[float], str | None]]:
    """(index, row, history as measured, what a known runner type's frame said) of each earlier commit of one
    series whose suspicion its last commit settles; with ``frames`` (the run's, :mod:`.frames`), judged in the
    frame of that commit's run as :func:`compare_measurements` judges the newest commit. What the frame said, on
    a runner type other than the usual one: ``"own"``, a flag in its frame (the row); ``"runner"``, nothing
    beyond what that runner does to the series (the row is the plain one); None elsewhere. The commits labelled
    in ``settled`` are left out: a same-machine A/B run settled them already."""
    medians = [m.median if m.status == "ok" and m.median is not None else math.nan for m in points]
    last = len(points) - 1
    case = points[-1].case

    def decision(j: int, framed: bool) -> Row | None:
        """The decision on commit j, judged in its run's frame or as measured."""
        thr = policy.threshold_for(points[j].benchmark, points[j].metric)
        # the before commit as compare_pair judges it (in the frame, when framed)
        b = medians[j - 1] * (frames.factor(case, labels[j - 1], labels[j]) if framed else 1.0)  # type: ignore[union-attr]
        if not (medians[j] > 0 and b > 0 and _is_step(medians[j] / b, thr)):
            return None  # no step at j (compare_pair would say unchanged): skip the noise model
        put = frames.factors(case, labels, labels[j]) if framed else [1.0] * len(points)  # type: ignore[union-attr]
        lo = max(0, j - window)
        judged = [v * f for v, f in zip(medians[lo:j], put[lo:j]) if math.isfinite(v)]
        later = [v * f for v, f in zip(medians[j + 1 : last + 1], put[j + 1 : last + 1])]
        row = compare_pair(points[j - 1], points[j], policy, judged, later, frame=put[j - 1])
        if row.state in ("confirmed", "refuted"):
            earlier = compare_pair(points[j - 1], points[j], policy, judged, later[:-1], frame=put[j - 1])
            if earlier.state == "suspected" or (row.state == "confirmed" and earlier.state is None):
                # where it was suspected, then the row's own note: why the later commits settled it so
                return dataclasses.replace(row, note=f"at {labels[j]}" + (f": {row.note}" if row.note else ""))
        return None

    out: list[tuple[int, Row, list[float], str | None]] = []
    for j in range(max(1, last - policy.confirm_window), last):
        if labels[j] in settled:
            continue
        row, said = None, None
        if frames is not None and frames.known(labels[j]):  # as compare_measurements judges the newest commit
            row = decision(j, True)
            if not frames.settled(labels[j]):
                said = "own" if row is not None and _flagged(row) else "runner"
                row = row if said == "own" else decision(j, False)
        else:
            row = decision(j, False)
        if row is not None:
            out.append((j, row, [v for v in medians[max(0, j - window) : j] if math.isfinite(v)], said))
    return out


def decided_by_last(
    points: Sequence[Measurement], labels: Sequence[str], policy: ComparePolicy | None = None, window: int = HISTORY_WINDOW
) -> list[Row]:
    """The rows of earlier commits of one series whose suspected change its last commit decides.

    ``points`` are the series' measurements, oldest first, ending with the newest commit;
    ``labels`` name their commits. A commit suspected of a change is confirmed or refuted
    by the commits after it (:func:`.noise.follow_up`); the row is returned when the last commit
    is the one that settles it, so a per-commit gate reports each decision once (a refutal
    only of what was suspected; a confirmation also of what the history alone left ambiguous).
    One series alone: :func:`decided_in_run` also reads the whole run's shift.
    """
    return [row for _, row, _, _ in _decisions(points, labels, policy or ComparePolicy(), window)]


def decided_in_run(
    tails: Mapping[Case, tuple[Sequence[Measurement], Sequence[str]]],
    policy: ComparePolicy | None = None,
    window: int = HISTORY_WINDOW,
    settled: Mapping[Case, Collection[str]] | None = None,
) -> list[Row]:
    """:func:`decided_by_last` over every series of one run, each decision read against the run's shift.

    ``tails`` maps each case to its measurements and commit labels, oldest first, all ending with the
    run's commit. A confirmation that the whole run made at the commit it was suspected at, and every
    run after it too, is ambiguous (:func:`_explained_by_run`), as :func:`compare_measurements` judges
    the newest commit: a runner pool that changed fails no gate four commits later. ``settled``: per case,
    the labels of the commits a same-machine A/B run confirmed or refuted at their own run (``mmtrack run
    --confirm``); history does not decide them again, so that what A/B confirmed fails the gate once, at its
    commit, and what it refuted never fails it.
    """
    policy = policy or ComparePolicy()
    # A deterministic count is judged at its own commit, at once: later commits and the run settle nothing of it.
    tails = {c: tail for c, tail in tails.items() if _runner_moves(c)}
    shifts = _RunShifts(tails, policy, window)
    frames = _tail_frames(tails, shifts.medians, policy)
    out: list[Row] = []
    for case, (points, labels) in tails.items():
        for j, row, history, said in _decisions(points, labels, policy, window, frames, (settled or {}).get(case, ())):
            # "own": the series' own move beyond its runner's level: that run's shift is already out
            out.append(row if said == "own" else shifts.judged(row, history, labels, j, said))
    return out


def _tail_frames(tails: Mapping[Case, tuple[Sequence[Measurement], Sequence[str]]],
                 medians: Mapping[Case, list[float | None]], policy: ComparePolicy) -> "SuiteFrames | None":
    """One fit of the run's frames for the whole tail, so that each decision is judged in its own commit's frame;
    None where the policy reads no frames."""
    if not policy.run_frames:
        return None
    from .frames import fit_frames

    values = {c: {label: v for label, v in zip(labels, medians[c]) if v is not None}
              for c, (_, labels) in tails.items()}
    return fit_frames(values, {c: labels for c, (_, labels) in tails.items()}, policy.min_suite)


class _RunShifts:
    """The run's shift at a commit against each series' history before another (:func:`run_shift`) over the tails of
    :func:`decided_in_run`, each (at, since) worked out once: a runner change settles in every series at once."""

    def __init__(self, tails: Mapping[Case, tuple[Sequence[Measurement], Sequence[str]]], policy: ComparePolicy,
                 window: int) -> None:
        self.policy, self.window = policy, window
        self.medians = {c: [_ok_median(m) for m in points] for c, (points, _) in tails.items()}
        self.where = {c: {label: i for i, label in enumerate(labels)} for c, (_, labels) in tails.items()}
        self.directions = {c: points[-1].direction for c, (points, _) in tails.items() if points}
        self.known: dict[tuple[str, str], RunShift | None] = {}

    def history_before(self, case: Case, label: str) -> list[float] | None:
        """A series' medians in the window before commit ``label``; None where the series lacks that commit."""
        i = self.where[case].get(label)
        return None if i is None else [v for v in self.medians[case][max(0, i - self.window) : i] if v is not None]

    def shift(self, at: str, since: str) -> RunShift | None:
        """The run at commit ``at`` against each series' history before commit ``since``."""
        if (at, since) not in self.known:
            cases = [c for c in self.where if at in self.where[c] and since in self.where[c]]
            self.known[(at, since)] = run_shift(
                {c: self.medians[c][self.where[c][at]] for c in cases}, self.directions,
                {c: h for c in cases if (h := self.history_before(c, since)) is not None}, self.policy)
        return self.known[(at, since)]

    def judged(self, row: Row, history: list[float], labels: Sequence[str], j: int, said: str | None) -> Row:
        """The decision ``row`` on commit ``j`` read against the run's shift there and at the commits after it
        (:func:`_explained_by_run`), with both notes where the run's reading changed it."""
        later = [self.shift(label, labels[j]) for label in labels[j + 1 :][: self.policy.confirm_window]]
        judged = _explained_by_run(row, history, self.shift(labels[j], labels[j]), later, by_frame=said == "runner")
        return judged if judged is row else dataclasses.replace(judged, note=f"{row.note}: {judged.note}")


def series_steps(
    points: Sequence[Measurement], policy: ComparePolicy | None = None, *, window: int = HISTORY_WINDOW, last: int = 10,
    p_value: bool = True, earlier: tuple[Sequence[float | None], Sequence[str | None]] = ((), ()),
    runs: Sequence[InRun | None] = (),
) -> list[tuple[int, Row]]:
    """``mmtrack compare`` of each of the ``last`` newest commits of one series against the commit
    before it, as ``(index of the after commit, row)``: the same history and later commits as the CLI
    (:func:`series_history`, :func:`series_later`), so the published pages give the CLI's verdicts
    (``p_value``: see :func:`compare_pair`). ``earlier``: the medians (None: failed) and code versions
    of the series' commits before ``points``, oldest first, when ``points`` holds only its newest ones
    (the samples are needed only for the commits compared; the history needs only medians). ``runs``:
    what each point's run says (:func:`suite_runs`), one per point; none: the series judged alone."""
    policy = policy or ComparePolicy()
    own_medians, own_versions = history_columns(points)
    medians, versions = [*earlier[0], *own_medians], [*earlier[1], *own_versions]
    offset = len(earlier[0])
    out = []
    for j in range(max(1, len(points) - last), len(points)):
        history = _history(medians, versions, offset + j - 1, window)
        later = series_later(points, j, policy)
        run = runs[j] if j < len(runs) else None
        out.append((j, judge_in_run(points[j - 1], points[j], policy, history, later, run, p_value=p_value)))
    return out


#: A step verdict as the pages keep it: (index of the after commit, verdict, state, ratio as measured).
StepVerdict = tuple[int, Verdict, "Evidence | None", "float | None"]


def series_step_verdicts(
    points: Sequence[Measurement], policy: ComparePolicy | None = None, *, window: int = HISTORY_WINDOW,
    last: int = 10, earlier: tuple[Sequence[float | None], Sequence[str | None]] = ((), ()),
    runs: Sequence[InRun | None] = (),
) -> list[StepVerdict]:
    """:func:`series_steps` without p-values, as ``(index, verdict, state, ratio)``: the same verdicts, but a pair
    :func:`compare_pair` settles at once as unchanged (:func:`_unchanged_at_once`, in every reading
    :func:`judge_in_run` makes of it) is not judged through the rules (most of the pages' 2,500 after a commit)."""
    policy = policy or ComparePolicy()
    own_medians, own_versions = history_columns(points)
    medians, versions = [*earlier[0], *own_medians], [*earlier[1], *own_versions]
    offset = len(earlier[0])
    out: list[StepVerdict] = []
    for j in range(max(1, len(points) - last), len(points)):
        before, after, run = points[j - 1], points[j], (runs[j] if j < len(runs) else None)

        def plain() -> tuple[Sequence[float], Sequence[float]]:
            return _history(medians, versions, offset + j - 1, window), series_later(points, j, policy)

        ratio = _unchanged_in_run(before, after, policy, run, plain)
        if ratio is not None:
            out.append((j, "unchanged", None, ratio))
            continue
        history, later = plain()
        row = judge_in_run(before, after, policy, history, later, run, p_value=False)
        out.append((j, row.verdict, row.state, row.ratio))
    return out


def _unchanged_in_run(before: Measurement, after: Measurement, policy: ComparePolicy, run: InRun | None,
                      plain: Callable[[], tuple[Sequence[float], Sequence[float]]]) -> float | None:
    """The ratio of :func:`judge_in_run`'s row (p_value=False) where each :func:`compare_pair` it calls settles the pair
    as unchanged at once (:func:`_unchanged_at_once`), and no state lets the run's shift read it again; else None.
    ``plain``: the series' own history and later commits, asked for only where the plain reading is made."""
    if run is None or run.framed is None:
        return _unchanged_at_once(before, after, policy, *plain(), 1.0)
    in_frame, later_in_frame, factor = run.framed
    ratio = _unchanged_at_once(before, after, policy, in_frame, later_in_frame, factor)
    if ratio is None or run.usual:
        return ratio
    return _unchanged_at_once(before, after, policy, *plain(), 1.0)  # not flagged in its frame: the plain row


def _unchanged_at_once(before: Measurement, after: Measurement, policy: ComparePolicy, history: Sequence[float],
                       later: Sequence[float], frame: float) -> float | None:
    """``compare_pair(..., p_value=False)``'s ratio where it reads ``unchanged`` (no state) at once: two ok runs of one
    code version and method (:func:`_without_numbers` decides nothing), not a deterministic count, in log space, with
    enough history for a noise model, and a step from the before commit (in ``frame``) of at most half the threshold
    (:func:`_segment`'s no-step: size 0, neither beyond the threshold nor at its edge, no test). None otherwise."""
    if not _one_code_and_method(before, after):
        return None
    thr = policy.threshold_for(after.benchmark, after.metric)
    b, a = float(before.median * frame if frame != 1.0 else before.median), float(after.median)  # type: ignore[operator]
    if not (_positive_pair(a, b) and thr > 0 and not _edge(0.0, thr)):
        return None
    ratio = a / b
    if not (0 < ratio < math.inf and _later_positive(later)):
        return None
    if _is_step(ratio, thr) or not _has_positive(history, policy.min_history):
        return None
    return a / float(before.median) if frame != 1.0 else ratio  # type: ignore[arg-type]


def _one_code_and_method(before: Measurement, after: Measurement) -> bool:
    """Whether two runs are both ok with a median, of one code version and method, and not a deterministic count:
    the pairs :func:`compare_pair` reads through a noise model."""
    if not (before.status == "ok" == after.status and before.median is not None and after.median is not None):
        return False
    if before.version is not None and after.version is not None and before.version != after.version:
        return False
    return not ((before.method and after.method and before.method != after.method)
                or deterministic.is_deterministic(after.metric))


def _positive_pair(a: float, b: float) -> bool:
    """Whether both medians are finite and above 0: a ratio in log space."""
    return a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)


def _later_positive(later: Sequence[float]) -> bool:
    """Whether every later value that is a finite number is above 0 (the others are left out of the noise model)."""
    return all(w is None or not math.isfinite(w) or w > 0 for w in later)


def _has_positive(history: Sequence[float], count: int) -> bool:
    """Whether ``history`` holds ``count`` finite values above 0 (:func:`_enough_history`), read only that far."""
    if count <= 0:
        return True
    for v in history:
        if 0 < v < math.inf:
            count -= 1
            if not count:
                return True
    return False
