"""A first publish renders half of its benchmarks in a forked child (builder._render_split): the site is the one a
single process writes, byte for byte, and the child reads its half of the series through its own connections."""

from __future__ import annotations

import filecmp
import os
from pathlib import Path

import pytest

from mmtrack import forked
from mmtrack.commands.publish import PublishRequest, publish
from mmtrack.commands.detect import DetectRequest, run_detect
from mmtrack.publish import builder
from mmtrack.store.asv_import import import_asv_results
from mmtrack.store.db import open_store
from test_store_support import store_url  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
METPY = ROOT / "tests" / "data" / "asv-results" / "metpy" / "results"

pytestmark = pytest.mark.skipif(not forked.can_fork(), reason="needs Linux with 2 CPUs or more (fork)")


@pytest.fixture
def history(store_url: str) -> str:
    """MetPy's results imported and detected (SQLite, and PostgreSQL with MMTRACK_TEST_PG)."""
    store = open_store(store_url)
    try:
        assert not import_asv_results(store, METPY).failed
    finally:
        store.close()
    assert run_detect(DetectRequest(db=store_url)).changes
    return store_url


def _files(site: Path) -> list[str]:
    return sorted(str(p.relative_to(site)) for p in site.rglob("*") if p.is_file())


def test_the_split_publish_writes_the_single_process_site(history: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(builder, "SPLIT_MIN", 10**9)
    _, alone = publish(PublishRequest(out=tmp_path / "alone", db=history, title="t"))
    monkeypatch.setattr(builder, "SPLIT_MIN", 2)
    model, split = publish(PublishRequest(out=tmp_path / "split", db=history, title="t"))

    assert model is not None and model.series.read_elsewhere  # the child read (and rendered) its half
    assert not set(model.series.loaded) & model.series.read_elsewhere
    assert len(set(model.series.loaded) | model.series.read_elsewhere) == len(model.series)
    assert sorted(split.written) == sorted(alone.written) and len(alone.written) > 100
    names = _files(tmp_path / "alone")
    assert names == _files(tmp_path / "split")
    _, mismatch, errors = filecmp.cmpfiles(tmp_path / "alone", tmp_path / "split", names, shallow=False)
    assert mismatch == [] and errors == []  # the manifest too: same files, hashes, inputs and state


def test_a_failing_child_leaves_its_half_to_the_parent(history: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(builder, "SPLIT_MIN", 10**9)
    publish(PublishRequest(out=tmp_path / "alone", db=history, title="t"))
    monkeypatch.setattr(builder, "SPLIT_MIN", 2)
    parent = os.getpid()
    render = builder._render

    def broken_in_child(*args):
        if os.getpid() != parent:
            raise RuntimeError("the child breaks")
        return render(*args)

    monkeypatch.setattr(builder, "_render", broken_in_child)
    model, _ = publish(PublishRequest(out=tmp_path / "split", db=history, title="t"))
    assert model is not None and set(model.series.loaded) == set(model.series)  # all read here in the end
    names = _files(tmp_path / "alone")
    _, mismatch, errors = filecmp.cmpfiles(tmp_path / "alone", tmp_path / "split", names, shallow=False)
    assert names == _files(tmp_path / "split") and mismatch == [] and errors == []
