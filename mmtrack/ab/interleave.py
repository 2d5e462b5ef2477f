"""Interleaved A/B rounds of two built commits on this machine, under the real asv.

Each round runs the selected benchmarks once per side, each side in its own
``asv run --environment existing:<that commit's python> --set-commit-hash=SHA``
with its own results folder and spool, in the order A B, B A, A B, ... so that a
drift of the machine during the job (heat, a neighbour's load) falls on both
sides alike. The suite is the working tree's, as asv does for every commit.

The rounds of a side are pooled per case for the store (:mod:`mmtrack.ab.pooling`):
asv's samples of plain benchmarks, every per-sample value of every metric of engine
benchmarks, :meth:`Side.measurements`. Each
round also leaves its best sample per metric (:func:`round_best`); :func:`judge`
compares those of the machine's fast mode (:func:`fast_mode`, :meth:`Side.round_measurements`,
:func:`round_evidence`), and :func:`settle` re-runs the benchmarks still undecided.
"""

from __future__ import annotations

import json
import math
import shutil
import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

from ..asvbridge import asv_rounds, asvrun, callgrind_run, round_server
from ..results import PRIMARY, CommitInfo, Measurement, MetricKey, canonical_params
from .envs import CommitEnv
from .pooling import CaseKey, PooledCase, round_best  # noqa: F401  (re-exported: A/B code and tests read them here)
from .round_environ import randomised_layout, side_environ
from .rule import (  # noqa: F401  (the rule's names, as A/B code and tests have always read them here)
    AB_THRESHOLD,
    EQUIVALENCE_ALPHA,
    EQUIVALENCE_MIN_ROUNDS,
    MIN_ROUNDS,
    MODE_GAP,
    RANK_MIN_ROUNDS,
    ROUND_ALPHA,
    ROUND_SD_FLOOR,
    decide,
    equivalent,
    fast_mode,
    rank_evidence,
    round_evidence,
    slower_side_stray,
)


@dataclass(slots=True)
class Side:
    label: str  # "A" (base) or "B" (head)
    commit: CommitInfo
    env: CommitEnv
    cases: dict[CaseKey, PooledCase] = field(default_factory=dict)
    environment: str = ""  # asv's environment name of the side's runs
    run_seconds: float = 0.0
    suite: list[dict[str, Any]] | None = None  # asv's discovery of the suite (in the first side's build), once a run

    def measurements(self, only: set[CaseKey] | None = None) -> list[Measurement]:
        return [m for k, c in sorted(self.cases.items()) if only is None or k in only for m in c.measurements()]

    def round_measurements(self) -> list[Measurement]:
        return [m for _, c in sorted(self.cases.items()) for m in c.round_measurements()]


@dataclass(slots=True)
class ABResult:
    base: Side
    head: Side
    rounds: int
    order: list[str]  # the labels in the order they ran, e.g. ["A", "B", "B", "A"]
    machine: str
    started_at: datetime
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ABPlan:
    """What to run: the project, its asv config, the suite selection and the budget."""

    project: Path
    config_path: Path
    config: dict[str, Any]
    machine: str
    bench: str | None = None  # asv -b regex
    rounds: int = 6
    quick: bool = False
    asv_args: tuple[str, ...] = ()
    budget: float | None = None  # seconds of measuring; no new round starts that would overrun it
    max_rounds: int = 0  # :func:`settle` adds rounds for undecided benchmarks up to this (0: never)
    instrument: str = "wall"  # "callgrind": each side counted once under Valgrind (asvbridge/callgrind_run.py)
    early_stop: bool = True  # :func:`measure_pair` runs :data:`EARLY_LOOK` rounds, :func:`settle` the rest as needed


#: One round of one side: a single asv process round, up to a second per benchmark (engine benchmarks included), of
#: short samples: one shorter than the scheduler's time slice often runs undisturbed on a loaded machine, so a round's
#: best sample (:func:`round_best`) is the code's own cost, where asv's longer default is cut by a neighbour. A second,
#: not less: the machine's slow spells last that long, and a longer window more often reaches a fast stretch (the
#: figures: docs/design/ab.md, "How a run goes"). A time benchmark's window ends sooner once its best has settled
#: (:data:`SETTLED_WINDOW`), so a long warm-up is needless. ``asv_args`` given later win.
ROUND_BUDGET = ("-a", "rounds=1", "-a", "repeat=(10, 250, 1.0)", "-a", "sample_time=0.002", "-a", "warmup_time=0.05")

#: The least window of samples of a benchmark in a round, in seconds; past it the window ends once the round's best
#: has settled (:func:`mmtrack.asvbridge.round_server.settle_windows`), at the latest at ``ROUND_BUDGET``'s second.
#: The best comes early on a quiet machine, and only the best counts (docs/design/archive/ab-settled-window.md).
SETTLED_WINDOW = 0.1


#: Rounds every benchmark runs before it may leave the A/B run decided either way (:func:`settle`): one
#: balanced A B B A block, enough for the equivalence test (:func:`.rule.equivalent`); a change needs
#: :data:`.rule.MIN_ROUNDS` to be confirmed, so a changed benchmark runs on alone.
EARLY_LOOK = EQUIVALENCE_MIN_ROUNDS


def round_order(rounds: int) -> list[int]:
    """Side indexes per slot: 0 1, 1 0, 0 1, ... (A B B A A B ...)."""
    return [i if r % 2 == 0 else 1 - i for r in range(rounds) for i in (0, 1)]


def run_interleaved(plan: ABPlan, base: Side, head: Side, progress: Callable[[str], None] | None = None) -> ABResult:
    """Run ``plan.rounds`` rounds of both sides interleaved; both sides' cases pooled."""
    result = ABResult(base, head, 0, [], plan.machine, datetime.now(timezone.utc))
    run_rounds(plan, result, plan.rounds, progress)
    return result


def round_line(slot: int, cap: int, side: Side, spent: float, slots_done: int) -> str:
    """The progress line of one round of one side: its number against the most the phase can take, and, once a
    round has run, the time those would take at most at the pace so far."""
    line = f"round {slot // 2 + 1} of at most {cap}: {side.label} ({side.commit.sha[:8]})"
    if slots_done:
        left = spent / slots_done * max(2 * cap - slot, 0)
        line += f", at most about {left / 60:.0f} min left" if left >= 90 else f", at most about {left:.0f} s left"
    return line


def run_rounds(plan: ABPlan, result: ABResult, rounds: int, progress: Callable[[str], None] | None = None,
               bench: str | None = None, cap: int | None = None) -> None:
    """``rounds`` more rounds of both sides, continuing ``result``'s order; ``bench``: asv's -b for
    these rounds (default the plan's); ``cap``: the most rounds this phase can reach, which the progress line
    counts against (default the plan's ``max_rounds`` or ``rounds``). The rounds stop early once ``plan.budget``
    would be overrun."""
    from dataclasses import replace

    t0 = time.perf_counter()
    sides = (result.base, result.head)
    first = result.rounds
    cap = max(cap or max(plan.max_rounds, plan.rounds), first + rounds)
    plan = replace(plan, bench=bench or plan.bench)
    workdir = Path(tempfile.mkdtemp(prefix="mmtrack-ab-"))
    try:
        for slot, index in enumerate(round_order(first + rounds)[2 * first:], start=2 * first):
            spent = result.seconds + time.perf_counter() - t0
            if plan.budget is not None and slot and slot % 2 == 0 and spent / (slot // 2) + spent > plan.budget:
                result.warnings.append(f"stopped after {slot // 2} of {first + rounds} rounds: --confirm-budget "
                                       f"{plan.budget:.0f} s")
                break
            side = sides[index]
            if progress:
                progress(round_line(slot, cap, side, spent, len(result.order)))
            t = time.perf_counter()
            collected = run_once(plan, side, workdir / f"{slot:03d}-{side.label}")
            side.run_seconds += time.perf_counter() - t
            side.environment = side.environment or collected.environment
            for other in sides:  # one discovery for both sides, as asv continuous discovers once
                other.suite = other.suite or side.suite
            result.order.append(side.label)
            result.rounds = len(result.order) // 2
            result.warnings.extend(w for w in collected.warnings if w not in result.warnings)
            for case in collected.cases:
                key = (case.benchmark, canonical_params(case.params))
                side.cases.setdefault(key, PooledCase(case.benchmark, dict(case.params))).add(case)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        result.seconds += time.perf_counter() - t0


def settle(plan: ABPlan, result: ABResult, policy: Any = None, progress: Callable[[str], None] | None = None) -> Any:
    """:func:`judge`, then more rounds of only the benchmarks still open; the last comparison.

    Up to ``plan.rounds``, a benchmark stays open until it is decided either way (:func:`decided`), one
    round at a time, as bisect's sequential test stops once a step is decided: a confirmed change, or
    rounds that bound the change inside the threshold. From ``plan.rounds`` to ``plan.max_rounds``,
    only the ``ambiguous`` ones stay, two rounds at a time: too few fast-mode rounds, or a difference the
    rounds cannot yet tell from their scatter. The machine's slow spells take whole rounds, so a fixed
    count sometimes leaves too few clean ones; rounds for those benchmarks alone cost far less than
    raising ``--rounds`` for all.
    """
    comparison = judge(result, policy)
    while not _over_budget(plan, result):
        early = result.rounds < plan.rounds
        cap = plan.rounds if early else plan.max_rounds
        open_rows = [r for r in comparison.rows if r.ratio is not None and not beside_the_wall_clock(r, result)
                     and (r.verdict == "ambiguous" or (early and not decided(r, result)))]
        if not open_rows or result.rounds >= cap:
            break
        if progress:
            progress(f"{len({r.benchmark for r in open_rows})} benchmarks undecided after {result.rounds} rounds")
        before = result.rounds
        run_rounds(plan, result, 1 if early else min(2, cap - result.rounds), progress, bench_regex(open_rows))
        if result.rounds == before:
            break
        comparison = judge(result, policy)
    return comparison


def decided(row: Any, result: ABResult) -> bool:
    """``row`` needs no more rounds: a confirmed change, or fast-mode rounds whose difference an equivalence
    test bounds inside the row's threshold (:func:`.rule.equivalent`)."""
    if row.verdict in ("regressed", "improved"):
        return True
    if row.verdict != "unchanged" or row.ratio is None:
        return False
    case = (row.benchmark, row.params)
    metric = judged_metric(result, case, row.metric)
    direction = result.base.cases[case].directions.get(metric, row.direction)
    return equivalent(*round_bests(result, case, metric), direction, row.threshold)


def beside_the_wall_clock(row: Any, result: ABResult) -> bool:
    """An asv time benchmark's CPU-time reading (CPU time per op, wall/CPU): its wall-clock row decides the case,
    on CPU time where it waited, so these keep no benchmark in the rounds."""
    pooled = result.base.cases.get((row.benchmark, row.params))
    return pooled is not None and any(MetricKey(*m.key) == row.metric for m in pooled.cpu_metrics)


def judged_metric(result: ABResult, case: CaseKey, metric: MetricKey) -> MetricKey:
    """The metric whose rounds decide ``metric``'s row: CPU time per op for the wall clock of a case that waited for
    a CPU on either side (:func:`mmtrack.analysis.contention.judged_on_cpu_time_where_waited`), else ``metric``."""
    from ..analysis import contention
    from ..measure import contention as engine

    if (metric.section, metric.name) != (PRIMARY.section, PRIMARY.name):
        return metric
    cpu = ratio = None
    for side in (result.base, result.head):
        for key, bests in side.cases.get(case, PooledCase("", {})).round_bests.items():
            if (key.section, key.name) == contention.CPU_TIME:
                cpu = key
            elif (key.section, key.name) == (engine.SECTION, engine.NAME) and engine.waited(statistics.fmean(bests)):
                ratio = key
    return cpu if cpu is not None and ratio is not None else metric


def _over_budget(plan: ABPlan, result: ABResult) -> bool:
    return plan.budget is not None and result.rounds > 0 and result.seconds * (1 + 1 / result.rounds) > plan.budget


def bench_regex(rows: Sequence[Any]) -> str:
    """asv's -b for exactly these benchmarks (asv matches the regex anywhere in the full name, and a parameterised
    benchmark's as ``name(p0, p1)`` only, so every parameter set of a named one is taken)."""
    import re

    return "^(" + "|".join(sorted({re.escape(r.benchmark) for r in rows})) + r")(\(.*\))?$"


def _suite_dir(plan: ABPlan) -> Path:
    """The working tree's benchmark folder: the suite both sides run, as asv does for every commit."""
    return (plan.config_path.parent / str(plan.config.get("benchmark_dir", "benchmarks"))).resolve()


def _derived_config(plan: ABPlan, folder: Path) -> Path:
    derived = dict(plan.config)
    derived["benchmark_dir"] = str(_suite_dir(plan))
    derived["results_dir"] = str(folder / "results")
    derived["html_dir"] = str(folder / "html")
    derived["env_dir"] = str(folder / "env")
    derived["repo"] = str(asvrun.config_repo(plan.config_path, plan.config, plan.project))
    derived["environment_type"] = "existing"
    derived.pop("matrix", None)
    derived.pop("pythons", None)
    path = folder / "asv.conf.json"
    path.write_text(json.dumps(derived, indent=2))
    return path


def prepared_for(plan: ABPlan, side: Side, folder: Path) -> asvrun.Prepared:
    """What ``mmtrack run`` would have prepared for this side, in its own folder."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "spool").mkdir(exist_ok=True)
    return asvrun.Prepared(
        project=plan.project,
        config=plan.config,
        config_path=plan.config_path,
        derived_config=_derived_config(plan, folder),
        workdir=folder,
        commit=side.commit,
        machine=plan.machine,
        spool_dir=folder / "spool",
        run_id=uuid.uuid4().hex,
        results_dir=folder / "results",
    )


def run_once(plan: ABPlan, side: Side, folder: Path) -> asvrun.Collected:
    """One round of one side; its cases with their samples and engine records. asv's runner runs it from this
    process (:mod:`mmtrack.asvbridge.asv_rounds`), the suite discovered once per side; an asv option it does not
    carry over runs ``asv run`` itself."""
    prepared = prepared_for(plan, side, folder)
    if plan.instrument == "callgrind":  # the side's build runs the working tree's suite under Valgrind
        return callgrind_run.measure(prepared, plan.bench, None, python=side.env.python,
                                     without=_repo_of(prepared),
                                     profiles=callgrind_run.profiles_of(plan.project, side.commit.sha))
    asvrun.ensure_machine(prepared)
    args = asv_rounds.round_args((*(("--quick",) if plan.quick else ()), *ROUND_BUDGET, *plan.asv_args))
    if args is None:
        return _run_asv_process(plan, side, prepared)
    environ = {**randomised_layout(side_environ(prepared, _repo_of(prepared))),
               round_server.SETTLED_WINDOW: str(SETTLED_WINDOW)}
    if side.suite is None:
        side.suite = asv_rounds.discover(prepared, str(side.env.python), environ, side.env.path)
    started = datetime.now(timezone.utc)
    path = asv_rounds.run_round(prepared, side.suite, str(side.env.python), environ,
                                [plan.bench] if plan.bench else [], args)
    if path is None or not path.is_file():
        raise _no_result(plan, side, "asv's runner", "")
    return asvrun.collect(prepared, path, started, plan.bench, asvrun.asv_error_advice(side.commit.sha))


def _repo_of(prepared: asvrun.Prepared) -> Path:
    return asvrun.config_repo(prepared.config_path, prepared.config, prepared.project)


def _run_asv_process(plan: ABPlan, side: Side, prepared: asvrun.Prepared) -> asvrun.Collected:
    """One round of one side by ``asv run`` itself (asv options a round in this process does not carry)."""
    request = asvrun.AsvInvocation(project=plan.project, quick=plan.quick, bench=plan.bench, machine=plan.machine,
                                python=str(side.env.python), asv_args=(*ROUND_BUDGET, *plan.asv_args))
    since = time.time()
    started = datetime.now(timezone.utc)
    proc = _run_quiet(asvrun.asv_run_command(prepared, request), prepared)
    path = asvrun.results_file(prepared, since)
    if path is None:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
        raise _no_result(plan, side, "asv run", " | ".join(tail), f" exited {proc.returncode} and")
    return asvrun.collect(prepared, path, started, plan.bench, asvrun.asv_error_advice(side.commit.sha))


def _no_result(plan: ABPlan, side: Side, who: str, tail: str, how: str = "") -> Exception:
    from ..errors import UserError

    return UserError(
        f"{who} of {side.label} ({side.commit.sha[:12]}){how} wrote no result"
        + (f" (-b {plan.bench!r} may match no benchmark)" if plan.bench else "")
        + (f": {tail}" if tail else "")
    )


def _run_quiet(cmd: Sequence[str], prepared: asvrun.Prepared) -> Any:
    import subprocess

    env = randomised_layout(side_environ(prepared, _repo_of(prepared)))
    return subprocess.run(list(cmd), cwd=prepared.project, env=env, capture_output=True, text=True)


# -- a whole A/B measurement: plan, builds, rounds --------------------------------------------
def make_plan(project: Path, config: Path | None, machine: str | None, bench: str | None, rounds: int,
              quick: bool = False, asv_args: tuple[str, ...] = ()) -> tuple[ABPlan, Path]:
    """The plan for ``project`` and the git top level its commits come from."""
    from ..asvbridge.host import asv_machine
    from ..errors import UserError
    from ..vcs import git_output

    if rounds < 1:
        raise UserError(f"--rounds {rounds}: need at least 1 round per side")
    project = project.resolve()
    config_path = asvrun.find_config(project, config)
    cfg = asvrun.load_config(config_path)
    top = git_output(asvrun.config_repo(config_path, cfg, project), "rev-parse", "--show-toplevel")
    if not top:
        raise UserError(f"{project}: not a git repository; A/B runs build commits, so run in a git checkout")
    machine = asv_machine(machine)
    return ABPlan(project, config_path, cfg, machine, bench, rounds, quick, asv_args), Path(top)


def env_cache(plan: ABPlan) -> Path:
    return plan.project / ".mmtrack" / "envs"


def build_side(plan: ABPlan, repo: Path, sha: str, label: str) -> Side:
    from ..vcs import commit_info
    from .envs import build_env

    commit = commit_info(repo, sha, check_dirty=False)
    return Side(label, commit, build_env(repo, sha, env_cache(plan), plan.config))


def discovered(plan: ABPlan, side: Side) -> tuple[list[str], list[str]] | None:
    """(all, selected): the working tree's benchmarks as asv's discovery finds them in ``side``'s build (kept for its
    rounds), and those ``plan.bench`` selects by asv's own rule (a parameterised benchmark's name with its parameters
    counts too); None when discovery fails there, whose error the rounds then report."""
    from types import SimpleNamespace

    from asv.benchmarks import Benchmarks

    from ..errors import UserError

    with tempfile.TemporaryDirectory(prefix="mmtrack-discover-") as tmp:
        prepared = prepared_for(plan, side, Path(tmp))
        try:
            side.suite = side.suite or asv_rounds.discover(prepared, str(side.env.python),
                                                           side_environ(prepared, _repo_of(prepared)),
                                                           side.env.path)
        except UserError:
            return None
    try:
        chosen = Benchmarks(SimpleNamespace(benchmark_dir=str(_suite_dir(plan))), side.suite, regex=plan.bench)
    except (TypeError, KeyError):
        return None
    return sorted(b["name"] for b in side.suite), sorted(chosen.keys())


def refuse_empty_selection(plan: ABPlan, side: Side) -> None:
    """A ``-b`` that selects nothing is refused after the first build, not after every build and a round."""
    from ..errors import UserError

    if not plan.bench:
        return
    names = discovered(plan, side)
    if names is None or names[1]:
        return
    suite, _ = names
    some = ", ".join(suite[:3]) + (", ..." if len(suite) > 3 else "")
    raise UserError(
        f"-b {plan.bench!r} selects none of the {len(suite)} benchmark(s) asv discovers in the suite"
        + (f" ({some})" if suite else "")
        + "; it is a regular expression searched in each benchmark's full name, so pick one that matches"
    )


def build_pair(plan: ABPlan, repo: Path, base_sha: str, head_sha: str) -> tuple[Side, Side]:
    """Both sides, the head built on the second core while the base builds and its suite is discovered: a cold
    run's builds and discovery are processes of their own, and nothing is measured until both are done."""
    from concurrent.futures import ThreadPoolExecutor

    if base_sha == head_sha:  # one build: the head's call reads the base's from the cache
        base = build_side(plan, repo, base_sha, "A")
        refuse_empty_selection(plan, base)
        return base, build_side(plan, repo, head_sha, "B")
    from .envs import ABANDONED

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mmtrack-build") as pool:
        head = pool.submit(build_side, plan, repo, head_sha, "B")
        try:
            base = build_side(plan, repo, base_sha, "A")
            refuse_empty_selection(plan, base)
            discover_suite(plan, base)
        except BaseException:
            ABANDONED.set()  # the head's build stops before its next pip attempt: no wait for a build nobody reads
            try:
                head.exception()
            finally:
                ABANDONED.clear()
            raise
        return base, head.result()


def discover_suite(plan: ABPlan, side: Side) -> None:
    """The suite's discovery in ``side``'s build, ahead of its first round (a failure: the rounds report it)."""
    if plan.instrument == "wall" and side.suite is None:
        discovered(plan, side)


def measure_pair(plan: ABPlan, repo: Path, base_sha: str, head_sha: str,
                 progress: Callable[[str], None] | None = None) -> ABResult:
    """Build (or reuse) both commits and run the interleaved rounds."""
    if progress:
        same = " (the same commit: an A/A run, which measures this machine's noise)" if base_sha == head_sha else ""
        progress(f"building {base_sha[:8]} and {head_sha[:8]}{same}")
    base, head = build_pair(plan, repo, base_sha, head_sha)
    if plan.early_stop:  # :func:`settle` adds rounds up to plan.rounds for the benchmarks still undecided
        from dataclasses import replace

        return run_interleaved(replace(plan, rounds=min(plan.rounds, EARLY_LOOK)), base, head, progress)
    return run_interleaved(plan, base, head, progress)


def judge(result: ABResult, policy: Any = None) -> Any:
    """The verdict on each metric, direction-aware, from the rounds: :func:`.rule.decide`, the one A/B rule.

    compare reads what no number decides (new, removed, failed, not comparable) and deterministic counts;
    every measured metric is then decided by the rule on both sides' round bests (:func:`round_best`),
    at compare's threshold for it; a case whose wall clock waited for a CPU takes its CPU time's verdict
    (:func:`mmtrack.analysis.contention.judged_on_cpu_time_where_waited`). Significance is the rounds', not a
    test on the pooled samples: samples of one round come from one asv process in one stretch of the machine's
    load, so they share that process's layout and that load, and pooled they make any sample test
    overconfident. The round is the independent unit.
    """
    import dataclasses

    from ..analysis import contention
    from ..analysis.compare import ComparePolicy, compare_measurements

    policy = policy or ComparePolicy()
    alpha = ROUND_ALPHA if policy.round_alpha is None else policy.round_alpha
    comparison = compare_measurements(
        result.base.round_measurements(), result.head.round_measurements(),
        dataclasses.replace(policy, alpha=1.0),  # the samples test is off: the round rule below decides
        before_label=f"A {result.base.commit.sha[:8]}", after_label=f"B {result.head.commit.sha[:8]}",
    )
    base, head = result.base.round_measurements(), result.head.round_measurements()
    rows = contention.judged_on_cpu_time_where_waited(tuple(_by_rule(row, result, alpha) for row in comparison.rows),
                                                      {m.case: m for m in base}, {m.case: m for m in head})
    return dataclasses.replace(comparison, rows=rows, policy=policy)


def _by_rule(row: Any, result: ABResult, alpha: float) -> Any:
    """``row`` as :func:`.rule.decide` reads its rounds; a row no round decides (a count, a failure) as compare left
    it."""
    import dataclasses

    counted = row.test == "deterministic"  # a count needs no rounds (analysis/deterministic.py)
    a, b = round_bests(result, (row.benchmark, row.params), row.metric)
    if counted or row.ratio is None or not (a and b) or row.verdict not in ("regressed", "improved", "unchanged",
                                                                               "ambiguous"):
        return row
    direction = result.base.cases[(row.benchmark, row.params)].directions.get(row.metric, row.direction)
    said = decide(a, b, direction, row.threshold, alpha)
    return dataclasses.replace(row, verdict=said.verdict, ratio=said.ratio, p_value=said.p_value, test="rounds",
                               note=said.note, near_threshold=said.near_threshold)


def round_bests(result: ABResult, case: CaseKey, metric: MetricKey) -> tuple[list[float], list[float]]:
    """Both sides' round bests of one metric (empty without rounds)."""
    a = result.base.cases.get(case)
    b = result.head.cases.get(case)
    if a is None or b is None:
        return [], []
    return a.round_bests.get(metric, []), b.round_bests.get(metric, [])


def round_ratios(result: ABResult, case: CaseKey, metric: MetricKey) -> list[float]:
    """B's round best over A's, round by round (empty without rounds)."""
    ra, rb = round_bests(result, case, metric)
    return [y / x for x, y in zip(ra, rb) if x and math.isfinite(x) and math.isfinite(y)]
