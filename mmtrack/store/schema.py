"""The history store's schema: SQLAlchemy Core tables.

Dimensions (machine, environment, commit, benchmark, metric) are small tables
referenced by id; facts are runs, results (one per benchmark case and run) and
measurements (one per metric of a result). A series (machine, environment,
benchmark case, metric) has its own row, and measurements are
clustered by it: reading one series is one range scan of ``measurement`` (then
primary-key lookups of its results, runs and commits), not a lookup per run.

Each table is named as a class (``Run``) whose columns read as attributes (``Run.id``); the store's reads
and writes use them as Core, without the ORM (whose import every command would pay). ``models`` maps
ORM classes over the same tables for the few writers that use sessions.

Every schema change comes with an Alembic revision in ``migrations/versions``;
the tables here always describe the head revision.
"""

from __future__ import annotations

import functools
import struct
from datetime import datetime, timezone
from typing import Any, Callable

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.types import TypeDecorator

# Stable constraint names so that migrations (and SQLite batch mode) can refer to them.
NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING)


class Columns:
    """One table, its columns as attributes (``Run.id``); SQLAlchemy takes it wherever it takes the table
    (``select(Run)``, ``join``, ``insert``) through ``__clause_element__``."""

    def __init__(self, table: Table) -> None:
        self.__table__ = table
        for column in table.columns:
            setattr(self, column.key, column)

    def __clause_element__(self) -> Table:
        return self.__table__

    def __repr__(self) -> str:
        return f"Columns({self.__table__.name})"


def _table(name: str, *columns: Any, **options: Any) -> Any:
    return Columns(Table(name, metadata, *columns, **options))


def _key() -> Column:
    return Column("id", Integer, primary_key=True)


def _required(name: str, *args: Any, **options: Any) -> Column:
    return Column(name, *args, nullable=False, **options)


def _optional(name: str, *args: Any, **options: Any) -> Column:
    return Column(name, *args, nullable=True, **options)


# Names are text of any length (asv builds environment names from the whole requirement matrix: 530 characters is
# real). Only a PostgreSQL index entry is bounded (about 2,700 bytes), so a name in a unique key is kept under
# ``info["limit"]`` characters, checked before the write on every backend alike (docs/design/real-histories.md).
def _name(name: str, limit: int, **options: Any) -> Column:
    return _required(name, Text, info={"limit": limit}, **options)


NAME_LIMIT = 2000  # a name that is a key alone (machine, environment)
PART_LIMIT = 800  # a name that is one part of a key


Machine = _table(
    "machine",
    _key(),
    _name("name", NAME_LIMIT, unique=True),
    _required("info", JSON, default=dict),  # asv machine.json, CPU, OS, ...
)

Environment = _table(
    "environment",
    _key(),
    _name("name", NAME_LIMIT, unique=True),
    _required("info", JSON, default=dict),  # python, requirements, env vars
)

Commit = _table(
    "commit",
    _key(),
    _required("sha", String(64), unique=True),  # full sha
    _optional("date", DateTime(timezone=True), index=True),
    _optional("message", Text),
    _required("branches", JSON, default=list),
)

# The run kind of a same-machine A/B measurement (continuous, run --confirm, bisect): kept in an environment of
# its own, which compare, detect and the pages leave out unless asked for by name (reads.ab_environments).
AB_RUN_KIND = "ab"

# One execution of (part of) a suite on one machine, environment and commit.
Run = _table(
    "run",
    _key(),
    _required("started_at", DateTime(timezone=True)),
    _required("machine_id", Integer, ForeignKey("machine.id")),
    _required("environment_id", Integer, ForeignKey("environment.id")),
    _required("commit_id", Integer, ForeignKey("commit.id")),
    _required("dirty", Boolean, default=False),  # measured on a dirty tree
    _required("tool_versions", JSON, default=dict),
    _required("kind", String(16)),  # "asv" (asv results), "bench" (engine) or AB_RUN_KIND
    _required("suite", Text, default=""),  # suite identity (project/path)
    _required("host", Text, default=""),  # the host that ran it (asv's machine name): a runner of its machine class
    # Where an imported run came from (e.g. "asv:<machine>/<file>") and a digest of its content:
    # re-importing the same file is a no-op, a changed file replaces its run.
    _optional("source", String(1024), unique=True),
    _optional("source_digest", String(64)),
    _optional("source_stat", String(64)),  # "size:mtime_ns": unchanged files skip unread
    Index("ix_run_series", "machine_id", "environment_id", "commit_id"),
    Index("ix_run_commit", "commit_id"),
    Index("ix_run_started_at", "started_at"),
)

# A benchmark case definition: name, one parameter combination, code version.
Benchmark = _table(
    "benchmark",
    _key(),
    _name("name", PART_LIMIT),
    _required("params", Text, default="{}"),  # mmtrack.results.canonical_params
    _required("version", String(128), default=""),  # asv code-version hash ("" unknown)
    _required("unit", Text, default=""),
    _required("type", String(32), default=""),  # time, track, memory, peakmemory, engine
    UniqueConstraint("name", "params", "version"),
)

# Metric identity: (section, name, unit).
Metric = _table(
    "metric",
    _key(),
    _name("section", PART_LIMIT, default=""),
    _name("name", PART_LIMIT),
    _name("unit", PART_LIMIT),
    UniqueConstraint("section", "name", "unit"),
)

# One benchmark case in one run: status, asv's primary value and its stats. The per-sample values of the
# primary value live in the primary metric's measurement row (``Measurement.values``), not twice.
Result = _table(
    "result",
    _key(),
    _required("run_id", Integer, ForeignKey("run.id", ondelete="CASCADE")),
    _required("benchmark_id", Integer, ForeignKey("benchmark.id")),
    _required("status", String(8)),  # ok, failed, skipped
    _optional("message", Text),
    _optional("value", Float),  # asv's result (median for time benchmarks)
    _optional("ci_low", Float),  # asv stats_ci_99_a
    _optional("ci_high", Float),  # asv stats_ci_99_b
    _optional("q1", Float),  # asv stats_q_25
    _optional("q3", Float),  # asv stats_q_75
    _optional("number", Integer),  # operations per sample
    _optional("repeat", Integer),  # samples
    _optional("started_at", DateTime(timezone=True)),
    _optional("duration", Float),  # seconds the case took
    # Engine results: how the case was measured (throughput, domain, backend, chunk size);
    # a bench run is only compared with one measured the same way.
    _optional("setup", JSON),
    UniqueConstraint("run_id", "benchmark_id"),
)


class PackedFloats(TypeDecorator):
    """Per-sample values as little-endian float64, NaN for a sample without a value.

    A long series holds some 100,000 samples: unpacking them is one ``struct`` call per
    point, where JSON text cost four times as much to parse (see docs/design/archive/store.md).
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


# One series: what is constant about its points. A benchmark case (name, params, code version) and a metric
# measured on one machine and environment, with the metric's direction, format and display name as the
# benchmark declared them (a declaration that changes starts a new series row; ``reads.series`` reads them
# all). Its measurements are stored next to each other.
Series = _table(
    "series",
    _key(),
    _required("machine_id", Integer, ForeignKey("machine.id")),
    _required("environment_id", Integer, ForeignKey("environment.id")),
    _required("benchmark_id", Integer, ForeignKey("benchmark.id")),
    _required("metric_id", Integer, ForeignKey("metric.id")),
    _required("direction", String(8)),  # lower, higher, neutral
    _required("format", String(8)),
    _name("display_name", PART_LIMIT),  # "" for none (NULLs are never equal in a key)
    # Bumped by every write that adds, replaces or removes a point: publish rereads only series whose counter moved.
    _required("changes", Integer, default=1, server_default="1"),
    # Of those, the writes that only appended a point after every other (ingest._appends_newest): a site
    # whose series moved by as many appends as changes rewrites only its last chunk.
    _required("appends", Integer, default=0, server_default="0"),
    UniqueConstraint(
        "machine_id", "environment_id", "benchmark_id", "metric_id", "direction", "format", "display_name",
        name="uq_series_identity",
    ),
)

# One metric summary (section, name, unit) of one result: a point of one series. Only what varies from point
# to point is here; the rest is on the series row. The primary key (series_id, result_id) clusters each
# series: on SQLite the table has no rowid, so rows are stored in key order and a series is one contiguous range.
Measurement = _table(
    "measurement",
    _required("series_id", Integer, ForeignKey("series.id"), primary_key=True),
    _required("result_id", Integer, ForeignKey("result.id", ondelete="CASCADE"), primary_key=True),
    _required("position", SmallInteger),  # order of the metric within its result
    _optional("mean", Float),
    _optional("median", Float),
    _optional("p95", Float),
    _optional("min", Float),
    _optional("max", Float),
    _optional("q1", Float),
    _optional("q3", Float),
    _optional("ci_low", Float),
    _optional("ci_high", Float),
    _required("count", Integer, default=0),
    _optional("values", PackedFloats),  # per-sample values, execution order
    # result_id serves the cascade from result and the per-run and per-commit queries.
    Index("ix_measurement_result_id", "result_id"),
    sqlite_with_rowid=False,
)

#: The ``series_cache`` blob: all run ids (little-endian int64), then all medians (little-endian float64).
CACHE_RUN_IDS, CACHE_MEDIANS = "<i8", "<f8"

# Detect's columns of one series row as they stood at its counters (``changes``, ``appends``): the run id and
# median of each of its measurements, packed. ``reads.series_columns`` reads a series from here instead of the
# measurement table when the counters still match, and only the runs after ``max_run_id`` when the series has
# only gained newer points since (as many appends as changes; new runs always get a larger id). Failed or
# median-less points are stored as +inf.
SeriesCache = _table(
    "series_cache",
    _required("series_id", Integer, ForeignKey("series.id", ondelete="CASCADE"), primary_key=True),
    _required("changes", Integer),
    _required("appends", Integer),
    _required("max_run_id", Integer),  # -1 when the series row has no point
    _required("data", LargeBinary),  # little-endian int64 run ids, then float64 medians
)

def _series_by_name() -> list[Column]:
    """A series named by its machine, environment, benchmark case and metric (not by id): the verdict tables'
    key, as results.SeriesKey spells it."""
    return [
        _required("machine", Text),
        _required("environment", Text),
        _required("benchmark", Text),
        _required("params", Text),
        _required("section", Text),
        _required("metric", Text),
        _required("unit", Text),
    ]


# A change point found by detect (``mmtrack.results.ChangePoint``), keyed by series.
ChangePointRow = _table(
    "change_point",
    _key(),
    *_series_by_name(),
    _required("direction", String(8)),
    _required("kind", String(16)),  # regression, improvement, change
    _required("before_sha", String(64)),
    _required("after_sha", String(64)),
    _required("before_value", Float),
    _required("after_value", Float),
    _required("ratio", Float),
    _optional("p_value", Float),
    _required("persists", Boolean, default=True),
    _required("method", String(64), default=""),
    _required("extra", JSON, default=dict),
    _required("detected_at", DateTime(timezone=True)),
    Index("ix_change_point_series", "machine", "environment", "benchmark"),
    Index("ix_change_point_after_sha", "after_sha"),
)

# Two runs measured interleaved on one machine in one job: base (A) and head (B).
ABPair = _table(
    "ab_pair",
    _key(),
    _required("purpose", String(16)),  # continuous, confirm, bisect
    _required("base_run_id", Integer, ForeignKey("run.id", ondelete="CASCADE"), index=True),
    _required("head_run_id", Integer, ForeignKey("run.id", ondelete="CASCADE"), index=True),
    _required("rounds", Integer),
    _required("order", String(255), default=""),  # e.g. "ABBA"
    _optional("seconds", Float),  # measuring time, builds excluded
    _required("created_at", DateTime(timezone=True)),
)

# A row history flagged (suspected) or could not decide (ambiguous), re-measured A/B: confirmed or refuted,
# with its evidence.
ABVerdict = _table(
    "ab_verdict",
    _key(),
    _optional("pair_id", Integer, ForeignKey("ab_pair.id", ondelete="SET NULL")),
    *_series_by_name(),  # the environment: of the history series that raised the suspicion
    _required("before_sha", String(64)),
    _required("after_sha", String(64)),
    _required("state", String(16)),  # confirmed, refuted; suspected or ambiguous: A/B could not tell
    _optional("ratio", Float),
    _optional("p_value", Float),
    _required("rounds", Integer, default=0),
    _required("note", Text, default=""),
    _required("created_at", DateTime(timezone=True)),
    Index("ix_ab_verdict_after_sha", "after_sha"),
)

# A row of ``mmtrack run``'s comparison with the previous commit (results.RunVerdict). One set per (machine,
# environment, after commit): a rerun of the commit replaces it.
RunVerdict = _table(
    "run_verdict",
    _key(),
    *_series_by_name(),
    _required("before_sha", String(64)),
    _required("after_sha", String(64)),
    _required("verdict", String(16)),
    _optional("state", String(16)),
    _optional("ratio", Float),
    _optional("before_value", Float),
    _optional("after_value", Float),
    _optional("p_value", Float),
    _required("note", Text, default=""),
    _required("created_at", DateTime(timezone=True)),
    Index("ix_run_verdict_after_sha", "after_sha"),
)

# Series an import wrote points to that detect has not judged since (issue 60): marked in the import's transaction,
# cleared in the transaction that stores detect's findings, so that an update killed between the two detects them on
# its next run. ``token``: the mark's writer, so that detect clears only the marks it read (a later import's stay).
DetectDue = _table(
    "detect_due",
    _required("series_id", Integer, ForeignKey("series.id", ondelete="CASCADE"), primary_key=True),
    _required("token", String(32)),
)

# The commits those imports brought, as detect's ``new_commits`` (a series that only gained them at its end keeps its
# stored steps): cleared with the series marks.
DetectDueCommit = _table(
    "detect_due_commit",
    _required("sha", String(64), primary_key=True),
    _required("token", String(32)),
)

# One alert (``mmtrack.analysis.alerts.Alert``): its range, the series it holds (JSON list), its triage state.
# Inactive alerts stay, with their triage, so that a change re-detected later gets its state back.
AlertRow = _table(
    "alert",
    _required("id", String(32), primary_key=True),
    _required("before_sha", String(64)),
    _required("after_sha", String(64)),
    _required("kind", String(16)),  # regression, improvement, change
    _required("series", JSON, default=list),
    _required("active", Boolean, default=True),
    _required("state", String(16), default="untriaged"),
    _required("note", Text, default=""),
    _required("who", String(255), default=""),
    _optional("triaged_at", DateTime(timezone=True)),
    _required("merged", JSON, default=list),  # ids this alert absorbed
    _optional("merged_into", String(32)),
    _optional("split_from", String(32)),
    _optional("culprit", String(64)),  # the commit ``bisect --alert`` named; the culprit_ columns say how
    _optional("culprit_benchmark", Text),  # the series it was judged on
    _optional("culprit_params", Text),
    _optional("culprit_metric", Text),
    _optional("culprit_machine", Text),  # the asv machine that measured it
    _optional("culprit_ratio", Float),  # culprit / its parent, A/B there
    _optional("culprit_verdict", String(64)),
    _optional("culprit_measured", Integer),  # commits measured
    _optional("culprit_commits", Integer),  # commits in the alert's range
    _optional("culprit_instrument", String(16)),
    _optional("culprit_at", DateTime(timezone=True)),
    _required("created_at", DateTime(timezone=True)),
    _required("updated_at", DateTime(timezone=True)),
    Index("ix_alert_active_state", "active", "state"),
)

# Every state an alert was given, in order: who said what, when.
AlertTriageRow = _table(
    "alert_triage",
    _key(),
    _required("alert_id", String(32), ForeignKey("alert.id", ondelete="CASCADE"), index=True),
    _required("state", String(16)),
    _required("note", Text, default=""),
    _required("who", String(255), default=""),
    _required("at", DateTime(timezone=True)),
)
