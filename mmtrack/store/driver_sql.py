"""The SQL of the store's write path, built once and run straight through the driver on SQLite: a Core execute
costs more Python than SQLite takes to run the statement, several statements per results file
(:func:`mmtrack.store.ingest.write_run_in`)."""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from sqlalchemy import JSON, Boolean, Connection, DateTime, Table, bindparam, func, or_, select
from sqlalchemy.exc import DBAPIError

from . import schema as m


def dialect_insert(dialect: str, table: Table):  # noqa: ANN202 - dialect-specific Insert
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    elif dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    else:  # pragma: no cover - only SQLite and PostgreSQL are supported
        raise NotImplementedError(dialect)
    return insert(table)


@dataclass(frozen=True, slots=True)
class RunStatements:
    """The statements every run write executes, built once per dialect: constructing a
    statement and its cache key costs more than SQLite executing it, on every file."""

    run_by_source: Any
    new_run: Any
    new_commit: Any  # returns the new id, nothing when the sha exists
    commit_by_sha: Any
    max_result_id: Any
    commit_date: Any
    later_run: Any  # a commit dated as late as ``date`` or later (or undated) with a run other than ``run_id``


@functools.lru_cache(maxsize=4)
def run_statements(dialect: str) -> RunStatements:
    run, commit, result = m.Run.__table__, m.Commit.__table__, m.Result.__table__
    return RunStatements(
        run_by_source=select(run.c.id, run.c.source_digest).where(run.c.source == bindparam("source")),
        new_run=run.insert().returning(run.c.id),
        new_commit=dialect_insert(dialect, commit).on_conflict_do_nothing(index_elements=["sha"]).returning(
            commit.c.id),
        commit_by_sha=select(commit.c.id, commit.c.date, commit.c.message, commit.c.branches).where(
            commit.c.sha == bindparam("sha")
        ),
        max_result_id=select(func.max(result.c.id)),
        commit_date=select(commit.c.date).where(commit.c.id == bindparam("commit_id")),
        # From the commits dated as late or later (the date index; usually none but the run's own), not from
        # the machine's runs: a history imported file by file would scan them all for every file.
        later_run=select(commit.c.id).where(
            or_(commit.c.date.is_(None), commit.c.date >= bindparam("date", type_=commit.c.date.type)),
            select(run.c.id).where(
                run.c.commit_id == commit.c.id,
                run.c.machine_id == bindparam("machine_id"),
                run.c.environment_id == bindparam("environment_id"),
                run.c.id != bindparam("run_id"),
            ).exists(),
        ).limit(1),
    )


_DRIVER: dict[tuple[Any, tuple[str, ...]], tuple[str, tuple[str, ...], dict[str, Any], dict[str, Any]]] = {}


def _bind_processor(type_: Any, dialect: Any) -> Any:
    """The dialect's converter for values of ``type_`` (None where they pass as they are): public API, so it is
    worked out once per statement and kept with it."""
    return type_.dialect_impl(dialect).bind_processor(dialect)


def _driver_execute(conn: Connection, stmt: Any, params: Mapping[str, Any] | None = None, *,
                    convert: bool = True) -> Any:
    """SQLite: ``stmt`` (one of :func:`run_statements`) run straight through the driver's cursor, compiled once
    and its values converted by the statement's own bind processors (``convert``; off for values read raw from
    the store). A Core execute costs about 20 µs of Python, several statements per results file.
    Returns the driver's cursor, to fetch from (and close). A driver error is raised as SQLAlchemy's, as a Core
    execute raises it (the import's batches roll back and retry on those)."""
    params = params or {}
    key = (stmt, tuple(params))
    if key not in _DRIVER:
        compiled = stmt.compile(dialect=conn.dialect, column_keys=list(params))
        names = tuple(compiled.positiontup or ())
        procs = {n: _bind_processor(compiled.binds[n].type, conn.dialect) for n in names}
        _DRIVER[key] = (compiled.string, names, dict(compiled.params), {n: p for n, p in procs.items() if p})
    sql, names, defaults, procs = _DRIVER[key]
    values = {**defaults, **params}
    row = [values[n] for n in names]
    if convert:
        row = [procs[n](v) if v is not None and n in procs else v for n, v in zip(names, row)]
    cursor = conn.connection.driver_connection.cursor()
    try:
        return cursor.execute(sql, row)
    except conn.dialect.dbapi.Error as exc:
        cursor.close()
        raise DBAPIError.instance(sql, row, exc, conn.dialect.dbapi.Error, dialect=conn.dialect) from exc


def scalar(conn: Connection, stmt: Any, params: Mapping[str, Any] | None = None, *, convert: bool = True) -> Any:
    """The first column of ``stmt``'s first row, or None: on SQLite through :func:`_driver_execute` (``convert`` as
    there), elsewhere a Core execute."""
    if conn.dialect.name != "sqlite":
        return conn.execute(stmt, params or {}).scalar()
    cursor = _driver_execute(conn, stmt, params, convert=convert)
    try:
        row = cursor.fetchone()
    finally:
        cursor.close()
    return None if row is None else row[0]


_BULK: dict[tuple[str, str, tuple[str, ...]], tuple[str, list[Any]]] = {}


def bulk_insert(conn: Connection, table: Table, columns: Mapping[str, Sequence[Any]]) -> None:
    """INSERT the rows ``zip(*columns.values())``; on SQLite straight through the driver's executemany."""
    if conn.dialect.name != "sqlite":
        names = tuple(columns)
        conn.execute(table.insert(), [dict(zip(names, row)) for row in zip(*columns.values())])
        return
    sql, rows = _driver_rows(conn, table, columns)
    conn.exec_driver_sql(sql, rows)


def _driver_rows(conn: Connection, table: Table, columns: Mapping[str, Sequence[Any]]) -> tuple[str, list[tuple]]:
    """The SQLite INSERT of ``columns`` and its rows, ready for the driver's executemany.

    Values go through the columns' own bind processors (as SQLAlchemy would convert them), a
    column at a time, but skip its per-row statement machinery, the bulk of an import's cost.
    Per-sample values come packed already (``schema.pack_floats``), so they pass as they are.
    """
    names = tuple(columns)
    key = (conn.dialect.name, table.name, names)
    if key not in _BULK:
        cols = ", ".join(conn.dialect.identifier_preparer.quote(n) for n in names)
        quoted = conn.dialect.identifier_preparer.quote(table.name)
        sql = f"INSERT INTO {quoted} ({cols}) VALUES ({', '.join('?' * len(names))})"
        # Only these types need converting for sqlite3; numbers, strings and bytes pass as they are.
        procs = [
            _bind_processor(table.c[n].type, conn.dialect)
            if isinstance(table.c[n].type, (DateTime, JSON, Boolean))
            else None
            for n in names
        ]
        _BULK[key] = (sql, procs)
    sql, procs = _BULK[key]
    values = [
        col if p is None
        else _converted(col, p) if isinstance(table.c[n].type, DateTime)
        else [None if v is None else p(v) for v in col]
        for n, col, p in zip(names, columns.values(), procs)
    ]
    return sql, list(zip(*values))


class MeasurementSink:
    """Measurement rows of several runs held back and inserted together at the end of their
    transaction, in key order (series, then result): the table is clustered by series, so one run's
    rows land on as many scattered pages as it has series, where rows of many runs sorted by series
    fill each page in turn (about a fifth less of SQLite's time on a long import). SQLite only: the
    caller flushes before it commits, and a row held back is visible to no query of the transaction."""

    def __init__(self) -> None:
        self.sql = ""
        self.rows: list[tuple] = []

    def add(self, conn: Connection, columns: Mapping[str, Sequence[Any]]) -> None:
        self.sql, rows = _driver_rows(conn, m.Measurement.__table__, columns)
        self.rows += rows

    def flush(self, conn: Connection) -> None:
        if self.rows:
            # Result ids grow run by run, and a run has one row per series: a stable sort by series keeps them in order.
            self.rows.sort(key=operator.itemgetter(0))
            conn.exec_driver_sql(self.sql, self.rows)
        self.rows = []


def _converted(col: Sequence[Any], process: Callable[[Any], Any]) -> list[Any]:
    """``process`` of each (hashable) value but None, once per distinct value (a file's cases
    share their start time when asv recorded none)."""
    done: dict[Any, Any] = {None: None}
    return [done[v] if v in done else done.setdefault(v, process(v)) for v in col]
