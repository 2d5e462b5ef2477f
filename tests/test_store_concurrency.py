"""Writers and readers at once (issue 20): 8 processes x 100 saves while 2 readers publish and
detect, on SQLite and, with MMTRACK_TEST_PG set (CI sets it), on PostgreSQL. Exact counts."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from mmtrack.store import models as m
from mmtrack.store.db import open_store
from test_store_support import WRITER, ROOT, store_url, subprocess_env  # noqa: F401 - store_url is a fixture

WRITERS, SAVES = 8, 100


READER = r"""
import sys, time
from pathlib import Path
from mmtrack.commands.detect import DetectRequest, run_detect
from mmtrack.commands.publish import PublishRequest, publish
from mmtrack.errors import UserError

url, site, stop = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
published = detected = 0
while not stop.exists():
    try:
        publish(PublishRequest(out=site, db=url, title="t"))
        published += 1
        run_detect(DetectRequest(db=url))
        detected += 1
    except UserError as exc:  # before the first save: an empty store
        if "no series" not in str(exc) and "unknown" not in str(exc):
            raise
        time.sleep(0.05)
print(published, detected)
"""


@pytest.mark.slow
def test_eight_writers_while_readers_publish_and_detect(store_url: str, tmp_path: Path) -> None:
    open_store(store_url).close()  # the schema exists before the readers look
    go, stop = tmp_path / "go", tmp_path / "stop"
    env = subprocess_env()
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, store_url, str(p), str(SAVES), str(ROOT / "tests"), str(go), "ci"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for p in range(WRITERS)
    ]
    readers = [
        subprocess.Popen([sys.executable, "-c", READER, store_url, str(tmp_path / f"site{r}"), str(stop)],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for r in range(2)
    ]
    time.sleep(0.5)
    go.touch()
    outputs = [p.communicate(timeout=900) for p in writers]
    stop.touch()
    read_outputs = [p.communicate(timeout=900) for p in readers]
    for p, (_, err) in zip(writers, outputs):
        assert p.returncode == 0, err[-2000:]
    for p, (out, err) in zip(readers, read_outputs):
        assert p.returncode == 0, err[-2000:]
        published, detected = map(int, out.split())
        assert published >= 1 and detected >= 1, out  # they ran while the writers wrote
    store = open_store(store_url)
    try:
        with store.read() as conn:
            runs = conn.execute(select(func.count()).select_from(m.Run)).scalar_one()
            per_host = dict(conn.execute(select(m.Run.host, func.count()).group_by(m.Run.host)).all())
            results = conn.execute(select(func.count()).select_from(m.Result)).scalar_one()
            measurements = conn.execute(select(func.count()).select_from(m.Measurement)).scalar_one()
            metrics = conn.execute(select(func.count()).select_from(m.Metric)).scalar_one()
            changes = conn.execute(select(func.sum(m.Series.changes))).scalar_one()
            n_series = conn.execute(select(func.count()).select_from(m.Series)).scalar_one()
    finally:
        store.close()
    assert runs == results == WRITERS * SAVES
    assert per_host == {f"proc-{i}": SAVES for i in range(WRITERS)}
    assert measurements == WRITERS * SAVES * metrics  # every run complete
    # Every save bumped each of its series once (the counter publish relies on): none lost to a race.
    assert changes == n_series + WRITERS * SAVES * metrics
