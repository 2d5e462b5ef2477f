"""What ``mmtrack run`` does around asv, cut to what it needs (docs/design/asv.md, "What mmtrack run costs beside
asv run"): asv's config and machine file read without importing asv, the store opened while the suite's import
check runs (its error still raised after the preparation's own), and asv's benchmark processes started without
asv_runner's memory type unless the benchmark may be of it.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from conftest import run_cli
from test_run_acceptance import MACHINE, asv_env, commit_all, make_repo, results_of

from mmtrack.asvbridge import asvrun
from mmtrack.asvbridge.asv_command import needs_memory_type
from mmtrack.commands.run import StoreCheck
from mmtrack.errors import UserError

CONFIG_WITH_COMMENTS = """{
    // asv.conf.json as `asv quickstart` writes it: comments and a trailing comma
    "version": 1,
    "project": "demo",  // the name on asv's pages
    "repo": ".",
    "branches": ["main",],
    /* a block comment */
    "environment_type": "existing",
}
"""


def test_the_config_reads_as_asv_reads_it(tmp_path):
    from asv.util import load_json

    path = tmp_path / "asv.conf.json"
    path.write_text(CONFIG_WITH_COMMENTS)
    assert asvrun.load_config(path) == load_json(str(path), js_comments=True)
    assert asvrun.load_config(path)["branches"] == ["main"]
    path.write_text('{"version": 1, "project": ')
    with pytest.raises(UserError, match="cannot read the asv config"):
        asvrun.load_config(path)


def test_the_machine_file_is_the_one_asv_writes(tmp_path, monkeypatch):
    from asv.machine import MachineCollection

    monkeypatch.setenv("HOME", str(tmp_path))
    assert asvrun.Path(asvrun.ASV_MACHINE_FILE).expanduser() == asvrun.Path(MachineCollection.get_machine_file_path())
    assert not asvrun.machine_known("box")
    (tmp_path / ".asv-machine.json").write_text(json.dumps({"box": {"machine": "box"}, "version": 1}))
    assert asvrun.machine_known("box") and not asvrun.machine_known("other")


@pytest.mark.parametrize("benchmark_id, keeps", [
    ("bench.Work.mem_list", True),
    ("bench.Work.mem_list-2", True),  # a parameter combination
    ("bench.MemSuite", True),  # asv_runner's Mem[A-Z_] prefix
    ("bench.peakmem_build", True),  # not the memory type, but kept as before
    ("bench.Work.time_loop", False),
    ("bench.Work.time_loop-0", False),
    ("bench.track_size", False),
    ("mem_module.Work.time_loop", False),  # the module's name does not pick the type
])
def test_only_a_benchmark_that_may_be_of_the_memory_type_keeps_it(benchmark_id, keeps):
    assert needs_memory_type(benchmark_id) is keeps


def test_a_store_error_found_during_the_import_check_is_raised_after_the_preparation(tmp_path):
    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("not a database\n")
    check = StoreCheck(str(not_a_db))
    check()  # what preflight calls while the suite imports: it keeps the error
    assert isinstance(check.error, UserError) and "file is not a database" in str(check.error)
    with pytest.raises(UserError, match="file is not a database"):
        check.refuse()
    with pytest.raises(UserError, match="file is not a database"):
        StoreCheck(str(not_a_db)).refuse()  # never called: it opens the store itself
    good = tmp_path / "store.db"
    StoreCheck(str(good)).refuse()
    assert sqlite3.connect(good).execute("select count(*) from sqlite_master").fetchone()[0] > 0  # created


SUITE = '''
import sys


class Work:
    def track_pympler_loaded(self):
        return int("pympler" in sys.modules)

    def mem_list(self):
        return [0] * 10000
'''


def test_a_benchmark_process_loads_asvs_memory_type_only_for_a_memory_benchmark(tmp_path):
    """asv_runner's memory type imports pympler (and pympler numpy): a track_ benchmark's process runs without it, a
    mem_ benchmark still measures; the suite's import check and the store's open run side by side."""
    home = tmp_path / "home"
    home.mkdir()
    env = asv_env(home)
    repo = make_repo(tmp_path, env)
    (repo / "benchmarks" / "bench.py").write_text(SUITE)
    sha = commit_all(repo, env, "suite", 1)
    done = run_cli("run", "--quick", cwd=repo, env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "2 benchmark cases: 2 ok, 0 failed" in done.stdout
    data = results_of(repo, sha)
    value = data["result_columns"].index("result")
    assert data["results"]["bench.Work.track_pympler_loaded"][value] == [0]
    assert data["results"]["bench.Work.mem_list"][value][0] > 10000  # bytes of a list of 10000 items
    assert (repo / ".mmtrack" / "mmtrack.db").is_file() and MACHINE in done.stdout
