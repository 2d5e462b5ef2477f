"""A first publish renders half of its benchmarks in a forked child (builder._render_split): the site is the one a
single process writes, byte for byte, and the child reads its half of the series through its own connections."""

from __future__ import annotations

import filecmp
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mmtrack import forked
from mmtrack.commands.publish import PublishRequest, publish
from mmtrack.publish import builder

ROOT = Path(__file__).resolve().parents[1]
METPY = ROOT / "tests" / "data" / "asv-results" / "metpy" / "results"

pytestmark = pytest.mark.skipif(not forked.can_fork(), reason="needs Linux with 2 CPUs or more (fork)")


@pytest.fixture(scope="module")
def store_url(tmp_path_factory) -> str:
    work = tmp_path_factory.mktemp("store")
    url = f"sqlite:///{work / 'mmtrack.db'}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("MMTRACK_DB", None)
    for args in (["import-asv", str(METPY), "--db", url], ["detect", "--db", url]):
        r = subprocess.run([sys.executable, "-m", "mmtrack", *args], cwd=work, env=env, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode in (0, 1), r.stderr
    return url


def _files(site: Path) -> list[str]:
    return sorted(str(p.relative_to(site)) for p in site.rglob("*") if p.is_file())


def test_the_split_publish_writes_the_single_process_site(store_url: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(builder, "SPLIT_MIN", 10**9)
    _, alone = publish(PublishRequest(out=tmp_path / "alone", db=store_url, title="t"))
    monkeypatch.setattr(builder, "SPLIT_MIN", 2)
    model, split = publish(PublishRequest(out=tmp_path / "split", db=store_url, title="t"))

    assert model is not None and model.series.read_elsewhere  # the child read (and rendered) its half
    assert not set(model.series.loaded) & model.series.read_elsewhere
    assert len(set(model.series.loaded) | model.series.read_elsewhere) == len(model.series)
    assert sorted(split.written) == sorted(alone.written) and len(alone.written) > 100
    names = _files(tmp_path / "alone")
    assert names == _files(tmp_path / "split")
    _, mismatch, errors = filecmp.cmpfiles(tmp_path / "alone", tmp_path / "split", names, shallow=False)
    assert mismatch == [] and errors == []  # the manifest too: same files, hashes, inputs and state


def test_a_failing_child_leaves_its_half_to_the_parent(store_url: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(builder, "SPLIT_MIN", 10**9)
    publish(PublishRequest(out=tmp_path / "alone", db=store_url, title="t"))
    monkeypatch.setattr(builder, "SPLIT_MIN", 2)
    parent = os.getpid()
    render = builder._render

    def broken_in_child(*args):
        if os.getpid() != parent:
            raise RuntimeError("the child breaks")
        return render(*args)

    monkeypatch.setattr(builder, "_render", broken_in_child)
    model, _ = publish(PublishRequest(out=tmp_path / "split", db=store_url, title="t"))
    assert model is not None and set(model.series.loaded) == set(model.series)  # all read here in the end
    names = _files(tmp_path / "alone")
    _, mismatch, errors = filecmp.cmpfiles(tmp_path / "alone", tmp_path / "split", names, shallow=False)
    assert names == _files(tmp_path / "split") and mismatch == [] and errors == []
