"""Importing asv results folders into the store (``mmtrack import-asv``, ``mmtrack run``, ``mmtrack update``).

asv formats read: results files of ``"version": 2`` (``result_columns``, asv >= 0.5) and ``"version": 1``
(asv 0.2 to 0.4: a scalar or a dict per benchmark), converted with asv's own ``Results.update_to_2``. A result
of ``null`` is a failed benchmark, ``NaN`` a skipped one. Each file becomes the columns of one run
(:class:`.ingest.RunRows`), written through :func:`.ingest.write_run_in`: a file is imported whole or not at all.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import itertools
import json
import math
import operator
import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from stat import S_ISREG
from typing import Any, Callable, Mapping, Sequence

from sqlalchemy import Connection, select, update
from sqlalchemy.exc import SQLAlchemyError

from ..asvbridge.results_v1 import update_to_2
from ..asvbridge.machine_class import HARDWARE_KEYS, ClassRule, hardware_of, rules_from_config
from ..errors import UserError
from ..forked import can_fork, die_with_parent
from ..fsutil import unreadable_entry
from ..measure.stats import sample_stats_rows
from ..results import PRIMARY, CommitInfo, MetricKey, canonical_params
from ..vocabulary import Direction, MetricFormat, default_direction
from . import schema as m
from .bulk import gc_paused
from .db import Store
from .machine_classes import ClassPlan, FolderFacts, apply_renames, plan_classes, stem
from .ingest import BenchmarkIdentity, Dims, MeasurementSink, MetricIdentity, RunRows, write_run_in

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


class ResultsFileError(ValueError):
    """A results file mmtrack cannot read; the message says why."""


Progress = Callable[[int, int, str], None]  # (done, total, current file)

# -- benchmarks.json and results files -----------------------------------------------------------

_PREFIX_TYPES = (
    ("timeraw_", "time", "seconds"),
    ("time_", "time", "seconds"),
    ("peakmem_", "peakmemory", "bytes"),
    ("mem_", "memory", "bytes"),
    ("track_", "track", "unit"),
)


@dataclass(frozen=True, slots=True)
class AsvBenchmark:
    """What benchmarks.json says about one benchmark (or what its name implies)."""

    type: str
    unit: str
    param_names: tuple[str, ...] = ()
    version: str = ""


@functools.lru_cache(maxsize=256)  # called per benchmark row of every file
def asv_metric(btype: str, unit: str) -> tuple[MetricKey, Direction]:
    """The metric an asv benchmark's value is stored under.

    Durations (time benchmarks, and engine benchmarks that asv runs as track
    benchmarks in seconds) share mmtrack's primary metric, so an asv history and
    engine runs of the same benchmark form one series.
    """
    if btype == "time" or unit == "seconds":
        return PRIMARY, Direction.LOWER
    if btype == "memory":
        return MetricKey("memory", "mem", "bytes"), Direction.LOWER
    if btype == "peakmemory":
        return MetricKey("memory", "peakmem", "bytes"), Direction.LOWER
    return MetricKey("track", "value", unit), default_direction(unit)


@functools.lru_cache(maxsize=256)
def _metric_identity(btype: str, unit: str) -> MetricIdentity:
    metric, direction = asv_metric(btype, unit)
    return (metric.section, metric.name, metric.unit), direction.value, MetricFormat.NUMBER.value, ""


def _from_name(name: str) -> AsvBenchmark:
    short = name.rsplit(".", 1)[-1]
    for prefix, btype, unit in _PREFIX_TYPES:
        if short.startswith(prefix):
            return AsvBenchmark(btype, unit)
    return AsvBenchmark("track", "unit")


def read_benchmarks_json(path: Path) -> dict[str, AsvBenchmark]:
    data = _load_json(path)
    if not isinstance(data, dict):
        raise ResultsFileError("not a JSON object")
    out = {}
    for name, b in data.items():
        if name == "version" or not isinstance(b, dict):
            continue
        btype = b.get("type") if isinstance(b.get("type"), str) else _from_name(name).type
        unit = b.get("unit") if isinstance(b.get("unit"), str) else _from_name(name).unit
        names = b.get("param_names")
        names = tuple(str(x) for x in names) if isinstance(names, list) else ()
        version = b.get("version") if isinstance(b.get("version"), str) else ""
        out[name] = AsvBenchmark(btype, unit, names, version)
    return out


def _load_json(path: Path, raw: bytes | None = None) -> Any:
    """The parsed JSON of ``path`` (or of its bytes ``raw``, already read). orjson reads a typical
    results file several times faster than the json module; what it refuses (NaN, which asv writes
    for skipped benchmarks, huge integers, invalid text) goes through json, which also words the errors."""
    if raw is None:
        raw = path.read_bytes()
    try:
        import orjson
    except ImportError:  # pragma: no cover - a declared dependency
        pass
    else:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsFileError(f"not valid UTF-8 (byte {exc.start})") from None
    try:
        return json.loads(text)
    except RecursionError:
        raise ResultsFileError("JSON nested too deeply") from None
    except ValueError as exc:
        raise ResultsFileError(f"not valid JSON ({exc})") from None


def _text(value: Any, what: str, limit: int | None = None) -> str:
    if not isinstance(value, str):
        raise ResultsFileError(f"{what} is {type(value).__name__}, expected a string")
    if limit is not None and len(value) > limit:  # PostgreSQL would refuse it, and with it the whole batch
        raise ResultsFileError(
            f"{what} {value[:60]!r}... is {len(value):,} characters long; the store keeps at most {limit}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ResultsFileError(f"{what} {value!r} is not valid UTF-8") from None
    if "\x00" in value:
        raise ResultsFileError(f"{what} {value!r} contains a NUL character")
    return value


def _num(value: Any, where: str, field: str = "", *, nan: str = "error") -> float | None:
    """A finite float, or None for null. NaN: "error", "none" (missing) or "keep" (skipped)."""
    if type(value) is float and value - value == 0.0:  # the fast path: finite floats
        return value
    if value is None:
        return None
    what = f"{where} {field}".strip()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ResultsFileError(f"{what} is {type(value).__name__} {str(value)[:40]!r}, expected a number")
    try:
        f = float(value)
    except OverflowError:
        raise ResultsFileError(f"{what} has {len(str(value))} digits, too large for a float") from None
    if math.isnan(f):
        if nan == "error":
            raise ResultsFileError(f"{what} is NaN, expected a number")
        return f if nan == "keep" else None
    if math.isinf(f):
        if nan == "none":  # asv writes ±Infinity for the CI of a single sample: no interval
            return None
        raise ResultsFileError(f"{what} is infinite (or too large for a float)")
    return f


def _int(value: Any, where: str, field: str = "") -> int | None:
    if type(value) is int and 0 <= value < 2**62:
        return value
    what = f"{where} {field}".strip()
    f = _num(value, what)
    if f is None:
        return None
    if f != int(f) or not (0 <= f < 2**62):
        raise ResultsFileError(f"{what} {str(value)[:40]} is not a count")
    return int(f)


def _ms(value: Any, where: str, field: str = "") -> datetime | None:
    what = f"{where} {field}".strip()
    f = _num(value, what)
    if f is None:
        return None
    try:
        return datetime.fromtimestamp(f / 1000.0, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        raise ResultsFileError(f"{what} {str(value)[:40]} is not a time in milliseconds") from None


@dataclass(slots=True)
class AsvResultsFile:
    """One parsed results file."""

    machine: str
    environment: str
    environment_info: dict[str, Any]
    commit: CommitInfo
    started_at: datetime
    format_version: int
    rows: RunRows
    left_out: tuple[str, ...] = ()  # why malformed benchmark entries were left out, one line each


def parse_results_file(
    path: Path, benchmarks: Mapping[str, AsvBenchmark], machine_dir: str | None = None, raw: bytes | None = None
) -> AsvResultsFile:
    """Read one asv results file (format 1 or 2; ``raw``: its bytes, when already read) into store rows;
    raises ResultsFileError. A malformed benchmark entry is left out (``left_out`` says why) when
    others of the file can be read."""
    data = _load_json(path, raw)
    if not isinstance(data, dict):
        raise ResultsFileError(f"top level is {type(data).__name__}, expected an object")
    version = data.get("version")
    if version not in (1, 2) or isinstance(version, bool):
        raise ResultsFileError(f"unknown results format version {version!r:.40} (mmtrack reads versions 1 and 2)")
    try:
        if version == 1:
            if not isinstance(data.get("results"), dict):
                raise ResultsFileError("'results' is missing or not an object")
            data = update_to_2(data)
    except ResultsFileError:
        raise
    except Exception as exc:  # asv's converter on a damaged file
        raise ResultsFileError(f"cannot convert from format 1: {type(exc).__name__}: {exc}") from None

    for key in ("commit_hash", "results", "result_columns"):
        if key not in data:
            raise ResultsFileError(f"missing key {key!r}")
    sha = _text(data["commit_hash"], "commit_hash")
    # 7-40 hex digits (an abbreviated or full SHA-1), or 64 (a SHA-256 repository)
    if not (7 <= len(sha) <= 40 or len(sha) == 64) or any(ch not in "0123456789abcdefABCDEF" for ch in sha):
        raise ResultsFileError(f"commit_hash {sha!r:.70} is not a git sha (7 to 40 hex digits)")
    params = data.get("params") or {}
    if not isinstance(params, dict):
        raise ResultsFileError("'params' is not an object")
    machine_name = params.get("machine", machine_dir or "")
    machine = _text(machine_name, "params.machine", NAME_LIMITS["machine"]) or (machine_dir or "")
    if not machine:
        raise ResultsFileError("no machine name (params.machine)")
    env_name = data.get("env_name")
    if env_name is None:
        env_name = f"py{data.get('python', '')}"
    env_name = _text(env_name, "env_name", NAME_LIMITS["environment"])
    env_info = {
        "python": data.get("python"),
        "requirements": data.get("requirements") or {},
        "env_vars": data.get("env_vars") or {},
    }
    date = _ms(data.get("date"), "date")
    columns = data["result_columns"]
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        raise ResultsFileError("'result_columns' is not a list of names")
    results = data["results"]
    if not isinstance(results, dict):
        raise ResultsFileError("'results' is not an object")

    table, rows, left_out = _read_benchmarks(columns, results, benchmarks)
    started = min(table.starts) if table.starts else (date or datetime.now(timezone.utc))
    return AsvResultsFile(
        machine=machine,
        environment=env_name,
        environment_info=env_info,
        commit=CommitInfo(sha=sha.lower(), date=date),
        started_at=started,
        format_version=int(version),
        rows=rows,
        left_out=left_out,
    )


def _table_of(
    columns: list[str], results: dict[str, Any], benchmarks: Mapping[str, AsvBenchmark]
) -> tuple[_AsvTable, RunRows]:
    """``results``' benchmarks read into one table: at once when they have the usual shape, else one by one."""
    table = _AsvTable(columns)
    if not table.add_all(results, benchmarks):
        for name, values in results.items():
            name = _text(name, "benchmark name")
            if not name:
                raise ResultsFileError("empty benchmark name")
            table.add(name, values, benchmarks.get(name) or _from_name(name))
    return table, table.rows()


def _limit(column: Any) -> int | None:
    """The most characters the store keeps in ``column``: its length, or the limit of a text name in a key."""
    return getattr(column.type, "length", None) or column.info.get("limit")


# The schema's limits, checked before the write: the same refusal on SQLite and PostgreSQL.
NAME_LIMITS = {"machine": _limit(m.Machine.__table__.c.name),
               "environment": _limit(m.Environment.__table__.c.name),
               "benchmark": _limit(m.Benchmark.__table__.c.name),
               "version": _limit(m.Benchmark.__table__.c.version),
               "unit": _limit(m.Metric.__table__.c.unit),
               "type": _limit(m.Benchmark.__table__.c.type)}


@functools.lru_cache(maxsize=8192)  # asked of every benchmark of every file: a history holds few distinct ones
def _over_limits(name: str, meta: AsvBenchmark) -> str:
    """Why the store cannot keep this benchmark's name, unit, type or version, or ""."""
    for what, value in (("benchmark", name), ("unit", meta.unit), ("type", meta.type), ("version", meta.version)):
        if len(value) > NAME_LIMITS[what]:
            return f"its {what} is {len(value):,} characters long; the store keeps at most {NAME_LIMITS[what]}"
    return ""


def _read_benchmarks(
    columns: list[str], results: dict[str, Any], benchmarks: Mapping[str, AsvBenchmark]
) -> tuple[_AsvTable, RunRows, tuple[str, ...]]:
    """The file's benchmarks as store rows, and why any were left out (one line each).

    One malformed benchmark entry (a hand edit, a plugin's odd value) loses that benchmark only,
    as asv itself still reads and publishes the rest of such a file. The whole file is refused only
    when no benchmark of it can be read. Costs nothing on a good file: the benchmarks are checked
    one by one only after the file as a whole failed."""
    try:
        table, rows = _table_of(columns, results, benchmarks)
        return table, rows, ()
    except ResultsFileError:
        if len(results) < 2:
            raise
    readable: dict[str, Any] = {}
    left_out: list[str] = []
    for name, values in results.items():
        try:
            _table_of(columns, {name: values}, benchmarks)
        except ResultsFileError as exc:
            left_out.append(str(exc))
        else:
            readable[name] = values
    if not readable:
        raise ResultsFileError(f"{left_out[0]} (and no other benchmark of the file can be read either)")
    table, rows = _table_of(columns, readable, benchmarks)
    return table, rows, tuple(left_out)


_STAT_COLUMNS = (
    "stats_ci_99_a", "stats_ci_99_b", "stats_q_25", "stats_q_75", "stats_number", "stats_repeat", "samples")
_ROW_KEYS = ("result", "params", "version", "started_at", "duration", *_STAT_COLUMNS)


@functools.lru_cache(maxsize=4096)  # a history's files repeat the same grids: canonical JSON once per grid
def _grid_params(names: tuple[str, ...], grid: tuple[tuple[str, ...], ...]) -> tuple[str, ...]:
    """The canonical params of every combination of a parameter grid, in asv's order."""
    return tuple(canonical_params(dict(zip(names, combo))) for combo in itertools.product(*grid))


class _AsvTable:
    """The cases of one results file, gathered benchmark by benchmark (``add``) into columns that
    ``rows`` then checks and summarises a column at a time: a file holds hundreds of benchmarks of
    one case each, and per-case Python was most of an import's time.

    Errors name the benchmark and, in a grid, the case ("benchmark 'x' case 2 result is ...")."""

    def __init__(self, columns: list[str]) -> None:
        at = {c: i for i, c in enumerate(columns)}  # a repeated name: its last column, as dict(zip()) gave
        self.at = [at.get(k) for k in _ROW_KEYS]
        self.width = len(columns)
        self.need = max((i + 1 for i in self.at if i is not None), default=0)  # the row length that has them all
        self.benchmark: list[BenchmarkIdentity] = []
        self.metric: list[MetricIdentity] = []
        self.started: list[datetime | None] = []
        self.duration: list[float | None] = []
        self.cols: list[list[Any]] = [[] for _ in _STAT_COLUMNS]
        self.value: list[Any] = []
        self.starts: list[datetime] = []
        self.names: list[str] = []  # per benchmark, for error messages
        self.first: list[int] = []  # per benchmark, the index of its first case
        self.times: dict[Any, datetime | None] = {}  # started_at by its raw value: few are distinct

    def add_all(self, results: dict[str, Any], benchmarks: Mapping[str, AsvBenchmark]) -> bool:
        """Add every benchmark at once when the file has the usual shape (no parameter grids: one
        case per benchmark, every column a list of one entry or absent), checked and flattened a
        column at a time. False, having added nothing, for any other file: ``add`` then takes each
        benchmark in turn, and words the errors."""
        names, entries = list(results), list(results.values())
        b = len(names)
        try:
            joined = "".join(names)
            joined.encode("utf-8")
        except (TypeError, UnicodeEncodeError):
            return False
        if not b or "\x00" in joined or "" in names or set(map(type, entries)) != {list}:
            return False
        if any(_over_limits(name, benchmarks.get(name) or _from_name(name)) for name in names):
            return False  # ``add`` names the benchmark and the limit
        if min(map(len, entries)) < self.need:  # asv leaves out trailing columns it has no value for
            entries = [e if len(e) >= self.need else e + [None] * (self.need - len(e)) for e in entries]
        transposed = list(zip(*entries))
        result, grid, version, started, duration, *stats = [
            (None,) * b if i is None else transposed[i] for i in self.at]
        if any(grid):
            return False
        flat = []
        for col in (result, *stats):
            types = set(map(type, col))
            if types == {list} and set(map(len, col)) == {1}:
                flat.append(list(itertools.chain.from_iterable(col)))
            elif types <= {list, type(None)} and all(len(x) == 1 for x in col if x is not None):
                # absent for some benchmarks: asv leaves the columns out of a failed benchmark's row
                flat.append([None if x is None else x[0] for x in col])
            else:
                return False
        if not set(map(type, version)) <= {str, type(None)}:
            return False
        if not set(map(type, started)) <= {int, float, type(None)}:
            return False
        try:
            for v in set(version) - {None}:
                _text(v, "version", NAME_LIMITS["version"])
            for v in set(started) - set(self.times):
                self.times[v] = _ms(v, "", "started_at")
            durations = _floats(list(duration), lambda k: "", "duration", nan="error")
        except ResultsFileError:
            return False  # ``add`` names the benchmark
        metas = [benchmarks.get(name) or _from_name(name) for name in names]
        if None in version:
            version = [meta.version if v is None else v for v, meta in zip(version, metas)]
        self.names, self.first = names, list(range(b))
        self.value, self.cols = flat[0], flat[1:]
        self.benchmark = list(zip(names, itertools.repeat("{}"), [v or "" for v in version],
                                  [meta.unit for meta in metas], [meta.type for meta in metas]))
        self.metric = [_metric_identity(meta.type, meta.unit) for meta in metas]
        self.started = [self.times[v] for v in started]
        self.starts = [t for t in self.started if t is not None]
        self.duration = durations
        return True

    def add(self, name: str, values: Any, meta: AsvBenchmark) -> None:
        what = f"benchmark {name[:80]!r}"
        problem = _over_limits(name, meta)
        if problem:
            raise ResultsFileError(f"{what}: {problem}")
        if type(values) is not list:
            raise ResultsFileError(f"{what}: row is {type(values).__name__}, expected a list")
        if len(values) < self.width:
            values = values + [None] * (self.width - len(values))
        result, grid, version, started, duration, *stats = [None if i is None else values[i] for i in self.at]
        if grid:
            if not isinstance(grid, list) or not all(isinstance(p, list) for p in grid):
                raise ResultsFileError(f"{what}: 'params' is not a list of lists")
            grid = [[_text(v, f"{what} parameter value") for v in p] for p in grid]
            names = meta.param_names if len(meta.param_names) == len(grid) else tuple(
                f"param{i + 1}" for i in range(len(grid)))
            params = _grid_params(names, tuple(map(tuple, grid)))
        else:
            params = ["{}"]  # no parameters (asv writes [], any falsy value reads the same)
        n = len(params)
        if result is not None and type(result) is not list:
            result = [result]  # a bare number: written by hand or by very old asv
        if result is not None and len(result) != n:
            raise ResultsFileError(f"{what}: {len(result)} results for {n} parameter combinations")
        version = _text(version, f"{what} version", NAME_LIMITS["version"]) if version is not None else meta.version
        if type(started) is not int and type(started) is not float:
            at = _ms(started, what, "started_at")  # None, or an error
        elif started in self.times:
            at = self.times[started]
        else:
            at = self.times[started] = _ms(started, what, "started_at")
        if at is not None:
            self.starts.append(at)
        duration = _num(duration, what, "duration")
        self.names.append(name)
        self.first.append(len(self.value))
        self.value.extend(result if result is not None else [None] * n)
        for col, key, dest in zip(stats, _STAT_COLUMNS, self.cols):
            dest.extend(_columns(col, key, n, what))
        version = version or ""
        self.benchmark.extend([(name, p, version, meta.unit, meta.type) for p in params])
        self.metric.extend([_metric_identity(meta.type, meta.unit)] * n)
        self.started.extend([at] * n)
        self.duration.extend([duration] * n)

    def where(self, k: int) -> str:
        """The case ``k`` as error messages name it."""
        b = bisect.bisect_right(self.first, k) - 1
        end = self.first[b + 1] if b + 1 < len(self.first) else len(self.value)
        what = f"benchmark {self.names[b]!r}"
        return f"{what} case {k - self.first[b]}" if end - self.first[b] > 1 else what

    def rows(self) -> RunRows:
        where = self.where
        value = _floats(self.value, where, "result", nan="keep")
        if None in value or any(v != v for v in value):
            status = ["failed" if v is None else "skipped" if v != v else "ok" for v in value]
            value = [None if v != v else v for v in value]
        else:
            status = ["ok"] * len(value)
        ci_a, ci_b, q25, q75, number, repeat, samples = self.cols
        ci_low = _floats(ci_a, where, "ci_99_a", nan="none")
        ci_high = _floats(ci_b, where, "ci_99_b", nan="none")
        q1 = _floats(q25, where, "q_25", nan="none")
        q3 = _floats(q75, where, "q_75", nan="none")
        number = _ints(number, where, "number")
        repeat = _ints(repeat, where, "repeat")
        samples = _samples(samples, where)
        n = len(value)
        measure: dict[str, list[Any]] = {
            "mean": [None] * n, "median": value, "p95": [None] * n, "min": [None] * n, "max": [None] * n,
            "q1": list(q1), "q3": list(q3), "ci_low": ci_low, "ci_high": ci_high,
            # ok without samples: asv kept only the value (and maybe its stats), so no spread; count its repeats
            "count": [0 if st != "ok" else (r or 1) for st, r in zip(status, repeat)], "values": [None] * n,
        }
        sampled = [k for k in range(n) if status[k] == "ok" and samples[k]]
        if sampled:
            lists = [samples[k] for k in sampled]
            stats = sample_stats_rows(lists)
            for key in ("mean", "p95", "min", "max"):
                dest = measure[key]
                for k, v in zip(sampled, stats[key]):
                    dest[k] = v
            mq1, mq3, count, packed = measure["q1"], measure["q3"], measure["count"], measure["values"]
            for k, s, s1, s3 in zip(sampled, lists, stats["q1"], stats["q3"]):
                count[k] = len(s)
                packed[k] = m.float_packer(len(s))(*s)
                if q1[k] is None or q3[k] is None:  # asv's quartiles when it wrote both, else the samples'
                    mq1[k], mq3[k] = s1, s3
        result = {
            "status": status, "message": [None] * n, "value": value, "ci_low": ci_low, "ci_high": ci_high,
            "q1": q1, "q3": q3, "number": number, "repeat": repeat, "started_at": self.started,
            "duration": self.duration,
        }
        return RunRows(benchmark=self.benchmark, result=result, measured=list(range(n)), position=[0] * n,
                        metric=self.metric, measure=measure)


def _clean_floats(col: list[Any]) -> bool:
    """Whether every entry is a finite float (their sum is finite, unless it overflows: then the
    slow path finds them fine one by one)."""
    return (not col or set(map(type, col)) == {float}) and math.isfinite(sum(col))


def _floats(col: list[Any], where: Callable[[int], str], field: str, *, nan: str) -> list[float | None]:
    """A column of ``_num`` values: checked at once when clean, else one by one (naming the case)."""
    if _clean_floats(col):
        return col
    return [v if type(v) is float and v - v == 0.0 else None if v is None else _num(v, where(k), field, nan=nan)
            for k, v in enumerate(col)]


def _ints(col: list[Any], where: Callable[[int], str], field: str) -> list[int | None]:
    """A column of ``_int`` counts."""
    if all(type(v) is int for v in col) and (not col or (min(col) >= 0 and max(col) < 2**62)):
        return col
    return [v if type(v) is int and 0 <= v < 2**62 else None if v is None else _int(v, where(k), field)
            for k, v in enumerate(col)]


def _samples(col: list[Any], where: Callable[[int], str]) -> list[list[float] | None]:
    """Each case's samples: None or a list of finite floats."""
    present = [s for s in col if s is not None]
    if all(type(s) is list for s in present):
        flat = list(itertools.chain.from_iterable(present))
        if _clean_floats(flat):
            return col
    out = []
    for k, s in enumerate(col):
        if s is not None:
            if not isinstance(s, list):
                raise ResultsFileError(f"{where(k)}: samples are {type(s).__name__}, expected a list")
            if not _clean_floats(s):
                s = [_num(v, where(k), "sample") for v in s]
            if None in s:
                raise ResultsFileError(f"{where(k)}: a sample is null")
        out.append(s)
    return out


def _columns(col: Any, key: str, n: int, what: str) -> Sequence[Any]:
    """One per-combination column of a results row; all None when absent."""
    if col is None:
        return (None,) * n
    if type(col) is not list or len(col) != n:
        raise ResultsFileError(f"{what}: column {key!r} does not have one entry per parameter combination")
    return col


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _display(path: Path) -> str:
    """A printable path, even for names that are not valid UTF-8."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


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


def find_results_files(results_dir: Path) -> list[tuple[Path, str]]:
    """(file, machine directory) for every results file under ``results_dir``."""
    out = []
    for machine_dir in sorted(p for p in results_dir.iterdir() if p.is_dir()):
        name = os.fsencode(machine_dir.name).decode("utf-8", "backslashreplace")
        try:
            entries = sorted(machine_dir.iterdir())
        except OSError:  # an unreadable machine folder: the import reports it as one failed entry
            out.append((machine_dir, name))
            continue
        for f in entries:
            # Not only regular files: a dangling link, a loop, a folder or a FIFO named x.json is
            # reported by the import as a failed entry, never skipped silently.
            if f.suffix == ".json" and f.name != "machine.json":
                out.append((f, name))
    return out


def _machine_info(machine_dir: Path, cache: dict[Path, dict[str, Any]]) -> dict[str, Any]:
    if machine_dir not in cache:
        info: dict[str, Any] = {}
        f = machine_dir / "machine.json"
        if f.is_file():
            try:
                data = _load_json(f)
                if isinstance(data, dict):
                    info = {str(k): v for k, v in data.items() if k != "version" and isinstance(v, (str, int, float))}
                    json.dumps(info, allow_nan=False)
                    for v in info.values():
                        if isinstance(v, str):
                            v.encode("utf-8")
            except (ResultsFileError, ValueError, UnicodeEncodeError, OSError):
                info = {}
        cache[machine_dir] = info
    return cache[machine_dir]


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
    if not results_dir.is_dir():
        raise UserError(f"{results_dir}: not a directory; give an asv results folder (the one with benchmarks.json)")
    summary = ImportSummary()
    benchmarks: dict[str, AsvBenchmark] = {}
    bj = results_dir / "benchmarks.json"
    unreadable = unreadable_entry(bj) if bj.exists() or bj.is_symlink() else None  # a loop, a dangling link, a FIFO
    if unreadable is not None:
        summary.failed.append(FileProblem(_display(bj), f"{unreadable}; benchmark types inferred from names"))
    elif bj.is_file():
        try:
            benchmarks = read_benchmarks_json(bj)
        except (ResultsFileError, OSError) as exc:
            summary.failed.append(FileProblem(_display(bj), f"{exc}; benchmark types inferred from names"))
    suite = suite if suite is not None else _suite_name(results_dir)
    files = find_results_files(results_dir)
    summary.files = len(files)
    infos: dict[Path, dict[str, Any]] = {}
    plan = _class_plan(store, files, [*machine_classes, *config_class_rules(results_dir)], infos)
    stored = _stored_sources(store)
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
    # The collector paused: each file's hundreds of thousands of parsed JSON objects would trigger
    # collections that traverse the growing heap again and again (a fifth of an import), for
    # nothing: parsed files and their columns cannot form cycles.
    with gc_paused(), _ParseAhead(todo, benchmarks, parse_ahead) as parsed, \
            _Batches(store, summary) as batches:
        for done, item in enumerate(todo, 1):
            outcome = parsed.outcome(done - 1)
            if progress is not None:
                progress(done - 1, len(todo), item.shown)
            if isinstance(outcome, str):
                summary.failed.append(FileProblem(item.shown, outcome))
                continue
            digest, result = outcome
            if result is None:  # the bytes are what was imported (the file was only touched)
                summary.unchanged += 1
                batches.restat(item)
                continue
            if result.left_out:
                kept = len({b[0] for b in result.rows.benchmark})
                summary.left_out.extend(
                    FileProblem(item.shown,
                                f"{_one_line(why)}; left out, the file's other {kept} benchmark(s) imported")
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
    if progress is not None:
        progress(len(todo), len(todo), "")
    return summary


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


def config_class_rules(results_dir: Path) -> list[ClassRule]:
    """The ``machine_classes`` rules of the asv.conf.json above the results folder, if it has any."""
    for conf in (results_dir.parent / "asv.conf.json", results_dir.parent.parent / "asv.conf.json"):
        try:
            text = conf.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if '"machine_classes"' not in text:
            return []
        from asv.util import load_json

        try:
            config = load_json(str(conf), js_comments=True)
        except Exception as exc:  # noqa: BLE001 - asv's own reader words what is wrong
            raise UserError(f"{conf}: cannot read machine_classes: {exc}") from None
        return rules_from_config(config, str(conf))
    return []


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
