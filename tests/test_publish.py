"""The site builder over plain data: layout, incremental writes, escaping, path safety."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.synthetic_history import synthetic_commits, synthetic_model
from mmtrack.analysis.detection_limit import state_offset
from mmtrack.errors import UserError
from mmtrack.measure.metrics import Direction
from mmtrack.publish import SiteConfig, SiteModel, bench_id, build_site
from mmtrack.publish.chunks import chunk_file
from mmtrack.publish.encode import js_json
from mmtrack.publish.writer import MANIFEST, safe_relpath
from mmtrack.results import PRIMARY, CommitInfo, Measurement, SeriesKey, SeriesPoint, canonical_params

EVIL = "<img src=x onerror=alert(1)>"
CALL = re.compile(r"^MM\.(\w+)\((.*)\);\n$", re.S)


def read_call(path: Path) -> tuple[str, list]:
    m = CALL.match(path.read_text(encoding="utf-8"))
    assert m, path
    return m.group(1), json.loads("[" + m.group(2) + "]")


def read_points(site: Path, bid: str, k: int) -> tuple[str, list]:
    """The ``MM.points`` call of benchmark ``bid``'s chunk ``k``: its line of the group's file."""
    lines = (site / chunk_file(bid, k)).read_text(encoding="utf-8").splitlines(keepends=True)
    mine = [line for line in lines if line.startswith(f'MM.points("{bid}",')]
    assert len(mine) == 1, (bid, k)
    m = CALL.match(mine[0])
    assert m
    return m.group(1), json.loads("[" + m.group(2) + "]")


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def one_series_model(names: list[str], commits: list[CommitInfo], machine: str = "m1") -> SiteModel:
    series = {}
    for name in names:
        key = SeriesKey(machine, "env", name, "{}", PRIMARY)
        series[key] = [
            SeriesPoint(c, i, Measurement(name, {}, PRIMARY, Direction.LOWER, median=1.0 + i, q1=0.9 + i, q3=1.1 + i))
            for i, c in enumerate(commits)
        ]
    return SiteModel(series=series, commits=commits)


def test_layout_and_point_counts(tmp_path: Path) -> None:
    cfg = SiteConfig(commit_url="https://github.com/example/project/commit/", chunk_size=8)
    model = synthetic_model(4, 30, 3, params={"n": ("1", "2")}, config=cfg)
    report = build_site(model, tmp_path / "site")
    site = tmp_path / "site"
    for page in ("index.html", "regressions.html", "compare.html", "assets/plotly.min.js", "assets/site.js"):
        assert (site / page).is_file(), page
    assert report.unchanged == 0 and len(report.written) == len(json.loads((site / MANIFEST).read_text())["files"])
    fn, (index,) = read_call(site / "data/index.js")
    assert fn == "index" and [r["name"] for r in index] == sorted(model.benchmarks())
    for entry in index:
        assert entry["series"] == 6  # 2 params x 3 metrics
        fn, (bid, meta) = read_call(site / f"data/b/{entry['id']}.meta.js")
        assert bid == entry["id"] == bench_id(entry["name"]) and meta["chunks"] == [0, 1, 2, 3]
        got = [0] * len(meta["series"])
        for k in meta["chunks"]:
            _, (_, kk, rows) = read_points(site, bid, k)
            assert kk == k
            for si, cols in enumerate(rows):
                assert all(k * 8 <= i < (k + 1) * 8 for i in cols["i"])
                got[si] += len(cols["i"])
        assert got == [30] * 6
    _, (site_info,) = read_call(site / "data/site.js")
    assert site_info["n_commits"] == 30 and site_info["commit_url"] == "https://github.com/example/project/commit/"


def test_plotly_is_shipped_not_fetched(tmp_path: Path) -> None:
    import plotly

    build_site(synthetic_model(1, 5, 1), tmp_path)
    shipped = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    assert (tmp_path / "assets/plotly.min.js").read_bytes() == shipped.read_bytes()
    for page in tmp_path.rglob("*.html"):
        text = page.read_text()
        assert "http://" not in text and "https://" not in text and "cdn" not in text.lower()


def test_republish_after_one_commit_rewrites_only_what_changed(tmp_path: Path) -> None:
    commits = synthetic_commits(21, seed=3)
    cfg = SiteConfig(chunk_size=10)
    full = synthetic_model(5, 21, 2, seed=3, config=cfg)

    def upto(n: int) -> SiteModel:
        keep = {c.sha for c in commits[:n]}
        return dataclasses.replace(
            full,
            commits=commits[:n],
            series={k: [p for p in v if p.commit.sha in keep] for k, v in full.series.items()},
            change_points=[],
        )

    site = tmp_path / "site"
    build_site(upto(19), site)
    again = build_site(upto(19), site)
    assert again.written == [] and again.removed == []
    step = build_site(upto(20), site)
    ids = sorted(bench_id(b) for b in full.benchmarks())
    # The compare page's verdicts on each series' newest commits change too: one file for all benchmarks; and the
    # metas of the benchmarks whose detection limits the 20th commit restates (once every ten, spread by name).
    restated = [b for b in full.benchmarks() if state_offset(b) == 0]
    expected = {"data/site.js", "data/commits/1.js", "data/verdicts.js", *(chunk_file(i, 1) for i in ids),
                *(f"data/b/{bench_id(b)}.meta.js" for b in restated)}
    assert set(step.written) == expected
    # The 21st commit opens a new chunk: the metas (chunk lists) change too, the old chunks do not.
    nxt = build_site(upto(21), site)
    assert set(nxt.written) == {
        "data/site.js", "data/commits/2.js", "data/verdicts.js", *(chunk_file(i, 2) for i in ids),
        *(f"data/b/{i}.meta.js" for i in ids)
    }


def test_removed_benchmark_files_go_foreign_files_stay(tmp_path: Path) -> None:
    commits = synthetic_commits(4)
    build_site(one_series_model(["a", "b"], commits), tmp_path)
    (tmp_path / "CNAME").write_text("perf.example.org")
    report = build_site(one_series_model(["a"], commits), tmp_path)
    gone = bench_id("b")
    assert f"b/{gone}.html" in report.removed and not (tmp_path / f"b/{gone}.html").exists()
    assert (tmp_path / "CNAME").read_text() == "perf.example.org"


def test_refuses_a_folder_it_did_not_write(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="not empty"):
        build_site(one_series_model(["a"], synthetic_commits(2)), tmp_path)
    assert files_under(tmp_path) == {"notes.txt"}


@pytest.mark.parametrize(
    "name",
    ["../../escape", "/etc/passwd", "..\\..\\x", "a/../../b", EVIL, "</script><script>alert(1)</script>", "nul\x00byte", ".."],
)
def test_no_name_writes_outside(tmp_path: Path, name: str) -> None:
    site = tmp_path / "out" / "site"
    build_site(one_series_model([name], synthetic_commits(3), machine=name), site)
    assert files_under(tmp_path) == {f"out/site/{f}" for f in files_under(site)}
    for f in files_under(site):
        assert re.fullmatch(r"[A-Za-z0-9._/-]+", f), f


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=3, unique=True))
def test_any_names_stay_inside_and_round_trip(tmp_path_factory, names: list[str]) -> None:
    root = tmp_path_factory.mktemp("h")
    site = root / "site"
    build_site(one_series_model(names, synthetic_commits(2)), site)
    assert all(p.resolve().is_relative_to(site.resolve()) for p in root.rglob("*"))
    _, (index,) = read_call(site / "data/index.js")
    assert sorted(r["name"] for r in index) == sorted(names)
    assert "<" not in (site / "data/index.js").read_text()


def test_symlinked_subfolder_cannot_lead_outside(tmp_path: Path) -> None:
    site, outside = tmp_path / "site", tmp_path / "outside"
    outside.mkdir()
    build_site(one_series_model(["a"], synthetic_commits(2)), site)
    import shutil

    shutil.rmtree(site / "data")
    (site / "data").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UserError, match="outside the site folder"):
        build_site(one_series_model(["a"], synthetic_commits(3)), site)
    assert list(outside.iterdir()) == []


def test_safe_relpath_rejects_traversal() -> None:
    for bad in ("../x", "/abs", "a/../b", "a//b/..", ".hidden", "", "a/b\\c", "a//b", "./a", "a/"):
        with pytest.raises(ValueError):
            safe_relpath(bad)
    assert safe_relpath("data/b/0123abcd/3.js").parts == ("data", "b", "0123abcd", "3.js")


def test_strings_are_escaped_in_scripts_and_html(tmp_path: Path) -> None:
    evil_msg = "</script><script>alert('msg')</script>\u2028"
    commits = [CommitInfo(sha="ab" * 20, message=evil_msg), CommitInfo(sha="cd" * 20, message="ok")]
    build_site(one_series_model([EVIL], commits, machine="</script>"), tmp_path)
    for f in (tmp_path / "data").rglob("*.js"):
        text = f.read_text()
        assert "<" not in text and ">" not in text and "\u2028" not in text, f
    page = (tmp_path / f"b/{bench_id(EVIL)}.html").read_text()
    assert EVIL not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    _, (_, rows) = read_call(tmp_path / "data/commits/0.js")
    assert rows[0][2] == evil_msg.strip()
    assert json.loads(js_json(EVIL)) == EVIL


def test_js_json_refuses_nan_and_infinity_anywhere() -> None:
    """orjson would write NaN as null: js_json refuses it, in a list of numbers too."""
    for bad in (math.nan, [1.0, math.inf], {"a": [None, -math.inf]}, [[0.5, math.nan]], (1, {"x": math.nan})):
        with pytest.raises(ValueError):
            js_json(bad)
    big = [1e308, 1e308, None, 2]  # a sum that overflows is not a NaN
    assert json.loads(js_json(big)) == big
    with pytest.raises(ValueError):
        js_json([np.float64("nan")])  # a float subclass orjson leaves to us
    assert js_json([np.float64(0.5), np.int64(3)]) == "[0.5,3]"
    exact = {"f": [1e-05, 0.1, 1 / 3, 2.5e300, 12345678901234567890]}
    assert json.loads(js_json(exact)) == exact  # floats round-trip exactly (carried-on chunks rely on it)


def test_only_http_commit_urls_are_linked() -> None:
    assert SiteConfig(commit_url="javascript:alert(1)//").safe_commit_url is None
    assert SiteConfig(commit_url=" https://github.com/o/r/commit/").safe_commit_url == "https://github.com/o/r/commit/"


def test_failed_points_are_left_out_and_unknown_commits_appended(tmp_path: Path) -> None:
    commits = synthetic_commits(3)
    late = CommitInfo(sha="ef" * 20, message="late")
    key = SeriesKey("m", "e", "bench", "{}", PRIMARY)
    pts = [
        SeriesPoint(commits[0], 1, Measurement("bench", {}, PRIMARY, Direction.LOWER, median=1.0)),
        SeriesPoint(commits[1], 2, Measurement("bench", {}, PRIMARY, Direction.LOWER, status="failed")),
        SeriesPoint(late, 3, Measurement("bench", {}, PRIMARY, Direction.LOWER, median=float("nan"))),
        SeriesPoint(commits[2], 4, Measurement("bench", {}, PRIMARY, Direction.LOWER, median=2.0, ci_low=1.5, ci_high=2.5)),
    ]
    build_site(SiteModel(series={key: pts}, commits=commits), tmp_path)
    bid = bench_id("bench")
    _, (_, meta) = read_call(tmp_path / f"data/b/{bid}.meta.js")
    _, (_, _, rows) = read_points(tmp_path, bid, 0)
    assert rows[0]["i"] == [0, 2] and rows[0]["m"] == [1.0, 2.0] and meta["series"][0]["band"] is None
    _, (site_info,) = read_call(tmp_path / "data/site.js")
    assert site_info["n_commits"] == 4


def test_a_changed_old_value_rewrites_its_chunk_only(tmp_path: Path) -> None:
    cfg = SiteConfig(chunk_size=10)
    model = synthetic_model(3, 30, 2, seed=5, config=cfg)
    build_site(model, tmp_path)
    key = sorted(model.series, key=lambda k: (k.benchmark, k.machine, k.environment, k.params, k.metric))[0]
    pts = list(model.series[key])
    pts[13] = dataclasses.replace(pts[13], measurement=dataclasses.replace(pts[13].measurement, q3=None))
    changed = dataclasses.replace(model, series={**model.series, key: pts})
    report = build_site(changed, tmp_path)
    assert report.written == [chunk_file(bench_id(key.benchmark), 1)]
    _, (_, _, rows) = read_points(tmp_path, bench_id(key.benchmark), 1)
    assert rows[0]["hi"][3] is None


METPY_CONF = Path(__file__).resolve().parent / "data" / "asv-results" / "metpy" / "asv.conf.json"


def test_commit_url_and_title_come_from_asv_conf(tmp_path: Path) -> None:
    from mmtrack.commands.publish import PublishRequest, publish, site_config

    conf = METPY_CONF
    cfg = site_config(PublishRequest(out=tmp_path, asv_config=conf))
    assert cfg.commit_url == "http://github.com/unidata/metpy/commit/" and cfg.title == "metpy"
    assert site_config(PublishRequest(out=tmp_path, asv_config=conf, commit_url="https://x.org/c/")).commit_url == "https://x.org/c/"
    with pytest.raises(UserError, match="not http"):
        site_config(PublishRequest(out=tmp_path, asv_config=conf, commit_url="javascript:alert(1)//"))
    with pytest.raises(UserError, match="no such asv config"):
        site_config(PublishRequest(out=tmp_path, asv_config=tmp_path / "nope.json"))
    model, report = publish(PublishRequest(out=tmp_path / "site", asv_config=conf), model=synthetic_model(2, 5, 1))
    _, (info,) = read_call(tmp_path / "site/data/site.js")
    assert info["title"] == "metpy" and info["commit_url"] == cfg.commit_url and report.written


def test_code_version_changes_are_marked(tmp_path: Path) -> None:
    commits = synthetic_commits(5)
    key = SeriesKey("m", "e", "bench", "{}", PRIMARY)
    versions = ["v1", "v1", "v2", "v2", "v3"]
    pts = [SeriesPoint(c, i, Measurement("bench", {}, PRIMARY, Direction.LOWER, median=1.0, version=v))
           for i, (c, v) in enumerate(zip(commits, versions))]
    build_site(SiteModel(series={key: pts}, commits=commits), tmp_path)
    _, (_, meta) = read_call(tmp_path / f"data/b/{bench_id('bench')}.meta.js")
    assert meta["series"][0]["versions"] == [[2, "v2"], [4, "v3"]]


def test_values_at_or_below_zero_and_beyond_the_float_range_publish(tmp_path: Path) -> None:
    """track_ values may step from 0, flip sign or span 1e-300 to 1e300: detect finds those changes (a sign flip's
    ratio is -1), and the pages ranked a benchmark's changes by log(ratio), a math domain error that stopped
    `mmtrack publish`. Every data file stays strict JSON (no NaN, no Infinity)."""
    from mmtrack.analysis.series import detect_series

    commits = synthetic_commits(40, 0)
    shapes = {"track_from_zero": lambda i: 0.0 if i < 20 else 5.0, "track_sign_flip": lambda i: -1.0 if i < 20 else 1.0,
              "track_huge": lambda i: 1e-300 if i < 20 else 1e300, "track_negative": lambda i: -2.0 if i < 20 else -1.0}
    series, changes = {}, []
    for name, shape in shapes.items():
        key = SeriesKey("m1", "env", f"suite.{name}", "{}", PRIMARY)
        series[key] = [SeriesPoint(c, i, Measurement(key.benchmark, {}, PRIMARY, Direction.LOWER, median=shape(i)))
                       for i, c in enumerate(commits)]
        found = detect_series(key, series[key]).changes
        assert [(c.kind, c.persists) for c in found] == [("regression", True)], name
        changes.extend(found)
    # One benchmark, two cases stepping at the same commit: its latest change is the one no ratio sizes (from 0),
    # though JSON carries that ratio as null.
    for n, shape in (("1", lambda i: 1.0 if i < 20 else 1.5), ("2", lambda i: 0.0 if i < 20 else 5.0)):
        key = SeriesKey("m1", "env", "suite.track_pair", canonical_params({"n": n}), PRIMARY)
        series[key] = [SeriesPoint(c, i, Measurement(key.benchmark, {"n": n}, PRIMARY, Direction.LOWER,
                                                     median=shape(i))) for i, c in enumerate(commits)]
        changes.extend(detect_series(key, series[key]).changes)
    build_site(SiteModel(series=series, commits=commits, change_points=changes), tmp_path)
    _, (index,) = read_call(tmp_path / "data/index.js")
    (pair,) = [e for e in index if e["name"] == "suite.track_pair"]
    assert pair["latest"]["params"] == {"n": "2"} and pair["latest"]["ratio"] is None, pair["latest"]
    data = sorted((tmp_path / "data").rglob("*.js"))
    assert data
    for path in data:
        for text in path.read_text(encoding="utf-8").splitlines(keepends=True):  # a points file: a call per line
            m = CALL.match(text)
            assert m, path
            json.loads("[" + m.group(2) + "]", parse_constant=lambda c: pytest.fail(f"{path}: {c}"))


def test_a_group_file_keeps_its_other_benchmarks_lines_and_drops_a_removed_ones(tmp_path: Path) -> None:
    """Benchmarks share a points file by their id's first hex digit (publish/chunks.py): a change to one rewrites the
    file with the others' lines as they were, a removed one's line goes, and the site equals a fresh build's."""
    groups: dict[str, list[str]] = {}
    for n in (f"bench_{i}" for i in range(60)):
        groups.setdefault(bench_id(n)[0], []).append(n)
    same = max(groups.values(), key=len)[:3]
    assert len(same) == 3
    ids = [bench_id(n) for n in same]
    model = one_series_model(same, synthetic_commits(5))
    site, fresh = tmp_path / "site", tmp_path / "fresh"
    build_site(model, site)
    before = (site / chunk_file(ids[0], 0)).read_bytes().splitlines(keepends=True)
    assert len(before) == 3
    key = next(k for k in model.series if k.benchmark == same[1])
    pts = [dataclasses.replace(p, measurement=dataclasses.replace(p.measurement, median=9.0)) for p in model.series[key]]
    changed = dataclasses.replace(model, series={**model.series, key: pts})
    assert chunk_file(ids[0], 0) in build_site(changed, site).written
    after = (site / chunk_file(ids[0], 0)).read_bytes().splitlines(keepends=True)
    assert [a == b for a, b in zip(before, after)] == [i != 1 for i in sorted(range(3), key=lambda j: ids[j])]
    assert read_points(site, ids[1], 0)[1][2][0]["m"] == [9.0] * 5
    build_site(changed, fresh)
    assert files_under(site) == files_under(fresh)
    assert all((site / f).read_bytes() == (fresh / f).read_bytes() for f in files_under(site) if f.startswith("data/"))
    build_site(dataclasses.replace(changed, series={k: v for k, v in changed.series.items() if k.benchmark != same[2]}),
               site)
    left = (site / chunk_file(ids[0], 0)).read_text(encoding="utf-8")
    assert ids[2] not in left and ids[0] in left and ids[1] in left
