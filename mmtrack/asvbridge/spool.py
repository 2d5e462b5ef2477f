"""The spool: what an engine benchmark run under asv hands to mmtrack.

asv keeps one number per benchmark case (the samples of the primary duration).
Everything else the engine measured (custom metrics, counters, diagnostics, the
per-sample values) is written here, one JSON file per benchmark case, and
ingested into the store after the asv run.

Layout: ``<spool>/<benchmark>-<hash>.json`` where the hash is taken over the
case key (commit, machine, environment, benchmark, params). A rerun of the same
case replaces its file, so the spool never holds two files for one case. Files
are written atomically (a temporary file in the same folder, then
``os.replace``, :func:`mmtrack.fsutil.write_atomic`), so a reader sees either
the whole file or none of it; temporary files left by a killed writer end in
``.tmp`` and are never read as records.

This is the one module that knows the spool format: writing and reading both
live here. Statistics use the project's one JSON form
(:mod:`mmtrack.measure.serialize`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from ..fsutil import write_atomic
from ..measure.benchmark_stats import BenchmarkStats
from ..measure.metrics import MetricSummary, pool_metrics
from ..measure.serialize import stats_from_dict, stats_to_dict, summary_from_dict, summary_to_dict
from ..results import canonical_params

FORMAT = "mmtrack-spool/1"
DEFAULT_SPOOL = Path(".mmtrack") / "spool"

# Environment variables that key a spool file (documented in docs/asv.md).
ENV_SPOOL = "MMTRACK_SPOOL"
ENV_COMMIT = "MMTRACK_COMMIT"
ENV_MACHINE = "MMTRACK_MACHINE"
ENV_RUN_ID = "MMTRACK_RUN_ID"


class SpoolFormatError(ValueError):
    """A spool file that is not a spool record of a format this version reads."""


@dataclass(frozen=True, slots=True)
class SpoolKey:
    """Which benchmark case, on which commit, machine and environment."""

    commit: str | None
    machine: str
    environment: str | None
    benchmark: str
    params: str  # canonical_params(...)

    def digest(self) -> str:
        text = "\x1f".join([self.commit or "", self.machine, self.environment or "", self.benchmark, self.params])
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    def filename(self) -> str:
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", self.benchmark)[:120]
        return f"{safe}-{self.digest()}.json"


@dataclass(slots=True)
class SpoolRecord:
    """One benchmark case as run under asv: status, every metric, run metadata."""

    benchmark: str  # asv's name, e.g. "examples.basic.Basic.track_crc32"
    params: dict[str, str]  # asv's parameter labels by name
    status: str  # "ok" or "failed"
    machine: str
    commit: str | None = None
    environment: str | None = None
    run_id: str | None = None  # set by `mmtrack run`; None for a plain `asv run`
    message: str = ""
    version: str | None = None  # asv's code version of the benchmark
    param_index: int | None = None  # asv's index in the parameter grid
    created: str = ""  # ISO 8601, UTC
    options: dict[str, Any] = field(default_factory=dict)  # the engine's RunOptions
    info: dict[str, Any] = field(default_factory=dict)  # asv unit, rounds, a failure's traceback
    metrics: list[MetricSummary] = field(default_factory=list)  # BenchmarkStats.tracked_metrics()
    stats: BenchmarkStats | None = None  # the full statistics of the (last) round

    @property
    def key(self) -> SpoolKey:
        return SpoolKey(self.commit, self.machine, self.environment, self.benchmark, canonical_params(self.params))

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "benchmark": self.benchmark,
            "params": dict(self.params),
            "param_index": self.param_index,
            "status": self.status,
            "message": self.message,
            "version": self.version,
            "commit": self.commit,
            "machine": self.machine,
            "environment": self.environment,
            "run_id": self.run_id,
            "created": self.created,
            "options": _finite(self.options),
            "info": _finite(self.info),
            "metrics": [summary_to_dict(m) for m in self.metrics],
            "stats": stats_to_dict(self.stats) if self.stats is not None else None,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "SpoolRecord":
        if not isinstance(d, Mapping) or d.get("format") != FORMAT:
            found = d.get("format") if isinstance(d, Mapping) else type(d).__name__
            raise SpoolFormatError(f"not a {FORMAT} record (format {found!r})")
        try:
            return cls(
                benchmark=str(d["benchmark"]),
                params={str(k): str(v) for k, v in dict(d.get("params") or {}).items()},
                status=str(d["status"]),
                machine=str(d["machine"]),
                commit=d.get("commit"),
                environment=d.get("environment"),
                run_id=d.get("run_id"),
                message=str(d.get("message") or ""),
                version=d.get("version"),
                param_index=d.get("param_index"),
                created=str(d.get("created") or ""),
                options=dict(d.get("options") or {}),
                info=dict(d.get("info") or {}),
                metrics=[summary_from_dict(m) for m in d.get("metrics") or []],
                stats=stats_from_dict(d["stats"]) if d.get("stats") else None,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SpoolFormatError(f"malformed spool record: {type(exc).__name__}: {exc}") from None


# -- JSON helpers ----------------------------------------------------------------------------
def _finite(obj: Any) -> Any:
    """JSON has no NaN/inf: write None for them (readers get None back)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def merge_metrics(first: Sequence[MetricSummary], second: Sequence[MetricSummary]) -> list[MetricSummary]:
    """Pool the per-sample values of two runs of one case (asv's ``rounds``)."""
    return pool_metrics([first, second])


# -- files -----------------------------------------------------------------------------------
def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def write(record: SpoolRecord, spool_dir: Path) -> Path:
    """Write ``record`` atomically; a record of the same case and run is merged first."""
    spool_dir.mkdir(parents=True, exist_ok=True)
    target = spool_dir / record.key.filename()
    if record.run_id is not None and target.exists():
        try:
            prev = read(target)
        except (OSError, ValueError):
            prev = None
        if prev is not None and prev.run_id == record.run_id and prev.status == record.status == "ok":
            # Another round of the same case in the same run: asv pools samples, so do we.
            record.metrics = merge_metrics(prev.metrics, record.metrics)
            record.info = {**record.info, "rounds": int(prev.info.get("rounds", 1)) + 1}
    text = json.dumps(record.to_json(), allow_nan=False, separators=(",", ":"))
    write_atomic(target, text)
    return target


def read(path: Path) -> SpoolRecord:
    """Read one spool file; raises SpoolFormatError (a ValueError) if it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SpoolFormatError(f"{path}: not JSON ({exc})") from None
    try:
        return SpoolRecord.from_json(data)
    except SpoolFormatError as exc:
        raise SpoolFormatError(f"{path}: {exc}") from None


@dataclass(frozen=True, slots=True)
class SpoolEntry:
    path: Path
    record: SpoolRecord | None  # None: unreadable (see error)
    error: str = ""


def scan(spool_dir: Path) -> Iterator[SpoolEntry]:
    """Every spool file in ``spool_dir`` (sorted), readable or not; temporary files skipped."""
    if not spool_dir.is_dir():
        return
    for path in sorted(spool_dir.glob("*.json")):
        try:
            yield SpoolEntry(path, read(path))
        except (OSError, ValueError) as exc:
            yield SpoolEntry(path, None, str(exc))


def stale_temporaries(spool_dir: Path) -> list[Path]:
    """Half-written files of a killed writer (never complete records)."""
    if not spool_dir.is_dir():
        return []
    return sorted(spool_dir.glob(".*.tmp"))


def spool_dir_from_env(start: Path | None = None) -> Path:
    """``$MMTRACK_SPOOL``, else ``.mmtrack/spool`` in the project that holds ``start``.

    The project is the nearest folder above ``start`` with an asv config file (asv
    runs benchmarks in a temporary working folder, so the cwd says nothing); without
    one, the current folder.
    """
    given = os.environ.get(ENV_SPOOL)
    if given:
        return Path(given).expanduser().resolve()
    conf_dir = os.environ.get("ASV_CONF_DIR")  # set by asv's managed environments
    if conf_dir:
        return Path(conf_dir) / DEFAULT_SPOOL
    if start is not None:
        for folder in [start, *start.parents]:
            if any((folder / name).is_file() for name in ("asv.conf.json", "asv.conf.jsonc")):
                return folder / DEFAULT_SPOOL
    return (Path.cwd() / DEFAULT_SPOOL).resolve()
