"""Render a :class:`SiteModel` as a static site that works offline and from file://.

Layout of the output folder::

    <page>.html                   the summary pages of pages.PAGES (index, regressions, alerts, compare)
    b/<id>.html                   one page per benchmark; <id> = sha256(name)[:16]
    assets/site.js site.css plotly.min.js
    data/site.js                  title, commit URL, commit count, chunk size
    data/verdicts.js              every series' verdicts on its newest commits (the compare page)
    data/index.js data/regressions.js
    data/commits/<k>.js           commits k*chunk .. (k+1)*chunk-1
    data/b/<id>.meta.js           the benchmark's series and change points
    data/b/<g>.<k>.js             the points for commit chunk k of the benchmarks whose <id> starts with g (chunks.py)
    profiles/<sha or bench-run-N>/ kept callgrind profiles the pages link (publish/profiles.py)

Data files are classic scripts calling ``MM.<kind>(...)`` (fetch() of local
JSON is refused under file:// in Chromium; script tags are not). Every name and
message reaches the page as JSON with ``<``, ``>`` and ``&`` escaped, and the
page inserts it with ``textContent``, never as HTML. File names derive from
hashes and fixed words only, so no name can steer a write outside the folder.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection, Sequence

import orjson

from ..analysis.detection_limit import state_offset
from ..analysis.policy import VERDICT_ORDER
from ..forked import can_fork, map_split
from ..results import ChangePoint, CommitInfo, RunVerdict, SeriesKey, SeriesPoint
from .encode import (
    _asset,
    _fingerprint,
    _finite,
    _metric_label,
    bench_data,
    bench_id,
    js_call,
    js_json,
    plotly_js,
)
from .model import SiteModel
from .pages import _bench_page, write_pages
from .profiles import SiteProfiles, link_profiles
from .reuse import _analysis_stamp, _appended_only, _keep_benchmark, _order_hash, _reusable
from .series_data import _limit_since, _place_points, _series_meta, _tail
from .source import FORMAT
from .verdict_rows import (
    NEWEST,
    InRuns,
    RunPrints,
    _ab_only_rows,
    _agreeing,
    _band_kind,
    _change_row,
    _columns,
    _commit_rows,
    _earlier,
    _last_runs,
    _newest,
    _run_verdict_row,
    _sorted_keys,
    _step_verdicts,
    _suite_runs,
    _with_runs,
)
from .writer import RecordingWriter, SiteWriter, WriteReport, replay

# Benchmarks rebuilt whole, at least this many: half are read and rendered in a forked child (a first publish of
# 500 series is seconds of one core, and a CI runner has two or more).
SPLIT_MIN = 32


def _old_call(writer: SiteWriter, key: str, fn: str) -> list[Any] | None:
    """The arguments of the ``js_call(fn, ...)`` the last build wrote to ``key``, if the file is still
    exactly what it wrote. JSON floats round-trip exactly, so writing them again gives the same bytes."""
    return _call_args(writer.old_bytes(key), fn)


def _call_args(data: bytes | None, fn: str) -> list[Any] | None:
    """The arguments of the ``js_call(fn, ...)`` that wrote ``data``."""
    head, tail = f"MM.{fn}(".encode(), b");\n"
    if data is None or not data.startswith(head) or not data.endswith(tail):
        return None
    try:
        args = orjson.loads(b"[" + data[len(head) : -len(tail)] + b"]")
    except orjson.JSONDecodeError:
        return None
    return args if isinstance(args, list) else None


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
    writer.chunks.write()
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
    family: Counter[tuple[str, str]]  # per machine and environment, the series a commit's budget divides among

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
        family = Counter((k.machine, k.environment) for k in model.series)
        return cls(by_bench, cps_by_key, runs_by_key, in_runs, prints, tokens, reusable, pos, appended, family)

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
                                model.config.chunk_size, build.family)
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
            by_key = (build.cps_by_key, build.runs_by_key, build.pos, size, build.family)
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
    """The index, the regressions (worst first), every benchmark's verdicts, and the summary pages."""
    regressions.sort(key=lambda r: (-(r["after"] if r["after"] is not None else -1), r["bench"], r["metric"],
                                    r.get("source", "")))
    writer.put("data/index.js", js_call("index", index))
    writer.put("data/regressions.js", js_call("regressions", regressions))
    # One file for every benchmark's verdicts: they move with every new commit, and a file each (in meta.js)
    # cost a file created per benchmark per build (1 ms each on ext4 here, half of a carried-on publish).
    writer.put("data/verdicts.js", js_call("verdicts", verdicts))
    write_pages(writer, model)


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
    family: Counter[tuple[str, str]],
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
        series_meta.append(_series_meta(key, points, band, family[key.machine, key.environment]))
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
    family: Counter[tuple[str, str]],
) -> tuple[dict[str, Any], list[dict[str, Any]], list[Any], list[Any]] | None:
    """A benchmark whose series only gained newer points since the last build (the store's append
    counters say so: the caller asks :func:`_appended_only` first): its last build's files carried on from each
    series' newest points, the chunks before its last kept as they are. The same files as :func:`_write_benchmark`;
    None (and nothing done) where that is not provable, e.g. more new points than read."""
    old_tails = cached.get("tails")
    if model.newest_points is None:
        return None
    old = _old_last_chunk(writer, bid, keys)
    if old is None:
        return None
    old_meta, old_chunks, last, points = old
    start = last * size  # the new points must all land here or later: the chunks before stay as they are
    reads = _fresh_points(model, keys, old_tails, pos, start)
    if reads is None:
        return None

    chunks: dict[int, list[Any]] = {last: points[2]}
    series_meta = old_meta["series"]
    old_steps = _cached_per_series(cached, "verdicts", len(keys))  # None: worked out anew
    old_prints = _cached_per_series(cached, "runs", len(keys))
    tails, steps = [], []
    from ..analysis.compare import ComparePolicy

    later = ComparePolicy().confirm_window  # the later commits a verdict reads (series_later)
    for si, (key, tail, (newest, fresh, at)) in enumerate(zip(keys, old_tails, reads)):
        sm = series_meta[si]
        version = _place_points(fresh, sm["band"], si, len(keys), pos, size, chunks, tail[5], sm["versions"])
        if linked := profiles.of_points(key, fresh, pos):
            sm["profiles"] = [*sm.get("profiles", ()), *linked]
        earlier = _earlier(model, key, newest)
        steps.append(_step_verdicts(newest, earlier, pos, old_steps[si], settled=at - later,
                                    runs=in_runs.get(key), prints=prints.get(key), old_prints=old_prints[si]))
        # Every median, not the window the verdicts read: the limit is stated as of a count of measured commits
        sm["limit"] = _limit_since(sm.get("limit"), _columns(model, key)[1], len(fresh),
                                   family[key.machine, key.environment], state_offset(key.benchmark))
        decided = tail[6] or _band_kind(fresh)[1]
        tails.append(_tail(model, key, fresh, pos, version, decided, tail[4]))
    if not profiles.keep(bench, cached.get("profiles")):
        return None  # a copy the carried-on pages link is gone
    for k in old_chunks:
        if k != last:
            writer.chunks.keep(bid, k)
    writer.keep(f"b/{bid}.html")
    entry, rows = _finish_benchmark(writer, bench, bid, keys, series_meta, chunks, sorted({*old_chunks, *chunks}),
                                    model, cps_by_key, runs_by_key, pos)
    return entry, rows, tails, steps


def _old_last_chunk(
    writer: SiteWriter, bid: str, keys: list[SeriesKey]
) -> tuple[dict[str, Any], list[Any], Any, list[Any]] | None:
    """The last build's meta of a benchmark, its chunk ids, the last of them and that chunk's points;
    None unless its files are all there, keepable, and shaped for these ``keys``."""
    meta = _old_call(writer, bench_data(bid, "meta"), "meta")
    old_meta = meta[1] if meta and len(meta) == 2 and isinstance(meta[1], dict) else {}
    old_chunks = old_meta.get("chunks")
    if not old_chunks or not isinstance(old_chunks, list) or len(old_meta.get("series") or ()) != len(keys):
        return None
    files = {f"b/{bid}.html", bench_data(bid, "meta")}
    if set(writer.old_files(bench_data(bid, ""))) | {f"b/{bid}.html"} != files or not all(map(writer.keepable, files)):
        return None
    if writer.chunks.chunks_then(bid) != sorted(old_chunks) or not all(writer.chunks.keepable(bid, k) for k in old_chunks):
        return None
    last = max(old_chunks)
    points = _call_args(writer.chunks.old_line(bid, last), "points")
    if not points or len(points) != 3 or not isinstance(points[2], list) or len(points[2]) != len(keys):
        return None
    return old_meta, old_chunks, last, points


def _fresh_points(
    model: SiteModel, keys: list[SeriesKey], old_tails: list[Any], pos: dict[str, int], start: int
) -> list[tuple[list[SeriesPoint], list[SeriesPoint], int]] | None:
    """Each series' newest points, those after its last build's marker, and the marker's index; None when a
    series cannot be carried on (marker gone, band undecided, a new point placed before ``start``)."""
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
    return reads


def _cached_per_series(cached: dict[str, Any], name: str, n: int) -> list[Any]:
    """The last build's list ``name`` of one entry per series, or Nones when it does not fit ``n`` series."""
    old = cached.get(name)
    return old if isinstance(old, list) and len(old) == n else [None] * n


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
        writer.put_points(bid, k, _fingerprint(bid, k, row), lambda k=k, row=row: js_call("points", bid, k, row))
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
