"""``mmtrack run``: one commit's benchmarks under the real asv, into the store.

Steps, each a function a test can reach:
1. :func:`prepare`: read asv's config, resolve the commit (full sha, date, dirty
   flag), the machine and the spool folder; check the suite's files import
   (asv's discovery stops at the first broken file and then runs nothing);
   write a derived asv config for this run.
2. :func:`ensure_machine`: ``asv machine --yes`` once per machine name.
3. :func:`run_asv`: ``asv run --python=same --set-commit-hash=SHA --record-samples``
   with MMTRACK_COMMIT / MMTRACK_MACHINE / MMTRACK_SPOOL / MMTRACK_RUN_ID set.
4. :func:`collect`: read asv's result file of this commit and this run's spool
   files into :class:`CaseResult` values; report spool files a crashed run left.
5. :func:`ingest` and :func:`summarize`: the store (see the section at the end,
   the one place that talks to it) and the short summary.

A failed benchmark (asv's or mmtrack's) or a suite file that does not import
gives exit status 2.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..asvbridge import spool
from ..errors import EXIT_FAILURES, EXIT_OK, EXIT_USAGE, UserError
from ..host import asv_machine
from ..measure.metrics import MetricSummary
from ..results import CommitInfo, canonical_params
from ..textsafe import term
from ..vcs import GitError, commit_info, git_output, resolve_rev

PREFLIGHT = Path(__file__).resolve().parents[1] / "asvbridge" / "preflight.py"
CONFIG_NAMES = ("asv.conf.json", "asv.conf.jsonc")
SHOWN_LEFT_OUT = 8  # benchmarks named in --confirm-max's line; the rest counted
CONFIRM_ROUNDS = 4  # A/B rounds per side of --confirm, unless --confirm-rounds says


@dataclass(slots=True)
class RunRequest:
    project: Path = Path(".")  # the folder asv runs from (holds asv.conf.json)
    config: Path | None = None  # asv config; default asv.conf.json in project
    quick: bool = False
    bench: str | None = None  # asv's -b regex
    db: str | None = None  # store URL (else MMTRACK_DB, else the default)
    machine: str | None = None  # else MMTRACK_MACHINE, else asv's default (the host name)
    commit: str = "HEAD"
    asv_args: tuple[str, ...] = ()
    python: str | None = None  # a built commit's interpreter (A/B runs); None: the running one
    confirm: bool = False  # re-measure suspected regressions A/B against the previous commit
    confirm_ambiguous: bool = False  # ... and the rows history could not decide (ambiguous)
    confirm_budget: float | None = None  # seconds for the A/B rounds of --confirm
    confirm_max: int | None = None  # at most this many benchmarks re-measured by --confirm, the most worth it first
    confirm_rounds: int | None = None  # A/B rounds of --confirm (None: CONFIRM_ROUNDS); the undecided get up to twice
    round_alpha: float | None = None  # significance the --confirm rounds must reach (None: ab.interleave.ROUND_ALPHA)
    fail_on: tuple[str, ...] = ()  # compare's --fail-on, on the comparison with the previous commit (see gate())


@dataclass(frozen=True, slots=True)
class ImportFailure:
    """A suite file that does not import: recorded as one failed case named after it."""

    module: str  # asv-style, relative to the suite (e.g. "sub.broken")
    path: str
    message: str


@dataclass(slots=True)
class Prepared:
    project: Path
    config: dict[str, Any]  # the user's asv config, as read
    config_path: Path
    derived_config: Path  # what asv runs with
    workdir: Path  # temporary; removed by cleanup()
    commit: CommitInfo
    machine: str
    spool_dir: Path
    run_id: str
    results_dir: Path
    import_failures: list[ImportFailure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def cleanup(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)

    def environ(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                spool.ENV_COMMIT: self.commit.sha,
                spool.ENV_MACHINE: self.machine,
                spool.ENV_SPOOL: str(self.spool_dir),
                spool.ENV_RUN_ID: self.run_id,
            }
        )
        return env


@dataclass(slots=True)
class CaseResult:
    """One benchmark case of this run: asv's verdict joined with the spool record."""

    benchmark: str
    params: dict[str, str]
    status: str  # ok / failed / skipped
    message: str = ""
    version: str | None = None
    value: float | None = None  # asv's result (the median of the samples for engine benchmarks)
    samples: tuple[float, ...] = ()
    unit: str = ""
    record: spool.SpoolRecord | None = None  # engine benchmarks only

    @property
    def label(self) -> str:
        return f"{self.benchmark}({', '.join(self.params.values())})" if self.params else self.benchmark

    @property
    def metrics(self) -> list[MetricSummary]:
        return list(self.record.metrics) if self.record is not None else []


@dataclass(slots=True)
class Collected:
    environment: str
    results_file: Path
    cases: list[CaseResult]
    spool_files: list[Path]  # this run's, to remove once ingested
    leftovers: list[spool.SpoolEntry]  # from other (crashed) runs
    warnings: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[CaseResult]:
        return [c for c in self.cases if c.status == "failed"]


# -- 1. prepare ------------------------------------------------------------------------------
def find_config(project: Path, given: Path | None) -> Path:
    if given is not None:
        path = given if given.is_absolute() else project / given
        if not path.is_file():
            raise UserError(f"{path}: no such asv config file; pass --config PATH or run from the project root")
        return path
    for name in CONFIG_NAMES:
        if (project / name).is_file():
            return project / name
    raise UserError(
        f"{project.resolve()}: no asv.conf.json here; run mmtrack run from the folder that holds it "
        "(or pass --config PATH); `asv quickstart` writes one"
    )


def load_config(path: Path) -> dict[str, Any]:
    from asv import util as asv_util

    try:
        data = asv_util.load_json(str(path), js_comments=True)
    except Exception as exc:  # noqa: BLE001  (asv raises its own UserError, json errors...)
        raise UserError(f"{path}: cannot read the asv config: {exc}") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: the asv config must be a JSON object")
    return data


def resolve_commit(repo: Path, rev: str) -> CommitInfo:
    """The commit asv will record: it must be the checked-out one, and the tree clean."""
    if not git_output(repo, "rev-parse", "--git-dir"):
        raise UserError(f"{repo}: not a git repository; mmtrack run records a commit, so run it in a git checkout")
    head = resolve_rev(repo, "HEAD")
    if head is None:
        raise UserError(f"{repo}: the repository has no commit yet; commit your code first")
    sha = resolve_rev(repo, rev)
    if sha is None:
        hint = " (a shallow CI clone lacks it: fetch more history, e.g. fetch-depth: 0)" if _is_shallow(repo) else ""
        raise UserError(f"{repo}: git does not know the commit {rev!r}{hint}")
    if sha != head:
        raise UserError(
            f"{rev!r} is {sha[:12]}, but the working tree is at {head[:12]}; asv benchmarks the working tree, "
            f"so check out {rev!r} first (git checkout {sha[:12]})"
        )
    try:
        info = commit_info(repo, "HEAD")
    except GitError as exc:
        raise UserError(f"{repo}: cannot read the commit: {exc}") from None
    if info.dirty:
        changed = git_output(repo, "status", "--porcelain", "--untracked-files=no").splitlines()
        raise UserError(
            f"{repo}: the working tree has uncommitted changes ({len(changed)} files, e.g. "
            f"{changed[0].split(maxsplit=1)[-1] if changed else '?'}), so its numbers are not those of {sha[:12]}; "
            "commit or stash them, or use `mmtrack bench` for a look at uncommitted code"
        )
    return info


def _is_shallow(repo: Path) -> bool:
    return git_output(repo, "rev-parse", "--is-shallow-repository") == "true"


def _resolvable_branches(repo: Path, branches: Sequence[str | None]) -> tuple[list[str | None], list[str]]:
    keep, missing = [], []
    for b in branches:
        if b is None or resolve_rev(repo, b) is not None:
            keep.append(b)
        else:
            missing.append(b)
    return keep, missing


def preflight(suite: Path, env: dict[str, str]) -> list[ImportFailure]:
    """Import every suite module as asv will (same Python, same PYTHONPATH rule)."""
    env = dict(env)
    # asv drops PYTHONPATH for benchmark processes and uses ASV_PYTHONPATH instead.
    env.pop("PYTHONPATH", None)
    if env.get("ASV_PYTHONPATH"):
        env["PYTHONPATH"] = env["ASV_PYTHONPATH"]
    with tempfile.TemporaryDirectory(prefix="mmtrack-preflight-") as cwd:
        proc = subprocess.run(
            [sys.executable, str(PREFLIGHT), str(suite)], cwd=cwd, env=env, capture_output=True, text=True
        )
    try:
        failures = json.loads(proc.stdout.strip().splitlines()[-1])["failures"]
    except (IndexError, ValueError, KeyError, TypeError):
        raise UserError(
            f"{suite}: could not check which benchmark files import (exit {proc.returncode}): "
            f"{(proc.stderr.strip().splitlines() or ['no output'])[-1]}"
        ) from None
    root = suite.name
    out = []
    for f in failures:
        module = f["module"]
        rel = module[len(root) + 1 :] if module.startswith(root + ".") else module
        out.append(ImportFailure(rel, f["path"], f["message"]))
    return out


def _filtered_suite(suite: Path, failures: Sequence[ImportFailure], dest: Path) -> Path:
    """A copy of the suite without its broken files (and broken packages), same folder name."""
    broken = {Path(f.path).resolve() for f in failures if f.path}
    broken_pkgs = {p.parent for p in broken if p.name == "__init__.py"}
    target = dest / suite.name

    def ignore(folder: str, names: list[str]) -> set[str]:
        here = Path(folder).resolve()
        skip = {"__pycache__"}
        for n in names:
            p = (here / n).resolve()
            if p in broken or p in broken_pkgs:
                skip.add(n)
        return skip

    if suite.resolve() in broken_pkgs:
        target.mkdir(parents=True)
        (target / "__init__.py").write_text("")
    else:
        shutil.copytree(suite, target, ignore=ignore)
    return target


def check_confirm_options(request: RunRequest) -> None:
    """``--confirm-rounds``, ``--confirm-budget``, ``--confirm-max`` and ``--round-alpha`` are refused before anything
    runs, not after the suite: a bad value, or any of them without ``--confirm`` (where it would do nothing)."""
    if request.confirm_rounds is not None and request.confirm_rounds < 1:
        raise UserError(f"--confirm-rounds {request.confirm_rounds}: need at least 1 round per side", EXIT_USAGE)
    if request.confirm_budget is not None and not (request.confirm_budget > 0 and math.isfinite(request.confirm_budget)):
        raise UserError(f"--confirm-budget {request.confirm_budget:g}: give a time in seconds above 0", EXIT_USAGE)
    if request.confirm_max is not None and request.confirm_max < 1:
        raise UserError(f"--confirm-max {request.confirm_max}: need at least 1 benchmark", EXIT_USAGE)
    from .continuous import round_alpha_for

    round_alpha_for(request.round_alpha)
    given = {"--confirm-rounds": request.confirm_rounds, "--confirm-budget": request.confirm_budget,
             "--confirm-max": request.confirm_max, "--round-alpha": request.round_alpha}
    for option, value in given.items():
        if value is not None and not request.confirm:
            raise UserError(f"{option} {value:g}: it sets what the --confirm rounds do; add --confirm, or leave it out",
                            EXIT_USAGE)
    if request.confirm_ambiguous and not request.confirm:
        raise UserError("--confirm-ambiguous: it adds the ambiguous rows to what --confirm re-measures; add --confirm, "
                        "or leave it out", EXIT_USAGE)


def prepare(request: RunRequest) -> Prepared:
    project = request.project.resolve()
    config_path = find_config(project, request.config)
    config = load_config(config_path)
    repo = project / str(config.get("repo", "."))
    if not repo.is_dir():
        repo = project  # a URL: asv would clone it; we record the checkout we are in
    repo = Path(git_output(repo, "rev-parse", "--show-toplevel") or repo)
    commit = resolve_commit(repo, request.commit)
    machine = asv_machine(request.machine)
    spool_dir = Path(os.environ.get(spool.ENV_SPOOL) or project / spool.DEFAULT_SPOOL).resolve()
    results_dir = (project / str(config.get("results_dir", "results"))).resolve()
    suite = (project / str(config.get("benchmark_dir", "benchmarks"))).resolve()
    if not suite.is_dir():
        raise UserError(f"{suite}: no benchmark folder (benchmark_dir in {config_path.name}); create it or fix the config")
    workdir = Path(tempfile.mkdtemp(prefix="mmtrack-run-"))
    prepared = Prepared(
        project=project,
        config=config,
        config_path=config_path,
        derived_config=workdir / "asv.conf.json",
        workdir=workdir,
        commit=commit,
        machine=machine,
        spool_dir=spool_dir,
        run_id=uuid.uuid4().hex,
        results_dir=results_dir,
    )
    try:
        derived = dict(config)
        # asv reads paths relative to the config file's folder (it chdirs there): make them
        # absolute in the derived config, which lives in a temporary folder.
        defaults = {"results_dir": "results", "html_dir": "html", "env_dir": "env", "benchmark_dir": "benchmarks"}
        for key, default in defaults.items():
            derived[key] = str((project / str(config.get(key, default))).resolve())
        # Offline and on this checkout: asv must not try to clone a repo URL.
        derived["repo"] = str(repo)
        branches = list(config.get("branches") or [None])
        keep, missing = _resolvable_branches(repo, branches)
        if missing:
            shallow = " shallow" if _is_shallow(repo) else ""
            prepared.notes.append(
                f"branch {', '.join(map(repr, missing))} from {config_path.name} does not exist in this{shallow} "
                "checkout; running without it (CI: check out with fetch-depth: 0, or `git fetch origin "
                f"{missing[0]}:{missing[0]}`, so asv publish can draw that branch)"
            )
            derived["branches"] = keep or ["HEAD"]
        prepared.import_failures = preflight(suite, prepared.environ())
        if prepared.import_failures:
            derived["benchmark_dir"] = str(_filtered_suite(suite, prepared.import_failures, workdir / "suite"))
        prepared.derived_config.write_text(json.dumps(derived, indent=2))
    except BaseException:
        prepared.cleanup()
        raise
    return prepared


# -- 2. machine ------------------------------------------------------------------------------
def _asv(*args: str) -> list[str]:
    return [sys.executable, "-m", "asv", *args]


def machine_known(machine: str) -> bool:
    from asv.machine import MachineCollection

    path = Path(MachineCollection.get_machine_file_path())
    try:
        return machine in json.loads(path.read_text())
    except (OSError, ValueError):
        return False


def ensure_machine(prepared: Prepared) -> None:
    """Make sure ~/.asv-machine.json knows this machine (asv machine --yes)."""
    if machine_known(prepared.machine):
        return
    proc = subprocess.run(
        _asv("machine", "--yes", "--machine", prepared.machine, "--config", str(prepared.derived_config)),
        cwd=prepared.project,
        env=prepared.environ(),
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise UserError(
            f"`asv machine --yes --machine {prepared.machine}` failed: {(proc.stderr or proc.stdout).strip()[-400:]}"
        )


# -- 3. asv run ------------------------------------------------------------------------------
def asv_run_command(prepared: Prepared, request: RunRequest) -> list[str]:
    cmd = _asv(
        "run",
        "--config",
        str(prepared.derived_config),
        f"--environment=existing:{request.python}" if request.python else "--python=same",
        f"--set-commit-hash={prepared.commit.sha}",
        "--record-samples",
        "--machine",
        prepared.machine,
    )
    if request.quick:
        cmd.append("--quick")
    if request.bench:
        cmd += ["-b", request.bench]
    return cmd + list(request.asv_args)


def run_asv(prepared: Prepared, request: RunRequest) -> int:
    """Run asv, its output passed through to ours line by line with mmtrack's overall progress
    (steps done of the total and the time left) every so often; returns asv's exit status."""
    sys.stdout.flush()
    progress = AsvProgress()
    with subprocess.Popen(asv_run_command(prepared, request), cwd=prepared.project, env=prepared.environ(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                          bufsize=1) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            note = progress.update(line)
            if note:
                sys.stdout.write(note + "\n")
            sys.stdout.flush()
    return proc.returncode


class AsvProgress:
    """Overall progress of an asv run from the ``[ 12.50%]`` prefix asv puts on every line.

    asv counts one step per benchmark per round (and environment), so the percentage is the share of
    benchmark cases done; the time left extrapolates the elapsed time. A line every ``every_s`` seconds
    at most, and one when a quarter more is done, so CI logs stay short.
    """

    _PREFIX = re.compile(r"^\[\s*(\d+(?:\.\d+)?)%\]")

    def __init__(self, clock: Any = None, every_s: float = 30.0) -> None:
        import time

        self.clock = clock or time.monotonic
        self.every_s = every_s
        self.started = self.clock()
        self.last_note = self.started
        self.last_pct = 0.0
        self.noted_pct = 0.0

    def update(self, line: str) -> str | None:
        m = self._PREFIX.match(line)
        if not m:
            return None
        pct = float(m.group(1))
        if pct <= self.last_pct or pct >= 100.0:
            return None
        self.last_pct = pct
        now = self.clock()
        if now - self.last_note < self.every_s and pct - self.noted_pct < 25.0:
            return None
        self.last_note, self.noted_pct = now, pct
        return self.describe(pct, now - self.started)

    @staticmethod
    def describe(pct: float, elapsed_s: float) -> str:
        left = elapsed_s * (100.0 - pct) / pct
        return (f"mmtrack run: {pct:.0f}% of asv's benchmark steps done in {_duration(elapsed_s)}, "
                f"about {_duration(left)} left")


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


# -- 4. collect ------------------------------------------------------------------------------
def results_file(prepared: Prepared, since: float) -> Path | None:
    """asv's result file for this commit on this machine, written by this run."""
    folder = prepared.results_dir / prepared.machine
    prefix = prepared.commit.sha[:8] + "-"
    found = [p for p in folder.glob(prefix + "*.json") if p.stat().st_mtime >= since - 1]
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def _benchmarks_json(results_dir: Path) -> dict[str, Any]:
    try:
        return json.loads((results_dir / "benchmarks.json").read_text())
    except (OSError, ValueError):
        return {}


def _iter_asv_cases(path: Path, meta: dict[str, Any], since: datetime) -> Iterator[CaseResult]:
    """The cases asv ran in this run (its file keeps older results of benchmarks not selected)."""
    from asv.results import Results

    res = Results.load(str(path))
    # asv stamps each case when it starts, after this run began, rounded to the millisecond; a second of
    # slack here once counted the cases of a run that ended under a second before this one started.
    since_ms = since.timestamp() * 1000 - 1
    for key in sorted(res.get_all_result_keys()):
        if (res.started_at.get(key) or 0) < since_ms:
            continue
        params = res.get_result_params(key)
        values = res.get_result_value(key, params)
        samples = res.get_result_samples(key, params)
        info = meta.get(key, {})
        names = list(info.get("param_names") or [])
        combos = list(itertools.product(*params)) if params else [()]
        names += [f"param{i + 1}" for i in range(len(names), len(params))]
        for i, combo in enumerate(combos):
            value = values[i] if i < len(values) else None
            if value is None:
                status, message = "failed", "failed under asv (run with -- -e to see its error)"
            elif isinstance(value, float) and math.isnan(value):
                status, message = "skipped", "skipped (setup raised NotImplementedError, or skip_params)"
            else:
                status, message = "ok", ""
            yield CaseResult(
                benchmark=key,
                params=dict(zip(names, combo)),
                status=status,
                message=message,
                version=res.benchmark_version.get(key),
                value=value if status == "ok" else None,
                samples=tuple(samples[i] or ()) if samples and i < len(samples) else (),
                unit=str(info.get("unit", "")),
            )


def collect(prepared: Prepared, path: Path, since: datetime) -> Collected:
    from asv.results import Results

    env_name = Results.load(str(path)).env_name
    cases = list(_iter_asv_cases(path, _benchmarks_json(prepared.results_dir), since))
    ours: dict[tuple[str, str], spool.SpoolEntry] = {}
    leftovers: list[spool.SpoolEntry] = []
    warnings: list[str] = []
    for entry in spool.scan(prepared.spool_dir):
        rec = entry.record
        if rec is not None and rec.run_id == prepared.run_id:
            rec.environment = rec.environment or env_name
            ours[(rec.benchmark, canonical_params(rec.params))] = entry
        else:
            leftovers.append(entry)
    for tmp in spool.stale_temporaries(prepared.spool_dir):
        warnings.append(f"removed {tmp.name}: a half-written spool file of a killed run (never a complete record)")
        tmp.unlink(missing_ok=True)
    seen = set()
    for case in cases:
        entry = ours.get((case.benchmark, canonical_params(case.params)))
        if entry is None:
            continue
        seen.add((case.benchmark, canonical_params(case.params)))
        case.record = entry.record
        if entry.record.status == "failed":
            case.status, case.message = "failed", entry.record.message
    for key, entry in ours.items():
        if key not in seen:
            warnings.append(f"spool file {entry.path.name} has no asv result ({key[0]}); not ingested")
    for f in prepared.import_failures:
        cases.append(CaseResult(f.module, {}, "failed", f"could not import {f.path}: {f.message}"))
    return Collected(env_name, path, cases, [e.path for e in ours.values()], leftovers, warnings)


# -- the command -----------------------------------------------------------------------------
@dataclass(slots=True)
class RunOutcome:
    prepared: Prepared
    collected: Collected
    asv_exit: int
    started_at: datetime
    ingested: bool = False
    comparison: Any = None  # mmtrack compare's outcome against the previous commit, if there is one
    summary: list[str] = field(default_factory=list)  # what the comparison could not say
    reports: list[str] = field(default_factory=list)  # leftover spool files that could not be ingested
    notes: list[str] = field(default_factory=list)  # leftover spool files that were ingested

    @property
    def exit_code(self) -> int:
        return EXIT_USAGE if self.collected.failed else EXIT_OK


def execute(request: RunRequest, console: Console) -> RunOutcome:
    prepared = prepare(request)
    try:
        for note in prepared.notes:
            console.print(Text.assemble(("note:", "yellow"), " ", term(note)), highlight=False, soft_wrap=True)
        for f in prepared.import_failures:
            why = f" could not import {term(str(f.path))}: {term(f.message)}"
            console.print(Text.assemble(("error:", "bold red"), why), highlight=False, soft_wrap=True)
        ensure_machine(prepared)
        open_store_or_refuse(request.db)
        started = datetime.now(timezone.utc)
        console.print(
            f"mmtrack run: commit {prepared.commit.sha[:12]} on machine {prepared.machine!r}, "
            f"spool {prepared.spool_dir}",
            highlight=False,
            soft_wrap=True,
        )
        asv_exit = run_asv(prepared, request)
        path = results_file(prepared, started.timestamp())
        if path is None:
            raise UserError(
                f"asv run exited with status {asv_exit} and wrote no result for {prepared.commit.sha[:12]} in "
                f"{prepared.results_dir / prepared.machine}; see asv's output above"
                + (f" (-b {request.bench!r} may match no benchmark)" if request.bench else "")
            )
        collected = collect(prepared, path, started)
        outcome = RunOutcome(prepared, collected, asv_exit, started)
        ingest(outcome, request.db)
        return outcome
    finally:
        prepared.cleanup()


def run_command(request: RunRequest, console: Console) -> int:
    check_confirm_options(request)
    outcome = execute(request, console)
    render(outcome, console)
    confirmations = confirm_rows(outcome, request, console) if request.confirm else []
    failing = gate(outcome, confirmations, request.fail_on) if request.fail_on else []
    if failing:
        from ..analysis.render import verdict_text

        names = ", ".join(f"{r.name} {r.metric_label} {verdict_text(r)}" for r in failing)
        line = f"--fail-on {','.join(request.fail_on)}: {len(failing)} row(s) fail this commit: {names}"
        console.print(Text(term(line), style="bold red"), highlight=False, soft_wrap=True)
    # A failed benchmark exits 2 whatever the gate says, as in `mmtrack bench`.
    return outcome.exit_code if outcome.exit_code != EXIT_OK or not failing else EXIT_FAILURES


def gate(outcome: RunOutcome, confirmations: Sequence[Any], fail_on: Sequence[str]) -> list[Any]:
    """The rows that fail ``--fail-on`` (compare's :func:`failing_rows`) on the comparison with the previous commit,
    with earlier commits' suspicions this one confirms, and the states a ``--confirm`` A/B run gave: a suspected
    regression that A/B confirms fails ``regression``; one it refutes fails nothing; a row history left ambiguous fails
    as the change A/B measured (``--confirm-ambiguous``)."""
    import dataclasses

    from ..analysis.compare import failing_rows, settled_by_ab

    if outcome.comparison is None:
        return []
    comparison = outcome.comparison.comparison
    by_ab = {(c.row.benchmark, c.row.params, c.row.metric): c for c in confirmations if c.settled() is not None}
    if by_ab:
        def settle(r: Any) -> Any:
            c = by_ab.get((r.benchmark, r.params, r.metric))
            return r if c is None else settled_by_ab(r, c.state, c.ratio, c.p_value, c.rounds)

        comparison = dataclasses.replace(comparison, rows=tuple(settle(r) for r in comparison.rows))
    return failing_rows(comparison, fail_on)


def confirm_rows(outcome: RunOutcome, request: RunRequest, console: Console) -> list[Any]:
    """``--confirm``: the suspected rows of the summary (with ``--confirm-ambiguous``, the ambiguous ones too)
    re-measured A/B (see :mod:`mmtrack.ab.confirm`); their confirmations."""
    from ..ab import confirm as ab

    found = outcome.comparison
    rows = ab.rows_to_confirm(found.comparison, ambiguous=request.confirm_ambiguous) if (
        found is not None and found.before.commit is not None) else []
    if not rows:
        what = "suspected or ambiguous" if request.confirm_ambiguous else "suspected"
        console.print(f"--confirm: no {what} change to re-measure", highlight=False)
        return []
    before, after = found.before.commit.sha, outcome.prepared.commit.sha
    rows, left = ab.within_cap(ab.by_priority(rows), request.confirm_max)
    if left:
        console.print(Text(term(f"--confirm-max {request.confirm_max}: {describe_left(left)} not re-measured (the "
                                f"suspected and the larger moves go first)")), highlight=False, soft_wrap=True)
    unsure = sum(r.verdict == ab.AMBIGUOUS for r in rows)
    what = f"{len(rows) - unsure} suspected" + (f" and {unsure} ambiguous" if request.confirm_ambiguous else "")
    console.print(f"--confirm: re-measuring {what} row(s) A/B: {before[:8]} against {after[:8]}", highlight=False)
    report, result = ab.confirm(outcome.prepared.project, request.config, outcome.prepared.machine, before, after,
                                rows, request.confirm_rounds or CONFIRM_ROUNDS, request.confirm_budget, request.round_alpha,
                                progress=lambda line: console.print(line, highlight=False, style="dim"))
    from ..store.db import open_store, resolve_url

    store = open_store(resolve_url(request.db))
    try:
        ab.store_report(store, report, result, outcome.prepared.machine, outcome.collected.environment,
                        str(outcome.prepared.config.get("project") or outcome.prepared.project.name))
    finally:
        store.close()
    for w in result.warnings:
        console.print(Text.assemble(("warning:", "yellow"), " ", term(w)), highlight=False, soft_wrap=True)
    for c in report.confirmations:
        console.print(Text(term(ab.describe(c))), highlight=False, soft_wrap=True)  # Text: "[s]" is no markup
    return report.confirmations


def describe_left(rows: Sequence[Any]) -> str:
    """What ``--confirm-max`` left out: "2 suspected and 5 ambiguous row(s) of 4 benchmark(s), a, b, c, d," (the
    first :data:`SHOWN_LEFT_OUT` benchmarks named, in priority order, the rest counted)."""
    unsure = sum(r.verdict == "ambiguous" for r in rows)
    parts = [f"{len(rows) - unsure} suspected" if len(rows) > unsure else "", f"{unsure} ambiguous" if unsure else ""]
    names = list(dict.fromkeys(r.benchmark for r in rows))
    more = len(names) - SHOWN_LEFT_OUT
    shown = ", ".join(names[:SHOWN_LEFT_OUT]) + (f" and {more} more" if more > 0 else "")
    return f"{' and '.join(filter(None, parts))} row(s) of {len(names)} benchmark(s), {shown},"


def render(outcome: RunOutcome, console: Console) -> None:
    c = outcome.collected
    from ..tables import Name
    from ..units import format_quantity

    for w in c.warnings + outcome.reports:
        console.print(Text.assemble(("warning:", "yellow"), " ", term(w)), highlight=False, soft_wrap=True)
    for n in outcome.notes:
        console.print(Text(f"note: {term(n)}"), highlight=False, soft_wrap=True)
    table = Table(title=Text(term(f"{outcome.prepared.commit.short} on {outcome.prepared.machine}")))
    table.add_column("benchmark", overflow="fold")
    table.add_column("status", no_wrap=True)
    table.add_column("value", justify="right", overflow="fold")
    table.add_column("metrics", justify="right", no_wrap=True)
    styles = {"ok": "", "failed": "red", "skipped": "yellow"}
    for case in c.cases:
        value = format_quantity(case.value, case.unit) if case.value is not None else ""
        status = Text(term(case.status), style=styles.get(case.status, ""))
        table.add_row(Name(case.label), status, value, str(len(case.metrics)) if case.metrics else "")
    console.print(table)
    for line in outcome.summary:
        console.print(Text(term(line)), highlight=False)
    if outcome.comparison is not None:
        _render_comparison(outcome.comparison, console)
    for case in c.failed:
        console.print(Text.assemble(("failed", "bold red"), f" {term(case.label)}: {term(case.message)}"),
                      highlight=False, soft_wrap=True)
    counts = {s: sum(1 for x in c.cases if x.status == s) for s in ("ok", "failed", "skipped")}
    console.print(
        f"{len(c.cases)} benchmark cases: {counts['ok']} ok, {counts['failed']} failed, {counts['skipped']} skipped"
    )


# Rows worth a line in the summary; new, removed and unchanged metrics are only counted.
SUMMARY_VERDICTS = ("regressed", "improved", "ambiguous", "failed", "fixed", "not comparable")


def _render_comparison(outcome: Any, console: Console) -> None:
    """The comparison as `mmtrack compare` renders it, limited to the rows that say something."""
    import dataclasses

    from ..analysis.render import render_table, summary_line

    full = outcome.comparison

    console.print(
        Text(term(f"compared with the previous commit on {outcome.before.machine} "
                  f"(mmtrack compare {outcome.before.label} {outcome.after.label}): {summary_line(full)}")),
        highlight=False,
        soft_wrap=True,
    )
    shown = dataclasses.replace(
        full,
        rows=tuple(r for r in full.rows if r.verdict in SUMMARY_VERDICTS),
        decided=tuple(r for r in full.decided if r.state == "confirmed"),  # earlier commits' regressions confirmed now
    )
    if shown.rows or shown.decided:
        table = render_table(shown)
        table.title = None
        console.print(table)


# -- 5. the store: the one place that talks to it ---------------------------------------------
ENGINE_RUN_KIND = "asv-engine"  # engine metrics of benchmarks asv ran (asv's own files: kind "asv")


def open_store_or_refuse(db: str | None) -> None:
    """The store opened (created or upgraded) once before asv runs: a --db that is not a database, unreachable or
    read-only is one line then, not after the whole suite has run."""
    from ..store.db import open_store, resolve_url

    open_store(resolve_url(db)).close()


def ingest(outcome: RunOutcome, db: str | None) -> None:
    """asv's results folder, this run's spool records and any leftovers, into the store.

    Idempotent: asv's files are imported by digest, and each engine run carries a
    source key (``spool:<run id>:<commit>:<machine>:<environment>``), so a spool
    file ingested before a crash is never recorded twice.
    """
    from ..store.db import open_store, resolve_url

    store = open_store(resolve_url(db))
    try:
        _ingest_into(store, outcome)
        outcome.ingested = True
        summarize(store, outcome)
    finally:
        store.close()


def _engine_cases(cases: Sequence[CaseResult]) -> list[Any]:
    from ..store.ingest import EngineCaseRecord

    out = []
    for c in cases:
        rec = c.record
        out.append(
            EngineCaseRecord(
                benchmark=c.benchmark,
                params=dict(c.params),
                status=c.status,  # type: ignore[arg-type]
                message=c.message or None,
                version=c.version or (rec.version if rec else None),
                stats=rec.stats if rec is not None and c.status == "ok" else None,
                metrics=list(rec.metrics) if rec is not None and c.status == "ok" else None,  # pooled rounds
            )
        )
    return out


def _record(store: Any, *, commit: CommitInfo, machine: str, environment: str, run_id: str, suite: str,
            started_at: datetime, cases: Sequence[CaseResult]) -> None:
    import asv

    from .. import __version__
    from ..store.ingest import RunRecord, record_engine_run

    record_engine_run(
        store,
        RunRecord(
            machine=machine,
            environment=environment,
            commit=commit,
            started_at=started_at,
            kind=ENGINE_RUN_KIND,
            suite=suite,
            tool_versions={"mmtrack": __version__, "asv": str(getattr(asv, "__version__", ""))},
            source=f"spool:{run_id}:{commit.sha}:{machine}:{environment}",
        ),
        _engine_cases(cases),
    )


def _ingest_into(store: Any, outcome: RunOutcome) -> None:
    from ..store.asv_import import import_asv_results

    prepared, collected = outcome.prepared, outcome.collected
    suite = str(prepared.config.get("project") or prepared.project.name)
    imported = import_asv_results(store, prepared.results_dir, suite=suite)
    outcome.reports.extend(f"asv results not imported: {problem}" for problem in imported.failed)
    engine = [c for c in collected.cases if c.record is not None or c.benchmark in _import_failure_names(prepared)]
    if engine:
        _record(
            store,
            commit=prepared.commit,
            machine=prepared.machine,
            environment=collected.environment,
            run_id=prepared.run_id,
            suite=suite,
            started_at=outcome.started_at,
            cases=engine,
        )
    for path in collected.spool_files:
        path.unlink(missing_ok=True)
    _ingest_leftovers(store, outcome, suite)


def _import_failure_names(prepared: Prepared) -> set[str]:
    return {f.module for f in prepared.import_failures}


def _leftover_env(prepared: Prepared, rec: spool.SpoolRecord) -> str | None:
    """A leftover's environment: its own, else the one asv recorded for its commit and machine."""
    if rec.environment:
        return rec.environment
    if not rec.commit:
        return None
    found = sorted((prepared.results_dir / rec.machine).glob(f"{rec.commit[:8]}-*.json"))
    return found[0].stem.split("-", 1)[1] if len(found) == 1 else None


def _ingest_leftovers(store: Any, outcome: RunOutcome, suite: str) -> None:
    """Spool files of earlier runs that died before ingesting: ingest them once, or report them."""
    prepared = outcome.prepared
    groups: dict[tuple[str, str, str, str], list[spool.SpoolEntry]] = {}
    orphaned = prepared.spool_dir / "orphaned"
    for entry in outcome.collected.leftovers:
        rec = entry.record
        env = _leftover_env(prepared, rec) if rec is not None else None
        if rec is None or not rec.commit or env is None:
            why = entry.error if rec is None else ("no commit recorded" if not rec.commit else "environment unknown")
            orphaned.mkdir(parents=True, exist_ok=True)
            entry.path.replace(orphaned / entry.path.name)
            outcome.reports.append(
                f"{_leftover_label(entry)}: cannot be ingested ({why}); moved to {orphaned}"
            )
            continue
        groups.setdefault((rec.run_id or "unknown", rec.commit, rec.machine, env), []).append(entry)
    for (run_id, sha, machine, env), entries in groups.items():
        try:
            commit = commit_info(prepared.project, sha, check_dirty=False)
        except GitError:
            commit = CommitInfo(sha=sha)
        cases = [
            CaseResult(
                benchmark=e.record.benchmark,
                params=dict(e.record.params),
                status=e.record.status,
                message=e.record.message,
                version=e.record.version,
                record=e.record,
            )
            for e in entries
            if e.record is not None
        ]
        _record(store, commit=commit, machine=machine, environment=env, run_id=run_id, suite=suite,
                started_at=_created(entries), cases=cases)
        for e in entries:
            e.path.unlink(missing_ok=True)
        outcome.notes.append(
            f"ingested {len(entries)} spool file(s) left by an earlier run (commit {sha[:12]}, machine {machine}); "
            "recorded once, by their run id"
        )


def _created(entries: Sequence[spool.SpoolEntry]) -> datetime:
    stamps = [e.record.created for e in entries if e.record is not None and e.record.created]
    try:
        return datetime.fromisoformat(min(stamps)) if stamps else datetime.now(timezone.utc)
    except ValueError:
        return datetime.now(timezone.utc)


def summarize(store: Any, outcome: RunOutcome) -> None:
    """Compare with the previous commit measured on this machine and environment (mmtrack compare)."""
    from ..store import queries
    from .compare import CompareRequest, run_compare

    prepared, environment = outcome.prepared, outcome.collected.environment
    commit, machine = prepared.commit, prepared.machine
    history = [c.sha for c in queries.commits(store, machine=machine, environment=environment)]
    if commit.sha not in history or history.index(commit.sha) == 0:
        outcome.summary.append(f"first commit measured on {machine} ({environment}): nothing to compare with yet")
        return
    before = history[history.index(commit.sha) - 1]
    request = CompareRequest(a=before, b=commit.sha, machine=machine, env=environment, cwd=prepared.project)
    try:
        outcome.comparison = run_compare(request, store=store)
    except UserError as exc:  # the run is recorded; a comparison that cannot be made is only said
        outcome.summary.append(f"no comparison with the previous commit {before[:8]}: {exc}")
        return
    # What the summary reports, kept: the pages show it where the history is too short for detect.
    queries.save_run_verdicts(store, machine, environment, commit.sha,
                              run_verdicts(outcome.comparison.comparison, machine, environment, before, commit.sha))


def run_verdicts(comparison: Any, machine: str, environment: str, before_sha: str, after_sha: str) -> list[Any]:
    """The summary's rows (:data:`SUMMARY_VERDICTS`) as store records."""
    from ..results import RunVerdict, SeriesKey

    def value(m: Any) -> float | None:
        return m.median if m is not None and m.status == "ok" else None

    return [
        RunVerdict(SeriesKey(machine, environment, r.benchmark, r.params, r.metric), before_sha, after_sha,
                   r.verdict, r.state, r.ratio, value(r.before), value(r.after), r.p_value, r.note)
        for r in comparison.rows
        if r.verdict in SUMMARY_VERDICTS
    ]


def _leftover_label(entry: spool.SpoolEntry) -> str:
    rec = entry.record
    if rec is None:
        return f"spool file {entry.path.name} (unreadable: {entry.error})"
    commit = rec.commit[:12] if rec.commit else "unknown"
    return f"spool file {entry.path.name} ({rec.benchmark}, commit {commit}, machine {rec.machine})"
