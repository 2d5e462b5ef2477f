"""The spool format: round trip, atomic writes, one file per case, pooled rounds."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from mmtrack.asvbridge import spool
from mmtrack.measure.metrics import Direction, MetricFormat, MetricSummary


def record(**kw) -> spool.SpoolRecord:
    base = dict(
        benchmark="mod.Cls.track_x",
        params={"n": "1"},
        status="ok",
        machine="box",
        commit="a" * 40,
        run_id="r1",
        metrics=[
            MetricSummary.from_values("timing", "time_per_op", "s", [1e-6, 2e-6, 3e-6]),
            MetricSummary.from_values("", "algo", "id", [1, 2, 1], fmt=MetricFormat.INTEGER),
            MetricSummary.from_values("", "odd", "units", [1.0, math.nan, 3.0], direction=Direction.HIGHER),
        ],
    )
    base.update(kw)
    return spool.SpoolRecord(**base)


def test_round_trip_keeps_every_field_and_nan(tmp_path):
    rec = record(message="", version="v1", param_index=0, options={"duration": 0.3}, info={"unit": "seconds"})
    path = spool.write(rec, tmp_path)
    back = spool.read(path)
    assert back.benchmark == rec.benchmark and back.params == rec.params and back.version == "v1"
    assert [m.key for m in back.metrics] == [m.key for m in rec.metrics]
    assert back.metrics[1].format is MetricFormat.INTEGER and back.metrics[2].direction is Direction.HIGHER
    assert math.isnan(back.metrics[2].values[1]) and back.metrics[2].values[0] == 1.0
    # Strict JSON on disk: NaN is written as null.
    assert "NaN" not in path.read_text()
    json.loads(path.read_text())


def test_one_file_per_case_a_rerun_replaces_it(tmp_path):
    spool.write(record(run_id="r1"), tmp_path)
    spool.write(record(run_id="r2"), tmp_path)
    spool.write(record(params={"n": "2"}), tmp_path)
    spool.write(record(commit="b" * 40), tmp_path)
    files = sorted(tmp_path.iterdir())
    assert len(files) == 3
    assert not [p for p in files if p.name.endswith(".tmp")]
    runs = {spool.read(p).run_id for p in files}
    assert runs == {"r1", "r2"}


def test_rounds_of_one_run_pool_their_samples(tmp_path):
    spool.write(record(), tmp_path)
    path = spool.write(record(), tmp_path)  # asv's second round, same run id
    back = spool.read(path)
    assert back.metrics[0].count == 6 and back.info["rounds"] == 2
    assert back.metrics[0].median == pytest.approx(2e-6)


def test_scan_reports_unreadable_files_and_skips_temporaries(tmp_path):
    spool.write(record(), tmp_path)
    (tmp_path / "junk.json").write_text("{not json")
    (tmp_path / "other.json").write_text(json.dumps({"format": "something-else"}))
    (tmp_path / ".x.json.123.tmp").write_text('{"format"')
    entries = list(spool.scan(tmp_path))
    assert sum(e.record is not None for e in entries) == 1
    errors = {e.path.name: e.error for e in entries if e.record is None}
    assert "not JSON" in errors["junk.json"]
    assert "not a mmtrack-spool/1 record" in errors["other.json"]
    assert [p.name for p in spool.stale_temporaries(tmp_path)] == [".x.json.123.tmp"]


def test_spool_folder_defaults_to_the_project_of_the_benchmark(tmp_path, monkeypatch):
    monkeypatch.delenv("MMTRACK_SPOOL", raising=False)
    monkeypatch.delenv("ASV_CONF_DIR", raising=False)
    (tmp_path / "asv.conf.json").write_text("{}")
    bench = tmp_path / "benchmarks" / "sub"
    bench.mkdir(parents=True)
    assert spool.spool_dir_from_env(bench) == tmp_path / ".mmtrack" / "spool"
    monkeypatch.setenv("ASV_CONF_DIR", str(tmp_path / "elsewhere"))
    assert spool.spool_dir_from_env(bench) == tmp_path / "elsewhere" / ".mmtrack" / "spool"
    monkeypatch.setenv("MMTRACK_SPOOL", str(tmp_path / "given"))
    assert spool.spool_dir_from_env(bench) == (tmp_path / "given").resolve()


def test_key_identifies_commit_machine_environment_case():
    a = record().key
    assert a == record(run_id="other", status="failed").key
    for change in ({"commit": "c" * 40}, {"machine": "m2"}, {"environment": "env"}, {"params": {"n": "2"}}):
        assert record(**change).key.filename() != a.filename()
    assert Path(a.filename()).suffix == ".json" and a.filename().startswith("mod.Cls.track_x-")
