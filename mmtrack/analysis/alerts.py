"""Alerts: the change points one cause made, grouped, with an id that survives re-detection.

Pure functions over plain records (``ChangePoint`` and commit positions), as Perfherder's alert summaries and
Chromium's anomaly groups work: change points whose commit ranges overlap, across benchmarks, parameters, metrics,
machines and environments, form one alert. Its range is where every member agrees the culprit lies (the
intersection of their ranges). ``reconcile`` carries the ids and triage states of the alerts stored before onto the
groups found now; an alert that splits or merges says so (docs/design/alerts.md).
"""

from __future__ import annotations

import bisect
import hashlib
import math
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping, Sequence

from ..results import ChangePoint, MetricKey, SeriesKey

#: The states a team gives an alert; ``untriaged`` until someone looks.
STATES = ("untriaged", "acknowledged", "invalid", "wontfix", "fixed", "backed-out")
#: States that say the alert is no regression to act on: the gate leaves their change points out.
DISMISSED = ("invalid", "wontfix")


@dataclass(frozen=True, slots=True)
class AlertSeries:
    """One series of an alert: the change point it holds."""

    series: SeriesKey
    kind: str  # regression, improvement, change
    ratio: float
    before_sha: str
    after_sha: str
    p_value: float | None = None
    event: str | None = None  # the environment event that explains it, where one does


@dataclass(frozen=True, slots=True)
class Triage:
    """What a person said about an alert."""

    state: str = "untriaged"
    note: str = ""
    who: str = ""
    at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Culprit:
    """The commit ``bisect --alert`` named, and how: the series it was judged on, where, with what."""

    sha: str
    benchmark: str = ""
    params: str = ""
    metric: str = ""
    machine: str = ""  # the asv machine that measured it
    ratio: float | None = None  # the culprit against its parent, A/B on that machine
    verdict: str = ""  # that pair's verdict, as ``continuous`` reads it
    measured: int = 0  # commits measured
    commits: int = 0  # commits in the alert's range
    instrument: str = "wall"
    at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Alert:
    id: str
    before_sha: str  # the last commit every member still reads at the old level
    after_sha: str  # the first commit every member reads at the new level
    series: tuple[AlertSeries, ...]
    triage: Triage = Triage()
    active: bool = True  # False: re-detection no longer finds it (kept, with its triage)
    merged: tuple[str, ...] = ()  # ids of the alerts this one absorbed
    merged_into: str | None = None
    split_from: str | None = None
    culprit: Culprit | None = None  # the commit ``bisect --alert`` named
    created_at: datetime | None = None

    @property
    def state(self) -> str:
        return self.triage.state

    @property
    def kind(self) -> str:
        kinds = {s.kind for s in self.series}
        return "regression" if "regression" in kinds else "improvement" if kinds == {"improvement"} else "change"

    @property
    def machines(self) -> tuple[str, ...]:
        return tuple(sorted({s.series.machine for s in self.series}))

    @property
    def agreeing_machines(self) -> tuple[str, ...]:
        """Machines where at least one series moved the alert's way (a regression: slower)."""
        return tuple(sorted({s.series.machine for s in self.series if s.kind == self.kind}))

    @property
    def events(self) -> tuple[str, ...]:
        return tuple(sorted({s.event for s in self.series if s.event}))

    @property
    def explained(self) -> bool:
        """Every member follows an environment event: the run moved, not the code."""
        return bool(self.series) and all(s.event for s in self.series)

    @property
    def dismissed(self) -> bool:
        return self.state in DISMISSED

    @property
    def worst_ratio(self) -> float:
        return max((s.ratio for s in self.series), key=lambda r: abs(r - 1.0), default=1.0)


def series_label(key: SeriesKey) -> str:
    params = f"({key.params})" if key.params not in ("", "{}") else ""
    return f"{key.benchmark}{params} {key.metric.name} @ {key.machine}/{key.environment}"


def alert_id(before_sha: str, after_sha: str, first: SeriesKey) -> str:
    """Derived from the earliest range and the first series: the same group re-detected gets the same id."""
    text = f"{before_sha}:{after_sha}:{series_label(first)}"
    return hashlib.sha1(text.encode()).hexdigest()[:10]


def member(change: ChangePoint) -> AlertSeries:
    event = change.extra.get("event") if change.extra.get("cause") == "environment" else None
    return AlertSeries(change.series, change.kind, change.ratio, change.before_sha, change.after_sha,
                       change.p_value, None if event is None else str(event))


# --------------------------------------------------------------------------- grouping


@dataclass(slots=True)
class _Group:
    lo: int  # position of the range's last old commit
    hi: int  # position of its first new commit
    members: list[AlertSeries] = field(default_factory=list)
    first_range: tuple[str, str] = ("", "")


def group(changes: Iterable[ChangePoint], position: Mapping[str, int]) -> list[Alert]:
    """Change points whose ranges (before, after] overlap, one alert each group, earliest first.

    A change point joins the open group while its range overlaps the group's intersection, so a chain of
    neighbouring ranges does not grow into one alert spanning many commits. Change points whose commits
    ``position`` lacks are left out, and so are suspected ones (the newest commits' steps the next commits have
    not confirmed yet): they join the queue once confirmed."""
    placed = [(position[c.before_sha], position[c.after_sha], series_label(c.series), c) for c in changes
              if c.before_sha in position and c.after_sha in position and c.extra.get("state") != "suspected"]
    placed.sort(key=lambda t: (t[0], t[1], t[2]))
    groups: list[_Group] = []
    for lo, hi, _, change in placed:
        g = groups[-1] if groups else None
        if g is not None and max(lo, g.lo) < min(hi, g.hi):
            g.lo, g.hi = max(lo, g.lo), min(hi, g.hi)
        else:
            g = _Group(lo, hi, first_range=(change.before_sha, change.after_sha))
            groups.append(g)
        g.members.append(member(change))
    sha_at = {p: s for s, p in position.items()}
    out = []
    for g in groups:
        first = g.members[0].series
        out.append(Alert(alert_id(*g.first_range, first), sha_at[g.lo], sha_at[g.hi], tuple(g.members)))
    return out


# --------------------------------------------------------------------------- ids across re-detection


def _span(alert: Alert, position: Mapping[str, int]) -> tuple[int, int] | None:
    if alert.before_sha in position and alert.after_sha in position:
        return position[alert.before_sha], position[alert.after_sha]
    return None


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return max(a[0], b[0]) < min(a[1], b[1])


def _shared(a: Alert, b: Alert) -> int:
    return len({s.series for s in a.series} & {s.series for s in b.series})


def _age(alert: Alert) -> tuple[float, str]:
    return (alert.created_at.timestamp() if alert.created_at else math.inf, alert.id)


def _overlapping(found: Sequence[Alert], stored: Sequence[Alert], position: Mapping[str, int]) -> list[list[Alert]]:
    """Per found alert, the stored alerts whose ranges overlap its own: one sweep over both sorted by start, not
    every pair (a nightly update reconciles hundreds of alerts)."""
    olds = sorted(((s, a) for a in stored if (s := _span(a, position)) is not None), key=lambda t: t[0])
    starts = [s[0] for s, _ in olds]
    out = []
    for f in found:
        span = _span(f, position)
        if span is None:
            out.append([])
            continue
        # a stored range overlaps when it starts before this one ends and ends after it starts
        out.append([a for s, a in olds[: bisect.bisect_left(starts, span[1])] if s[1] > span[0]])
    return out


def reconcile(found: Sequence[Alert], stored: Sequence[Alert], position: Mapping[str, int],
              now: datetime | None = None) -> list[Alert]:
    """The alerts to store after a detection: ``found`` (from :func:`group`) carrying the ids and triage of the
    ``stored`` alerts their ranges overlap, plus the stored ones no group overlaps (inactive, triage kept).

    A group that overlaps several stored alerts keeps the oldest id and lists the others as ``merged`` (they stay,
    inactive, ``merged_into`` it). A stored alert that several groups overlap stays with the group that shares most
    of its series; the others get their own ids and ``split_from`` it, and its triage."""
    by_id = {a.id: a for a in stored}
    overlapping = _overlapping(found, stored, position)
    takers: dict[str, list[int]] = {}  # stored id -> the groups overlapping it
    for i, olds in enumerate(overlapping):
        for o in olds:
            takers.setdefault(o.id, []).append(i)
    owned_by: dict[int, list[Alert]] = {}  # group -> the stored alerts it keeps
    for old_id, groups in takers.items():
        best = max(groups, key=lambda i: (_shared(found[i], by_id[old_id]), -i))
        owned_by.setdefault(best, []).append(by_id[old_id])
    taken = set(by_id)
    out: list[Alert] = []
    for i, f in enumerate(found):
        owned = sorted(owned_by.get(i, []), key=_age)
        if owned:
            keep, rest = owned[0], owned[1:]
            triage = keep.triage if keep.state != "untriaged" else next(
                (o.triage for o in sorted(rest, key=lambda o: o.triage.at.timestamp() if o.triage.at else 0.0,
                                     reverse=True)
                 if o.state != "untriaged"), keep.triage)
            merged = tuple(dict.fromkeys([*keep.merged, *(o.id for o in rest)]))
            out.append(replace(f, id=keep.id, triage=triage, merged=merged, split_from=keep.split_from,
                               culprit=keep.culprit, created_at=keep.created_at or now))
            out.extend(replace(o, active=False, merged_into=keep.id) for o in rest)
            continue
        new_id = _unused(f.id, taken)
        taken.add(new_id)
        parent = min(overlapping[i], key=_age, default=None)
        out.append(replace(f, id=new_id, created_at=now, split_from=parent.id if parent else None,
                           triage=parent.triage if parent else Triage()))
    placed = {a.id for a in out}
    out.extend(replace(a, active=False) for a in stored if a.id not in placed)
    return out


def _unused(wanted: str, taken: set[str]) -> str:
    candidate, n = wanted, 1
    while candidate in taken:
        n += 1
        candidate = f"{wanted}-{n}"
    return candidate


# --------------------------------------------------------------------------- the gate and the queue


def dismissed_series(alerts: Iterable[Alert]) -> set[tuple[SeriesKey, str]]:
    """(series, after commit) of every change point an invalid or won't-fix alert holds: the gate skips them."""
    return {(s.series, s.after_sha) for a in alerts if a.active and a.dismissed for s in a.series}


#: The queue's order of states: what needs a look first, what was dismissed last.
QUEUE_RANK = {"untriaged": 0, "acknowledged": 1, "fixed": 2, "backed-out": 2, "wontfix": 3, "invalid": 3}


def queue_order(alerts: Iterable[Alert]) -> list[Alert]:
    """Active alerts first; untriaged, then acknowledged, then settled, then dismissed; regressions first among
    those, then the largest move."""
    return sorted(alerts, key=lambda a: (not a.active, QUEUE_RANK.get(a.state, 1), a.kind != "regression",
                                         -abs(a.worst_ratio - 1.0), a.id))


# --------------------------------------------------------------------------- rows, as the store keeps them


def utc(value: datetime | None) -> datetime | None:
    """SQLite hands timestamps back without their zone; they were written in UTC."""
    return value.replace(tzinfo=timezone.utc) if value is not None and value.tzinfo is None else value


def series_json(s: AlertSeries) -> dict[str, Any]:
    k = s.series
    return {"machine": k.machine, "environment": k.environment, "benchmark": k.benchmark, "params": k.params,
            "section": k.metric.section, "metric": k.metric.name, "unit": k.metric.unit, "kind": s.kind,
            "ratio": s.ratio, "before_sha": s.before_sha, "after_sha": s.after_sha, "p_value": s.p_value,
            "event": s.event}


def _series_of(d: Mapping[str, Any]) -> AlertSeries:
    key = SeriesKey(d["machine"], d["environment"], d["benchmark"], d["params"],
                    MetricKey(d["section"], d["metric"], d["unit"]))
    return AlertSeries(key, d["kind"], float(d["ratio"]), d["before_sha"], d["after_sha"], d.get("p_value"),
                       d.get("event"))


def alert_row(a: Alert) -> dict[str, Any]:
    """An alert as the store's ``alert`` table holds it (store/alert_rows.py)."""
    t = a.triage
    return {"id": a.id, "before_sha": a.before_sha, "after_sha": a.after_sha, "kind": a.kind,
            "series": [series_json(s) for s in a.series], "active": a.active, "state": t.state, "note": t.note,
            "who": t.who, "triaged_at": t.at, "merged": list(a.merged), "merged_into": a.merged_into,
            "split_from": a.split_from, **culprit_columns(a.culprit),
            "created_at": a.created_at or datetime.now(timezone.utc)}


#: The alert table's culprit columns and the :class:`Culprit` field each holds.
CULPRIT_COLUMNS = {"culprit": "sha", "culprit_benchmark": "benchmark", "culprit_params": "params",
                   "culprit_metric": "metric", "culprit_machine": "machine", "culprit_ratio": "ratio",
                   "culprit_verdict": "verdict", "culprit_measured": "measured", "culprit_commits": "commits",
                   "culprit_instrument": "instrument", "culprit_at": "at"}


def culprit_columns(c: Culprit | None) -> dict[str, Any]:
    """A culprit as the alert row's columns (all None without one)."""
    return {column: None if c is None else getattr(c, name) for column, name in CULPRIT_COLUMNS.items()}


def _row_culprit(r: Mapping[str, Any]) -> Culprit | None:
    if not r.get("culprit"):
        return None
    given = {name: r.get(column) for column, name in CULPRIT_COLUMNS.items() if r.get(column) is not None}
    return Culprit(**{**given, "at": utc(given.get("at"))})


def row_alert(r: Mapping[str, Any]) -> Alert:
    triage = Triage(r["state"], r["note"] or "", r["who"] or "", utc(r["triaged_at"]))
    return Alert(r["id"], r["before_sha"], r["after_sha"], tuple(_series_of(d) for d in r["series"]), triage,
                 bool(r["active"]), tuple(r["merged"] or ()), r["merged_into"], r["split_from"], _row_culprit(r),
                 utc(r["created_at"]))
