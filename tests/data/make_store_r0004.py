"""Makes ``store-r0004.db`` and its golden ``store-r0004.snapshot.txt.gz`` (run once, with mmtrack at
revision 0004, commit afff31a; kept so the fixture's origin is on record).

The store holds what an old store holds in the field: a slice of the conda history (format 1,
failed results), three MetPy files (format 2, recorded samples), two engine runs (counters, custom
metrics, one sample recorded as null), a dirty run and a change point. The migration tests upgrade
it and compare every record the queries return with the snapshot this script wrote.

    python3 tests/data/make_store_r0004.py   # from the repository root, at revision 0004
"""

from __future__ import annotations

import gzip
import shutil
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/, for test_store_support

from sqlalchemy import update  # noqa: E402

from mmtrack.measure.metrics import Direction  # noqa: E402
from mmtrack.results import PRIMARY, ChangePoint, SeriesKey  # noqa: E402
from mmtrack.store import models as m  # noqa: E402
from mmtrack.store import writes  # noqa: E402
from mmtrack.store.db import open_store  # noqa: E402
from mmtrack.store.asv_import import import_asv_results  # noqa: E402
from mmtrack.store.ingest import EngineCaseRecord, RunRecord, record_engine_run  # noqa: E402
from test_store_support import CONDA, METPY, commit_info, engine_stats, snapshot  # noqa: E402


def main() -> None:
    out = HERE / "store-r0004.db"
    out.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results"
        shutil.copytree(CONDA, results)
        for f in sorted((results / "benchmarkers-MacBook-Pro.local").glob("*-*.json"))[12:]:
            f.unlink()
        metpy = Path(tmp) / "metpy"
        shutil.copytree(METPY, metpy)
        for machine in (p for p in metpy.iterdir() if p.is_dir()):
            for f in sorted(p for p in machine.glob("*.json") if p.name != "machine.json")[3:]:
                f.unlink()
        store = open_store(f"sqlite:///{out}")
        assert store.current_revision() == "0004"
        assert not import_asv_results(store, results).failed
        assert not import_asv_results(store, metpy).failed
        for i, dirty in ((1, False), (2, False), (2, True)):
            stats = engine_stats()
            run = RunRecord("m1", "py3.11", commit_info(i, dirty=dirty), datetime(2024, 1, i, tzinfo=timezone.utc),
                            suite="s")
            run_id = record_engine_run(store, run, [EngineCaseRecord(stats.name, stats.params, stats=stats)])
        with store.write() as conn:  # a failed sample, as the engine stores it
            conn.execute(update(m.Measurement).where(m.Measurement.id == 1).values(values=[1.0, None, 2.0]))
        key = SeriesKey("m1", "py3.11", stats.name, "{}", PRIMARY)
        writes.save_change_points(store, [ChangePoint(key, Direction.LOWER, "regression", "a" * 40, "b" * 40, 1.0, 2.0, 2.0)])
        assert run_id
        (HERE / "store-r0004.snapshot.txt.gz").write_bytes(gzip.compress(snapshot(store).encode(), mtime=0))
        store.close()


if __name__ == "__main__":
    main()
