"""Importing asv results folders into the store (``mmtrack import-asv``, ``mmtrack run``, ``mmtrack update``).

asv formats read: results files of ``"version": 2`` (``result_columns``, asv >= 0.5) and ``"version": 1``
(asv 0.2 to 0.4: a scalar or a dict per benchmark), converted with asv's own ``Results.update_to_2``. A result
of ``null`` is a failed benchmark, ``NaN`` a skipped one. Each file becomes the columns of one run
(:class:`.ingest.RunRows`), written through :func:`.ingest.write_run_in`: a file is imported whole or not at all.
"""

from __future__ import annotations

import hashlib
import operator
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISREG
from typing import Any, Callable, Mapping, Sequence

from sqlalchemy import Connection, select, update
from sqlalchemy.exc import SQLAlchemyError

from ..asvbridge.machine_class import HARDWARE_KEYS, ClassRule, hardware_of
from ..asvbridge.results_file import AsvBenchmark, ResultsFileError, _load_json, read_benchmarks_json
from ..asvbridge.results_folder import (
    _display,
    _machine_info,
    check_is_folder,
    config_class_rules,
    find_results_files,
)
from ..errors import EXIT_FAILURES, EXIT_OK
from ..forked import can_fork, die_with_parent
from ..fsutil import unreadable_entry
from . import schema as m
from .asv_rows import AsvResultsFile, parse_results_file
from .bulk import gc_paused
from .db import Store
from .driver_sql import MeasurementSink
from .ingest import Dims, write_run_in
from .machine_classes import ClassPlan, FolderFacts, apply_renames, plan_classes, stem

# -- what an import reports ----------------------------------------------------------------------


@dataclass(slots=True)
class FileProblem:
    path: str  # printable path
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(slots=True)
class ImportSummary:
    files: int = 0
    imported: int = 0  # new runs
    replaced: int = 0  # files that changed since the last import (their run was replaced)
    unchanged: int = 0  # already imported, identical
    failed: list[FileProblem] = field(default_factory=list)
    left_out: list[FileProblem] = field(default_factory=list)  # benchmarks of imported files that could not be read
    results: dict[str, int] = field(default_factory=lambda: {"ok": 0, "failed": 0, "skipped": 0})
    measurements: int = 0
    machines: set[str] = field(default_factory=set)  # machine classes
    hosts: set[str] = field(default_factory=set)  # asv's machine names (the hosts that ran the runs)
    environments: set[str] = field(default_factory=set)
    benchmarks: set[str] = field(default_factory=set)
    commits: set[str] = field(default_factory=set)
    touched_series: set[int] = field(default_factory=set)  # store series ids with new, replaced or removed points

    @property
    def result_count(self) -> int:
        return sum(self.results.values())


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an import brought in, and into which store (``mmtrack import-asv``, ``mmtrack update``)."""

    summary: ImportSummary
    url: str  # the store, its password redacted

    @property
    def problems(self) -> list[str]:
        """One line per file that failed and per benchmark left out."""
        return [str(p) for p in [*self.summary.failed, *self.summary.left_out]]

    @property
    def exit_code(self) -> int:
        return EXIT_FAILURES if self.problems else EXIT_OK



Progress = Callable[[int, int, str], None]  # (done, total, current file)


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."



def _suite_name(results_dir: Path) -> str:
    """The ``project`` of the asv.conf.json above the results (it may hold // comments), else the folder name."""
    import re

    for conf in (results_dir.parent / "asv.conf.json", results_dir.parent.parent / "asv.conf.json"):
        try:
            found = re.search(r'^\s*"project"\s*:\s*"([^"]+)"', conf.read_text(encoding="utf-8"), re.M)
        except (OSError, UnicodeDecodeError):
            continue
        if found:
            return found.group(1)[: m.Run.__table__.c.suite.type.length]  # a label: cut, not refused
    return results_dir.resolve().name



def import_asv_results(
    store: Store,
    results_dir: Path,
    progress: Progress | None = None,
    *,
    suite: str | None = None,
    parse_ahead: bool | None = None,
    machine_classes: Sequence[ClassRule] = (),
) -> ImportSummary:
    """Import an asv results folder, idempotent: each file's run is written whole or not at all.

    A file that cannot be read is reported in ``summary.failed`` (one line each)
    and the others are still imported; a malformed benchmark of a file whose other benchmarks
    can be read, in ``summary.left_out``. Files whose size and mtime match their import
    are skipped unread; the others are written many per transaction (see :class:`_Batches`).
    ``parse_ahead``: parse the next files in a worker process while this one writes (see
    :class:`_ParseAhead`); by default on Linux, for 16 files or more and two CPUs to run on.
    ``machine_classes``: rules naming, merging or splitting machine classes (before those of asv.conf.json's
    ``machine_classes``); each machine folder joins a class (:mod:`.machine_classes`), its host kept on its runs.
    """
    results_dir = Path(results_dir)
    check_is_folder(results_dir)
    summary = ImportSummary()
    benchmarks = _benchmark_types(results_dir, summary)
    suite = suite if suite is not None else _suite_name(results_dir)
    files = find_results_files(results_dir)
    summary.files = len(files)
    infos: dict[Path, dict[str, Any]] = {}
    plan = _class_plan(store, files, [*machine_classes, *config_class_rules(results_dir)], infos)
    todo = _files_to_read(files, _stored_sources(store), summary)
    # The collector paused: each file's hundreds of thousands of parsed JSON objects would trigger
    # collections that traverse the growing heap again and again (a fifth of an import), for
    # nothing: parsed files and their columns cannot form cycles.
    with gc_paused(), _ParseAhead(todo, benchmarks, parse_ahead) as parsed, \
            _Batches(store, summary) as batches:
        for done, item in enumerate(todo, 1):
            outcome = parsed.outcome(done - 1)
            if progress is not None:
                progress(done - 1, len(todo), item.shown)
            _take_outcome(outcome, item, batches, summary, plan, suite)
    if progress is not None:
        progress(len(todo), len(todo), "")
    return summary


def _benchmark_types(results_dir: Path, summary: ImportSummary) -> dict[str, AsvBenchmark]:
    """benchmarks.json's benchmarks, or none (types then inferred from names) with the reason in ``summary``."""
    bj = results_dir / "benchmarks.json"
    unreadable = unreadable_entry(bj) if bj.exists() or bj.is_symlink() else None  # a loop, a dangling link, a FIFO
    if unreadable is not None:
        summary.failed.append(FileProblem(_display(bj), f"{unreadable}; benchmark types inferred from names"))
    elif bj.is_file():
        try:
            return read_benchmarks_json(bj)
        except (ResultsFileError, OSError) as exc:
            summary.failed.append(FileProblem(_display(bj), f"{exc}; benchmark types inferred from names"))
    return {}


def _files_to_read(files: list[tuple[Path, str]], stored: dict[str, tuple[str | None, str | None]],
                   summary: ImportSummary) -> list[_Todo]:
    """The results files to read: not those unchanged since their import (counted) nor those unreadable (reported)."""
    todo: list[_Todo] = []
    for path, machine_dir in files:
        source = f"asv:{machine_dir}/{_display(Path(path.name))}"
        try:
            st: os.stat_result | None = path.stat()
        except OSError:
            st = None
        if st is None or not S_ISREG(st.st_mode):  # a loop, a dangling link, a folder or FIFO named *.json
            why = unreadable_entry(path) or "cannot read: not a regular file"
            summary.failed.append(FileProblem(_display(path), why))
            continue
        stat_key = f"{st.st_size}:{st.st_mtime_ns}"
        old = stored.get(source)
        if old is not None and old[1] == stat_key:  # same size and mtime as when imported: not even read
            summary.unchanged += 1
            continue
        todo.append(_Todo(path, machine_dir, _display(path), source, stat_key, old[0] if old else None))
    return todo


def _take_outcome(outcome: ParseOutcome, item: _Todo, batches: _Batches, summary: ImportSummary, plan: ClassPlan,
                  suite: str) -> None:
    """One parsed file into the summary and, when it holds a new run, the batch being written."""
    if isinstance(outcome, str):
        summary.failed.append(FileProblem(item.shown, outcome))
        return
    digest, result = outcome
    if result is None:  # the bytes are what was imported (the file was only touched)
        summary.unchanged += 1
        batches.restat(item)
        return
    if result.left_out:
        kept = len({b[0] for b in result.rows.benchmark})
        summary.left_out.extend(
            FileProblem(item.shown, f"{_one_line(why)}; left out, the file's other {kept} benchmark(s) imported")
            for why in result.left_out)
    batches.write(
        item.shown,
        result,
        machine=plan.by_folder[item.machine_dir],
        machine_info=plan.info[plan.by_folder[item.machine_dir]],
        environment=result.environment,
        environment_info=result.environment_info,
        commit=result.commit,
        started_at=result.started_at,
        kind="asv",
        suite=suite,
        host=result.machine,
        tool_versions={"asv_results_format": str(result.format_version)},
        rows=result.rows,
        source=item.source,
        digest=digest,
        stat=item.stat,
    )


def _class_plan(store: Store, files: list[tuple[Path, str]], rules: Sequence[ClassRule],
                infos: dict[Path, dict[str, Any]]) -> ClassPlan:
    """Each machine folder's class (see :mod:`.machine_classes`), stored classes renamed where a second host joined."""
    by_folder: dict[str, list[Path]] = {}
    for path, folder in files:
        by_folder.setdefault(folder, []).append(path)
    plan = plan_classes(store, list(by_folder), lambda folder: _folder_facts(folder, by_folder[folder], infos), rules)
    apply_renames(store, plan.renames)
    return plan


def _folder_facts(folder: str, paths: list[Path], infos: dict[Path, dict[str, Any]]) -> FolderFacts:
    """A machine folder's host name, hardware (machine.json, else its first results file's params) and files."""
    files = [p for p in paths if p.suffix == ".json"]
    info = _machine_info(files[0].parent, infos) if files else {}
    params: dict[str, Any] = {}
    for path in files[:1]:
        try:
            data = _load_json(path)
        except (ResultsFileError, OSError):
            break
        if isinstance(data, dict) and isinstance(data.get("params"), dict):
            params = {k: v for k, v in data["params"].items() if isinstance(v, (str, int, float))}
    host = params.get("machine") if isinstance(params.get("machine"), str) else None
    host = host or (info.get("machine") if isinstance(info.get("machine"), str) else None) or folder
    if hardware_of(info) is None and hardware_of(params) is not None:
        info = {**info, **{k: params[k] for k in ("machine", *HARDWARE_KEYS) if k in params}}
    return FolderFacts(host, info, {stem(p.name) for p in files})



@dataclass(frozen=True, slots=True)
class _Todo:
    """A results file that is new or changed since its import (by size and mtime)."""

    path: Path
    machine_dir: str
    shown: str
    source: str
    stat: str
    stored_digest: str | None


ParseOutcome = tuple[str, "AsvResultsFile | None"] | str  # (digest, parsed; None: same bytes) or one-line error


def _read_and_parse(item: _Todo, benchmarks: Mapping[str, AsvBenchmark]) -> ParseOutcome:
    """Read, hash and parse one file (here, or in the worker of :class:`_ParseAhead`)."""
    try:
        raw = item.path.read_bytes()
        digest = hashlib.sha256(raw).hexdigest()
        if digest == item.stored_digest:
            return digest, None
        return digest, parse_results_file(item.path, benchmarks, item.machine_dir, raw)
    except ResultsFileError as exc:
        return _one_line(str(exc))
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"
    except Exception as exc:  # noqa: BLE001 - a damaged file must not stop the others
        return _one_line(f"cannot read: {type(exc).__name__}: {exc}")


class _ParseAhead:
    """The files' parse outcomes, in order. With a worker process, the next files are read and
    parsed there while this process writes the current one: parsing is about a third of an
    import's work, and a file's columns (``RunRows``) pickle cheaply. (An object per case made
    that pickling cost more than the parse, and a worker twice as slow.)

    The worker is forked: a fresh interpreter (``spawn``) would start slower and import the
    caller's ``__main__`` again, which re-runs any script without a main guard. The child only
    reads files and parses them, never touches the database connections or other threads' state
    it inherits, and dies with its parent (PR_SET_PDEATHSIG), so a killed import leaves no worker
    behind. A worker that fails costs nothing but its speed: the files are then parsed here."""

    AHEAD = 8  # files handed to the worker beyond the one being written
    MIN_FILES = 16  # fewer: not worth a process

    def __init__(self, todo: Sequence[_Todo], benchmarks: Mapping[str, AsvBenchmark], worker: bool | None) -> None:
        import multiprocessing

        self.todo, self.benchmarks = todo, benchmarks
        self.futures: dict[int, Any] = {}
        self.pool: Any = None
        if worker is None:
            worker = len(todo) >= self.MIN_FILES and can_fork()
        if worker and "fork" in multiprocessing.get_all_start_methods():
            from concurrent.futures import ProcessPoolExecutor

            self.pool = ProcessPoolExecutor(
                1, mp_context=multiprocessing.get_context("fork"), initializer=_worker_start,
                initargs=(os.getpid(), benchmarks),  # inherited by the fork, not pickled
            )

    def __enter__(self) -> _ParseAhead:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

    def outcome(self, index: int) -> ParseOutcome:
        if self.pool is not None:
            try:
                for i in range(index, min(index + 1 + self.AHEAD, len(self.todo))):
                    if i not in self.futures:
                        self.futures[i] = self.pool.submit(_parse_in_worker, self.todo[i])
                return self.futures.pop(index).result()
            except Exception:  # noqa: BLE001 - a broken worker (killed, out of memory): parse here from now on
                self.pool.shutdown(wait=False, cancel_futures=True)
                self.pool = None
        return _read_and_parse(self.todo[index], self.benchmarks)


_WORKER_BENCHMARKS: dict[str, Mapping[str, AsvBenchmark]] = {}


def _worker_start(parent: int, benchmarks: Mapping[str, AsvBenchmark]) -> None:
    """In the parse worker: die with the import, and no cyclic collector (see import_asv_results)."""
    import gc

    gc.disable()
    die_with_parent(parent)
    _WORKER_BENCHMARKS["benchmarks"] = benchmarks


def _parse_in_worker(item: _Todo) -> ParseOutcome:
    return _read_and_parse(item, _WORKER_BENCHMARKS["benchmarks"])


def _stored_sources(store: Store) -> dict[str, tuple[str | None, str | None]]:
    """source -> (digest, "size:mtime_ns") of every imported file: unchanged files are skipped unread."""
    run = m.Run.__table__
    with store.read() as conn:
        columns = select(run.c.source, run.c.source_digest, run.c.source_stat)
        rows = conn.execute(columns.where(run.c.source.is_not(None)))
        return {r.source: (r.source_digest, r.source_stat) for r in rows}


def _mark_due(conn: Connection, pending: Sequence[tuple[Any, ...]]) -> None:
    """Mark the series and commits the batch's files wrote for detect (``writes.mark_detect_due``)."""
    from .writes import mark_detect_due

    written = [(parsed, touched) for shown, parsed, _, outcome, touched in pending
               if shown is not None and outcome != "unchanged" and touched]
    mark_detect_due(conn, set().union(*(t for _, t in written)), {p.commit.sha for p, _ in written})


def _not_stored(shown: str, exc: Exception) -> FileProblem:
    return FileProblem(shown, _one_line(f"not stored: {exc.__class__.__name__}: {exc}"))


class _Abandoned(Exception):
    """Rolls back a batch's transaction (thrown into its context manager)."""


class _Batches:
    """Many results files per transaction.

    A transaction costs a commit, and on SQLite a commit writes every page it touched:
    measurements are clustered by series, so one run dirties a page per series, and the
    next runs of a batch dirty the same pages again. Batching divides that cost by the
    batch size. A kill loses at most the open batch (re-import writes it again). The
    summary counts a file once its transaction committed.

    A file that fails to store rolls back the batch, whose files are then written again
    one transaction each, so that only that file is lost. (A savepoint per file did the
    same on the common path, but its journal copied every page a file changed: about 15%
    of an import, in the common case where nothing fails.)"""

    FILES = 64
    SECONDS = 2.0
    CHECKPOINT_PAGES = 16384  # 64 MiB of WAL between checkpoints (SQLite's default: 1000 pages)

    def __init__(self, store: Store, summary: ImportSummary) -> None:
        self.store, self.summary = store, summary
        self.tx: Any = None
        self.conn: Connection | None = None
        self.dims: Dims | None = None
        self.sink = MeasurementSink()  # the batch's measurement rows, written sorted before it commits
        # What the open transaction holds, to count once it commits or to write again after a failure:
        # (shown, parsed, run, outcome, touched) per file written, (None, item, ...) per file re-stat'ed.
        self.pending: list[tuple[Any, ...]] = []
        self.opened = 0.0

    def __enter__(self) -> _Batches:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.commit()
        elif self.tx is not None:
            self.tx.__exit__(exc_type, exc, tb)
            self.tx = None

    def write(self, shown: str, parsed: AsvResultsFile, **run: Any) -> None:
        self._open()
        assert self.conn is not None and self.dims is not None
        try:
            _, outcome, touched = write_run_in(self.conn, self.dims, **run, sink=self.sink)
        except SQLAlchemyError:
            self._write_alone([*self.pending, (shown, parsed, run, None, None)])
            return
        self.pending.append((shown, parsed, run, outcome, touched))
        if len(self.pending) >= self.FILES or time.monotonic() - self.opened >= self.SECONDS:
            self.commit()

    def _write_alone(self, entries: list[tuple[Any, ...]]) -> None:
        """Roll back the open batch and write its entries again, one transaction each."""
        self._rollback()
        for shown, parsed, run, *_ in entries:
            if shown is None:
                self.restat(parsed)
                self.commit()
                continue
            self._open()
            assert self.conn is not None and self.dims is not None
            try:
                _, outcome, touched = write_run_in(self.conn, self.dims, **run, sink=self.sink)
                self.sink.flush(self.conn)
            except SQLAlchemyError as exc:
                self._rollback()
                self.summary.failed.append(_not_stored(shown, exc))
                continue
            self.pending.append((shown, parsed, run, outcome, touched))
            self.commit()

    def _rollback(self) -> None:
        if self.tx is not None:
            tx, self.tx = self.tx, None
            try:
                raise _Abandoned()
            except _Abandoned as exc:
                tx.__exit__(_Abandoned, exc, exc.__traceback__)
        self.pending = []
        self.sink = MeasurementSink()
        if self.dims is not None:
            self.dims.new, self.dims.last = {}, {}  # rows made in the rolled-back transaction are gone

    def _open(self) -> Connection:
        if self.tx is None:
            self.tx = self.store.write()
            self.conn = self.tx.__enter__()
            if self.conn.dialect.name == "sqlite":
                # Fewer WAL checkpoints (each one copies pages back and syncs) while many files land.
                self.conn.exec_driver_sql(f"PRAGMA wal_autocheckpoint = {self.CHECKPOINT_PAGES}")
            self.dims = Dims(self.store, self.conn)
            self.opened = time.monotonic()
        assert self.conn is not None
        return self.conn

    def restat(self, item: _Todo) -> None:
        """A file touched but not changed: remember its new size and mtime, so the next import skips it unread."""
        run = m.Run.__table__
        self._open().execute(update(run).where(run.c.source == item.source).values(source_stat=item.stat))
        self.pending.append((None, item, None, None, None))

    def commit(self) -> None:
        if self.tx is None:
            return
        try:
            self.sink.flush(self.conn)
            _mark_due(self.conn, self.pending)  # detect's to-do, durable with the rows (issue 60)
        except SQLAlchemyError:
            self._write_alone(self.pending)  # each file flushes its own rows
            return
        tx, self.tx = self.tx, None
        try:
            tx.__exit__(None, None, None)
        except SQLAlchemyError as exc:
            for shown, *_ in self.pending:
                if shown is not None:
                    self.summary.failed.append(_not_stored(shown, exc))
            self.pending = []
            return
        assert self.dims is not None
        self.dims.publish()
        s = self.summary
        for shown, parsed, run, outcome, touched in self.pending:
            if shown is None:  # a re-stat, counted as unchanged already
                continue
            if outcome == "unchanged":
                s.unchanged += 1
                continue
            s.imported += outcome == "new"
            s.replaced += outcome == "replaced"
            s.machines.add(run["machine"])
            s.hosts.add(parsed.machine)
            s.environments.add(parsed.environment)
            s.commits.add(parsed.commit.sha)
            s.touched_series |= touched
            rows = parsed.rows
            for status, count in rows.status_counts.items():
                s.results[status] += count
            s.measurements += len(rows.measured)
            s.benchmarks.update(map(operator.itemgetter(0), rows.benchmark))
        self.pending = []
