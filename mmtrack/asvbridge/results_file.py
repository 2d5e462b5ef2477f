"""asv's results-file format: benchmarks.json, the JSON of a results file, and the checks of its values.

asv formats read: results files of ``"version": 2`` (``result_columns``, asv >= 0.5) and ``"version": 1``
(asv 0.2 to 0.4), converted with asv's own ``Results.update_to_2``. A result of ``null`` is a failed
benchmark, ``NaN`` a skipped one. ``store.asv_rows`` turns a parsed file into store rows.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

from ..results import PRIMARY, MetricKey
from ..vocabulary import Direction, default_direction


class ResultsFileError(ValueError):
    """A results file mmtrack cannot read; the message says why."""



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


