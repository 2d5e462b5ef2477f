"""Environment events: change points that follow the run (its date, machine, environment), not the code.

Every point of a series has a commit *and* a run. A runner image or a dependency set that changes on a
date moves every series of a machine or environment from that date on, old commits measured after it
included. A lone series' change point cannot tell the two apart when commits are measured in order, but
the run factor shows itself in two ways, each read here:

* **Run date** (:mod:`.run_dates`). Over all runs of a change point's two segments (earlier runs of re-measured commits
  included), each point is labelled by the level it is nearer to. The best split in commit order and the
  best split in run-date order are compared: where the date order explains the labels with fewer misplaced
  points (old commits re-measured after the date read the new level; commits measured out of order follow
  their run), the step follows the run date. Pooled over the change points of one environment at one place
  in its history, since each series holds only a few such runs.
* **Environment-wide.** Most series of one environment step at one place while the same benchmarks in the
  sibling environments and machines, which measured the same commits, do not: a code change would move them
  too.

Such a group is reported once as an :class:`EnvironmentEvent`; its change points keep their place in their
series but carry ``extra["cause"] = "environment"`` and never count as regressions to fail on. An event holds only
the run's part of a step: where old commits re-measured after its date read less of the step than new commits
(measurement = the code's level x the run's factor x noise), the rest is a change point of the code
(:func:`run_part`, :func:`code_part_of`). A step of the run and its return are one temporary period.
Pure functions over plain columns; the store reads them (``reads.series_run_points``).
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Iterable, Mapping, Sequence

import numpy as np

from ..vocabulary import Direction
from ..results import ChangePoint, SeriesKey
from .detect import SeriesReport
from .policy import (
    EVENT_ATTACH_DAYS,
    EVENT_DAYS,
    EVENT_MIN_SERIES,
    EVENT_REACH,
    EVENT_SHARE,
    RERUNS,
    SIBLING_SHARE,
    SMALL_MOVE,
)
from .run_dates import DateEvidence, RunPoints, date_evidence, follows_run_date


@dataclass(frozen=True, slots=True)
class EnvironmentEvent:
    """One shift of a machine's environments that their series share, reported once."""

    id: str
    machine: str
    environments: tuple[str, ...]
    day: float  # first run day of the new level
    series: int
    slower: int  # series that moved the worse way
    faster: int
    old_commits: int  # runs of older commits, measured from ``day`` on, that read the new level (0: too few to say)
    evidence: str  # "run date" or "environment-wide"
    before_sha: str  # the commit range where the series show it
    after_sha: str
    median_ratio: float
    until_day: float = math.nan  # a temporary period: the first run day of the level's return (NaN: it holds)

    @property
    def date(self) -> str:
        return _date(self.day)

    @property
    def until(self) -> str | None:
        """The first run day of the return, for a temporary period; None for a step that holds."""
        return None if math.isnan(self.until_day) else _date(self.until_day)

    def describe(self) -> str:
        """One line, e.g. "ubuntu/py3.12 and py3.13: 43 series slower (median x1.52) from runs of 2026-08-05 on,
        old commits included; follows the run date"."""
        envs = self.environments
        where = f"{self.machine}/{envs[0]}" + (f" and {', '.join(envs[1:])}" if len(envs) > 1 else "")
        moved = " and ".join(
            part for part in (f"{self.slower} series slower" if self.slower else "",
                              f"{self.faster} series faster" if self.faster else "") if part)
        tail = ", old commits included" if self.old_commits else ""
        why = "follows the run date" if self.evidence == "run date" else "environment-wide, not in its siblings"
        when = f"in runs from {self.date} to {self.until}" if self.until else f"from runs of {self.date} on"
        return f"{where}: {moved} (median x{self.median_ratio:.2f}) {when}{tail}; {why}"


def _date(day: float) -> str:
    return datetime.fromtimestamp(day * 86400.0, tz=timezone.utc).strftime("%Y-%m-%d")


# --------------------------------------------------------------------------- groups of change points


@dataclass(slots=True)
class _Found:
    cp: ChangePoint
    lo: int  # position of the last commit of the old level
    hi: int  # position of the first commit of the new level
    evidence: DateEvidence | None


def _place(key: SeriesKey) -> tuple[str, str]:
    return key.machine, key.environment


def _bench(key: SeriesKey) -> tuple[str, str, object]:
    return key.benchmark, key.params, key.metric


def _clusters(found: list[_Found], reach: float) -> list[list[_Found]]:
    """Change points of one place whose new levels begin on run days within ``reach`` days of each other (single
    link): a shift of the machine begins on one date in every series, wherever each series' commit split fell."""
    out: list[list[_Found]] = []
    dated = sorted((f for f in found if f.evidence is not None), key=lambda f: f.evidence.day)  # type: ignore[union-attr]
    for f in dated:
        if out and f.evidence.day - out[-1][-1].evidence.day <= reach:  # type: ignore[union-attr]
            out[-1].append(f)
        else:
            out.append([f])
    return out


def _evidence(group: Iterable[_Found]) -> list[DateEvidence]:
    return [f.evidence for f in group if f.evidence is not None]


def _dated_parts(group: list[_Found]) -> list[list[_Found]]:
    """The parts of one day's cluster that follow the run date (loosely): the whole cluster, else each of its sets of
    at least :data:`EVENT_MIN_SERIES` change points at one commit range that does. A day can hold several changes:
    a batch measures the newest commits in one sitting (asv newest first), so a code step among them misplaces runs
    by date and, pooled with a shift of that day at other commits, outweighs it."""
    if follows_run_date(_evidence(group), strict=False):
        return [group]
    return [part for part in _by_commits(group)
            if len(part) >= EVENT_MIN_SERIES and follows_run_date(_evidence(part), strict=False)]


def _by_commits(group: list[_Found]) -> list[list[_Found]]:
    """``group`` split where no change point's commit range (last old commit, first new commit] reaches over."""
    parts: list[list[_Found]] = []
    reach = -math.inf
    for f in sorted(group, key=lambda f: f.lo):
        if parts and f.lo < reach:
            parts[-1].append(f)
            reach = max(reach, f.hi)
        else:
            parts.append([f])
            reach = f.hi
    return parts


def _spans(shas: Sequence[str], position: Mapping[str, int]) -> tuple[int, int]:
    ps = [position[s] for s in shas if s in position]
    return (min(ps), max(ps)) if ps else (0, -1)


class _Spans:
    """Each analysed series' first and last commit position (:func:`_spans`), worked out only for the series a sibling
    test reads: a store of one machine and environment reads none, and every series' whole history is long."""

    def __init__(self, commits_of: Mapping[SeriesKey, Sequence[str]], position: Mapping[str, int]) -> None:
        self.commits_of, self.position = commits_of, position
        self.known: dict[SeriesKey, tuple[int, int]] = {}

    def keys(self) -> Iterable[SeriesKey]:
        return self.commits_of.keys()

    def __getitem__(self, key: SeriesKey) -> tuple[int, int]:
        if key not in self.known:
            self.known[key] = _spans(self.commits_of[key], self.position)
        return self.known[key]


def _siblings_quiet(group: list[_Found], place: tuple[str, str], spans: _Spans,
                    stepped: Mapping[SeriesKey, list[tuple[int, int, bool]]], reach: int) -> tuple[bool, bool]:
    """Whether the same benchmarks elsewhere, which measured commits on both sides of the group, stayed put: at least
    :data:`EVENT_MIN_SERIES` of them, at most :data:`SIBLING_SHARE` stepped the group's way (a code change moves a
    benchmark the same way everywhere; two runner images changed on one day need not). Elsewhere is the other
    machines where they measured enough (a runner image moves only its own), else the sibling environments of the
    same machine (the same jobs, the same commits); and whether the other machines were the ones read."""
    lo, hi = min(f.lo for f in group), max(f.hi for f in group)
    siblings, other_machines = _siblings(_around(group, place, spans, lo, hi), place)
    up = _rose(group)
    moved = sum(_stepped_near(stepped.get(k, ()), lo, hi, reach, up) for k in siblings)
    return len(siblings) >= EVENT_MIN_SERIES and moved <= SIBLING_SHARE * len(siblings), other_machines


def _around(group: list[_Found], place: tuple[str, str], spans: _Spans, lo: int, hi: int) -> list[SeriesKey]:
    """The group's benchmarks at the other places (machine, environment) that measured commits on both sides of the
    group's commit range (before ``lo`` and from ``hi`` on)."""
    benches = {_bench(f.cp.series) for f in group}
    return [k for k in spans.keys() if _place(k) != place and _bench(k) in benches
            and (span := spans[k])[0] < lo and span[1] >= hi]


def _siblings(around: list[SeriesKey], place: tuple[str, str]) -> tuple[list[SeriesKey], bool]:
    """The series a sibling test reads: those of other machines where they are at least :data:`EVENT_MIN_SERIES`,
    else those of the same machine's other environments; and whether they are the other machines'."""
    others = [k for k in around if k.machine != place[0]]
    if len(others) >= EVENT_MIN_SERIES:
        return others, True
    return [k for k in around if k.machine == place[0]], False


def _rose(group: list[_Found]) -> bool:
    """Whether the group's median step is upward (a ratio without a size counts as no step)."""
    return float(np.median([math.log(f.cp.ratio) if 0 < f.cp.ratio < math.inf else 0.0 for f in group])) > 0


def _stepped_near(steps: Iterable[tuple[int, int, bool]], lo: int, hi: int, reach: int, up: bool) -> bool:
    """Whether one of a series' steps (lo, hi, rose) went ``up``'s way within ``reach`` commits of [lo, hi]."""
    return any(a - reach <= hi and b + reach >= lo and rose == up for a, b, rose in steps)


def _own_commit(f: _Found) -> bool:
    """Whether a change point's own runs favour the commit order beyond their noise: a code change that fell among
    an event's. A noisy series misplaces many points either way, its counts varying by about their square root."""
    e = f.evidence
    return e is not None and e.date_errors - e.commit_errors > max(math.sqrt(e.commit_errors), 0.5)


def _elsewhere_too(f: _Found, found: Mapping[SeriesKey, list[_Found]], other_machine: bool) -> bool:
    """Whether the same benchmark stepped the same way at the same commits elsewhere (another environment, or
    another machine with ``other_machine``), by at least :data:`SMALL_MOVE`, in a change point whose own runs do not
    favour the run date: a code change moves every place that measured its commits (a smaller wobble there is noise,
    not its twin)."""
    me = f.cp.series
    for key, theirs in found.items():
        if key == me or _bench(key) != _bench(me) or (other_machine and key.machine == me.machine):
            continue
        for g in theirs:
            dated = g.evidence is not None and g.evidence.date_errors < g.evidence.commit_errors
            if (not dated and abs(g.hi - f.hi) <= EVENT_REACH and g.cp.kind == f.cp.kind
                    and (g.cp.ratio > 1) == (f.cp.ratio > 1) and _moved(g.cp.ratio)):
                return True
    return False


def _moved(ratio: float) -> bool:
    """Whether a step is a move at all: at least :data:`SMALL_MOVE`, or no ratio says how far."""
    return not 0 < ratio < math.inf or abs(math.log(ratio)) >= math.log1p(SMALL_MOVE)


def _old_commits(evidence: list[DateEvidence]) -> int:
    """Runs of old commits measured from the new level's first day on that read the new level, where they are at
    least two and most of such runs (else 0: one misplaced commit is not "old commits included")."""
    late, new = sum(e.old_late for e in evidence), sum(e.old_late_new for e in evidence)
    return new if new >= RERUNS and 2 * new > late else 0


@dataclass(frozen=True, slots=True)
class Held:
    """What an environment event holds of one change point: the whole step (``run_part`` None), or only the part
    that old commits re-measured after its date share (``run_part``, a ratio); the rest is the code's."""

    event: str
    run_part: float | None = None


def run_part(f: _Found) -> float | None:
    """The run's part of a change point's step, as a ratio, where old commits re-measured after the date contradict
    the step as the run's: measurement = the code's level x the run's factor x noise, and a re-run of an old commit
    reads the run's factor alone. Where most of them (at least :data:`RERUNS`) read the old level, the step beyond
    their median is the code's. None where they are too few, read the new level (the step is the run's, within
    what a few noisy re-runs can tell apart), or leave the code less than :data:`SMALL_MOVE`."""
    e, step = f.evidence, _log_ratio(f.cp.ratio)
    if e is None or math.isnan(e.old_late_level) or math.isnan(step) or 2 * e.old_late_new >= e.old_late:
        return None
    code = step - e.old_late_level
    return math.exp(e.old_late_level) if abs(code) > math.log1p(SMALL_MOVE) else None


def _log_ratio(r: float) -> float:
    return math.log(r) if 0 < r < math.inf else math.nan


def _run_moved(f: _Found) -> bool:
    """Whether the run's part of a split change point is a move at all (at least :data:`SMALL_MOVE`)."""
    r = run_part(f)
    return r is None or abs(math.log(r)) >= math.log1p(SMALL_MOVE)


def _event_of(group: list[_Found], evidence: str, worse: Mapping[int, bool]) -> EnvironmentEvent:
    place = _place(group[0].cp.series)
    days = [f.evidence.day for f in group if f.evidence is not None]
    ratios = [r for f in group if 0 < (r := run_part(f) or f.cp.ratio) < math.inf]
    first = min(group, key=lambda f: f.hi)
    slower = sum(worse[id(f)] if run_part(f) is None else run_part(f) > 1 for f in group)
    return EnvironmentEvent(
        id="", machine=place[0], environments=(place[1],), day=float(np.median(days)) if days else math.nan,
        series=len({f.cp.series for f in group}), slower=slower, faster=len(group) - slower,
        old_commits=_old_commits([f.evidence for f in group if f.evidence is not None]), evidence=evidence,
        before_sha=first.cp.before_sha, after_sha=first.cp.after_sha,
        median_ratio=float(np.median(ratios)) if ratios else math.nan,
    )


def _joins(big: EnvironmentEvent, e: EnvironmentEvent) -> bool:
    """Whether ``e`` is part of ``big``: the same machine, and within :data:`EVENT_DAYS` of its day, or a few series
    near it."""
    if big.machine != e.machine:
        return False
    gap = abs(big.day - e.day)
    return gap <= EVENT_DAYS or (min(big.series, e.series) < EVENT_MIN_SERIES and gap <= EVENT_ATTACH_DAYS)


def _merged(events: list[EnvironmentEvent]) -> tuple[list[EnvironmentEvent], list[int]]:
    """Events of one machine on about the same day become one naming all their environments, and so do a few series
    whose new level began some days off a larger event's; the index of each input's merged event."""
    out: list[EnvironmentEvent] = []
    into = [0] * len(events)
    for i in sorted(range(len(events)), key=lambda i: -events[i].series):  # the largest first: it keeps its day
        e = events[i]
        j = next((j for j, big in enumerate(out) if _joins(big, e)), None)
        if j is None:
            out.append(e)
            into[i] = len(out) - 1
            continue
        big = out[j]
        out[j] = dataclasses.replace(
            big, environments=tuple(sorted(set(big.environments) | set(e.environments))),
            series=big.series + e.series, slower=big.slower + e.slower, faster=big.faster + e.faster,
            old_commits=big.old_commits + e.old_commits,
            evidence="run date" if "run date" in (big.evidence, e.evidence) else big.evidence)
        into[i] = j
    order = sorted(range(len(out)), key=lambda j: (out[j].machine, out[j].day))
    rank = {j: k for k, j in enumerate(order)}
    named = [dataclasses.replace(out[j], id=f"{out[j].machine}@{out[j].date}#{k + 1}") for k, j in enumerate(order)]
    return named, [rank[j] for j in into]


def _strays(events: list[tuple[EnvironmentEvent, list[_Found]]], found_by_place: Mapping[tuple[str, str], list[_Found]],
            by_series: Mapping[SeriesKey, list[_Found]], worse: Mapping[int, bool]
            ) -> list[tuple[EnvironmentEvent, list[_Found]]]:
    """The change points no event holds that an event of their environment explains: their new level began within
    :data:`EVENT_ATTACH_DAYS` of its day, the event's way, their own runs do not favour the commit order, and the
    same benchmark on other machines did not step there (a noisy series' split falls some days off the shift's,
    too far for the day's cluster, with too few runs to carry date evidence of its own). Each comes with its
    event's day, so that it merges into it."""
    held = {id(f) for _, group in events for f in group}
    taken: dict[int, tuple[EnvironmentEvent, list[_Found]]] = {}
    for e, _ in sorted(events, key=lambda eg: -eg[0].series):  # the largest event nearby takes a stray
        for f in found_by_place.get((e.machine, e.environments[0]), ()):
            if (id(f) in held or id(f) in taken or f.evidence is None
                    or abs(f.evidence.day - e.day) > EVENT_ATTACH_DAYS or worse[id(f)] != (e.slower >= e.faster)
                    or _own_commit(f) or _elsewhere_too(f, by_series, True)):
                continue
            taken[id(f)] = (e, [f])
    by_event: dict[int, tuple[EnvironmentEvent, list[_Found]]] = {}
    for e, (f,) in taken.values():
        by_event.setdefault(id(e), (e, []))[1].append(f)
    return [(dataclasses.replace(_event_of(group, e.evidence, worse), day=e.day), group)
            for e, group in by_event.values()]


def find_events(
    reports: Sequence[SeriesReport], runs: Mapping[SeriesKey, RunPoints], position: Mapping[str, int],
    commits_of: Mapping[SeriesKey, Sequence[str]],
) -> tuple[list[EnvironmentEvent], dict[tuple[SeriesKey, str], str]]:
    """The environment events among ``reports``' change points, and the event id of each change point they hold
    (keyed by series and after sha). ``runs``: every run of each series with change points; ``position``: each
    commit's place in commit order; ``commits_of``: the commits each analysed series measured."""
    found = _Findings()
    for r in reports:
        if r.status == "ok":
            found.add(r, runs.get(r.series), position)
    spans = _Spans(commits_of, position)
    events: list[tuple[EnvironmentEvent, list[_Found]]] = []
    for place, group_of_place in found.by_place.items():
        for group in _clusters(group_of_place, EVENT_DAYS):
            events += _events_of_cluster(group, place, found, spans)
    events += _strays(events, found.by_place, found.by_series, found.worse)
    events = _run_parts_only(events, found.worse)
    merged, into = _merged([e for e, _ in events])
    held: dict[tuple[SeriesKey, str], Held] = {}
    for (_, group), j in zip(events, into):
        for f in group:
            held[(f.cp.series, f.cp.after_sha)] = Held(merged[j].id, run_part(f))
    return _periods(merged, held)


@dataclass(slots=True)
class _Findings:
    """The change points of the series analysed in full, each found once (:class:`_Found`) and kept by place, by
    series and as each series' steps, with whether it moved the worse way and how many series each place holds."""

    by_place: dict[tuple[str, str], list[_Found]] = field(default_factory=lambda: defaultdict(list))
    by_series: dict[SeriesKey, list[_Found]] = field(default_factory=lambda: defaultdict(list))
    stepped: dict[SeriesKey, list[tuple[int, int, bool]]] = field(default_factory=lambda: defaultdict(list))
    analysed: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    worse: dict[int, bool] = field(default_factory=dict)  # by id() of each _Found

    def add(self, report: SeriesReport, points: RunPoints | None, position: Mapping[str, int]) -> None:
        """One series' change points, each with the run-date evidence of its runs (``points``) between its
        neighbours."""
        self.analysed[_place(report.series)] += 1
        own = [position.get(c.after_sha, -1) for c in report.changes]
        bounds = [0, *own, math.inf]
        for i, c in enumerate(report.changes):
            hi, lo = own[i], position.get(c.before_sha, own[i] - 1)
            ev = date_evidence(c, points, position, bounds[i], bounds[i + 2]) if points is not None else None
            f = _Found(c, lo, hi, ev)
            self.worse[id(f)] = _worse(c)
            self.by_place[_place(report.series)].append(f)
            self.by_series[report.series].append(f)
            self.stepped[report.series].append((lo, hi, c.ratio > 1))


def _worse(c: ChangePoint) -> bool:
    """Whether a change point moved the worse way: a regression, or a change of no known direction upward."""
    return c.kind == "regression" or (c.kind == "change" and c.ratio > 1)


def _events_of_cluster(group: list[_Found], place: tuple[str, str], found: _Findings, spans: _Spans
                       ) -> list[tuple[EnvironmentEvent, list[_Found]]]:
    """The events of one day's cluster of a place: its parts that follow the run date, else, where none does, the
    whole cluster when it is environment-wide; each with its members."""
    dated = _dated_parts(group)
    if dated:
        return [event for part in dated if (event := _run_date_event(part, found)) is not None]
    if len(group) < EVENT_MIN_SERIES or len(group) < EVENT_SHARE * found.analysed[place]:
        return []
    event = _environment_wide_event(group, place, found, spans)
    return [event] if event is not None else []


def _run_date_event(part: list[_Found], found: _Findings) -> tuple[EnvironmentEvent, list[_Found]] | None:
    """A part that follows the run date as an event of its members: those neither favouring their own commit nor
    stepping alike on another machine; None where none is left or the part no longer follows the run date."""
    members = [f for f in part if not (_own_commit(f) or _elsewhere_too(f, found.by_series, True))]
    if members and follows_run_date(_evidence(part)):
        return _event_of(members, "run date", found.worse), members
    return None


def _environment_wide_event(group: list[_Found], place: tuple[str, str], found: _Findings, spans: _Spans
                            ) -> tuple[EnvironmentEvent, list[_Found]] | None:
    """A cluster whose siblings stayed put as an event of its members that did not step alike where the siblings
    were read; None where the siblings moved or no member is left."""
    quiet, other_machines = _siblings_quiet(group, place, spans, found.stepped, EVENT_REACH)
    members = [f for f in group if quiet and not _elsewhere_too(f, found.by_series, other_machines)]
    return (_event_of(members, "environment-wide", found.worse), members) if members else None


def _periods(events: list[EnvironmentEvent], held: dict[tuple[SeriesKey, str], Held]
             ) -> tuple[list[EnvironmentEvent], dict[tuple[SeriesKey, str], Held]]:
    """A step of the run and its return, one period: the next event of the same machine and environments that takes
    most of the same series back (the two run factors within :data:`SMALL_MOVE` of cancelling) reads as one event,
    "in runs from D1 to D2", and holds both steps. The return is the run's, not a change of the code."""
    series: dict[str, set[SeriesKey]] = defaultdict(set)
    for (key, _), h in held.items():
        if h.run_part is None:
            series[h.event].add(key)
    into: dict[str, str] = {}
    out: list[EnvironmentEvent] = []
    for e in events:
        if e.id in into:
            continue
        back = next((b for b in events if b.id not in into and b.machine == e.machine and b.day > e.day
                     and set(b.environments) & set(e.environments) and _cancel(e.median_ratio, b.median_ratio)
                     and 2 * len(series[e.id] & series[b.id]) > min(len(series[e.id]), len(series[b.id]))), None)
        if back is not None and math.isnan(e.until_day):
            into[back.id] = e.id
            e = dataclasses.replace(e, until_day=back.day,
                                    environments=tuple(sorted(set(e.environments) | set(back.environments))))
        out.append(e)
    return out, {k: dataclasses.replace(h, event=into.get(h.event, h.event)) for k, h in held.items()}


def _cancel(step: float, back: float) -> bool:
    """Whether a run factor and a later one take the level back: their product within :data:`SMALL_MOVE` of 1, each
    a move beyond it."""
    if not (0 < step < math.inf and 0 < back < math.inf):
        return False
    small = math.log1p(SMALL_MOVE)
    return abs(math.log(step)) > small and abs(math.log(back)) > small and abs(math.log(step * back)) <= small


def _run_parts_only(events: list[tuple[EnvironmentEvent, list[_Found]]], worse: Mapping[int, bool]
                    ) -> list[tuple[EnvironmentEvent, list[_Found]]]:
    """Each event with only what the run moved: a member whose re-runs left the whole step to the code (the run's
    part under :data:`SMALL_MOVE`) leaves it, and an event left with no member is none."""
    out = []
    for e, group in events:
        kept = [f for f in group if _run_moved(f)]
        if kept:
            out.append((dataclasses.replace(_event_of(kept, e.evidence, worse), day=e.day), kept)
                       if len(kept) < len(group) else (e, group))
    return out


def mark_events(reports: Sequence[SeriesReport], held: Mapping[tuple[SeriesKey, str], Held],
                events: Sequence[EnvironmentEvent]) -> list[SeriesReport]:
    """``reports`` with each change point an event holds whole marked ``extra["cause"] = "environment"`` and its
    event's id and line; one it holds a part of is the code's step beyond that part (:func:`code_part_of`); the
    others are left as they are (the code's: no ``cause``)."""
    line = {e.id: e.describe() for e in events}
    out = []
    for r in reports:
        changes = []
        for c in r.changes:
            h = held.get((c.series, c.after_sha))
            if h is None:
                changes.append(c)
            elif h.run_part is None:
                changes.append(dataclasses.replace(c, extra={**c.extra, "cause": "environment", "event": h.event,
                                                              "event_line": line[h.event]}))
            else:
                changes.append(code_part_of(c, h.run_part, h.event))
        out.append(dataclasses.replace(r, changes=tuple(changes)))
    return out


def code_part_of(cp: ChangePoint, run: float, event: str) -> ChangePoint:
    """``cp`` as the code's step beyond the run's part ``run`` (a ratio) that event ``event`` holds: the old level is
    read in the new runs (before x run), the ratio and kind are the code's part, ``extra["run_part"]`` keeps the
    run's."""
    before = cp.before_value * run
    ratio = cp.after_value / before if before else cp.ratio
    kind = cp.kind if cp.direction is Direction.NEUTRAL else (
        "regression" if (ratio > 1) == (cp.direction is Direction.LOWER) else "improvement")
    return dataclasses.replace(cp, before_value=before, ratio=ratio, kind=kind,  # type: ignore[arg-type]
                               extra={**cp.extra, "run_part": run, "run_event": event})


def without_returns_from_events(reports: Sequence[SeriesReport]) -> list[SeriesReport]:
    """``reports`` (marked by :func:`mark_events`) without the change points in the newest commits that the gate's
    rules read as a change reverted (``extra["state"]``, :func:`.history_evidence._confirmed_phase`) where the phase
    they return from began at the series' previous change point, an environment event's: the step into the phase
    followed the run date, so leaving it is no revert of the code."""
    return [dataclasses.replace(r, changes=tuple(c for i, c in enumerate(r.changes) if not (
        i and _returns_from_event(r.changes[i - 1], c)))) for r in reports]


def _returns_from_event(event_step: ChangePoint, cp: ChangePoint) -> bool:
    """Whether ``cp``, a newest-commit change point, goes back from the level ``event_step`` (an environment event's)
    stepped to, and lands nearer the level before that step than the one after it."""
    if "state" not in cp.extra or not is_environment(event_step):
        return False
    values = (event_step.before_value, event_step.after_value, cp.after_value)
    if not all(v > 0 and math.isfinite(v) for v in values):
        return False
    before, phase, back = (math.log(v) for v in values)
    return abs(back - before) < abs(back - phase)


def is_environment(cp: ChangePoint) -> bool:
    """Whether a change point belongs to an environment event (not to the code)."""
    return cp.extra.get("cause") == "environment"


__all__ = ["RunPoints", "DateEvidence", "EnvironmentEvent", "Held", "run_part", "code_part_of", "date_evidence",
           "follows_run_date", "find_events", "mark_events", "without_returns_from_events", "is_environment"]
