"""One verdict per pair (issue 43): ``continuous``, ``run --confirm`` and ``bisect``'s check of its culprit judge the
same rounds by the same rule (:mod:`mmtrack.ab.rule`), through the same path
(:func:`mmtrack.ab.verdicts.pair_verdicts`), and say the same words. Fixed round bests stand in for the rounds;
nothing is built or measured."""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from mmtrack.ab import calibrate
from mmtrack.ab.envs import CommitEnv
from mmtrack.ab.interleave import ABPlan, ABResult, PooledCase, Side
from mmtrack.ab.rule import decide, equivalent
from mmtrack.asvbridge.asvrun import CaseResult
from mmtrack.measure.metrics import Direction
from mmtrack.results import CommitInfo, MetricKey

#: A side's round bests: six rounds of one build, 0.6% apart (a quiet machine).
BASE = [1.000, 1.004, 0.998, 1.002, 0.999, 1.003]
CASE = ("b.time_x", "{}")
METRIC = MetricKey("timing", "time_per_op", "s")


def scaled(factor: float, rounds: list[float] = BASE) -> list[float]:
    return [v * factor for v in reversed(rounds)]


@pytest.fixture
def builds_read(monkeypatch, tmp_path):
    """``builds_read(ratio)``: the base's two builds read ``ratio`` apart on this machine (the A/A offset calibrate
    keeps beside the second build); the rule's recheck runs, nothing is built. Default: alike (×1.000)."""

    def offset(ratio: float = 1.0) -> None:
        class Known(dict):
            def __contains__(self, key: object) -> bool:
                return True

            def get(self, key: object, default: object = None) -> tuple[float, int]:
                return ratio, calibrate.AA_ROUNDS

        twin = CommitEnv("a" * 40, tmp_path, Path(sys.executable), 0.0, True)
        monkeypatch.setattr(calibrate, "build_env", lambda *args, **kwargs: twin)
        monkeypatch.setattr(calibrate, "load_offsets", lambda path, machine: Known())

    offset()
    return offset


def side(label: str, bests: list[float]) -> Side:
    case = PooledCase(*CASE[:1], {}, unit="seconds")
    for best in bests:
        case.add(CaseResult(CASE[0], {}, "ok", value=best, samples=(best,), unit="seconds"))
    env = CommitEnv(label * 40, Path("."), Path(sys.executable), 0.0, True)
    return Side(label, CommitInfo(label * 40), env, cases={CASE: case})


def measured(a: list[float], b: list[float]) -> ABResult:
    rounds = len(a)
    return ABResult(side("A", a), side("B", b), rounds, list("AB" * rounds), "box", datetime.now(timezone.utc))


def plan_for(rounds: int) -> ABPlan:
    """A plan that asks no more rounds of settle than were measured."""
    return ABPlan(Path("."), Path("asv.conf.json"), {}, "box", "b.time_x", rounds=rounds, max_rounds=0)


def continuous_row(a: list[float], b: list[float], factor: float | None = None):
    from mmtrack.ab.verdicts import pair_verdicts
    from mmtrack.commands.continuous import policy_for

    (row,) = pair_verdicts(plan_for(len(a)), Path("."), measured(a, b), policy_for(factor)).rows
    return row


def confirm_of(a: list[float], b: list[float], history_verdict: str = "regressed"):
    """``run --confirm``'s settlement of a history row ``history_verdict`` by these rounds."""
    from mmtrack.ab.confirm import confirm_policy, confirmations
    from mmtrack.ab.verdicts import pair_verdicts
    from mmtrack.analysis.compare import Row

    history = Row(CASE[0], CASE[1], METRIC, Direction.LOWER, history_verdict, None, None, ratio=1.2, state="suspected")
    comparison = pair_verdicts(plan_for(len(a)), Path("."), measured(a, b), confirm_policy())
    (c,) = confirmations([history], comparison, len(a))
    return c


def bisect_check(a: list[float], b: list[float]):
    """``bisect``'s check of a culprit against its parent, its measurement these rounds."""
    from mmtrack.ab.bisect import Bisector

    class Fixed(Bisector):
        def measure(self, good, other, rounds):
            return measured(a, b)

    bisector = Fixed(plan_for(len(a)), Path("."), "time_per_op")
    bisector.target = (CASE, METRIC)
    return bisector.check("a" * 40, "b" * 40)


def test_the_rule_names_a_significant_move_below_the_threshold():
    said = decide(BASE, scaled(1.037), Direction.LOWER, 0.05)
    assert said.verdict == "unchanged" and said.p_value < 0.001
    assert said.note == "×1.037, p < 0.001, below the 5% threshold"
    quiet = decide(BASE, scaled(1.002), Direction.LOWER, 0.05)
    assert quiet.verdict == "unchanged" and quiet.note == ""


def test_the_rule_flags_beyond_the_threshold_either_way_and_doubts_the_edge():
    assert decide(BASE, scaled(1.20), Direction.LOWER, 0.05).verdict == "regressed"
    assert decide(BASE, scaled(0.80), Direction.LOWER, 0.05).verdict == "improved"
    assert decide(BASE, scaled(0.80), Direction.HIGHER, 0.05).verdict == "regressed"
    edge = decide(BASE, scaled(1.045), Direction.LOWER, 0.05)
    assert edge.verdict == "ambiguous" and "at the threshold edge (4.5% vs 5%)" in edge.note
    # The threshold applies to the ratio the row shows: the same rounds flag at 5% and not at 10%.
    assert decide(BASE, scaled(1.07), Direction.LOWER, 0.05).verdict == "regressed"
    assert decide(BASE, scaled(1.07), Direction.LOWER, 0.10).verdict == "unchanged"


def test_an_unchanged_benchmark_leaves_after_one_balanced_block_only_when_bounded():
    assert equivalent(BASE[:2], scaled(1.0, BASE[:2]), Direction.LOWER, 0.05)
    assert not equivalent(BASE[:2], scaled(1.03, BASE[:2]), Direction.LOWER, 0.05)
    assert not equivalent(BASE[:1], scaled(1.0, BASE[:1]), Direction.LOWER, 0.05)
    # Later, two fast rounds among more are too thin a sample: the machine's slow state took the others.
    slow_state = [1.5, 1.0, 1.5, 1.0, 1.5]
    assert not equivalent(slow_state, scaled(1.0, slow_state), Direction.LOWER, 0.05)
    assert equivalent([*slow_state, 1.0], scaled(1.0, [*slow_state, 1.0]), Direction.LOWER, 0.05)


@pytest.mark.parametrize("factor, verdict, state", [(1.037, "unchanged", "refuted"), (1.20, "regressed", "confirmed"),
                                                    (1.07, "regressed", "refuted")])
def test_continuous_and_bisect_say_the_same_of_the_same_rounds(builds_read, factor, verdict, state):
    """The pair of the issue: bisect read ×1.050 `regressed` at its search's 2% where continuous read ×1.037
    `unchanged` at 5%. Both now judge at the A/B threshold, by one rule, in the same words; run --confirm judges
    at the history's 10% (it settles what history suspected there), and says what continuous at --factor 1.1 says."""
    rows = continuous_row(BASE, scaled(factor)), bisect_check(BASE, scaled(factor))
    assert {r.verdict for r in rows} == {verdict}
    assert len({(r.ratio, r.p_value, r.note, r.threshold) for r in rows}) == 1
    c, at_ten = confirm_of(BASE, scaled(factor)), continuous_row(BASE, scaled(factor), factor=1.10)
    assert c.state == state and (c.ratio, c.p_value, c.note) == (at_ten.ratio, at_ten.p_value, at_ten.note)
    if factor == 1.037:
        assert rows[0].note == "×1.037, p < 0.001, below the 5% threshold"
        assert c.note == "×1.037, p < 0.001, below the 10% threshold"


def test_every_verb_widens_a_flag_by_the_same_a_a_offset(builds_read):
    """Two builds of the base read ×1.06 apart: a ×1.07 move is within that tolerance for every verb alike."""
    builds_read(1.06)
    rows = continuous_row(BASE, scaled(1.07)), bisect_check(BASE, scaled(1.07))
    assert {r.verdict for r in rows} == {"unchanged"} and len({(r.note, r.threshold) for r in rows}) == 1
    assert "A/A-calibrated" in rows[0].note and rows[0].threshold > 0.10
    builds_read(1.0)
    assert {continuous_row(BASE, scaled(1.07)).verdict, bisect_check(BASE, scaled(1.07)).verdict} == {"regressed"}


def test_the_rerun_selection_takes_a_parameterised_benchmark_by_asvs_own_filter():
    """The undecided benchmarks re-run alone: asv matches a parameterised benchmark's regex against
    ``name(p0, p1)`` only, so a bare ``^(name)$`` selected nothing and the re-run failed."""
    from types import SimpleNamespace

    from asv.benchmarks import Benchmarks

    from mmtrack.ab.interleave import bench_regex

    found = [
        {"name": "b.Units.track_parse", "params": [["10", "70"]], "param_names": ["lines"], "type": "track"},
        {"name": "b.Units.track_parse_csv", "params": [], "param_names": [], "type": "track"},
        {"name": "b.Plain.time_add", "params": [], "param_names": [], "type": "time"},
    ]
    rows = [SimpleNamespace(benchmark="b.Units.track_parse"), SimpleNamespace(benchmark="b.Plain.time_add")]
    chosen = Benchmarks(SimpleNamespace(benchmark_dir="benchmarks"), found, regex=bench_regex(rows))
    assert sorted(chosen) == ["b.Plain.time_add", "b.Units.track_parse"]
