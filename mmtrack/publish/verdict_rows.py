"""The rows the pages read: commits, change points, and the compare page's verdicts on each series' newest
commits (with the runs carried from the last build)."""


from __future__ import annotations

import hashlib
from typing import Any, Mapping, Sequence

import orjson

from ..analysis.compare import detect_says
from ..results import ChangePoint, CommitInfo, RunVerdict, SeriesKey, SeriesPoint
from ..vocabulary import Direction
from .encode import _finite, _first_line, _iso, bench_id
from .model import HistoryColumns, SiteModel
from .runcarry import CaseRuns, LastBuild, SuiteRuns, carried_prints

# The compare page shows `mmtrack compare`'s verdict on each of a series' newest commits against the
# commit before it; a verdict needs the history before it (and samples, read for these points only).
STEP_COMMITS = 10
# The newest points read with their samples: the commits the verdicts compare. The history before them is
# read as medians only (``SiteModel.history_columns``): HISTORY commits, analysis.compare.HISTORY_WINDOW (a test pins it).
NEWEST = STEP_COMMITS + 1
HISTORY = 100


def _commit_rows(commits: Sequence[CommitInfo]) -> list[list[Any]]:
    return [[c.sha, _iso(c), _first_line(c.message), c.dirty] for c in commits]


def _band_kind(points: Sequence[SeriesPoint]) -> tuple[str | None, bool]:
    """The band the series draws, from its first ok point, and whether there was one (until then,
    a newer point can still decide it)."""
    for p in points:
        m = p.measurement
        if m.status == "ok" and m.median is not None:
            if m.q1 is not None and m.q3 is not None:
                return "IQR", True
            if m.ci_low is not None and m.ci_high is not None:
                return "CI", True
            return None, True
    return None, False


def _change_row(cp: ChangePoint, pos: dict[str, int], series_index: int | None) -> dict[str, Any]:
    return {
        "s": series_index,
        "kind": cp.kind,
        "direction": cp.direction.value,
        "before": pos.get(cp.before_sha),
        "after": pos.get(cp.after_sha),
        "before_sha": cp.before_sha,
        "after_sha": cp.after_sha,
        "before_value": _finite(cp.before_value),
        "after_value": _finite(cp.after_value),
        "ratio": _finite(cp.ratio),
        "p": _finite(cp.p_value),
        "persists": bool(cp.persists),
        "method": cp.method,
        # an environment event (analysis.events) holds it: the run moved, not the code
        **({"event": str(cp.extra.get("event_line") or cp.extra.get("event"))}
           if cp.extra.get("cause") == "environment" else {}),
    }


Earlier = tuple[Sequence[float | None], Sequence[str | None]]  # medians (None: failed) and code versions
# Per series, what each run says about the verdict on its commit (analysis.compare.InRun), by after sha
InRuns = dict[SeriesKey, CaseRuns]
# Per series, the fingerprint of each of those (InRun.fingerprint), by after sha
RunPrints = dict[SeriesKey, dict[str, str]]


def _newest(model: SiteModel, key: SeriesKey, points: Sequence[SeriesPoint] | None = None) -> list[SeriesPoint]:
    """The series' newest points the compare page's verdicts compare, with their samples."""
    if model.newest_points is not None:
        return list(model.newest_points(key, NEWEST))
    return list((points if points is not None else model.series[key])[-NEWEST:])


def _earlier(model: SiteModel, key: SeriesKey, newest: Sequence[SeriesPoint],
             points: Sequence[SeriesPoint] | None = None) -> Earlier:
    """The medians and versions of the ``HISTORY`` commits before ``newest``: from the series' points when
    they were read whole (``points``), else from ``model.history_columns`` (the store's columns, no record
    per point)."""
    if not newest:
        return (), ()
    shas, medians, versions, _ = _columns(model, key, points)
    first = newest[0].commit.sha
    at = next((i for i in range(len(shas) - 1, -1, -1) if shas[i] == first), 0)
    return medians[max(0, at - HISTORY) : at], versions[max(0, at - HISTORY) : at]


def _columns(model: SiteModel, key: SeriesKey, points: Sequence[SeriesPoint] | None = None) -> HistoryColumns:
    """A series' commits, medians (None: failed), code versions and direction: from its points when they
    were read whole (``points``), else from ``model.history_columns`` (the store's columns)."""
    from ..analysis.compare import history_columns

    if points is None and model.history_columns is not None:
        return model.history_columns(key)
    whole = points if points is not None else model.series[key]
    medians, versions = history_columns([p.measurement for p in whole])
    direction = whole[-1].measurement.direction if whole else Direction.LOWER
    return [p.commit.sha for p in whole], medians, versions, direction


def _suite_runs(model: SiteModel, last: Mapping[SeriesKey, LastBuild], pos: Mapping[str, int]
                ) -> tuple[InRuns, RunPrints]:
    """What each run says about the verdict on each series' newest commits (its frames and shift,
    :func:`mmtrack.analysis.compare.suite_runs`), and each one's fingerprint: one pass over every series of each
    machine and environment, before any benchmark is built, so that the pages judge a commit as ``mmtrack compare``
    does. Read from the series' columns (medians), never their samples. A commit whose run's inputs are the last
    build's (``last``: each series' last point then and run prints by position in ``pos``, :mod:`.runcarry`) keeps
    its fingerprints and is fitted only if a verdict on it is worked out again."""
    from ..analysis.compare import ComparePolicy

    policy = ComparePolicy()
    suites = _suites_judged(model, policy.min_suite)
    if model.prefetch_columns is not None:
        model.prefetch_columns([k for keys in suites.values() for k in keys])
    in_runs: InRuns = {}
    prints: RunPrints = {}
    for keys in suites.values():
        _one_suite_runs(model, keys, last, pos, policy.confirm_window, in_runs, prints)
    return in_runs, prints


def _suites_judged(model: SiteModel, min_suite: int) -> dict[tuple[str, str], list[SeriesKey]]:
    """The series of each machine and environment that has enough of them for what its runs say."""
    suites: dict[tuple[str, str], list[SeriesKey]] = {}
    for key in model.series:
        suites.setdefault((key.machine, key.environment), []).append(key)
    return {s: keys for s, keys in suites.items() if len(keys) >= max(min_suite, 1)}


def _one_suite_runs(model: SiteModel, keys: list[SeriesKey], last: Mapping[SeriesKey, LastBuild],
                    pos: Mapping[str, int], confirm_window: int, in_runs: InRuns, prints: RunPrints) -> None:
    """One suite's runs (see :func:`_suite_runs`), into ``in_runs`` and ``prints`` by series."""
    from ..analysis.compare import suite_runs

    cases = {k: (k.benchmark, k.params, k.metric) for k in keys}
    columns = {cases[k]: _columns(model, k) for k in keys}
    judged = {case: cols[0][-STEP_COMMITS:] for case, cols in columns.items()}
    order = list(dict.fromkeys(sha for shas in judged.values() for sha in shas))  # suite_runs' order
    carried = carried_prints(columns, order, {cases[k]: last[k] for k in keys if k in last}, pos, confirm_window)
    fresh = {case: [sha for sha in shas if sha not in carried] for case, shas in judged.items()}
    fitted = suite_runs(columns, fresh, window=HISTORY)
    runs = SuiteRuns(columns, judged, fitted, carried, HISTORY)
    for k in keys:
        case, mine = cases[k], fitted.get(cases[k], {})
        in_runs[k] = CaseRuns(runs, case)
        wanted = set(judged[case])
        prints[k] = {sha: fp for sha in order if sha in wanted and (fp := _print_of(sha, case, carried, mine))}


def _print_of(sha: str, case: Any, carried: dict[str, dict[Any, str]], fitted: Mapping[str, Any]) -> str | None:
    """A commit's run fingerprint for one series: the last build's, if carried over, else its fitted InRun's."""
    if sha in carried:
        return carried[sha].get(case)
    run = fitted.get(sha)
    return run.fingerprint() if run is not None else None


def _last_runs(model: SiteModel, by_bench: dict[str, list[SeriesKey]], reusable: dict[str, Any],
               appended: Mapping[str, bool]) -> dict[SeriesKey, LastBuild]:
    """Each series whose benchmark only gained newer points since the last build (``appended``, by
    :func:`_appended_only`): the commit of its last point then and that build's run fingerprints by position. Empty
    when a benchmark of the last build is gone (its series took part in their runs)."""
    if not reusable or not set(reusable) <= {bench_id(b) for b in by_bench}:
        return {}
    out: dict[SeriesKey, LastBuild] = {}
    for bench, keys in by_bench.items():
        cached = reusable.get(bench_id(bench))
        if not isinstance(cached, dict):
            continue
        keys = _sorted_keys(keys)
        tails, runs = cached.get("tails"), cached.get("runs")
        if not isinstance(runs, list) or len(runs) != len(keys) or not appended.get(bench):
            continue
        for key, tail, by_pos in zip(keys, tails, runs):
            if isinstance(by_pos, dict) and isinstance(tail[4], list) and tail[4] and isinstance(tail[4][0], str):
                out[key] = (tail[4][0], by_pos)
    return out


def _with_runs(token: str | None, prints: Sequence[dict[str, str]]) -> str | None:
    """A benchmark's token (its own series) with what its runs say about its verdicts: a run's other series
    move its verdicts too."""
    if not token or not any(prints):
        return token
    return hashlib.sha256(orjson.dumps([token, *prints], option=orjson.OPT_SORT_KEYS)).hexdigest()


def _step_verdicts(
    newest: Sequence[SeriesPoint], earlier: Earlier, pos: dict[str, int], old: Any = None, settled: int = 0,
    runs: CaseRuns | None = None, prints: dict[str, str] | None = None, old_prints: Any = None,
) -> list[list[Any]]:
    """``[before position, after position, verdict, state, ratio]`` of the series' newest commits,
    each against the commit before it, by :func:`mmtrack.analysis.compare.series_step_verdicts`, each read with
    what its run says (``runs``, by after sha; :func:`_suite_runs`).

    ``old``: the last build's list, for a series that only gained newer points since; ``settled``: the
    index in ``newest`` of the last step that already had every later commit its verdict reads then
    (its history is older still), so its verdict, and every older one's, is the last build's, as long as
    what its run says is unchanged too (``prints`` now, ``old_prints`` then, by after position)."""
    from ..analysis.compare import series_step_verdicts  # scipy: only when a benchmark is judged

    out = []
    j = max(1, len(newest) - STEP_COMMITS)
    known = {(v[0], v[1]): v for v in old if isinstance(v, list) and len(v) == 5} if isinstance(old, list) else {}
    then = old_prints if isinstance(old_prints, dict) else {}
    while j <= settled:
        after = newest[j].commit.sha
        v = known.get((pos.get(newest[j - 1].commit.sha), pos.get(after)))
        if v is None or then.get(str(v[1])) != (prints or {}).get(after):
            break  # not on the last build's pages (a commit it did not place), or its run reads otherwise now
        out.append(v)
        j += 1
    # Only the commits judged below: a carried-over commit's run is fitted on first use (publish/runcarry.py).
    in_run = [runs.get(p.commit.sha) if runs is not None and i >= j else None for i, p in enumerate(newest)]
    # The pages show verdicts, not p-values: the test runs only where it decides one.
    for j, verdict, state, ratio in series_step_verdicts([p.measurement for p in newest], last=len(newest) - j,
                                                         earlier=earlier, runs=in_run):
        b, a = pos.get(newest[j - 1].commit.sha), pos.get(newest[j].commit.sha)
        if a is not None and b is not None:
            out.append([b, a, verdict, state, _finite(ratio)])
    return out


_RUN_KINDS = {"regressed": "regression", "failed": "regression", "improved": "improvement", "fixed": "improvement"}


def _run_verdict_row(v: RunVerdict, pos: dict[str, int], series_index: int) -> dict[str, Any]:
    """A regressions-page row from `mmtrack run`'s comparison at a commit (not a detected change point)."""
    return {
        "s": series_index,
        "source": "run",
        "kind": _RUN_KINDS.get(v.verdict, "change"),
        "verdict": v.verdict,
        "state": v.state,
        "note": v.note,
        "before": pos.get(v.before_sha),
        "after": pos.get(v.after_sha),
        "before_sha": v.before_sha,
        "after_sha": v.after_sha,
        "before_value": _finite(v.before_value),
        "after_value": _finite(v.after_value),
        "ratio": _finite(v.ratio),
        "p": _finite(v.p_value),
        "persists": None,
        "method": "mmtrack run",
    }


_AB_KINDS = {"regressed": "regression", "improved": "improvement"}


def _ab_only_rows(model: SiteModel, key_index: dict[SeriesKey, int], pos: dict[str, int],
                  shown: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """A regressions-page row per A/B verdict (``mmtrack continuous``) of this benchmark's series that no change point
    or run verdict carries already (on a new project the A/B run is the only verdict there is); one that does carry
    its pair gets it in its A/B column."""
    carried = {(r["s"], r["after_sha"]): r for r in shown}
    # An A/B run stores its sides under an environment of its own, which the pages leave out when a history exists:
    # its verdict shows on the history series of the same case and metric on that machine.
    by_case = {}
    for key, i in key_index.items():
        by_case.setdefault((key.machine, key.benchmark, key.params, key.metric), i)
    rows = []
    for (key, after_sha), v in model.ab_verdicts.items():  # few: one per changed row of each A/B run
        i = key_index.get(key, by_case.get((key.machine, key.benchmark, key.params, key.metric)))
        if i is None or v.get("state") not in _AB_KINDS:
            continue
        if (i, after_sha) in carried:  # the run verdict or change point of that pair shows it in its A/B column
            carried[(i, after_sha)].setdefault("ab", {k: _finite(x) if isinstance(x, float) else x for k, x in v.items()})
            continue
        before_sha = v.get("before_sha")
        rows.append({"s": i, "source": "ab", "kind": _AB_KINDS[v["state"]], "verdict": v["state"], "state": None,
                     "note": "", "before": pos.get(before_sha), "after": pos.get(after_sha), "before_sha": before_sha,
                     "after_sha": after_sha, "before_value": None, "after_value": None, "ratio": _finite(v.get("ratio")),
                     "p": _finite(v.get("p_value")), "persists": None, "method": "mmtrack continuous",
                     "ab": {k: _finite(x) if isinstance(x, float) else x for k, x in v.items()}})
    return rows


def _agreeing(row: dict[str, Any], changes: Sequence[ChangePoint]) -> dict[str, Any]:
    """A run verdict's row as detect's change point at the same pair bears on it: one verdict per pair, or one line
    saying why not (:func:`..analysis.compare.detect_says`)."""
    change = next((c for c in changes if c.after_sha == row["after_sha"]), None)
    said = detect_says(row["verdict"], row["note"] or "", change) if change is not None else None
    if said is None:
        return row
    verdict, note = said
    return dict(row, verdict=verdict, note=note, kind=_RUN_KINDS.get(verdict, "change"),
                state=row["state"] if verdict == row["verdict"] else None)


def _sorted_keys(keys: Sequence[SeriesKey]) -> list[SeriesKey]:
    """A benchmark's series in the order of its pages (and of its tails in the manifest)."""
    return sorted(keys, key=lambda k: (k.machine, k.environment, k.params, k.metric))
