"""``mmtrack bisect --alert ID``: narrow an alert's commit range on this machine and write the culprit on the alert.

GOOD is the alert's last commit at the old level, BAD its first at the new one (``analysis.alerts``). The series
judged: the alert's series on this machine's class (all of them where it has none there), the one that moved most,
or those ``-b`` picks among them. The search is ``mmtrack bisect``'s (:mod:`mmtrack.ab.bisect_run`), wall clock or
callgrind. A range of one commit names its culprit already: nothing is measured. GOOD and BAD that do not differ
here: one line, nothing written. A culprit whose check against its parent does not read as a move is shown, not written.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

from ..analysis.alert_queue import resolve_alert, stored_alerts
from ..analysis.alerts import Alert, AlertSeries, Culprit, culprit_columns
from ..analysis.deterministic import is_deterministic
from ..errors import EXIT_USAGE, UserError, user_regex

#: The verdicts of a culprit's check against its parent that confirm the search: the culprit is written.
MOVED = ("regressed", "improved")


@dataclass(frozen=True, slots=True)
class AlertBisectRequest:
    alert: str  # its id, or a unique start of it
    db: str | None = None  # the store holding the alert; the A/B measurements go there too
    bench: str | None = None  # a regex over the alert's series' benchmarks (default: the one that moved most)
    metric: str | None = None  # default: the series' own
    project: Path = Path(".")
    config: Path | None = None
    rounds: int = 4
    machine: str | None = None
    round_alpha: float | None = None
    save: bool = True
    instrument: str = "wall"


@dataclass(slots=True)
class AlertBisectOutcome:
    alert: Alert  # as stored after the bisection
    good: str
    bad: str
    commits: int  # first-parent commits in the range
    series: AlertSeries  # the series the search was steered by
    machine_class: str | None  # this machine's class in the store (None: a machine the store has not seen)
    bisect: Any = None  # the search's outcome (ab.bisect.BisectOutcome); None when the range holds one commit
    culprit: Culprit | None = None  # what was written on the alert
    note: str = ""  # why no culprit was written, where none was

    @property
    def exit_code(self) -> int:
        return 0 if self.culprit is not None or self.bisect is None else 1


def bisect_alert(request: AlertBisectRequest, progress: Callable[[str], None] | None = None) -> AlertBisectOutcome:
    from ..ab.bisect import NoStep, first_parent_range
    from ..ab.bisect_run import BisectRequest, bisect_commits
    from ..ab.envs import resolve_commit
    from ..ab.interleave import make_plan

    say = progress or (lambda line: None)
    alert, machine_class = _alert_and_class(request, say)
    plan, repo = make_plan(request.project, request.config, request.machine, None, request.rounds)
    targets = alert_targets(alert, machine_class, request.bench)
    metric = bisect_metric(targets[0], request.metric, request.instrument)
    good, bad = resolve_commit(repo, alert.before_sha), resolve_commit(repo, alert.after_sha)
    commits = first_parent_range(repo, good, bad)
    found = AlertBisectOutcome(alert, good, bad, len(commits), targets[0], machine_class)
    if len(commits) == 1:
        found.note = f"its range holds one commit, {_named(repo, bad)}: that commit is the culprit; nothing to measure"
        return found
    judged = [s for s in targets if s.series.metric.name == targets[0].series.metric.name]
    say(f"alert {alert.id}: bisecting {len(commits)} commits {good[:8]}..{bad[:8]} on {plan.machine} "
        f"({'class ' + machine_class if machine_class else 'a machine the store has not seen'}), "
        f"steered by {targets[0].series.benchmark} {metric}")
    try:
        found.bisect = bisect_commits(BisectRequest(
            good=good, bad=bad, bench=bench_regex(judged), metric=metric, project=request.project,
            config=request.config, rounds=request.rounds, machine=request.machine, round_alpha=request.round_alpha,
            db=request.db, save=request.save, instrument=request.instrument,
            case=(targets[0].series.benchmark, targets[0].series.params)), progress)
    except NoStep as exc:
        why = str(exc).removesuffix("; nothing to bisect")
        raise UserError(f"alert {alert.id}: no step between {good[:8]} and {bad[:8]} on this machine ({why}); "
                        "nothing written to the alert", exc.exit_code) from None
    return _written(found, request, plan.machine)


def _alert_and_class(request: AlertBisectRequest, say: Callable[[str], None]) -> tuple[Alert, str | None]:
    """The alert the id names (or the one it merged into) and this machine's class in the store."""
    from ..asvbridge.host import asv_machine
    from ..store.db import open_store

    host = asv_machine(request.machine)
    store = open_store(request.db, existing=True)
    try:
        alerts = stored_alerts(store)
        return followed(resolve_alert(alerts, request.alert), alerts, say), this_machine_class(store, host)
    finally:
        store.close()


def _named(repo: Path, sha: str) -> str:
    from ..vcs import git_output

    return f"{sha[:12]} {git_output(repo, 'show', '-s', '--format=%s', sha)!r}"


def unwritten(outcome: Any, series: AlertSeries) -> str:
    """Why the search's culprit is not written on the alert ("" when it is): its check against its parent must
    read a move, the way the alert's series moved."""
    if outcome.verdict.split(" ")[0] not in MOVED or not outcome.ratio:
        return (f"the culprit's check against its parent reads {outcome.verdict}: not written to the alert "
                "(a change spread over several commits, or noise; rerun with more --rounds)")
    if (outcome.ratio - 1.0) * (series.ratio - 1.0) < 0:
        return (f"the culprit moved {outcome.metric.name} ×{outcome.ratio:.3f} here, the other way from the alert's "
                f"×{series.ratio:.3f}: not written to the alert (another effect on this machine)")
    return ""


def _written(found: AlertBisectOutcome, request: AlertBisectRequest, machine: str) -> AlertBisectOutcome:
    """Write the culprit on the alert where its check confirms the move; else say why not."""
    from ..store.alert_rows import record_culprit
    from ..store.db import open_store

    outcome = found.bisect
    found.note = unwritten(outcome, found.series)
    if found.note:
        return found
    culprit = Culprit(outcome.culprit, outcome.case[0], outcome.case[1], outcome.metric.name, machine,
                      outcome.ratio, outcome.verdict, len(outcome.built), found.commits, request.instrument,
                      datetime.now(timezone.utc))
    store = open_store(request.db, existing=True)
    try:
        record_culprit(store, found.alert.id, culprit_columns(culprit))
        found.alert = resolve_alert(stored_alerts(store), found.alert.id)
    finally:
        store.close()
    found.culprit = found.alert.culprit
    return found


def followed(alert: Alert, alerts: Sequence[Alert], say: Callable[[str], None]) -> Alert:
    """The alert itself, or the one it was merged into (the cause is the same; its range is the narrower)."""
    by_id = {a.id: a for a in alerts}
    seen = {alert.id}
    while alert.merged_into and alert.merged_into in by_id and alert.merged_into not in seen:
        say(f"alert {alert.id} was merged into {alert.merged_into}: bisecting that one")
        alert = by_id[alert.merged_into]
        seen.add(alert.id)
    return alert


def this_machine_class(store: Any, host: str) -> str | None:
    """The store's machine class this host measures as: a class of its name, else the class its runs joined."""
    from ..store.reads import catalog as q

    if host in {m.name for m in q.list_machines(store)}:
        return host
    return next((name for name, hosts in q.hosts_by_machine(store).items() if host in hosts), None)


def alert_targets(alert: Alert, machine_class: str | None, bench: str | None) -> list[AlertSeries]:
    """The alert's series to bisect on, the largest move first: those ``bench`` picks (all without it), on this
    machine's class where the alert has any there."""
    chosen = list(alert.series)
    if bench:
        rx = user_regex(bench, "-b")
        chosen = [s for s in chosen if rx.search(s.series.benchmark)]
        if not chosen:
            names = sorted({s.series.benchmark for s in alert.series})
            raise UserError(f"-b {bench!r} selects none of alert {alert.id}'s series; its benchmarks: "
                            f"{', '.join(names[:5])}{', ...' if len(names) > 5 else ''}", EXIT_USAGE)
    here = [s for s in chosen if s.series.machine == machine_class] or chosen
    return sorted(here, key=lambda s: (-abs(math.log(s.ratio)) if s.ratio > 0 else 0.0, s.series.benchmark))


def bisect_metric(series: AlertSeries, given: str | None, instrument: str) -> str:
    """The metric the search reads: the one given, else the series' own (under callgrind: its count, else
    instructions, the count that follows the time)."""
    if given:
        return given
    name = series.series.metric.name
    if instrument == "callgrind":  # a count stays that count; a time follows instructions
        return name if is_deterministic(series.series.metric) else "instructions"
    return name


def bench_regex(series: Sequence[AlertSeries]) -> str:
    """asv's ``-b`` for exactly these series' benchmarks."""
    names = sorted({s.series.benchmark for s in series})
    return "^(?:" + "|".join(re.escape(n) for n in names) + ")$"
