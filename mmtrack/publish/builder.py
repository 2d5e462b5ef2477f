"""Render a :class:`SiteModel` as a static site that works offline and from file://.

Layout of the output folder::

    index.html  regressions.html  compare.html
    b/<id>.html                   one page per benchmark; <id> = sha256(name)[:16]
    assets/site.js site.css plotly.min.js
    data/site.js                  title, commit URL, commit count, chunk size
    data/verdicts.js              every series' verdicts on its newest commits (the compare page)
    data/index.js data/regressions.js
    data/commits/<k>.js           commits k*chunk .. (k+1)*chunk-1
    data/b/<id>.meta.js           the benchmark's series and change points
    data/b/<id>.<k>.js            its points for commit chunk k
    profiles/<sha or bench-run-N>/ kept callgrind profiles the pages link (publish/profiles.py)

Data files are classic scripts calling ``MM.<kind>(...)`` (fetch() of local
JSON is refused under file:// in Chromium; script tags are not). Every name and
message reaches the page as JSON with ``<``, ``>`` and ``&`` escaped, and the
page inserts it with ``textContent``, never as HTML. File names derive from
hashes and fixed words only, so no name can steer a write outside the folder.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import struct
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Collection, Mapping, Sequence

import orjson

from ..analysis.compare import detect_says
from ..analysis.policy import VERDICT_ORDER
from ..forked import can_fork, map_split
from ..results import ChangePoint, CommitInfo, RunVerdict, SeriesKey, SeriesPoint
from ..vocabulary import Direction
from .alerts_page import alert_queue_body
from .model import HistoryColumns, SiteModel
from .profiles import SiteProfiles, link_profiles
from .runcarry import CaseRuns, LastBuild, SuiteRuns, carried_prints
from .source import FORMAT, VERDICT_CODE, plotly_js_file
from .writer import RecordingWriter, SiteWriter, WriteReport, replay

# What a script may not hold raw: "</script>" and friends, and the two line separators that end a line of JS.
_JS_ESCAPES = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"),
               ("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029"))
MESSAGE_CHARS = 300
# The compare page shows `mmtrack compare`'s verdict on each of a series' newest commits against the
# commit before it; a verdict needs the history before it (and samples, read for these points only).
STEP_COMMITS = 10
# The newest points read with their samples: the commits the verdicts compare. The history before them is
# read as medians only (``SiteModel.history_columns``): HISTORY commits, analysis.compare.HISTORY_WINDOW (a test pins it).
NEWEST = STEP_COMMITS + 1
HISTORY = 100
# Benchmarks rebuilt whole, at least this many: half are read and rendered in a forked child (a first publish of
# 500 series is seconds of one core, and a CI runner has two or more).
SPLIT_MIN = 32


def bench_id(name: str) -> str:
    """The file-name id of a benchmark: a hash, so any name is a safe file name."""
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _refuse_nonfinite(value: Any) -> None:
    """Raise ValueError on a NaN or an infinity anywhere in ``value`` (orjson would write null)."""
    t = type(value)
    if t is list or t is tuple:
        try:  # a list of numbers, the bulk of a points chunk: one sum in C, finite unless one is not
            total = sum(value)
            if total - total == 0:
                return
        except TypeError:  # None or other values among them
            pass
        _refuse_nonfinite_in(value)
    elif t is dict:
        _refuse_nonfinite_in(value.values())
    else:
        _refuse_nonfinite_in((value,))


def _refuse_nonfinite_in(values: Any) -> None:
    for v in values:
        t = type(v)
        if t is str or t is int or t is bool or v is None:
            continue
        if t is list or t is tuple or t is dict:
            _refuse_nonfinite(v)
            continue
        try:  # a float, or a numpy scalar
            finite = v - v == 0
        except TypeError:
            continue
        if not finite:
            raise ValueError(f"out of range float value in JSON: {v!r}")


def js_bytes(value: Any) -> bytes:
    """JSON safe to place in a script (no ``</script>``, no raw U+2028), as UTF-8; NaN refused."""
    _refuse_nonfinite(value)
    data = orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY)
    for raw, escaped in _JS_ESCAPES:
        if raw in data:
            data = data.replace(raw, escaped)
    return data


def bench_data(bid: str, part: str | int) -> str:
    """A benchmark's data file, ``data/b/<id>.meta.js`` or ``data/b/<id>.<k>.js`` (``part`` "": the prefix
    of them all). One folder for every benchmark: data/ is staged whole at every build (writer), and a
    folder per benchmark cost a mkdir and an rmdir each time (2 ms each on ext4 with discard)."""
    return f"data/b/{bid}.{part}.js" if part != "" else f"data/b/{bid}."


def js_json(value: Any) -> str:
    return js_bytes(value).decode()


def js_call(fn: str, *args: Any) -> bytes:
    return b"MM.%s(%s);\n" % (fn.encode(), b",".join(js_bytes(a) for a in args))


def plotly_js() -> bytes:
    """plotly.min.js as shipped inside the plotly Python package."""
    path = plotly_js_file()
    try:
        if path is not None:
            return path.read_bytes()
    except FileNotFoundError:  # pragma: no cover - broken install
        pass
    from ..errors import UserError

    raise UserError("plotly.min.js not found in the plotly package; reinstall plotly (pip install plotly)")


def _asset(name: str) -> bytes:
    return (resources.files("mmtrack.publish") / "assets" / name).read_bytes()


_MISSING = struct.pack("<d", float("nan"))


def _floats(values: list[Any]) -> bytes:
    try:
        return struct.pack(f"<{len(values)}d", *values)
    except struct.error:  # None among them
        return b"".join(_MISSING if v is None else struct.pack("<d", v) for v in values)


def _fingerprint(bid: str, k: int, row: list[Any]) -> str:
    """What a points chunk holds, hashed without encoding it as JSON."""
    h = hashlib.sha256(f"{FORMAT}:{bid}:{k}:{len(row)}".encode())
    for cols in row:
        if cols is None:
            h.update(b"-")
            continue
        h.update(struct.pack("<I", len(cols["i"])))
        h.update(struct.pack(f"<{len(cols['i'])}q", *cols["i"]))
        for name in ("m", "lo", "hi"):
            h.update(_floats(cols[name]))
    return h.hexdigest()


def _finite(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


def _iso(c: CommitInfo) -> str | None:
    return c.date.isoformat(timespec="seconds") if c.date else None


def _first_line(msg: str | None) -> str:
    if not msg:
        return ""
    line = msg.strip().splitlines()[0] if msg.strip() else ""
    return line if len(line) <= MESSAGE_CHARS else line[: MESSAGE_CHARS - 1] + "…"


def _metric_label(key: SeriesKey) -> str:
    return str(key.metric)


def _params(key: SeriesKey) -> dict[str, str]:
    try:
        value = json.loads(key.params) if key.params else {}
    except ValueError:
        return {"params": key.params}
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {"params": key.params}


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="stylesheet" href="{root}assets/site.css">
{head}<script src="{root}assets/site.js"></script>
<script src="{root}data/site.js"></script>
</head>
<body data-page="{page}" data-root="{root}"{attrs}>
<header class="top"><a class="brand" href="{root}index.html">{site}</a>
<nav><a href="{root}index.html">Benchmarks</a><a href="{root}regressions.html">Regressions</a><a href="{root}alerts.html">Alerts</a><a href="{root}compare.html">Compare commits</a></nav></header>
<main>
{body}
</main>
<footer>Published by mmtrack. Works offline.</footer>
</body>
</html>
"""


def _page(page: str, title: str, site: str, body: str, *, root: str = "", head: str = "", attrs: str = "") -> str:
    return _PAGE.format(
        title=html.escape(title),
        site=html.escape(site),
        root=root,
        head=head,
        page=page,
        attrs=attrs,
        body=body,
    )


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
    from ..analysis.compare import ComparePolicy, suite_runs

    policy = ComparePolicy()
    suites: dict[tuple[str, str], list[SeriesKey]] = {}
    for key in model.series:
        suites.setdefault((key.machine, key.environment), []).append(key)
    suites = {s: keys for s, keys in suites.items() if len(keys) >= max(policy.min_suite, 1)}
    if model.prefetch_columns is not None:
        model.prefetch_columns([k for keys in suites.values() for k in keys])
    in_runs: InRuns = {}
    prints: RunPrints = {}
    for keys in suites.values():
        cases = {k: (k.benchmark, k.params, k.metric) for k in keys}
        columns = {cases[k]: _columns(model, k) for k in keys}
        judged = {case: cols[0][-STEP_COMMITS:] for case, cols in columns.items()}
        order = list(dict.fromkeys(sha for shas in judged.values() for sha in shas))  # suite_runs' order
        carried = carried_prints(columns, order, {cases[k]: last[k] for k in keys if k in last}, pos,
                                 policy.confirm_window)
        fresh = {case: [sha for sha in shas if sha not in carried] for case, shas in judged.items()}
        fitted = suite_runs(columns, fresh, window=HISTORY)
        runs = SuiteRuns(columns, judged, fitted, carried, HISTORY)
        for k in keys:
            case, mine = cases[k], fitted.get(cases[k], {})
            in_runs[k] = CaseRuns(runs, case)
            wanted = set(judged[case])
            prints[k] = {sha: fp for sha in order if sha in wanted and (fp := _print_of(sha, case, carried, mine))}
    return in_runs, prints


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


def _old_call(writer: SiteWriter, key: str, fn: str) -> list[Any] | None:
    """The arguments of the ``js_call(fn, ...)`` the last build wrote to ``key``, if the file is still
    exactly what it wrote. JSON floats round-trip exactly, so writing them again gives the same bytes."""
    data = writer.old_bytes(key)
    head, tail = f"MM.{fn}(".encode(), b");\n"
    if data is None or not data.startswith(head) or not data.endswith(tail):
        return None
    try:
        args = orjson.loads(b"[" + data[len(head) : -len(tail)] + b"]")
    except orjson.JSONDecodeError:
        return None
    return args if isinstance(args, list) else None


def _analysis_stamp() -> str:
    """A hash of the code behind the compare page's verdicts: the pages of a site built by other
    verdict code are rebuilt (a carried-on benchmark keeps its older steps' verdicts)."""
    h = hashlib.sha256()
    for name in VERDICT_CODE:
        h.update((resources.files("mmtrack.analysis") / name).read_bytes())
    return h.hexdigest()


def _sorted_keys(keys: Sequence[SeriesKey]) -> list[SeriesKey]:
    """A benchmark's series in the order of its pages (and of its tails in the manifest)."""
    return sorted(keys, key=lambda k: (k.machine, k.environment, k.params, k.metric))


def _order_hash(shas: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(shas).encode()).hexdigest()


def _reusable(writer: SiteWriter, model: SiteModel, site_token: str, order: list[str]) -> dict[str, Any]:
    """The last build's per-benchmark state, when its files are still valid for this build:
    same format and settings, and the commits it placed still at the same positions."""
    old = writer.old_state
    n_old = old.get("n_commits")
    if (
        model.bench_state is None
        or old.get("site") != site_token
        or not isinstance(n_old, int)
        or n_old > len(order)
        or old.get("order") != _order_hash(order[:n_old])
        or not isinstance(old.get("benchmarks"), dict)
    ):
        return {}
    return old["benchmarks"]


def _keep_benchmark(writer: SiteWriter, bid: str) -> bool:
    """Keep every file of a benchmark from the last build, if all are still there."""
    keys = [f"b/{bid}.html", *writer.old_files(bench_data(bid, ""))]
    if not all(writer.keepable(k) for k in keys):
        return False
    for k in keys:
        writer.keep(k)
    return True


def build_site(model: SiteModel, out_dir: Path | str) -> WriteReport:
    """Write (or update) the site for ``model`` in ``out_dir``; return what was written.

    With ``model.bench_state``, a benchmark whose token matches the last build's keeps its
    files, index entry and regression rows, and its series are not read at all."""
    cfg = model.config
    writer = SiteWriter(Path(out_dir))
    commits = model.ordered_commits()
    order = [c.sha for c in commits]
    site_token = hashlib.sha256(
        js_json([FORMAT, cfg.title, cfg.safe_commit_url, cfg.chunk_size, _analysis_stamp()]).encode()).hexdigest()
    reusable = _reusable(writer, model, site_token, order)
    _write_frame(writer, model, commits)
    build = _Build.of(model, commits, reusable)
    profiles = SiteProfiles(writer, cfg.profiles)
    whole = _split_whole(model, build, profiles)
    _prefetch(model, build, set(whole))
    rendered = _render_split(model, build, profiles, whole)
    pages = _write_benchmarks(writer, model, build, profiles, rendered)
    link_profiles(profiles, pages[1])
    _write_summaries(writer, model, *pages[:3])
    if model.bench_state is not None:
        _record_state(writer, model, site_token, order, pages[3], len(build.by_bench))
    return writer.finish()


#: The commits of a series that ``mmtrack detect`` needs: the regressions page says so while the site has fewer.
DETECT_MIN_COMMITS = 8


def _write_frame(writer: SiteWriter, model: SiteModel, commits: Sequence[CommitInfo]) -> None:
    """The assets, the site's settings and the commit chunks: what every page reads."""
    cfg, size = model.config, model.config.chunk_size
    writer.put("assets/plotly.min.js", plotly_js())
    writer.put("assets/site.js", _asset("site.js"))
    writer.put("assets/site.css", _asset("site.css"))
    writer.put(
        "data/site.js",
        js_call(
            "site",
            {"title": cfg.title, "commit_url": cfg.safe_commit_url, "n_commits": len(commits), "chunk": size,
             "verdict_order": list(VERDICT_ORDER), "detect_min": DETECT_MIN_COMMITS},
        ),
    )
    for k in range(math.ceil(len(commits) / size) if commits else 0):
        writer.put(f"data/commits/{k}.js", js_call("commits", k, _commit_rows(commits[k * size : (k + 1) * size])))


@dataclass(frozen=True)
class _Build:
    """What every benchmark's pages are built from: its series keys, the change points and run verdicts of each
    series, what each run says (and its fingerprints), each benchmark's reuse token, the last build's reusable
    state, and each commit's position."""

    by_bench: dict[str, list[SeriesKey]]
    cps_by_key: dict[SeriesKey, list[ChangePoint]]
    runs_by_key: dict[SeriesKey, list[RunVerdict]]
    in_runs: Any
    prints: RunPrints
    tokens: dict[str, str | None]
    reusable: dict[str, Any]
    pos: dict[str, int]
    appended_only: dict[str, bool]  # per benchmark with a last build: its series only gained newer points since

    @classmethod
    def of(cls, model: SiteModel, commits: Sequence[CommitInfo], reusable: dict[str, Any]) -> _Build:
        by_bench: dict[str, list[SeriesKey]] = {}
        for key in model.series:
            by_bench.setdefault(key.benchmark, []).append(key)
        cps_by_key: dict[SeriesKey, list[ChangePoint]] = {}
        for cp in model.change_points:
            cps_by_key.setdefault(cp.series, []).append(cp)
        runs_by_key: dict[SeriesKey, list[RunVerdict]] = {}
        for v in model.run_verdicts:
            runs_by_key.setdefault(v.series, []).append(v)
        pos = {c.sha: i for i, c in enumerate(commits)}
        appended = {bench: _appended_only(_sorted_keys(keys), model, cached.get("tails"))
                    for bench, keys in by_bench.items() if isinstance(cached := reusable.get(bench_id(bench)), dict)}
        in_runs, prints = _suite_runs(model, _last_runs(model, by_bench, reusable, appended), pos)
        tokens = {bench: _with_runs(model.bench_state.get(bench), [prints.get(k, {}) for k in _sorted_keys(keys)])
                  for bench, keys in by_bench.items()} if model.bench_state is not None else {}
        return cls(by_bench, cps_by_key, runs_by_key, in_runs, prints, tokens, reusable, pos, appended)

    def reused(self, bench: str) -> bool:
        """Whether the last build's files of ``bench`` still hold: its token matches."""
        token = self.tokens.get(bench)
        cached = self.reusable.get(bench_id(bench))
        return bool(token) and isinstance(cached, dict) and cached.get("token") == token

    def appended(self, bench: str) -> bool:
        """Whether ``bench``'s series only gained newer points since the last build."""
        return self.appended_only.get(bench, False)


def _prefetch(model: SiteModel, build: _Build, elsewhere: Collection[str] = ()) -> None:
    """A lazy store model: read the series of every benchmark to rebuild in bulk (but only the newest points of
    those that only gained newer points), and every one's newest points with their samples (the compare page's
    verdicts); ``elsewhere``: benchmarks :func:`_render_split` reads for itself."""
    prefetch = getattr(model.series, "prefetch", None)
    if prefetch is None:
        return
    rebuilt = [bench for bench in sorted(build.by_bench) if not build.reused(bench) and bench not in elsewhere]
    prefetch([k for bench in rebuilt if not build.appended(bench) for k in build.by_bench[bench]])
    model.series.prefetch_newest([k for bench in rebuilt for k in build.by_bench[bench]], NEWEST)


def _split_whole(model: SiteModel, build: _Build, profiles: SiteProfiles) -> list[str]:
    """The benchmarks :func:`_render_split` renders in two processes: those with nothing of the last build to keep or
    carry on (a first publish: all), when there are ``SPLIT_MIN`` or more and no profiles to copy into the site."""
    if profiles.kept is not None or not can_fork():
        return []
    whole = [bench for bench in sorted(build.by_bench) if not build.reusable.get(bench_id(bench))]
    return whole if len(whole) >= SPLIT_MIN else []


def _render_split(model: SiteModel, build: _Build, profiles: SiteProfiles, whole: list[str]) -> dict[str, Any]:
    """``whole``'s benchmarks read and rendered, the second half in a forked child (its own store connections):
    per benchmark, what :func:`_write_benchmark` returns and the files it put, for the writer to replay in order."""
    if not whole:
        return {}
    cut = len(whole) // 2
    halves = [whole[:cut], whole[cut:]]
    done = map_split(lambda part: _render(model, build, profiles, part), halves, min_items=2,
                     child_start=getattr(model.series, "after_fork", None))
    if hasattr(model.series, "read_by_child"):
        model.series.read_by_child([k for bench in halves[1] for k in build.by_bench[bench]])
    return dict(item for part in done for item in part)


def _render(model: SiteModel, build: _Build, profiles: SiteProfiles, benches: list[str]) -> list[tuple[str, Any]]:
    """Read ``benches``' series in bulk, then each benchmark's pages into a :class:`RecordingWriter`."""
    keys = [k for bench in benches for k in build.by_bench[bench]]
    if hasattr(model.series, "prefetch"):
        model.series.prefetch(keys)
        model.series.prefetch_newest(keys, NEWEST)
    out = []
    for bench in benches:
        recorder = RecordingWriter()
        done = _write_benchmark(recorder, bench, bench_id(bench), _sorted_keys(build.by_bench[bench]), model,  # type: ignore[arg-type]
                                build.in_runs, build.prints, profiles, build.cps_by_key, build.runs_by_key, build.pos,
                                model.config.chunk_size)
        out.append((bench, (*done, recorder.calls)))
    return out


def _write_benchmarks(
    writer: SiteWriter, model: SiteModel, build: _Build, profiles: SiteProfiles, rendered: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, list[Any]], dict[str, Any]]:
    """Each benchmark's files, kept, appended to or written anew (``rendered``: written anew already, by
    :func:`_render_split`, to replay): (index entries, regression rows, the compare page's verdicts per benchmark
    id, the state the next build reuses)."""
    size = model.config.chunk_size
    index: list[dict[str, Any]] = []
    regressions: list[dict[str, Any]] = []
    verdicts: dict[str, list[Any]] = {}  # per benchmark id, per series: the compare page's verdicts
    state: dict[str, Any] = {}
    for bench in sorted(build.by_bench):
        bid = bench_id(bench)
        token = build.tokens.get(bench)
        cached = build.reusable.get(bid)
        tails = cached.get("tails") if isinstance(cached, dict) else None
        kept = build.reused(bench) and isinstance(cached.get("verdicts"), list)  # type: ignore[union-attr]
        copies = cached.get("profiles") if isinstance(cached, dict) else None  # the profiles its kept pages link
        if kept and profiles.keep(bench, copies) and _keep_benchmark(writer, bid):
            entry, rows, steps = cached["entry"], cached["rows"], cached["verdicts"]  # type: ignore[index]
        elif bench in rendered:
            entry, rows, tails, steps, calls = rendered[bench]
            replay(writer, calls)
        else:
            keys = _sorted_keys(build.by_bench[bench])
            args = (writer, bench, bid, keys, model, build.in_runs, build.prints, profiles)
            by_key = (build.cps_by_key, build.runs_by_key, build.pos, size)
            done = _append_benchmark(*args, cached, *by_key) if cached and build.appended(bench) else None
            entry, rows, tails, steps = done or _write_benchmark(*args, *by_key)
        if token:
            state[bid] = _bench_state(model, build, bench, token, entry, rows, steps, tails)
            state[bid]["profiles"] = profiles.linked_by(bench)
        index.append(entry)
        regressions.extend(rows)
        verdicts[bid] = steps
    return index, regressions, verdicts, state


def _bench_state(model: SiteModel, build: _Build, bench: str, token: str, entry: Any, rows: Any, steps: Any,
                 tails: Any) -> dict[str, Any]:
    """What the next build reuses of one benchmark: its token, files' index entry, rows, verdicts and run prints."""
    keys = _sorted_keys(build.by_bench[bench])
    runs = [{str(build.pos[sha]): fp for sha, fp in build.prints.get(k, {}).items() if sha in build.pos}
            for k in keys]
    state = {"token": token, "entry": entry, "rows": rows, "verdicts": steps, "runs": runs}
    if model.revisions is not None:
        state["tails"] = tails
    return state


def _write_summaries(writer: SiteWriter, model: SiteModel, index: list[dict[str, Any]],
                     regressions: list[dict[str, Any]], verdicts: dict[str, list[Any]]) -> None:
    """The index, the regressions (worst first), every benchmark's verdicts, and the three pages."""
    title = model.config.title
    regressions.sort(key=lambda r: (-(r["after"] if r["after"] is not None else -1), r["bench"], r["metric"],
                                    r.get("source", "")))
    writer.put("data/index.js", js_call("index", index))
    writer.put("data/regressions.js", js_call("regressions", regressions))
    # One file for every benchmark's verdicts: they move with every new commit, and a file each (in meta.js)
    # cost a file created per benchmark per build (1 ms each on ext4 here, half of a carried-on publish).
    writer.put("data/verdicts.js", js_call("verdicts", verdicts))
    writer.put("index.html", _page("index", title, title, _INDEX_BODY))
    writer.put("regressions.html", _page("regressions", f"Regressions · {title}", title, _REGRESSIONS_BODY))
    writer.put("compare.html", _page("compare", f"Compare commits · {title}", title, _COMPARE_BODY))
    writer.put("alerts.html", _page("alerts", f"Alerts · {title}", title,
                                    alert_queue_body(model.alerts, model.config.safe_commit_url)))


def _record_state(writer: SiteWriter, model: SiteModel, site_token: str, order: list[str], state: dict[str, Any],
                  benchmarks: int) -> None:
    """What this build was made from: the next one reuses what still matches."""
    writer.state = {"site": site_token, "n_commits": len(order), "order": _order_hash(order), "benchmarks": state}
    if model.source:
        writer.state["source"] = model.source
        writer.state["summary"] = {
            "benchmarks": benchmarks, "series": len(model.series), "change_points": len(model.change_points),
            "files": len(writer.new),
        }  # fmt: skip


def _place_points(
    points: Sequence[SeriesPoint], band: str | None, si: int, n_series: int, pos: dict[str, int], size: int,
    chunks: dict[int, list[Any]], version: str | None, version_changes: list[list[Any]],
) -> str | None:
    """Add the drawable points of series ``si`` to their chunks' columns, and each change of the
    benchmark's code version to ``version_changes``; returns the version after the last point
    (where the series' next points carry on)."""
    for p in points:
        m = p.measurement
        med = m.median
        if m.status != "ok" or med is None or not math.isfinite(med):
            continue
        i = pos.get(p.commit.sha)
        if i is None:  # a commit stored after the commit list was read: the next publish shows it
            continue
        # Where the benchmark's code version changed: values on either side are not comparable.
        if m.version != version:
            if version is not None and m.version is not None:
                version_changes.append([i, m.version])
            version = m.version or version
        k = i // size
        row = chunks.get(k)
        if row is None:
            row = chunks[k] = [None] * n_series
        cols = row[si]
        if cols is None:
            cols = row[si] = {"i": [], "m": [], "lo": [], "hi": []}
        if band == "IQR":
            lo, hi = m.q1, m.q3
        elif band == "CI":
            lo, hi = m.ci_low, m.ci_high
        else:
            lo = hi = None
        cols["i"].append(i)
        cols["m"].append(med)
        cols["lo"].append(_finite(lo))
        cols["hi"].append(_finite(hi))
    return version


def _tail(
    model: SiteModel, key: SeriesKey, points: Sequence[SeriesPoint], pos: dict[str, int], version: str | None,
    decided: bool, marker: list[Any] | None,
) -> list[Any] | None:
    """What the next build needs to carry a series on from its newest points alone: the store revision
    it was read at, its last point (None when a point was left off the pages: read it whole next time),
    the code version after it and whether its band is decided. None without store revisions."""
    if model.revisions is None or key not in model.revisions:
        return None
    changes, appends, ids = model.revisions[key]
    if points:
        marker = [points[-1].commit.sha, points[-1].run_id]
        if any(p.commit.sha not in pos for p in points):
            marker = None
    return [repr(key), changes, appends, list(ids), marker, version, decided]


def _write_benchmark(
    writer: SiteWriter,
    bench: str,
    bid: str,
    keys: list[SeriesKey],
    model: SiteModel,
    in_runs: InRuns,
    prints: RunPrints,
    profiles: SiteProfiles,
    cps_by_key: dict[SeriesKey, list[ChangePoint]],
    runs_by_key: dict[SeriesKey, list[RunVerdict]],
    pos: dict[str, int],
    size: int,
) -> tuple[dict[str, Any], list[dict[str, Any]], list[Any], list[Any]]:
    """A benchmark's files from its series read whole; returns its index entry, regression rows, tails and
    each series' verdicts."""
    series_meta: list[dict[str, Any]] = []
    chunks: dict[int, list[Any]] = {}
    tails: list[Any] = []
    steps: list[Any] = []
    for si, key in enumerate(keys):
        points = model.series[key]
        band, decided = _band_kind(points)
        first = next((p.measurement for p in points), None)
        series_meta.append(
            {
                "machine": key.machine,
                "env": key.environment,
                "params": _params(key),
                "metric": _metric_label(key),
                "name": key.metric.name,
                "display": (first.display_name if first and first.display_name else key.metric.name),
                "section": key.metric.section,
                "unit": key.metric.unit,
                "direction": first.direction.value if first else "lower",
                "format": first.format.value if first else "number",
                "band": band,
            }
        )
        version_changes: list[list[Any]] = []
        version = _place_points(points, band, si, len(keys), pos, size, chunks, None, version_changes)
        series_meta[-1]["versions"] = version_changes
        if linked := profiles.of_points(key, points, pos):
            series_meta[-1]["profiles"] = linked
        newest = _newest(model, key, points)
        steps.append(_step_verdicts(newest, _earlier(model, key, newest, points), pos, runs=in_runs.get(key),
                                    prints=prints.get(key)))
        tails.append(_tail(model, key, points, pos, version, decided, None))
    writer.put(f"b/{bid}.html", _bench_page(bench, bid, model))
    entry, rows = _finish_benchmark(writer, bench, bid, keys, series_meta, chunks, sorted(chunks), model, cps_by_key,
                                    runs_by_key, pos)
    return entry, rows, tails, steps


def _append_benchmark(
    writer: SiteWriter,
    bench: str,
    bid: str,
    keys: list[SeriesKey],
    model: SiteModel,
    in_runs: InRuns,
    prints: RunPrints,
    profiles: SiteProfiles,
    cached: dict[str, Any],
    cps_by_key: dict[SeriesKey, list[ChangePoint]],
    runs_by_key: dict[SeriesKey, list[RunVerdict]],
    pos: dict[str, int],
    size: int,
) -> tuple[dict[str, Any], list[dict[str, Any]], list[Any], list[Any]] | None:
    """A benchmark whose series only gained newer points since the last build (the store's append
    counters say so: the caller asks :func:`_appended_only` first): its last build's files carried on from each
    series' newest points, the chunks before its last kept as they are. The same files as :func:`_write_benchmark`;
    None (and nothing done) where that is not provable, e.g. more new points than read."""
    old_tails = cached.get("tails")
    if model.newest_points is None:
        return None
    meta = _old_call(writer, bench_data(bid, "meta"), "meta")
    old_meta = meta[1] if meta and len(meta) == 2 and isinstance(meta[1], dict) else {}
    old_chunks = old_meta.get("chunks")
    if not old_chunks or not isinstance(old_chunks, list) or len(old_meta.get("series") or ()) != len(keys):
        return None
    files = {f"b/{bid}.html", bench_data(bid, "meta"), *(bench_data(bid, k) for k in old_chunks)}
    if set(writer.old_files(bench_data(bid, ""))) | {f"b/{bid}.html"} != files or not all(map(writer.keepable, files)):
        return None
    last = max(old_chunks)
    points = _old_call(writer, bench_data(bid, last), "points")
    if not points or len(points) != 3 or not isinstance(points[2], list) or len(points[2]) != len(keys):
        return None
    start = last * size  # the new points must all land here or later: the chunks before stay as they are
    reads = []
    for key, (_, _, _, _, marker, _, decided) in zip(keys, old_tails):
        newest = _newest(model, key)
        at = next((j for j, p in enumerate(newest) if [p.commit.sha, p.run_id] == marker), None)
        if at is None:
            return None  # more new points than read (or the marker gone): read the series whole
        fresh = newest[at + 1 :]
        if fresh and not decided:
            return None  # the band is still to be decided by a point of the whole series
        if any(pos.get(p.commit.sha, start) < start for p in fresh):
            return None
        reads.append((newest, fresh, at))

    chunks: dict[int, list[Any]] = {last: points[2]}
    series_meta = old_meta["series"]
    old_steps = cached.get("verdicts")
    if not isinstance(old_steps, list) or len(old_steps) != len(keys):
        old_steps = [None] * len(keys)  # worked out anew
    old_prints = cached.get("runs")
    if not isinstance(old_prints, list) or len(old_prints) != len(keys):
        old_prints = [None] * len(keys)
    tails, steps = [], []
    from ..analysis.compare import ComparePolicy

    later = ComparePolicy().confirm_window  # the later commits a verdict reads (series_later)
    for si, (key, tail, (newest, fresh, at)) in enumerate(zip(keys, old_tails, reads)):
        sm = series_meta[si]
        version = _place_points(fresh, sm["band"], si, len(keys), pos, size, chunks, tail[5], sm["versions"])
        if linked := profiles.of_points(key, fresh, pos):
            sm["profiles"] = [*sm.get("profiles", ()), *linked]
        steps.append(_step_verdicts(newest, _earlier(model, key, newest), pos, old_steps[si], settled=at - later,
                                    runs=in_runs.get(key), prints=prints.get(key), old_prints=old_prints[si]))
        decided = tail[6] or _band_kind(fresh)[1]
        tails.append(_tail(model, key, fresh, pos, version, decided, tail[4]))
    if not profiles.keep(bench, cached.get("profiles")):
        return None  # a copy the carried-on pages link is gone
    for k in old_chunks:
        if k != last:
            writer.keep(bench_data(bid, k))
    writer.keep(f"b/{bid}.html")
    entry, rows = _finish_benchmark(writer, bench, bid, keys, series_meta, chunks, sorted({*old_chunks, *chunks}),
                                    model, cps_by_key, runs_by_key, pos)
    return entry, rows, tails, steps


def _appended_only(keys: Sequence[SeriesKey], model: SiteModel, old_tails: Any) -> bool:
    """Whether the store's counters prove that each series of a benchmark (``keys``, sorted) only gained
    newer points since the build that recorded ``old_tails``: the same series rows, and as many more
    appends as changes (models.Series.appends). Reads nothing."""
    if model.revisions is None or not isinstance(old_tails, list) or len(old_tails) != len(keys):
        return False
    for key, tail in zip(keys, old_tails):
        if not isinstance(tail, list) or len(tail) != 7 or key not in model.revisions:
            return False
        key_repr, changes, appends, ids, marker, _, _ = tail
        now_changes, now_appends, now_ids = model.revisions[key]
        if key_repr != repr(key) or list(now_ids) != ids or marker is None:
            return False
        if now_changes - changes != now_appends - appends or now_changes < changes:
            return False  # a point replaced or removed (or a revision the last build did not see)
    return True


def _bench_page(bench: str, bid: str, model: SiteModel) -> str:
    title = model.config.title
    return _page(
        "benchmark",
        f"{bench} · {title}",
        title,
        _BENCH_BODY.format(name=html.escape(bench)),
        root="../",
        head='<script src="../assets/plotly.min.js"></script>\n',
        attrs=f' data-bench="{bid}"',
    )


def _add_ab_verdict(row: dict[str, Any], model: SiteModel, key: SeriesKey, after_sha: str) -> None:
    """The A/B verdict of ``row``'s change, when `mmtrack run --confirm` re-measured it (a change point of detect
    or the per-commit comparison `mmtrack run` stored: on a new project the second comes long before the first)."""
    verdict = model.ab_verdicts.get((key, after_sha))
    if verdict is not None:
        row["ab"] = {k: _finite(v) if isinstance(v, float) else v for k, v in verdict.items()}


def _finish_benchmark(
    writer: SiteWriter,
    bench: str,
    bid: str,
    keys: list[SeriesKey],
    series_meta: list[dict[str, Any]],
    chunks: dict[int, list[Any]],
    chunk_ids: list[int],
    model: SiteModel,
    cps_by_key: dict[SeriesKey, list[ChangePoint]],
    runs_by_key: dict[SeriesKey, list[RunVerdict]],
    pos: dict[str, int],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Write ``chunks`` and the meta file (listing ``chunk_ids``); return the index entry and regression rows."""
    changes: list[tuple[dict[str, Any], ChangePoint]] = []
    key_index = {k: i for i, k in enumerate(keys)}
    for key in keys:
        for cp in cps_by_key.get(key, ()):
            row = _change_row(cp, pos, key_index[key])
            _add_ab_verdict(row, model, key, cp.after_sha)
            changes.append((row, cp))
    changes.sort(key=lambda rc: (rc[0]["after"] if rc[0]["after"] is not None else -1))
    cps_rows = [row for row, _ in changes]

    for k in sorted(chunks):
        row = chunks[k]
        writer.put_lazy(bench_data(bid, k), _fingerprint(bid, k, row), lambda: js_call("points", bid, k, row))
    writer.put(
        bench_data(bid, "meta"),
        js_call("meta", bid, {"name": bench, "series": series_meta, "changes": cps_rows, "chunks": chunk_ids}),
    )

    machines = sorted({k.machine for k in keys})
    metrics = sorted({_metric_label(k) for k in keys})
    latest = None
    if changes:  # ranked by the change point's own size: the row's ratio is null for an infinite one
        last, _ = max(changes, key=lambda rc: (rc[0]["after"] if rc[0]["after"] is not None else -1, rc[1].size))
        sm = series_meta[last["s"]]
        latest = dict(last, metric=sm["metric"], machine=sm["machine"], env=sm["env"], params=sm["params"])
    entry = {
        "id": bid,
        "name": bench,
        "machines": machines,
        "metrics": metrics,
        "series": len(keys),
        "latest": latest,
        "changes": len(cps_rows),
    }
    run_rows = []
    for key in keys:
        for v in runs_by_key.get(key, ()):
            row = _agreeing(_run_verdict_row(v, pos, key_index[key]), cps_by_key.get(key, ()))
            _add_ab_verdict(row, model, key, v.after_sha)
            run_rows.append(row)
    rows = []
    for r in [*cps_rows, *run_rows, *_ab_only_rows(model, key_index, pos, [*cps_rows, *run_rows])]:
        s = series_meta[r["s"]]
        rows.append(
            dict(
                r,
                bench=bench,
                id=bid,
                machine=s["machine"],
                env=s["env"],
                params=s["params"],
                metric=s["metric"],
                unit=s["unit"],
                format=s["format"],
            )
        )
    return entry, rows


_BENCH_BODY = """<h1 class="bench-name">{name}</h1>
<section class="controls" id="selectors"></section>
<p class="hint" id="status">Loading…</p>
<section id="charts"></section>
<section id="commit-detail" class="detail" hidden></section>
<section id="profiles-section" hidden><h2>Callgrind profiles</h2>
<p class="hint">Kept by <code>--instrument callgrind</code>, in Valgrind's format: read them with callgrind_annotate
or KCachegrind.</p><ul id="profiles"></ul></section>
<section id="changes-section"><h2>Change points</h2><table class="grid" id="changes"></table></section>"""

_INDEX_BODY = """<h1>Benchmarks</h1>
<p class="summary" id="summary"></p>
<section class="controls">
<label>Search <input type="search" id="search" placeholder="benchmark name"></label>
<label>Machine <select id="machine"><option value="">all</option></select></label>
<label>Metric <select id="metric"><option value="">all</option></select></label>
<label>Sort <select id="sort"><option value="name">by name</option><option value="recent">latest change first</option>
<option value="size">largest change first</option></select></label>
<label><input type="checkbox" id="only-changes"> with changes only</label>
</section>
<table class="grid" id="benchmarks"></table>"""

_REGRESSIONS_BODY = """<h1>Regressions</h1>
<section class="controls">
<label>Search <input type="search" id="search" placeholder="benchmark name"></label>
<label>Show <select id="kind"><option value="regression">regressions</option>
<option value="improvement">improvements</option>
<option value="event">environment events (the run moved, not the code)</option>
<option value="">all changes</option></select></label>
<label>Machine <select id="machine"><option value="">all</option></select></label>
<label><input type="checkbox" id="persisting"> persisting only</label>
</section>
<p class="summary" id="summary"></p>
<table class="grid" id="regressions"></table>"""

_COMPARE_BODY = """<h1>Compare two commits</h1>
<section class="controls">
<label>Base <select id="commit-a"></select></label>
<label>Head <select id="commit-b"></select></label>
<label>Search <input type="search" id="search" placeholder="benchmark name"></label>
</section>
<p class="summary" id="summary"></p>
<table class="grid" id="compare"></table>"""

