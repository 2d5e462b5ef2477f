"""One asv results file read into the columns of one store run (:class:`.ingest.RunRows`), checked against
the store's limits; the format itself is :mod:`mmtrack.asvbridge.results_file`'s."""

from __future__ import annotations

import bisect
import functools
import itertools
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..asvbridge.results_file import (
    AsvBenchmark,
    ResultsFileError,
    _columns,
    _floats,
    _from_name,
    _ints,
    _load_json,
    _ms,
    _num,
    _samples,
    _text,
    asv_metric,
)
from ..asvbridge.results_v1 import update_to_2
from ..measure.stats import sample_stats_rows
from ..results import CommitInfo, canonical_params
from ..vocabulary import MetricFormat
from . import schema as m
from .ingest import BenchmarkIdentity, MetricIdentity, RunRows


@functools.lru_cache(maxsize=256)
def _metric_identity(btype: str, unit: str) -> MetricIdentity:
    metric, direction = asv_metric(btype, unit)
    return (metric.section, metric.name, metric.unit), direction.value, MetricFormat.NUMBER.value, ""



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
    data, version = _as_format_2(_load_json(path, raw))
    sha = _commit_sha(data)
    machine = _machine_name(data, machine_dir)
    env_name, env_info = _environment(data)
    date = _ms(data.get("date"), "date")
    columns, results = _columns_and_results(data)

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


def _as_format_2(data: Any) -> tuple[dict[str, Any], Any]:
    """The file's JSON in format 2, and the version it was written in; raises ResultsFileError."""
    if not isinstance(data, dict):
        raise ResultsFileError(f"top level is {type(data).__name__}, expected an object")
    version = data.get("version")
    if version not in (1, 2) or isinstance(version, bool):
        raise ResultsFileError(f"unknown results format version {version!r:.40} (mmtrack reads versions 1 and 2)")
    if version == 1:
        data = _converted_from_1(data)
    for key in ("commit_hash", "results", "result_columns"):
        if key not in data:
            raise ResultsFileError(f"missing key {key!r}")
    return data, version


def _converted_from_1(data: dict[str, Any]) -> dict[str, Any]:
    """A format-1 file through asv's own converter; raises ResultsFileError."""
    if not isinstance(data.get("results"), dict):
        raise ResultsFileError("'results' is missing or not an object")
    try:
        return update_to_2(data)
    except ResultsFileError:
        raise
    except Exception as exc:  # asv's converter on a damaged file
        raise ResultsFileError(f"cannot convert from format 1: {type(exc).__name__}: {exc}") from None


def _commit_sha(data: dict[str, Any]) -> str:
    """The file's commit_hash, checked to be a git sha."""
    sha = _text(data["commit_hash"], "commit_hash")
    # 7-40 hex digits (an abbreviated or full SHA-1), or 64 (a SHA-256 repository)
    if not (7 <= len(sha) <= 40 or len(sha) == 64) or any(ch not in "0123456789abcdefABCDEF" for ch in sha):
        raise ResultsFileError(f"commit_hash {sha!r:.70} is not a git sha (7 to 40 hex digits)")
    return sha


def _machine_name(data: dict[str, Any], machine_dir: str | None) -> str:
    """The machine the file names in its params, else the folder it lies in."""
    params = data.get("params") or {}
    if not isinstance(params, dict):
        raise ResultsFileError("'params' is not an object")
    machine_name = params.get("machine", machine_dir or "")
    machine = _text(machine_name, "params.machine", NAME_LIMITS["machine"]) or (machine_dir or "")
    if not machine:
        raise ResultsFileError("no machine name (params.machine)")
    return machine


def _environment(data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The environment's name (asv's env_name, else the Python version) and what the file says of it."""
    env_name = data.get("env_name")
    if env_name is None:
        env_name = f"py{data.get('python', '')}"
    env_name = _text(env_name, "env_name", NAME_LIMITS["environment"])
    env_info = {
        "python": data.get("python"),
        "requirements": data.get("requirements") or {},
        "env_vars": data.get("env_vars") or {},
    }
    return env_name, env_info


def _columns_and_results(data: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """The file's result_columns and results, checked for their shape."""
    columns = data["result_columns"]
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        raise ResultsFileError("'result_columns' is not a list of names")
    results = data["results"]
    if not isinstance(results, dict):
        raise ResultsFileError("'results' is not an object")
    return columns, results


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


def _usual_names(names: list[Any], entries: list[Any], benchmarks: Mapping[str, AsvBenchmark]) -> bool:
    """Whether the names are text the store keeps and every entry is a row (a list): ``add_all``'s first test."""
    try:
        joined = "".join(names)
        joined.encode("utf-8")
    except (TypeError, UnicodeEncodeError):
        return False
    if not names or "\x00" in joined or "" in names or set(map(type, entries)) != {list}:
        return False
    # ``add`` names the benchmark and the limit
    return not any(_over_limits(name, benchmarks.get(name) or _from_name(name)) for name in names)


def _flat_column(col: tuple[Any, ...]) -> list[Any] | None:
    """A column of one-entry lists as the entries, or None when it has another shape."""
    types = set(map(type, col))
    if types == {list} and set(map(len, col)) == {1}:
        return list(itertools.chain.from_iterable(col))
    if types <= {list, type(None)} and all(len(x) == 1 for x in col if x is not None):
        # absent for some benchmarks: asv leaves the columns out of a failed benchmark's row
        return [None if x is None else x[0] for x in col]
    return None


def _usual_scalars(version: tuple[Any, ...], started: tuple[Any, ...]) -> bool:
    """Whether the version and started_at columns hold the types ``add_all`` reads at once."""
    return set(map(type, version)) <= {str, type(None)} and set(map(type, started)) <= {int, float, type(None)}


def _case_params(grid: Any, meta: AsvBenchmark, what: str) -> Sequence[str]:
    """The canonical params of each case of a benchmark's parameter grid (one "{}" without parameters)."""
    if not grid:
        return ["{}"]  # no parameters (asv writes [], any falsy value reads the same)
    if not isinstance(grid, list) or not all(isinstance(p, list) for p in grid):
        raise ResultsFileError(f"{what}: 'params' is not a list of lists")
    grid = [[_text(v, f"{what} parameter value") for v in p] for p in grid]
    names = meta.param_names if len(meta.param_names) == len(grid) else tuple(
        f"param{i + 1}" for i in range(len(grid)))
    return _grid_params(names, tuple(map(tuple, grid)))


def _case_results(result: Any, n: int, what: str) -> list[Any] | None:
    """A benchmark's results, one per case, or None when it has none."""
    if result is not None and type(result) is not list:
        result = [result]  # a bare number: written by hand or by very old asv
    if result is not None and len(result) != n:
        raise ResultsFileError(f"{what}: {len(result)} results for {n} parameter combinations")
    return result


def _statuses(value: list[float | None]) -> tuple[list[str], list[float | None]]:
    """Each case's status (null failed, NaN skipped), and the values with NaN read as none."""
    if None in value or any(v != v for v in value):
        status = ["failed" if v is None else "skipped" if v != v else "ok" for v in value]
        return status, [None if v != v else v for v in value]
    return ["ok"] * len(value), value


def _fill_from_samples(measure: dict[str, list[Any]], status: list[str], samples: list[list[float] | None],
                       q1: list[float | None], q3: list[float | None]) -> None:
    """The summaries of the cases that kept their samples, into ``measure``."""
    sampled = [k for k in range(len(status)) if status[k] == "ok" and samples[k]]
    if not sampled:
        return
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
        if not _usual_names(names, entries, benchmarks):
            return False
        result, grid, version, started, duration, *stats = self._transposed(entries)
        if any(grid):
            return False
        flat = [_flat_column(col) for col in (result, *stats)]
        if any(col is None for col in flat) or not _usual_scalars(version, started):
            return False
        durations = self._checked_scalars(version, started, duration)
        if durations is None:
            return False  # ``add`` names the benchmark
        self._take_flat(names, [benchmarks.get(name) or _from_name(name) for name in names], flat, version,
                        started, durations)
        return True

    def _take_flat(self, names: list[str], metas: list[AsvBenchmark], flat: list[list[Any]],
                   version: Sequence[str | None], started: tuple[Any, ...], durations: list[float | None]) -> None:
        """The checked columns of a file of the usual shape, one case per benchmark, as the table's."""
        if None in version:
            version = [meta.version if v is None else v for v, meta in zip(version, metas)]
        self.names, self.first = names, list(range(len(names)))
        self.value, self.cols = flat[0], flat[1:]
        self.benchmark = list(zip(names, itertools.repeat("{}"), [v or "" for v in version],
                                  [meta.unit for meta in metas], [meta.type for meta in metas]))
        self.metric = [_metric_identity(meta.type, meta.unit) for meta in metas]
        self.started = [self.times[v] for v in started]
        self.starts = [t for t in self.started if t is not None]
        self.duration = durations

    def _transposed(self, entries: list[list[Any]]) -> list[tuple[Any, ...]]:
        """The rows' columns in ``_ROW_KEYS`` order; all None for a column the file lacks."""
        if min(map(len, entries)) < self.need:  # asv leaves out trailing columns it has no value for
            entries = [e if len(e) >= self.need else e + [None] * (self.need - len(e)) for e in entries]
        transposed = list(zip(*entries))
        return [(None,) * len(entries) if i is None else transposed[i] for i in self.at]

    def _checked_scalars(self, version: tuple[Any, ...], started: tuple[Any, ...],
                         duration: tuple[Any, ...]) -> list[float | None] | None:
        """The durations, having checked the versions and read the start times; None when any is malformed."""
        try:
            for v in set(version) - {None}:
                _text(v, "version", NAME_LIMITS["version"])
            for v in set(started) - set(self.times):
                self.times[v] = _ms(v, "", "started_at")
            return _floats(list(duration), lambda k: "", "duration", nan="error")
        except ResultsFileError:
            return None

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
        params = _case_params(grid, meta, what)
        n = len(params)
        result = _case_results(result, n, what)
        version = _text(version, f"{what} version", NAME_LIMITS["version"]) if version is not None else meta.version
        at = self._start_time(started, what)
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

    def _start_time(self, started: Any, what: str) -> datetime | None:
        """A benchmark's started_at as a time, read once per distinct number."""
        if type(started) is not int and type(started) is not float:
            return _ms(started, what, "started_at")  # None, or an error
        if started not in self.times:
            self.times[started] = _ms(started, what, "started_at")
        return self.times[started]

    def where(self, k: int) -> str:
        """The case ``k`` as error messages name it."""
        b = bisect.bisect_right(self.first, k) - 1
        end = self.first[b + 1] if b + 1 < len(self.first) else len(self.value)
        what = f"benchmark {self.names[b]!r}"
        return f"{what} case {k - self.first[b]}" if end - self.first[b] > 1 else what

    def rows(self) -> RunRows:
        where = self.where
        status, value = _statuses(_floats(self.value, where, "result", nan="keep"))
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
        _fill_from_samples(measure, status, samples, q1, q3)
        result = {
            "status": status, "message": [None] * n, "value": value, "ci_low": ci_low, "ci_high": ci_high,
            "q1": q1, "q3": q3, "number": number, "repeat": repeat, "started_at": self.started,
            "duration": self.duration,
        }
        return RunRows(benchmark=self.benchmark, result=result, measured=list(range(n)), position=[0] * n,
                        metric=self.metric, measure=measure)
