"""A/B rounds run by asv's own runner from mmtrack's process (mmtrack/asvbridge/asv_rounds.py): the suite discovered
once, each round with its own layout, the same cases as ``asv run``, and ``asv run`` itself for options a round here
does not carry. Real asv, a real git repository and real environment builds."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from test_ab import commit, package_project
from test_run_acceptance import asv_env

from mmtrack.ab import interleave, round_environ
from mmtrack.asvbridge import asv_rounds, round_server

LAYOUT_SUITE = '''\
import os
import sys

import layoutpkg


class Layout:
    def track_hash_seed(self):
        return int(os.environ.get("PYTHONHASHSEED", "0"))

    def track_pad(self):
        return len(os.environ.get("MMTRACK_LAYOUT_PAD", "")) + 1

    def time_tiny(self):
        layoutpkg.tiny()

    def track_runner_loaded_pympler(self):
        return int("pympler" in sys.modules)

    def mem_list(self):
        return [0] * 1000

    def track_tmp(self):
        import tempfile

        if os.environ.get("ROUND_TMP_NOTE"):
            with open(os.environ["ROUND_TMP_NOTE"], "a") as note:
                note.write(tempfile.gettempdir() + "\\n")
        return 1
'''


@pytest.fixture(scope="module")
def layout_project(tmp_path_factory):
    root = tmp_path_factory.mktemp("abrounds")
    (root / "home").mkdir()
    env = asv_env(root / "home")
    repo = package_project(root, env, "layoutpkg", {"bench_layout.py": LAYOUT_SUITE})
    (repo / "layoutpkg" / "__init__.py").write_text("def tiny():\n    return sum(range(100))\n")
    return {"repo": repo, "env": env, "sha": commit(repo, env, "base")}


def _pair(project, monkeypatch, asv_args=()):
    for name, value in project["env"].items():
        monkeypatch.setenv(name, value)
    plan, top = interleave.make_plan(project["repo"], None, "testbox", None, 2, asv_args=asv_args)
    plan = dataclasses.replace(plan, asv_args=(*plan.asv_args, "-a", "repeat=(2, 5, 0.05)", "-a", "warmup_time=0"))
    base = interleave.build_side(plan, top, project["sha"], "A")
    head = interleave.build_side(plan, top, project["sha"], "B")
    return plan, base, head


def test_round_args_carry_asvs_reading_of_the_attributes_and_refuse_the_rest():
    args = asv_rounds.round_args(interleave.ROUND_BUDGET)
    assert args is not None and args.attribute["repeat"] == (10, 250, 1.0) and args.attribute["rounds"] == 1
    assert asv_rounds.round_args(("--launch-method", "spawn", "-b", "x")).launch_method == "spawn"
    assert asv_rounds.round_args(("--durations", "2")) is None  # only `asv run` itself reports durations
    assert asv_rounds.round_args(("--no-such-option",)) is None  # asv run says what is wrong with it


def test_one_discovery_serves_both_sides_and_every_round_draws_its_own_layout(layout_project, monkeypatch):
    calls = []
    real = asv_rounds.discover
    monkeypatch.setattr(asv_rounds, "discover", lambda *a: calls.append(a) or real(*a))
    plan, base, head = _pair(layout_project, monkeypatch)
    result = interleave.run_interleaved(plan, base, head)

    assert len(calls) == 1 and result.rounds == 2
    seeds, pads = [], []
    for side in (result.base, result.head):
        cases = {b.rsplit(".", 1)[-1]: c for (b, _), c in side.cases.items()}
        assert set(cases) == {"track_hash_seed", "track_pad", "time_tiny", "track_runner_loaded_pympler", "mem_list",
                              "track_tmp"}
        assert all(c.status == "ok" and c.rounds == 2 for c in cases.values())
        seeds += cases["track_hash_seed"].samples
        pads += cases["track_pad"].samples
        assert len(cases["time_tiny"].round_bests[next(iter(cases["time_tiny"].round_bests))]) == 2
    assert len(seeds) == 4 and len(set(seeds)) == 4 and all(s >= 1 for s in seeds)  # a fresh hash seed per round
    assert len(pads) == 4 and all(1 <= p <= round_environ.LAYOUT_PAD + 1 for p in pads)


def test_a_kept_discovery_is_read_again_until_a_file_of_the_suite_changes(layout_project, monkeypatch, tmp_path):
    plan, base, _ = _pair(layout_project, monkeypatch)
    prepared = interleave.prepared_for(plan, base, tmp_path / "round")
    environ = round_environ.side_environ(prepared, prepared.config_path.parent)
    found = asv_rounds.discover(prepared, str(base.env.python), environ, tmp_path)
    [kept] = tmp_path.glob("suite-*.json")
    assert {b["name"].rsplit(".", 1)[-1] for b in found} >= {"time_tiny", "mem_list"}
    kept.write_text(json.dumps([{"name": "read.from_the_kept_file"}]))
    assert asv_rounds.discover(prepared, str(base.env.python), environ, tmp_path) == [
        {"name": "read.from_the_kept_file"}]
    note = layout_project["repo"] / "benchmarks" / "notes.txt"  # untracked: the tree stays clean for git
    note.write_text("a new file in the suite's folder\n")
    try:
        again = asv_rounds.discover(prepared, str(base.env.python), environ, tmp_path)
    finally:
        note.unlink()
    assert again == found and len(list(tmp_path.glob("suite-*.json"))) == 2


def test_an_option_a_round_does_not_carry_runs_asv_run_itself_with_the_same_cases(layout_project, monkeypatch):
    ran = []
    real = interleave._run_asv_process
    monkeypatch.setattr(interleave, "_run_asv_process", lambda *a: ran.append(a) or real(*a))
    plan, base, head = _pair(layout_project, monkeypatch, asv_args=("--durations", "1"))
    by_process = interleave.run_interleaved(dataclasses.replace(plan, rounds=1), base, head)
    plan, base, head = _pair(layout_project, monkeypatch)
    in_process = interleave.run_interleaved(dataclasses.replace(plan, rounds=1), base, head)

    assert len(ran) == 2  # both sides of the round with --durations
    for one, other in ((by_process.base, in_process.base), (by_process.head, in_process.head)):
        assert {k: (c.status, c.unit, c.version) for k, c in one.cases.items()} == \
               {k: (c.status, c.unit, c.version) for k, c in other.cases.items()}
    assert by_process.base.environment == in_process.base.environment


def test_a_round_without_memory_benchmarks_starts_its_server_without_pympler_and_one_with_them_keeps_it(
        layout_project, monkeypatch):
    def pympler_loaded(bench):
        plan, base, head = _pair(layout_project, monkeypatch)  # fresh sides: a side pools every round it ran
        result = interleave.run_interleaved(dataclasses.replace(plan, rounds=1, bench=bench), base, head)
        return result, [c.samples for side in (result.base, result.head) for (b, _), c in side.cases.items()
                        if b.endswith("pympler")]

    assert pympler_loaded("time_tiny|track_runner")[1] == [[0], [0]]  # no mem_ benchmark: asv_runner left it out
    every, loaded = pympler_loaded(None)
    assert loaded == [[1], [1]]
    mem = [c for side in (every.base, every.head) for (b, _), c in side.cases.items() if b.endswith("mem_list")]
    assert len(mem) == 2 and all(c.status == "ok" and c.samples[0] > 1000 for c in mem)


def test_the_round_server_script_runs_asvs_script_as_asv_would_less_the_memory_type(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(
        "import json, sys\nimport asv_runner.benchmarks as b\n"
        "print(json.dumps({'argv': sys.argv, 'path0': sys.path[0], 'numpy': 'numpy' in sys.modules,\n"
        "  'types': sorted(t.__name__ for t in b.benchmark_types)}))\n")
    by_launcher = subprocess.run([sys.executable, str(asv_rounds.WITHOUT_MEM), str(script), "run_server", "x"],
                                 capture_output=True, text=True, check=True)
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
    got, usual = json.loads(by_launcher.stdout), json.loads(plain.stdout)

    assert got["argv"] == [str(script), "run_server", "x"] and got["path0"] == str(tmp_path)
    assert "MemBenchmark" in usual["types"] and "MemBenchmark" not in got["types"]
    assert set(usual["types"]) - set(got["types"]) == {"MemBenchmark"} and not got["numpy"]


class _Scripted:
    """A timer whose samples are given: the settled-window rule reads only their order."""

    def __init__(self, timings):
        self.timings = iter(timings)

    def timeit(self, number):
        return next(self.timings)


def test_a_settled_window_ends_once_its_best_came_in_the_first_half_and_runs_on_while_it_improves():
    from mmtrack.asvbridge.round_server import _until_settled

    ticks = iter(range(10_000))
    clock = lambda: next(ticks)  # noqa: E731  (one tick a call: the least window is passed at once)
    settled = _until_settled(_Scripted([1.0] * 100), 1, [1.2, 1.0], 100, deadline=10**6, not_before=0, clock=clock)
    improving = _until_settled(_Scripted([1.0 - i / 100 for i in range(60)] + [0.4] * 100), 1, [1.2], 200,
                               deadline=10**6, not_before=0, clock=clock)

    assert len(settled) == 2  # the best came at sample 2 of 4
    assert len(improving) >= 2 * 60 - 1  # a new best each sample: it ran on until they were half of it
    assert len(_until_settled(_Scripted([1.0] * 100), 1, [1.0], 30, 10**6, 10**6, clock)) == 29  # asv's max_repeat


def test_the_round_server_ends_a_time_benchmarks_window_once_its_best_settled_within_asvs_limits(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(
        "import json, time\nfrom asv_runner.benchmarks.time import TimeBenchmark\n"
        "def time_tiny():\n    sum(range(100))\n"
        "time_tiny.repeat, time_tiny.warmup_time, time_tiny.number = (5, 10**6, 10.0), 0, 10\n"
        "t = time.perf_counter()\n"
        "got = TimeBenchmark('time_tiny', time_tiny, [time_tiny]).run()\n"
        "print(json.dumps({'samples': len(got['samples']), 'seconds': time.perf_counter() - t}))\n")
    ran = subprocess.run([sys.executable, str(asv_rounds.WITHOUT_MEM), str(script)], capture_output=True, text=True,
                         check=True, env={**os.environ, round_server.SETTLED_WINDOW: "0.05"})
    got = json.loads(ran.stdout)

    assert got["samples"] >= 5  # asv's min_repeat still holds
    assert got["seconds"] < 8.0  # asv alone samples this for 10 s: the settled best ended it


def test_the_settled_window_leaves_an_asv_runner_timing_loop_of_another_shape_as_it_is(monkeypatch):
    from asv_runner.benchmarks.time import TimeBenchmark

    def other_timing(self, timer, repeat, number):  # a future asv_runner's loop, its parameters changed
        return [], number

    monkeypatch.setattr(TimeBenchmark, "benchmark_timing", other_timing)
    round_server.settle_windows(0.1)

    assert TimeBenchmark.benchmark_timing is other_timing


def test_a_rounds_server_and_benchmarks_write_temporary_files_in_a_folder_removed_with_the_round(
        layout_project, monkeypatch, tmp_path):
    """asv SIGKILLs its server 0.1 s after Ctrl-C, before the server removes its capture files: they go to a folder
    of the round, removed when the round ends."""
    note = tmp_path / "tmpdirs"
    monkeypatch.setenv("ROUND_TMP_NOTE", str(note))
    plan, base, head = _pair(layout_project, monkeypatch)
    result = interleave.run_interleaved(dataclasses.replace(plan, rounds=1, bench="track_tmp"), base, head)
    assert all(c.status == "ok" for side in (result.base, result.head) for c in side.cases.values())
    seen = note.read_text().split()
    assert len(seen) == 2 and len(set(seen)) == 2, seen  # one folder per round of each side
    assert all(os.path.basename(p).startswith("mmtrack-round-") and not os.path.exists(p) for p in seen), seen


def test_the_round_line_counts_against_the_most_rounds_and_bounds_the_time_left():
    from types import SimpleNamespace

    from mmtrack.ab.interleave import round_line

    side = SimpleNamespace(label="B", commit=SimpleNamespace(sha="0123456789ab"))
    assert round_line(0, 12, side, 0.0, 0) == "round 1 of at most 12: B (01234567)"
    # 4 sides done in 20 s: 5 s a side, 24 - 4 sides left at most
    assert round_line(4, 12, side, 20.0, 4) == "round 3 of at most 12: B (01234567), at most about 2 min left"
    assert round_line(22, 12, side, 44.0, 22).endswith("at most about 4 s left")
