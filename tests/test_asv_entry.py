"""Engine benchmarks as standard asv `track_` benchmarks, called by the real asv."""

from __future__ import annotations

import json

import pytest

from conftest import REPO
from mmtrack.asvbridge.entry import options_from_asv
from mmtrack.measure.runner import RunOptions
from test_run_acceptance import MACHINE, asv, asv_env, commit_all, git, make_repo, results_of, spool_records

SUITE = '''\
import mmtrack


class Plain:
    @mmtrack.bench(chunk_size=4)
    def track_spin(self, ctx, chunk_size, chunk_num):
        for _ in range(chunk_size):
            sum(range(500))


@mmtrack.bench(chunk_size=2)
def track_free(ctx, chunk_size, chunk_num):
    for _ in range(chunk_size):
        sum(range(100))
'''


def test_asv_quick_attributes_select_the_quick_budget():
    assert options_from_asv({"number": 1, "repeat": 1, "warmup_time": 0, "rounds": 1}, {}) == RunOptions.quick()
    assert options_from_asv({}, {"MMTRACK_QUICK": "1"}) == RunOptions.quick()
    assert options_from_asv({}, {}) == RunOptions()


def test_asv_attributes_map_to_the_engine_budget():
    o = options_from_asv({"repeat": 7, "warmup_time": 0.2}, {})
    assert (o.min_samples, o.max_samples, o.warm_up) == (7, 7, 0.2)
    o = options_from_asv({"repeat": (3, 9, 1.5)}, {})
    assert (o.min_samples, o.max_samples, o.duration) == (3, 9, 1.5)
    assert options_from_asv({"sample_time": 0.002}, {}).target_chunk == 0.002  # asv's sample_time: a chunk's time
    # A user's plain `-a number=1` alone is not --quick.
    assert options_from_asv({"number": 1}, {}) == RunOptions()


def test_plain_asv_run_reads_its_attributes_at_run_time(tmp_path):
    """`asv run -a repeat=6 -a warmup_time=0.01 -a rounds=2`, no mmtrack run: the engine obeys asv."""
    home = tmp_path / "home"
    home.mkdir()
    env = asv_env(home, MMTRACK_RUN_ID="plain-asv")  # a run id makes asv's rounds pool in the spool
    repo = make_repo(tmp_path, env)
    (repo / "benchmarks" / "plain.py").write_text(SUITE)
    sha = commit_all(repo, env, "plain", 1)
    assert asv(repo, env, "machine", "--yes", "--machine", MACHINE).returncode == 0
    proc = asv(
        repo, env, "run", "--python=same", f"--set-commit-hash={sha}", "--record-samples", "--machine", MACHINE,
        "-a", "repeat=6", "-a", "warmup_time=0.01", "-a", "rounds=2",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = results_of(repo, sha)
    rows = {k: dict(zip(data["result_columns"], v)) for k, v in data["results"].items()}
    # rounds=2: asv ran each case twice and pooled both rounds' samples.
    assert len(rows["plain.Plain.track_spin"]["samples"][0]) == 12
    assert len(rows["plain.track_free"]["samples"][0]) == 12
    assert rows["plain.Plain.track_spin"]["stats_number"] == [4]
    recs = {r["benchmark"]: r for r in spool_records(repo)}
    spin, free = recs["plain.Plain.track_spin"], recs["plain.track_free"]
    # asv's name and code version, no commit (existing environments pass none), the project's spool.
    bench_meta = json.loads((repo / ".asv" / "results" / "benchmarks.json").read_text())
    assert spin["version"] == bench_meta["plain.Plain.track_spin"]["version"]
    assert spin["commit"] is None and spin["machine"] == MACHINE
    assert spin["options"]["min_samples"] == spin["options"]["max_samples"] == 6
    assert spin["options"]["warm_up"] == pytest.approx(0.01)
    assert spin["options"]["process_model"] == "worker per case"  # asv forks a process per benchmark
    (per_op,) = [m for m in spin["metrics"] if m["name"] == "time_per_op"]
    assert per_op["count"] == 12 and spin["info"]["rounds"] == 2
    assert sorted(per_op["values"]) == pytest.approx(sorted(rows["plain.Plain.track_spin"]["samples"][0]))
    assert free["params"] == {} and free["param_index"] is None
    git(repo, env, "status")  # the spool and asv's files are ignored: the tree stays clean
    assert git(repo, env, "status", "--porcelain") == ""


GPU_SUITE = '''\
import mmtrack
from mmtrack.measure.cuda import CudaEventBackend
from test_cuda_standin import StandInCuda  # the tests' stand-in device (no GPU here)

CUDA = StandInCuda()


class Gpu:
    @mmtrack.bench(domain="gpu", chunk_size=4,
                   backend=lambda: CudaEventBackend(api=CUDA, clock=CUDA.clock, nvml=False))
    def track_kernels(self, ctx, chunk_size, chunk_num):
        for _ in range(chunk_size):
            CUDA.kernel(500_000)  # 0.5 ms of device work
'''


def test_asv_samples_are_device_time_under_a_cuda_backend(tmp_path):
    """The primary duration asv stores is the backend's: device time for CUDA events."""
    home = tmp_path / "home"
    home.mkdir()
    env = asv_env(home)
    env["ASV_PYTHONPATH"] += f":{REPO / 'tests'}"
    repo = make_repo(tmp_path, env)
    (repo / "benchmarks" / "gpu.py").write_text(GPU_SUITE)
    sha = commit_all(repo, env, "gpu", 1)
    assert asv(repo, env, "machine", "--yes", "--machine", MACHINE).returncode == 0
    proc = asv(repo, env, "run", "--python=same", f"--set-commit-hash={sha}", "--record-samples", "--quick",
               "--machine", MACHINE)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = results_of(repo, sha)
    row = dict(zip(data["result_columns"], data["results"]["gpu.Gpu.track_kernels"]))
    # The stand-in's exact device time of a sample: one launch (2 us), then 4 kernels of 0.5 ms.
    per_op = (2_000 + 4 * 500_000) / 4 / 1e9
    assert row["samples"][0] == pytest.approx([per_op] * len(row["samples"][0]))
    (rec,) = spool_records(repo)
    host = rec["stats"]["host_durations"]
    assert max(host) < 4 * 500_000 / 1e9  # the host only launched: its time is not what asv got
    assert {m["name"] for m in rec["metrics"]} >= {"cuda_event_ms", "host_overhead_ms"}
    assert rec["stats"]["domain"] == "gpu"


def test_grid_setup_cache_skips_and_failures_in_the_spool(tmp_path):
    """Plain `asv run` of a grid with setup_cache, a skip and a raising benchmark."""
    from test_run_bad_input import SUITE as GRID_SUITE

    home = tmp_path / "home"
    home.mkdir()
    env = asv_env(home)
    repo = make_repo(tmp_path, env)
    (repo / "benchmarks" / "suite.py").write_text(GRID_SUITE)
    sha = commit_all(repo, env, "grid", 1)
    assert asv(repo, env, "machine", "--yes", "--machine", MACHINE).returncode == 0
    proc = asv(repo, env, "run", "--python=same", f"--set-commit-hash={sha}", "--record-samples", "--quick",
               "--machine", MACHINE, "-b", "Grid|skips")
    assert proc.returncode == 2, proc.stdout + proc.stderr  # asv's own status for a failed benchmark
    by = {(r["benchmark"], r["params"].get("n"), r["params"].get("s")): r for r in spool_records(repo)}
    for (n, s), idx in {("1", "'a'"): 0, ("1", "'b'"): 1, ("2", "'a'"): 2}.items():
        ok = by[("suite.Grid.track_sum", n, s)]
        assert ok["status"] == "ok" and ok["param_index"] == idx  # asv's index in the grid
        (count,) = [m for m in ok["metrics"] if m["name"] == "count"]
        assert count["median"] == 200 * int(n)  # setup got setup_cache's value, the engine the params
        assert ok["stats"]["chunk_size"] == 3  # chunk_size=lambda self, n, s: 3, resolved after setup
        failed = by[("suite.Grid.track_raises", n, s)]
        assert failed["status"] == "failed" and failed["message"] == "ValueError: this benchmark is broken on purpose"
        assert "track_raises" in failed["info"]["traceback"]
    assert ("suite.Grid.track_sum", "2", "'b'") not in by  # setup raised NotImplementedError: never called
    assert not [k for k in by if k[0] == "suite.track_skips_itself"]  # SkipNotImplemented: a skip, no record
    assert len(by) == 6
