"""The per-commit gate through the store gives the harness's verdicts, verdict for verdict.

``scripts/eval_gate.py`` scores the gate on series held in memory (:func:`compare_measurements` with their
history, the next commits and the commit labels that align a run's frames). A user's gate runs another way:
asv results files, ``mmtrack import-asv`` into SQLite, then ``mmtrack compare A B``, which reads each series'
history and later commits back from the store. Here one suite of the CI noise model (``scripts/ci_noise.py``:
20 series sharing their runners, four of them stepped up 20%) is written as asv 0.6 results files without
samples, as asv writes them unless run with ``--record-samples``, imported with the real importer into SQLite and
into PostgreSQL, and judged both ways on every commit after the first 100: the rows must agree.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

import numpy as np
import pytest
from conftest import METPY_RESULTS
from test_ci_noise import _load
from test_store_support import BACKENDS, require_postgres, reset_postgres

from mmtrack.analysis.compare import ComparePolicy, RunLabels, compare_measurements
from mmtrack.commands.compare import CompareRequest, run_compare

HISTORY, LATER, COMMITS, SERIES = 100, 4, 110, 20
COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25",
           "stats_q_75", "stats_number", "stats_repeat", "samples", "profile"]


def _as_asv_writes(samples: np.ndarray) -> list:
    """One benchmark's row of an asv 0.6 results file for one commit, without samples."""
    from asv_runner.statistics import compute_stats

    value, st = compute_stats(list(samples), 1)
    return [[value], [], "v1", 0, 1.0, [st["ci_99_a"]], [st["ci_99_b"]], [st["q_25"]], [st["q_75"]], [1], [st["repeat"]]]


@pytest.fixture(scope="module", params=BACKENDS)
def suite(request, tmp_path_factory):
    noise, harness = _load("ci_noise"), _load("eval_detect")
    rng = np.random.default_rng(20261212)  # its runs change runner 12 times in the last 40
    runners = noise.suite_runners(rng, COMMITS)
    series = []
    for i in range(SERIES):
        values, samples = noise.ci_series(rng, COMMITS, suite=runners)
        if i < 4:  # a +20% step on the commits judged below, one each
            values, samples = noise.inject_step(values, samples, HISTORY + 1 + i, 0.20)
        series.append(samples)
    # The MetPy results kept in tests/data give the file's frame: machine, environment, benchmark names.
    template_file = next(f for f in sorted((METPY_RESULTS / "Docker_Container").glob("*.json"))
                         if f.name != "machine.json")
    template = json.loads(template_file.read_text())
    names = sorted(template["results"])[:SERIES]
    tmp = tmp_path_factory.mktemp("gate-store")
    results = tmp / "results"
    (results / "Docker_Container").mkdir(parents=True)
    for name in ("benchmarks.json", "Docker_Container/machine.json"):
        (results / name).write_text((METPY_RESULTS / name).read_text())
    shas = [hashlib.sha1(f"commit {t}".encode()).hexdigest() for t in range(COMMITS)]
    for t, sha in enumerate(shas):
        doc = {**template, "commit_hash": sha, "date": 1_700_000_000_000 + t * 86_400_000, "result_columns": COLUMNS,
               "results": {name: _as_asv_writes(series[i][t]) for i, name in enumerate(names)}, "durations": {}}
        (results / "Docker_Container" / f"{sha[:8]}-{template['env_name']}.json").write_text(json.dumps(doc))
    if request.param == "sqlite":
        db = str(tmp / "gate.db")
    else:  # a real PostgreSQL server (MMTRACK_TEST_PG)
        db = require_postgres()
        reset_postgres(db)
    from mmtrack.store.asv_import import import_asv_results
    from mmtrack.store.db import open_store

    store = open_store(db)
    try:
        import_asv_results(store, results)
    finally:
        store.close()
    # The same commits as the harness holds them (eval_gate --no-samples: eval_detect's measurement, no samples).
    held = {name: [dataclasses.replace(harness.measurement(s), benchmark=name, samples=()) for s in series[i]]
            for i, name in enumerate(names)}
    return {"db": db, "shas": shas, "names": names, "measurements": held}


def _in_memory(suite, t: int) -> dict:
    """The harness's judgement of run ``t`` (``eval_gate.judge_run``): the same commits held in memory."""
    shas, ms = suite["shas"], suite["measurements"]
    cases = {name: ms[name][t].case for name in ms}
    first, last = max(0, t - HISTORY), min(COMMITS, t + 1 + LATER)
    history = {cases[n]: [m.median for m in ms[n][first:t]] for n in ms}
    later = {cases[n]: [m.median for m in ms[n][t + 1 : last]] for n in ms}
    labels = RunLabels(shas[t - 1], shas[t], {c: shas[first:t] for c in history}, {c: shas[t + 1 : last] for c in later})
    comparison = compare_measurements([ms[n][t - 1] for n in ms], [ms[n][t] for n in ms], ComparePolicy(),
                                      history=history, later=later, labels=labels)
    return {r.benchmark: r for r in comparison.rows}


@pytest.mark.parametrize("t", range(HISTORY, COMMITS))
def test_compare_through_the_store_gives_the_harness_verdicts(suite, t):
    shas = suite["shas"]
    out = run_compare(CompareRequest(a=shas[t - 1][:12], b=shas[t][:12], db=suite["db"]))
    stored = {r.benchmark: r for r in out.comparison.rows}
    expected = _in_memory(suite, t)
    assert set(stored) == set(expected) == set(suite["names"])
    for name, row in expected.items():
        got = stored[name]
        assert (got.verdict, got.state, got.note, got.test) == (row.verdict, row.state, row.note, row.test), name
        assert got.history_z == pytest.approx(row.history_z) if row.history_z is not None else got.history_z is None


def test_the_runs_judged_hold_every_kind_of_verdict(suite):
    """What the equivalence above is worth: the runs judged are not all quiet. The suite changes runner (the
    whole run moves, both ways, and once the next commits leave that runner), series are suspected and confirmed,
    and many stay within their noise."""
    seen = {(r.verdict, r.state, (r.note or "").split(" ×")[0].split(":")[0])
            for t in range(HISTORY, COMMITS) for r in _in_memory(suite, t).values()}
    assert {("regressed", "confirmed"), ("improved", "suspected")} <= {k[:2] for k in seen}
    assert ("ambiguous", None, "the whole run moved") in seen
    assert ("unchanged", None, "the whole run moved") in seen  # a runner change the next commits refuted
    assert ("ambiguous", None, "within the series' own noise") in seen
