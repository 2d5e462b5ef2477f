"""Publish reads only what changed (issue 19): a real SQLite store, real asv results files.

The invariant: a site updated in place is byte-identical to a full rebuild from the same store.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from test_store_support import store_url  # noqa: F401

from benchmarks.synthetic_history import asv_benchmark_name, synthetic_model, write_asv_results
from mmtrack.commands.publish import PublishRequest, publish
from mmtrack.publish.chunks import chunk_file
from mmtrack.publish import SiteConfig, bench_id
from mmtrack.publish.writer import MANIFEST
from mmtrack.store.asv_import import import_asv_results
from mmtrack.store.db import open_store

N_COMMITS = 24


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def history(tmp_path: Path):
    """A store holding all but the last commit of a synthetic history; returns (url, model, results dir)."""
    model = synthetic_model(5, N_COMMITS, 2, seed=7, config=SiteConfig(chunk_size=10))
    results = tmp_path / "results"
    write_asv_results(results, model, commits=list(model.commits[:-1]))
    url = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(url)
    try:
        assert not import_asv_results(store, results).failed
    finally:
        store.close()
    return url, model, results


def _publish(url: str, out: Path):
    return publish(PublishRequest(out=out, db=url, title="t", commit_url="https://example.org/c/"))


def _import(url: str, results: Path):
    store = open_store(url)
    try:
        summary = import_asv_results(store, results)
    finally:
        store.close()
    assert not summary.failed
    return summary


def test_nothing_new_reads_no_series_and_writes_nothing(history, tmp_path: Path) -> None:
    url, _, _ = history
    site = tmp_path / "site"
    first_model, first = _publish(url, site)
    assert len(first_model.series.loaded) == len(first_model.series) > 0 and first.written
    manifest = (site / MANIFEST).stat().st_mtime_ns
    model, again = _publish(url, site)
    assert model is None and again.up_to_date == {  # stopped before reading the store: no model made
        "benchmarks": len(first_model.benchmarks()), "series": len(first_model.series),
        "change_points": len(first_model.change_points), "files": first.total,
    }  # fmt: skip
    assert again.written == [] and again.removed == [] and (site / MANIFEST).stat().st_mtime_ns == manifest
    assert again.unchanged == first.total


def test_nothing_new_is_found_without_sqlalchemy(history, tmp_path: Path) -> None:
    """The per-commit republish: the store's key is read with the standard library's sqlite3."""
    import subprocess
    import sys

    url, _, _ = history
    site = tmp_path / "site"
    _publish(url, site)
    code = (
        "import sys; from pathlib import Path; from mmtrack.commands.publish import PublishRequest, publish;"
        f"m, r = publish(PublishRequest(out=Path({str(site)!r}), db={url!r}, title='t',"
        " commit_url='https://example.org/c/'));"
        "print(m is None, r.written, 'sqlalchemy' in sys.modules, 'alembic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert out.stdout.split() == ["True", "[]", "False", "False"], out.stdout + out.stderr


def test_a_site_missing_a_file_or_built_otherwise_is_rebuilt(history, tmp_path: Path, monkeypatch) -> None:
    from mmtrack.publish import source

    url, _, _ = history
    site, fresh = tmp_path / "site", tmp_path / "fresh"
    _publish(url, site)
    gone = next(p for p in sorted((site / "data" / "b").rglob("*.js")))
    gone.unlink()
    model, step = _publish(url, site)  # the key matches, the site does not: the build repairs it
    assert model is not None and step.written == [gone.relative_to(site).as_posix()]
    # another title is another site: the key holds the settings too
    model, step = publish(PublishRequest(out=site, db=url, title="other", commit_url="https://example.org/c/"))
    assert model is not None and "data/site.js" in step.written
    # edited page code (an asset, the builder, plotly) is another build too, without a version bump
    assert _publish(url, site)[0] is not None and _publish(url, site)[0] is None  # back to "t", then settled
    monkeypatch.setattr(source, "_code_stamp", lambda: [("site.js", 1, 1)])
    model, step = _publish(url, site)
    assert model is not None and step.written == []  # the full path; the same files came out
    monkeypatch.undo()
    _publish(url, site)
    _publish(url, fresh)
    assert tree(site) == tree(fresh)
    # edited verdict rules (mmtrack.analysis) are another build too: a plain republish must not keep older verdicts
    names = {name for name, _, _ in source._code_stamp()}
    assert set(source.VERDICT_CODE) <= names and "builder.py" in names


def test_one_new_commit_matches_a_full_rebuild_byte_for_byte(history, tmp_path: Path) -> None:
    url, full, results = history
    site, fresh = tmp_path / "site", tmp_path / "fresh"
    _publish(url, site)
    write_asv_results(results, full, commits=[full.commits[-1]])
    summary = _import(url, results)
    assert summary.imported == 1 and summary.unchanged == N_COMMITS - 1
    assert len(summary.touched_series) == len(full.series)
    model, step = _publish(url, site)
    # Every series got a point: every benchmark's last chunk is rewritten, and the commit list.
    assert "data/site.js" in step.written and "data/commits/0.js" in step.written
    assert {k for k in step.written if k.endswith(".0.js") and k.startswith("data/b/")} == {
        chunk_file(bench_id(b), 0) for b in model.benchmarks()
    }
    assert not any(k.startswith("b/") or k.startswith("assets/") for k in step.written)
    assert "data/verdicts.js" in step.written and not any(k.endswith(".meta.js") for k in step.written)
    # An append (the store's counters prove it): no series is read whole, only each one's newest points.
    assert not model.series.loaded and model.series.newest_read == set(model.series)
    _publish(url, fresh)
    assert tree(site) == tree(fresh)


def test_a_change_in_one_benchmark_reads_only_its_series(history, tmp_path: Path) -> None:
    url, full, results = history
    site, fresh = tmp_path / "site", tmp_path / "fresh"
    _publish(url, site)
    # The new commit measured one benchmark only.
    bench = full.benchmarks()[2]
    one = dataclasses.replace(full, series={k: v for k, v in full.series.items() if k.benchmark == bench})
    other = tmp_path / "one"
    (new_file,) = write_asv_results(other, one, commits=[full.commits[-1]])
    shutil.copy(new_file, results / new_file.parent.name / new_file.name)
    _import(url, results)
    model, step = _publish(url, site)
    names = {asv_benchmark_name(k) for k in one.series}  # each metric is an asv benchmark of its own
    # It only gained a newer point: only its newest points are read, none of its series whole.
    assert {k.benchmark for k in model.series.newest_read} == names and not model.series.loaded
    assert {k for k in step.written if k.startswith("data/b/")} <= {
        name for b in names for name in (f"data/b/{bench_id(b)}.meta.js", chunk_file(bench_id(b), 0))
    }
    _publish(url, fresh)
    assert tree(site) == tree(fresh)


def _store_change_point(url: str, cp):
    """``cp`` stored on the store's series of its benchmark (as ``detect`` stores one); returns that series."""
    from mmtrack.store import reads as q
    from mmtrack.store import writes

    store = open_store(url)
    try:
        key = next(k for k in q.list_series(store) if k.benchmark == cp.series.benchmark)
        writes.save_change_points(store, [dataclasses.replace(cp, series=key, method="test")], replace=[key])
    finally:
        store.close()
    return key


def test_stored_change_points_rebuild_their_benchmark(history, tmp_path: Path) -> None:
    url, full, _ = history
    site, fresh = tmp_path / "site", tmp_path / "fresh"
    _publish(url, site)
    cp = full.change_points[0]
    _store_change_point(url, cp)
    model, step = _publish(url, site)
    # Its points did not change: it is rewritten from its newest points (the compare page's verdicts).
    assert not model.series.loaded and {k.benchmark for k in model.series.newest_read} == {cp.series.benchmark}
    assert "data/regressions.js" in step.written
    _publish(url, fresh)
    assert tree(site) == tree(fresh)


def test_an_ab_verdict_alone_rebuilds_its_change_points_row(history, tmp_path: Path) -> None:
    """`mmtrack run --confirm` stores only an A/B verdict: the regressions page must show it."""
    from datetime import datetime, timezone

    from mmtrack.store import models as m

    url, full, _ = history
    site, fresh = tmp_path / "site", tmp_path / "fresh"
    cp = full.change_points[0]
    key = _store_change_point(url, cp)
    _publish(url, site)
    store = open_store(url)
    try:
        with store.session() as session:
            session.add(m.ABVerdict(
                machine=key.machine, environment=key.environment, benchmark=key.benchmark, params=key.params,
                section=key.metric.section, metric=key.metric.name, unit=key.metric.unit, before_sha=cp.before_sha,
                after_sha=cp.after_sha, state="confirmed", ratio=1.2, p_value=1e-4, rounds=6, note="",
                created_at=datetime.now(timezone.utc)))
            session.commit()
    finally:
        store.close()
    model, step = _publish(url, site)
    assert model is not None and {k.benchmark for k in model.series.newest_read} == {cp.series.benchmark}
    assert '"confirmed"' in (site / "data" / "regressions.js").read_text()
    _publish(url, fresh)
    assert tree(site) == tree(fresh)


def _appends(url: str) -> dict[int, tuple[int, int]]:
    from mmtrack.store import models as m

    store = open_store(url)
    try:
        with store.read() as conn:
            t = m.Series.__table__
            return {r.id: (r.changes, r.appends) for r in conn.execute(t.select().order_by(t.c.id))}
    finally:
        store.close()


def test_only_a_newest_point_counts_as_an_append(tmp_path: Path, store_url: str) -> None:
    """models.Series.appends moves with changes only for a run of a commit after every other one
    (SQLite, and PostgreSQL with MMTRACK_TEST_PG)."""
    model = synthetic_model(2, 8, 2, seed=3, config=SiteConfig(chunk_size=4))
    results, url = tmp_path / "results", store_url
    write_asv_results(results, model, commits=[*model.commits[:5], model.commits[6]])
    _import(url, results)
    before = _appends(url)
    write_asv_results(results, model, commits=[model.commits[5]])  # an older commit, landing late
    _import(url, results)
    late = _appends(url)
    assert all(late[i] == (c + 1, a) for i, (c, a) in before.items())
    write_asv_results(results, model, commits=[model.commits[7]])  # the newest commit
    _import(url, results)
    assert all(v == (c + 1, a + 1) for (c, a), v in zip(late.values(), _appends(url).values()))


def test_a_replaced_older_point_reads_its_benchmark_whole(history, tmp_path: Path) -> None:
    """Not an append (an old results file changed: its run is replaced): the series are read whole,
    and the site still equals a full rebuild."""
    url, full, results = history
    site, fresh = tmp_path / "site", tmp_path / "fresh"
    _publish(url, site)
    write_asv_results(results, full, commits=[full.commits[-1]])
    _import(url, results)
    _publish(url, site)  # an append: the manifest now carries each series on from its newest points
    other = synthetic_model(5, N_COMMITS, 2, seed=8, commits=list(full.commits), config=full.config)
    write_asv_results(results, other, commits=[full.commits[3]])  # other values for an old commit
    summary = _import(url, results)
    assert summary.replaced == 1
    model, step = _publish(url, site)
    assert set(model.series.loaded) == set(model.series)
    assert any(k.startswith("data/b/") and k.endswith(".0.js") for k in step.written)  # an old chunk changed
    _publish(url, fresh)
    assert tree(site) == tree(fresh)


def test_appends_into_a_new_chunk_match_a_full_rebuild(tmp_path: Path, monkeypatch) -> None:
    """New commits one import at a time (as CI lands them), two of them per publish, across a chunk
    boundary: carried on from the newest points, and the same site as a full rebuild."""
    from mmtrack.publish import site as command  # where publish_site reads its settings

    config = command.site_config
    monkeypatch.setattr(command, "site_config", lambda request: dataclasses.replace(config(request), chunk_size=10))
    model = synthetic_model(3, N_COMMITS, 2, seed=5, config=SiteConfig(chunk_size=10))
    results, url = tmp_path / "results", f"sqlite:///{tmp_path / 'store.db'}"
    site, fresh = tmp_path / "site", tmp_path / "fresh"
    write_asv_results(results, model, commits=list(model.commits[:18]))
    _import(url, results)
    _publish(url, site)
    for upto in (20, 22):
        for commit in model.commits[upto - 2 : upto]:
            write_asv_results(results, model, commits=[commit])
            _import(url, results)
        built, step = _publish(url, site)
        assert not built.series.loaded and built.series.newest_read == set(built.series)
    chunks = [k for k in step.written if k.startswith("data/b/")]
    assert any(k.endswith(".2.js") for k in chunks) and not any(k.endswith(".0.js") for k in chunks)
    assert "data/commits/2.js" in step.written and "data/commits/0.js" not in step.written
    _publish(url, fresh)
    assert tree(site) == tree(fresh)


def test_newest_points_cover_the_compare_verdicts_history() -> None:
    from mmtrack.analysis.compare import HISTORY_WINDOW
    from mmtrack.publish.verdict_rows import HISTORY, NEWEST, STEP_COMMITS

    assert NEWEST == STEP_COMMITS + 1 and HISTORY == HISTORY_WINDOW


def _verdicts(site: Path, bench: str) -> list[list]:
    from mmtrack.publish.builder import _old_call
    from mmtrack.publish.writer import SiteWriter

    (by_bench,) = _old_call(SiteWriter(site), "data/verdicts.js", "verdicts")
    return by_bench[bench_id(bench)][0]  # its one series


def test_carried_on_verdicts_match_a_full_rebuild_as_later_commits_decide_them(tmp_path: Path, monkeypatch) -> None:
    """A carried-on benchmark recomputes only the verdicts of its newest steps (those whose later commits,
    which confirm or refute them, were not all there); the older ones are the last build's. One benchmark
    steps up at commit 30 and stays (suspected, then confirmed), another spikes there once (refuted):
    after every new commit the site equals a full rebuild, and fewer verdicts were worked out."""
    from mmtrack.analysis import compare
    from mmtrack.publish.verdict_rows import STEP_COMMITS

    n, at = 38, 30
    model = synthetic_model(2, n, 1, seed=11, config=SiteConfig(chunk_size=250))
    step_key, spike_key = sorted(model.series, key=lambda k: k.benchmark)
    for key, factor in ((step_key, lambda i: 1.4 if i >= at else 1.0), (spike_key, lambda i: 1.4 if i == at else 1.0)):
        first = model.series[key][0].measurement.median
        model.series[key] = [
            dataclasses.replace(p, measurement=dataclasses.replace(
                p.measurement, median=(m := first * factor(i) * (1 + 0.004 * ((i * 7) % 5 - 2))), q1=m * 0.99, q3=m * 1.01))
            for i, p in enumerate(model.series[key])
        ]  # fmt: skip
    results, url = tmp_path / "results", f"sqlite:///{tmp_path / 'store.db'}"
    write_asv_results(results, model, commits=list(model.commits[: at + 1]))
    _import(url, results)
    site = tmp_path / "site"
    _publish(url, site)
    calls = []
    real_series_step_verdicts = compare.series_step_verdicts  # the pairs it is asked to judge: those recomputed
    monkeypatch.setattr(compare, "series_step_verdicts",
                        lambda *a, **k: calls.extend([1] * k["last"]) or real_series_step_verdicts(*a, **k))
    seen: dict[str, list[tuple[str, str | None]]] = {step_key.benchmark: [], spike_key.benchmark: []}
    for i in range(at + 1, n):
        write_asv_results(results, model, commits=[model.commits[i]])
        _import(url, results)
        calls.clear()
        built, _ = _publish(url, site)
        assert not built.series.loaded and built.series.newest_read == set(built.series)  # carried on
        assert 0 < len(calls) < 2 * STEP_COMMITS
        fresh = tmp_path / f"fresh{i}"
        _publish(url, fresh)
        assert tree(site) == tree(fresh)
        for bench, rows in seen.items():
            v = next(v for v in _verdicts(site, bench) if v[1] == at)  # the step at commit `at`
            rows.append((v[2], v[3]))
    assert seen[step_key.benchmark][0] == ("regressed", "suspected") and ("regressed", "confirmed") in seen[step_key.benchmark]
    assert ("unchanged", "refuted") in seen[spike_key.benchmark]  # suspected at first, taken back


def test_a_commit_past_the_verdicts_window_restates_the_limits_a_fresh_build_states(tmp_path: Path) -> None:
    """160 commits, the 160th new: the incremental build restated each series' detection limits from the verdicts'
    window (the 100 commits before the new one), cut at a multiple of 10 of that window, not of the series' measured
    commits, and the limits differed from a fresh build's."""
    model = synthetic_model(4, 160, 1, seed=7, step_every=3)
    results, url = tmp_path / "results", f"sqlite:///{tmp_path / 'store.db'}"
    write_asv_results(results, model, commits=list(model.commits[:-1]))
    _import(url, results)
    _publish(url, tmp_path / "site")
    write_asv_results(results, model)
    _import(url, results)
    _, report = _publish(url, tmp_path / "site")
    assert report.written  # carried on, not rebuilt
    _publish(url, tmp_path / "fresh")
    assert tree(tmp_path / "site").keys() == tree(tmp_path / "fresh").keys()
    differ = [p for p, b in tree(tmp_path / "site").items() if p != MANIFEST and tree(tmp_path / "fresh")[p] != b]
    assert differ == []
