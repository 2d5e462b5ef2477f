"""The history store's schema: SQLAlchemy 2 typed ORM models.

Dimensions (machine, environment, commit, benchmark, metric) are small tables
referenced by id; facts are runs, results (one per benchmark case and run) and
measurements (one per metric of a result). A series (machine, environment,
benchmark case, metric) has its own row, and measurements are
clustered by it: reading one series is one range scan of ``measurement`` (then
primary-key lookups of its results, runs and commits), not a lookup per run.

Every schema change comes with an Alembic revision in ``migrations/versions``;
the models here always describe the head revision.
"""

from __future__ import annotations

import functools
import struct
from datetime import datetime, timezone
from typing import Any, Callable

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator

# Stable constraint names so that migrations (and SQLite batch mode) can refer to them.
NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class Machine(Base):
    __tablename__ = "machine"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    info: Mapped[dict[str, Any]] = mapped_column(default=dict)  # asv machine.json, CPU, OS, ...


class Environment(Base):
    __tablename__ = "environment"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    info: Mapped[dict[str, Any]] = mapped_column(default=dict)  # python, requirements, env vars


class Commit(Base):
    __tablename__ = "commit"

    id: Mapped[int] = mapped_column(primary_key=True)
    sha: Mapped[str] = mapped_column(String(64), unique=True)  # full sha
    date: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), index=True)
    message: Mapped[str | None] = mapped_column(Text)
    branches: Mapped[list[Any]] = mapped_column(default=list)


# The run kind of a same-machine A/B measurement (continuous, run --confirm, bisect): kept in an environment of
# its own, which compare, detect and the pages leave out unless asked for by name (reads.ab_environments).
AB_RUN_KIND = "ab"


class Run(Base):
    """One execution of (part of) a suite on one machine, environment and commit."""

    __tablename__ = "run"

    id: Mapped[int] = mapped_column(primary_key=True)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    machine_id: Mapped[int] = mapped_column(ForeignKey("machine.id"))
    environment_id: Mapped[int] = mapped_column(ForeignKey("environment.id"))
    commit_id: Mapped[int] = mapped_column(ForeignKey("commit.id"))
    dirty: Mapped[bool] = mapped_column(Boolean, default=False)  # measured on a dirty tree
    tool_versions: Mapped[dict[str, Any]] = mapped_column(default=dict)
    kind: Mapped[str] = mapped_column(String(16))  # "asv" (asv results), "bench" (engine) or AB_RUN_KIND
    suite: Mapped[str] = mapped_column(String(255), default="")  # suite identity (project/path)
    host: Mapped[str] = mapped_column(String(255), default="")
    # Where an imported run came from (e.g. "asv:<machine>/<file>") and a digest of its content:
    # re-importing the same file is a no-op, a changed file replaces its run.
    source: Mapped[str | None] = mapped_column(String(1024), unique=True)
    source_digest: Mapped[str | None] = mapped_column(String(64))
    source_stat: Mapped[str | None] = mapped_column(String(64))  # "size:mtime_ns": unchanged files skip unread

    machine: Mapped[Machine] = relationship()
    environment: Mapped[Environment] = relationship()
    commit: Mapped[Commit] = relationship()

    __table_args__ = (
        Index("ix_run_series", "machine_id", "environment_id", "commit_id"),
        Index("ix_run_commit", "commit_id"),
        Index("ix_run_started_at", "started_at"),
    )


class Benchmark(Base):
    """A benchmark case definition: name, one parameter combination, code version."""

    __tablename__ = "benchmark"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(512))
    params: Mapped[str] = mapped_column(Text, default="{}")  # mmtrack.results.canonical_params
    version: Mapped[str] = mapped_column(String(128), default="")  # asv code-version hash ("" unknown)
    unit: Mapped[str] = mapped_column(String(64), default="")
    type: Mapped[str] = mapped_column(String(32), default="")  # time, track, memory, peakmemory, engine

    __table_args__ = (UniqueConstraint("name", "params", "version"),)


class Metric(Base):
    """Metric identity: (section, name, unit)."""

    __tablename__ = "metric"

    id: Mapped[int] = mapped_column(primary_key=True)
    section: Mapped[str] = mapped_column(String(128), default="")
    name: Mapped[str] = mapped_column(String(255))
    unit: Mapped[str] = mapped_column(String(64))

    __table_args__ = (UniqueConstraint("section", "name", "unit"),)


class Result(Base):
    """One benchmark case in one run: status, asv's primary value and its stats.

    The per-sample values of the primary value live in the primary metric's
    measurement row (``Measurement.values``), not twice.
    """

    __tablename__ = "result"

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"))
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmark.id"))
    status: Mapped[str] = mapped_column(String(8))  # ok, failed, skipped
    message: Mapped[str | None] = mapped_column(Text)
    value: Mapped[float | None] = mapped_column(Float)  # asv's result (median for time benchmarks)
    ci_low: Mapped[float | None] = mapped_column(Float)  # asv stats_ci_99_a
    ci_high: Mapped[float | None] = mapped_column(Float)  # asv stats_ci_99_b
    q1: Mapped[float | None] = mapped_column(Float)  # asv stats_q_25
    q3: Mapped[float | None] = mapped_column(Float)  # asv stats_q_75
    number: Mapped[int | None] = mapped_column(Integer)  # operations per sample
    repeat: Mapped[int | None] = mapped_column(Integer)  # samples
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    duration: Mapped[float | None] = mapped_column(Float)  # seconds the case took
    # Engine results: how the case was measured (throughput, domain, backend, chunk size);
    # a bench run is only compared with one measured the same way.
    setup: Mapped[dict[str, Any] | None] = mapped_column(JSON)

    __table_args__ = (
        UniqueConstraint("run_id", "benchmark_id"),
    )


class PackedFloats(TypeDecorator):
    """Per-sample values as little-endian float64, NaN for a sample without a value.

    A long series holds some 100,000 samples: unpacking them is one ``struct`` call per
    point, where JSON text cost four times as much to parse (see docs/design/store.md).
    """

    impl = LargeBinary
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Any) -> bytes | None:
        if value is None or isinstance(value, bytes):  # bytes: packed already (the import packs as it parses)
            return value
        return pack_floats(value)

    def process_result_value(self, value: Any, dialect: Any) -> list[float | None] | None:
        return None if value is None else [None if v != v else v for v in unpack_floats(value)]


def as_utc(dt: datetime | None) -> datetime | None:
    """The store's time convention: UTC. A naive value (what SQLite hands back) is UTC
    wall time; an aware one (PostgreSQL gives the session's zone) is converted."""
    if dt is None:
        return None
    return dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt.astimezone(timezone.utc)


NAN = float("nan")


def pack_floats(values: Any) -> bytes:
    return struct.pack(f"<{len(values)}d", *(NAN if v is None else v for v in values))


@functools.lru_cache(maxsize=256)
def float_packer(count: int) -> Callable[..., bytes]:
    """``pack_floats`` of ``count`` floats, none of them None, compiled once per count."""
    return struct.Struct(f"<{count}d").pack


def unpack_floats(blob: bytes) -> tuple[float, ...]:
    return float_unpacker(len(blob))(blob)


@functools.lru_cache(maxsize=256)
def float_unpacker(size: int) -> Callable[[bytes], tuple[float, ...]]:
    """The unpack function of a blob of ``size`` bytes (compiled once per sample count)."""
    return struct.Struct(f"<{size >> 3}d").unpack


class Series(Base):
    """One series: what is constant about its points. A benchmark case (name, params, code
    version) and a metric measured on one machine and environment, with the metric's
    direction, format and display name as the benchmark declared them (a declaration that
    changes starts a new series row; ``reads.series`` reads them all). Its measurements
    are stored next to each other."""

    __tablename__ = "series"

    id: Mapped[int] = mapped_column(primary_key=True)
    machine_id: Mapped[int] = mapped_column(ForeignKey("machine.id"))
    environment_id: Mapped[int] = mapped_column(ForeignKey("environment.id"))
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmark.id"))
    metric_id: Mapped[int] = mapped_column(ForeignKey("metric.id"))
    direction: Mapped[str] = mapped_column(String(8))  # lower, higher, neutral
    format: Mapped[str] = mapped_column(String(8))
    display_name: Mapped[str] = mapped_column(String(255))  # "" for none (NULLs are never equal in a key)
    # Bumped by every write that adds, replaces or removes a point: publish rereads only series whose counter moved.
    changes: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    # Of those, the writes that only appended a point after every other (ingest._appends_newest): a site
    # whose series moved by as many appends as changes rewrites only its last chunk.
    appends: Mapped[int] = mapped_column(Integer, default=0, server_default="0")

    __table_args__ = (
        UniqueConstraint(
            "machine_id", "environment_id", "benchmark_id", "metric_id", "direction", "format", "display_name",
            name="uq_series_identity",
        ),
    )


class Measurement(Base):
    """One metric summary (section, name, unit) of one result: a point of one series.
    Only what varies from point to point is here; the rest is on the series row.

    The primary key (series_id, result_id) clusters each series: on SQLite the table has
    no rowid, so rows are stored in key order and a series is one contiguous range.
    """

    __tablename__ = "measurement"

    series_id: Mapped[int] = mapped_column(ForeignKey("series.id"), primary_key=True)
    result_id: Mapped[int] = mapped_column(ForeignKey("result.id", ondelete="CASCADE"), primary_key=True)
    position: Mapped[int] = mapped_column(SmallInteger)  # order of the metric within its result
    mean: Mapped[float | None] = mapped_column(Float)
    median: Mapped[float | None] = mapped_column(Float)
    p95: Mapped[float | None] = mapped_column(Float)
    min: Mapped[float | None] = mapped_column(Float)
    max: Mapped[float | None] = mapped_column(Float)
    q1: Mapped[float | None] = mapped_column(Float)
    q3: Mapped[float | None] = mapped_column(Float)
    ci_low: Mapped[float | None] = mapped_column(Float)
    ci_high: Mapped[float | None] = mapped_column(Float)
    count: Mapped[int] = mapped_column(Integer, default=0)
    values: Mapped[list[Any] | None] = mapped_column(PackedFloats)  # per-sample values, execution order

    # result_id serves the cascade from result and the per-run and per-commit queries.
    __table_args__ = (Index("ix_measurement_result_id", "result_id"), {"sqlite_with_rowid": False})


#: The ``series_cache`` blob: all run ids (little-endian int64), then all medians (little-endian float64).
CACHE_RUN_IDS, CACHE_MEDIANS = "<i8", "<f8"


class SeriesCache(Base):
    """Detect's columns of one series row as they stood at its counters (``changes``, ``appends``):
    the run id and median of each of its measurements, packed. ``reads.series_columns`` reads a
    series from here instead of the measurement table when the counters still match, and only the
    runs after ``max_run_id`` when the series has only gained newer points since (as many appends as
    changes; new runs always get a larger id). Failed or median-less points are stored as +inf."""

    __tablename__ = "series_cache"

    series_id: Mapped[int] = mapped_column(ForeignKey("series.id", ondelete="CASCADE"), primary_key=True)
    changes: Mapped[int] = mapped_column(Integer)
    appends: Mapped[int] = mapped_column(Integer)
    max_run_id: Mapped[int] = mapped_column(Integer)  # -1 when the series row has no point
    data: Mapped[bytes] = mapped_column(LargeBinary)  # little-endian int64 run ids, then float64 medians


class ChangePointRow(Base):
    """A change point found by detect (``mmtrack.results.ChangePoint``), keyed by series."""

    __tablename__ = "change_point"

    id: Mapped[int] = mapped_column(primary_key=True)
    machine: Mapped[str] = mapped_column(String(255))
    environment: Mapped[str] = mapped_column(String(255))
    benchmark: Mapped[str] = mapped_column(String(512))
    params: Mapped[str] = mapped_column(Text)
    section: Mapped[str] = mapped_column(String(128))
    metric: Mapped[str] = mapped_column(String(255))
    unit: Mapped[str] = mapped_column(String(64))
    direction: Mapped[str] = mapped_column(String(8))
    kind: Mapped[str] = mapped_column(String(16))  # regression, improvement, change
    before_sha: Mapped[str] = mapped_column(String(64))
    after_sha: Mapped[str] = mapped_column(String(64))
    before_value: Mapped[float] = mapped_column(Float)
    after_value: Mapped[float] = mapped_column(Float)
    ratio: Mapped[float] = mapped_column(Float)
    p_value: Mapped[float | None] = mapped_column(Float)
    persists: Mapped[bool] = mapped_column(Boolean, default=True)
    method: Mapped[str] = mapped_column(String(64), default="")
    extra: Mapped[dict[str, Any]] = mapped_column(default=dict)
    detected_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    __table_args__ = (
        Index("ix_change_point_series", "machine", "environment", "benchmark"),
        Index("ix_change_point_after_sha", "after_sha"),
    )


class ABPair(Base):
    """Two runs measured interleaved on one machine in one job: base (A) and head (B)."""

    __tablename__ = "ab_pair"

    id: Mapped[int] = mapped_column(primary_key=True)
    purpose: Mapped[str] = mapped_column(String(16))  # continuous, confirm, bisect
    base_run_id: Mapped[int] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"), index=True)
    head_run_id: Mapped[int] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"), index=True)
    rounds: Mapped[int] = mapped_column(Integer)
    order: Mapped[str] = mapped_column(String(255), default="")  # e.g. "ABBA"
    seconds: Mapped[float | None] = mapped_column(Float)  # measuring time, builds excluded
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ABVerdict(Base):
    """A row history flagged (suspected) or could not decide (ambiguous), re-measured A/B: confirmed or refuted,
    with its evidence."""

    __tablename__ = "ab_verdict"

    id: Mapped[int] = mapped_column(primary_key=True)
    pair_id: Mapped[int | None] = mapped_column(ForeignKey("ab_pair.id", ondelete="SET NULL"))
    machine: Mapped[str] = mapped_column(String(255))
    environment: Mapped[str] = mapped_column(String(255))  # of the history series that raised the suspicion
    benchmark: Mapped[str] = mapped_column(String(512))
    params: Mapped[str] = mapped_column(Text)
    section: Mapped[str] = mapped_column(String(128))
    metric: Mapped[str] = mapped_column(String(255))
    unit: Mapped[str] = mapped_column(String(64))
    before_sha: Mapped[str] = mapped_column(String(64))
    after_sha: Mapped[str] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(16))  # confirmed, refuted; suspected or ambiguous: A/B could not tell
    ratio: Mapped[float | None] = mapped_column(Float)
    p_value: Mapped[float | None] = mapped_column(Float)
    rounds: Mapped[int] = mapped_column(Integer, default=0)
    note: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    __table_args__ = (Index("ix_ab_verdict_after_sha", "after_sha"),)


class RunVerdict(Base):
    """A row of ``mmtrack run``'s comparison with the previous commit (results.RunVerdict).

    One set per (machine, environment, after commit): a rerun of the commit replaces it."""

    __tablename__ = "run_verdict"

    id: Mapped[int] = mapped_column(primary_key=True)
    machine: Mapped[str] = mapped_column(String(255))
    environment: Mapped[str] = mapped_column(String(255))
    benchmark: Mapped[str] = mapped_column(String(512))
    params: Mapped[str] = mapped_column(Text)
    section: Mapped[str] = mapped_column(String(128))
    metric: Mapped[str] = mapped_column(String(255))
    unit: Mapped[str] = mapped_column(String(64))
    before_sha: Mapped[str] = mapped_column(String(64))
    after_sha: Mapped[str] = mapped_column(String(64))
    verdict: Mapped[str] = mapped_column(String(16))
    state: Mapped[str | None] = mapped_column(String(16))
    ratio: Mapped[float | None] = mapped_column(Float)
    before_value: Mapped[float | None] = mapped_column(Float)
    after_value: Mapped[float | None] = mapped_column(Float)
    p_value: Mapped[float | None] = mapped_column(Float)
    note: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    __table_args__ = (Index("ix_run_verdict_after_sha", "after_sha"),)
