"""The asv subprocess driver: one commit's benchmarks under the real asv, and what it wrote.

Steps, each a function a test can reach:
1. :func:`prepare`: read asv's config, resolve the commit (full sha, date, dirty
   flag), the machine and the spool folder; check the suite's files import
   (asv's discovery stops at the first broken file and then runs nothing);
   write a derived asv config for this run.
2. :func:`ensure_machine`: ``asv machine --yes`` once per machine name.
3. :func:`run_asv`: ``asv run --python=same --set-commit-hash=SHA --record-samples``
   with MMTRACK_COMMIT / MMTRACK_MACHINE / MMTRACK_SPOOL / MMTRACK_RUN_ID set, started
   through :mod:`.asv_command` (its benchmark processes record their samples' CPU time).
4. :func:`collect`: read asv's result file of this commit and this run's spool
   files into :class:`CaseResult` values, with the CPU time of each ``time_`` case's
   samples (:mod:`.cpu_times`); report spool files a crashed run left.
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
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from ..errors import UserError
from ..fsutil import unreadable_entry
from ..measure.metrics import MetricSummary
from ..results import CommitInfo, canonical_params
from ..textsafe import visible
from ..vcs import GitError, commit_info, git_output, resolve_rev
from . import cpu_times, round_server, spool
from .host import asv_machine
from .suite_check import ImportFailure, filtered_suite, preflight, refuse_uninstalled_project

CONFIG_NAMES = ("asv.conf.json", "asv.conf.jsonc")


@dataclass(slots=True)
class AsvInvocation:
    """What one `asv run` of one commit is asked to do."""

    project: Path = Path(".")  # the folder asv runs from (holds asv.conf.json)
    config: Path | None = None  # asv config; default asv.conf.json in project
    quick: bool = False
    bench: str | None = None  # asv's -b regex
    machine: str | None = None  # else MMTRACK_MACHINE, else asv's default (the host name)
    commit: str = "HEAD"
    asv_args: tuple[str, ...] = ()
    python: str | None = None  # a built commit's interpreter (A/B runs); None: the running one


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

    @property
    def cpu_times(self) -> Path:
        """Where this run's ``time_`` benchmark processes write their samples' CPU time (:mod:`.cpu_times`)."""
        return self.workdir / "cpu-times"

    def environ(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                spool.ENV_COMMIT: self.commit.sha,
                spool.ENV_MACHINE: self.machine,
                spool.ENV_SPOOL: str(self.spool_dir),
                spool.ENV_RUN_ID: self.run_id,
                round_server.CPU_TIMES: str(self.cpu_times),
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
    param_index: int = 0  # the parameter combination's place in asv's grid
    cpu_metrics: list[MetricSummary] = field(default_factory=list)  # asv time_ cases: CPU time beside the wall clock

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
    below = sorted(p.relative_to(project) for name in CONFIG_NAMES for p in project.glob(f"*/{name}") if p.is_file())
    if below:  # numpy's, scipy's and networkx's layout: the suite and its config in benchmarks/
        raise UserError(f"{project.resolve()}: no asv.conf.json here, but {below[0]} is; pass --config {below[0]}")
    raise UserError(
        f"{project.resolve()}: no asv.conf.json here; run mmtrack run from the folder that holds it "
        "(or pass --config PATH); `asv quickstart` writes one"
    )


def config_folder(config_path: Path) -> Path:
    """The folder the config's relative paths start from: asv changes into the config's own folder."""
    return config_path.resolve().parent


def config_repo(config_path: Path, config: dict[str, Any], project: Path) -> Path:
    """The git top level the config's ``repo`` names (relative to the config's folder, as asv reads it); a URL
    (asv would clone it) or a missing folder: the checkout the config lies in, else ``project``."""
    repo = config_folder(config_path) / str(config.get("repo", "."))
    for folder in (repo, config_folder(config_path), project):
        top = git_output(folder, "rev-parse", "--show-toplevel") if folder.is_dir() else ""
        if top:
            return Path(top)
    return repo if repo.is_dir() else project


def load_config(path: Path) -> dict[str, Any]:
    """asv's config as asv reads it (``asv.util.load_json(path, js_comments=True)``: JSON5 from the absolute path), but
    without importing asv, whose plugins take about 0.1 s to load: ``mmtrack run``'s own asv process loads them."""
    import json5

    unreadable = unreadable_entry(path, "config file") if path.exists() or path.is_symlink() else None
    if unreadable is not None:  # a FIFO would block the read forever
        raise UserError(f"{path}: {unreadable}; give the asv.conf.json to read")
    try:
        with open(os.path.abspath(path), encoding="utf-8") as fd:
            data = json5.loads(fd.read())
    except Exception as exc:  # noqa: BLE001  (OSError, json5's ValueError...)
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
    sha = head if rev == "HEAD" else resolve_rev(repo, rev)  # the default: no second git call for it
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


def prepare(request: AsvInvocation, meanwhile: Callable[[], None] | None = None) -> Prepared:
    """Step 1 of the module; ``meanwhile`` runs while the suite's import check does (:func:`.suite_check.preflight`),
    if it comes to that."""
    project = request.project.resolve()
    config_path = find_config(project, request.config)
    config = load_config(config_path)
    base = config_folder(config_path)
    repo = config_repo(config_path, config, project)
    commit = resolve_commit(repo, request.commit)
    machine = asv_machine(request.machine)
    spool_dir = Path(os.environ.get(spool.ENV_SPOOL) or project / spool.DEFAULT_SPOOL).resolve()
    results_dir = (base / str(config.get("results_dir", "results"))).resolve()
    suite = (base / str(config.get("benchmark_dir", "benchmarks"))).resolve()
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
            derived[key] = str((base / str(config.get(key, default))).resolve())
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
        python = request.python or sys.executable
        prepared.import_failures = preflight(suite, prepared.environ(), python, meanwhile)
        refuse_uninstalled_project(prepared.import_failures, sorted({project, repo}), python)
        if prepared.import_failures:
            copy, notes = filtered_suite(suite, prepared.import_failures, workdir / "suite")
            derived["benchmark_dir"] = str(copy)
            prepared.notes += notes
        prepared.derived_config.write_text(json.dumps(derived, indent=2))
    except BaseException:
        prepared.cleanup()
        raise
    return prepared


# -- 2. machine ------------------------------------------------------------------------------
def _asv(*args: str) -> list[str]:
    return [sys.executable, "-m", "asv", *args]


#: asv's machine file (``asv.machine.MachineCollection.get_machine_file_path``), read without importing asv.
ASV_MACHINE_FILE = "~/.asv-machine.json"


def machine_known(machine: str) -> bool:
    path = Path(ASV_MACHINE_FILE).expanduser()
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
#: ``asv`` with its benchmark processes recording their samples' CPU time (run as a script: no mmtrack import).
ASV_COMMAND = Path(__file__).with_name("asv_command.py")


def asv_run_command(prepared: Prepared, request: AsvInvocation) -> list[str]:
    cmd = [
        sys.executable,
        str(ASV_COMMAND),
        "run",
        "--config",
        str(prepared.derived_config),
        f"--environment=existing:{request.python}" if request.python else "--python=same",
        f"--set-commit-hash={prepared.commit.sha}",
        "--record-samples",
        "--machine",
        prepared.machine,
    ]
    if request.quick:
        cmd.append("--quick")
    if request.bench:
        cmd += ["-b", request.bench]
    return cmd + list(request.asv_args)


def run_asv(prepared: Prepared, request: AsvInvocation, meanwhile: Callable[[], None] | None = None) -> int:
    """Run asv, its output passed through to ours line by line with mmtrack's overall progress
    (steps done of the total and the time left) every so often; returns asv's exit status. ``meanwhile`` runs once
    asv has started, before its first line is shown: asv imports itself and discovers the suite first (a second or
    more before its first benchmark)."""
    sys.stdout.flush()
    progress = AsvProgress()
    with subprocess.Popen(asv_run_command(prepared, request), cwd=prepared.project, env=prepared.environ(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                          bufsize=1) as proc:
        assert proc.stdout is not None
        if meanwhile is not None:
            meanwhile()
        for line in proc.stdout:
            sys.stdout.write(visible(bounded_line(line)))  # asv prints benchmark names and their errors as they are
            note = progress.update(line)
            if note:
                sys.stdout.write(note + "\n")
            sys.stdout.flush()
    return proc.returncode


#: The longest line of asv's output shown whole: asv prints a ``track_``'s value as it came, 10 MB for a long list.
ASV_LINE_LIMIT = 2000


def bounded_line(line: str, limit: int = ASV_LINE_LIMIT) -> str:
    """``line`` as it came, or its first ``limit`` characters and how many were left out."""
    if len(line) <= limit:
        return line
    return f"{line[:limit]} ... ({len(line) - limit:,} characters left out)\n"


def not_a_number(value: Any) -> str | None:
    """Why asv's stored value of a case is no number mmtrack can keep (a ``track_`` returned a list, a string),
    or None for a number."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return None
    what = f"a list of {len(value)} values" if isinstance(value, list) else f"a {type(value).__name__}"
    return f"returned {what}, not a number; asv keeps it but cannot compare or plot it: return one number"


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


#: How ``mmtrack run`` shows a case's error: asv's own ``-e`` after ``--``.
RUN_ERROR_ADVICE = "run with -- -e to see its error"


def asv_error_advice(sha: str) -> Callable[[str], str]:
    """For the verbs that take no asv options (``continuous``, ``bisect``): asv's own command that shows the case's
    error at ``sha``."""
    return lambda name: f"see its error with: asv run --quick -e -b '^{re.escape(name)}$' {sha[:12]}^!"


def selected_params(meta: dict[str, Any], bench: str | None) -> dict[str, set[int]]:
    """Per parameterised benchmark, the indexes of the parameter combinations ``-b`` selects, by asv's own rule
    (:class:`asv.benchmarks.Benchmarks`): asv keeps the others' earlier values in the commit's results file and stamps
    the benchmark as run, so they would pass for this run's."""
    if not bench:
        return {}
    from types import SimpleNamespace

    from asv.benchmarks import Benchmarks

    entries = [b for b in meta.values() if isinstance(b, dict) and "name" in b]
    try:
        chosen = Benchmarks(SimpleNamespace(benchmark_dir=""), entries, regex=bench).benchmark_selection
    except (TypeError, KeyError, re.error):
        return {}
    return {name: set(idx) for name, idx in chosen.items() if idx is not None}


def _iter_asv_cases(path: Path, meta: dict[str, Any], since: datetime,
                    selection: dict[str, set[int]] | None = None,
                    advice: Callable[[str], str] | None = None) -> Iterator[CaseResult]:
    """The cases asv ran in this run (its file keeps older results of benchmarks not selected, and of the parameter
    combinations ``selection`` leaves out); ``advice``: how a user sees a failed case's error (default: ``mmtrack
    run``'s)."""
    from asv.results import Results

    res = Results.load(str(path))
    # asv stamps each case when it starts, after this run began, rounded to the millisecond; a second of
    # slack here once counted the cases of a run that ended under a second before this one started.
    since_ms = since.timestamp() * 1000 - 1
    for key in sorted(res.get_all_result_keys()):
        if (res.started_at.get(key) or 0) >= since_ms:
            yield from _benchmark_cases(res, key, meta.get(key, {}), selection.get(key) if selection else None, advice)


def _benchmark_cases(res: Any, key: str, info: dict[str, Any], chosen: set[int] | None,
                     advice: Callable[[str], str] | None) -> Iterator[CaseResult]:
    """One benchmark's cases in asv's results ``res``, one per parameter combination (those ``chosen``, where the
    run selected some); ``info``: its entry in benchmarks.json."""
    params = res.get_result_params(key)
    values = res.get_result_value(key, params)
    samples = res.get_result_samples(key, params)
    names = list(info.get("param_names") or [])
    combos = list(itertools.product(*params)) if params else [()]
    names += [f"param{i + 1}" for i in range(len(names), len(params))]
    for i, combo in enumerate(combos):
        if chosen is not None and i not in chosen:
            continue  # an earlier run's value, carried over in the file
        value = values[i] if i < len(values) else None
        status, message = _case_status(value, key, advice)
        yield CaseResult(
            benchmark=key,
            params=dict(zip(names, combo)),
            status=status,
            message=message,
            version=res.benchmark_version.get(key),
            value=value if status == "ok" else None,
            samples=tuple(samples[i] or ()) if samples and i < len(samples) else (),
            unit=str(info.get("unit", "")),
            param_index=i,
        )


def _case_status(value: Any, key: str, advice: Callable[[str], str] | None) -> tuple[str, str]:
    """A case's status and message from the value asv kept: None failed, NaN skipped, a non-number refused."""
    if value is None:
        return "failed", f"failed under asv ({advice(key) if advice else RUN_ERROR_ADVICE})"
    if isinstance(value, float) and math.isnan(value):
        return "skipped", "skipped (setup raised NotImplementedError, or skip_params)"
    if (why := not_a_number(value)) is not None:
        return "failed", why
    return "ok", ""


def collect(prepared: Prepared, path: Path, since: datetime, bench: str | None = None,
            advice: Callable[[str], str] | None = None) -> Collected:
    from asv.results import Results

    env_name = Results.load(str(path)).env_name
    meta = _benchmarks_json(prepared.results_dir)
    cases = list(_iter_asv_cases(path, meta, since, selected_params(meta, bench), advice))
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
    with_cpu_time(cases, cpu_times.read(prepared.cpu_times))
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


def with_cpu_time(cases: Sequence[CaseResult], found: dict[cpu_times.CaseIndex, dict[str, list[float]]]) -> None:
    """Each measured case that asv timed gets its samples' CPU time (and, single-threaded CPU-bound, wall/CPU)."""
    for case in cases:
        samples = found.get((case.benchmark, case.param_index)) if case.status == "ok" else None
        if samples is not None:
            case.cpu_metrics = cpu_times.metrics(samples)
