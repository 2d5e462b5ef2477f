"""Where the store lives and how it is opened.

``resolve_url`` picks the database: ``--db``, else ``$MMTRACK_DB``, else the
SQLite file ``.mmtrack/mmtrack.db`` under the project root (the git top level
of the current directory, or the current directory outside git).
``open_store`` creates or upgrades the schema (Alembic) on first use; with
``existing=True`` (the read commands) it refuses a store that does not exist instead
of creating one, and opens a read-only SQLite file read-only.

SQLite runs in WAL mode with a busy timeout, and write transactions start with
``BEGIN IMMEDIATE``: a writer takes the lock up front and concurrent writers
wait for it instead of failing with "database is locked" halfway through. A few
paths return "locked" without waiting for the busy timeout (a journal-mode switch,
a WAL being recovered or reset by another process); taking the lock and opening the
store retry those until the timeout is spent (:func:`retry_locked`).
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DatabaseError, NoSuchModuleError, OperationalError
from sqlalchemy.pool import StaticPool

from ..errors import StoreError, UserError
from ..fsutil import folder_problem
from .url import DEFAULT_RELATIVE, ENV_VAR, is_in_memory, normalize_url, redact, resolve_url  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

BUSY_TIMEOUT_S = 120.0
MMAP_BYTES = 256 * 1024 * 1024
_PG_LOCK_ID = 0x6D6D7472  # "mmtr": serialises concurrent upgrades on PostgreSQL
ALERTS_LOCK_ID = 0x6D6D7461  # "mmta": serialises the alert queue's refresh on PostgreSQL

T = TypeVar("T")


def _locked(exc: OperationalError) -> bool:
    return "database is locked" in str(exc.orig) or "database table is locked" in str(exc.orig)


_waiters = 0  # threads of this process inside a lock wait: taking SQLite's write lock, a PostgreSQL row lock
_waiters_lock = threading.Lock()


@contextmanager
def taking_lock() -> Iterator[None]:
    """Marks a statement that waits while another writer holds the lock (see :func:`waiting_for_lock`)."""
    global _waiters
    with _waiters_lock:
        _waiters += 1
    try:
        yield
    finally:
        with _waiters_lock:
            _waiters -= 1


def waiting_for_lock() -> bool:
    """Whether this process is waiting for a lock now: only then may a notice say another writer holds it."""
    return _waiters > 0


def _take_lock(stack: ExitStack, begin: Callable[[], Any]) -> Any:
    with taking_lock():  # BEGIN IMMEDIATE waits here while another writer holds the lock
        return stack.enter_context(begin())


def retry_locked(step: Callable[[], T], timeout_s: float | None = None) -> T:
    """``step()``, again after a short pause while SQLite says "database is locked" before ``timeout_s``
    (default :data:`BUSY_TIMEOUT_S`) has passed since the first try.

    SQLite waits out its busy timeout on most lock conflicts, but some return at once (a journal-mode
    switch, a WAL being recovered or reset by another process). A "locked" after the whole timeout has
    passed is raised at once: the busy handler has waited already.
    """
    timeout_s = BUSY_TIMEOUT_S if timeout_s is None else timeout_s
    deadline = time.monotonic() + timeout_s
    pause = 0.01
    while True:
        try:
            return step()
        except OperationalError as exc:
            if not _locked(exc) or time.monotonic() + pause >= deadline:
                raise
        with taking_lock():  # SQLite said "locked": another connection holds the lock
            time.sleep(pause)
        pause = min(pause * 2, 1.0)


def migrations_dir() -> Path:
    """The Alembic environment: shipped inside the wheel as ``mmtrack/store/migrations`` (setup.py maps it),
    at the top of a checkout (``migrations/``) in an editable install or a plain source tree."""
    here = Path(__file__).resolve().parent
    installed = here / "migrations"
    return installed if (installed / "env.py").is_file() else here.parents[1] / "migrations"


MIGRATIONS = migrations_dir()


@dataclass
class Store:
    """An open store: one engine, write/read transactions, and ORM sessions for the few writers that use them."""

    url: str
    engine: Engine
    writable: bool = True  # False: a read-only SQLite file, opened read-only

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction (``BEGIN IMMEDIATE`` on SQLite); commits on success."""
        try:
            with ExitStack() as stack:
                begin = self.engine.execution_options(mmtrack_begin="IMMEDIATE").begin
                yield retry_locked(lambda: _take_lock(stack, begin))  # only taking the lock is retried
        except OperationalError as exc:
            if "readonly" not in str(exc.orig).replace("read-only", "readonly"):
                raise
            raise StoreError(f"store {redact(self.url)} is read-only ({' '.join(str(exc.orig).split())}); "
                            "give a writable --db / MMTRACK_DB") from None

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read transaction: a consistent snapshot, never blocks writers on SQLite WAL."""
        with self.engine.connect() as conn:
            with conn.begin():
                yield conn

    @contextmanager
    def one_at_a_time(self, lock_id: int) -> Iterator[None]:
        """A read-compute-write step that no other process runs at once on this store: on PostgreSQL a session
        advisory lock on a connection of its own (its reads and writes are separate transactions, which READ
        COMMITTED lets interleave); on SQLite, whose writes ``BEGIN IMMEDIATE`` already serialises, nothing."""
        if self.dialect != "postgresql":
            yield
            return
        with self.engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": lock_id})
            conn.commit()
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": lock_id})
                conn.commit()

    def session(self) -> Session:
        from sqlalchemy.orm import Session  # the ORM only for its users: every command opens a store

        return Session(self.engine, expire_on_commit=False)

    def current_revision(self) -> str | None:
        with self.engine.connect() as conn:
            return _current_revision(conn)

    def close(self) -> None:
        self.engine.dispose()

    def after_fork(self) -> None:
        """In a forked child: leave the parent's pooled connections alone and open its own (SQLAlchemy's
        recipe for ``os.fork``: a SQLite or PostgreSQL connection must not be used by two processes)."""
        self.engine.dispose(close=False)

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL (None for other databases and in-memory SQLite)."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    if parsed.get_backend_name() != "sqlite" or is_in_memory(url):
        return None
    return Path(parsed.database).expanduser()


def check_sqlite_file(url: str, *, existing: bool) -> bool:
    """Refuse an unusable SQLite path in one line; returns whether the store can be written.

    ``existing``: the store must already exist (read commands: a mistyped --db must not create one).
    """
    path = sqlite_path(url)
    if path is None:
        return True
    where = "check --db / MMTRACK_DB"
    if path.exists() and not path.is_file():
        raise StoreError(f"store path {path} is not a file (a folder?); give the SQLite file, {where}")
    if not path.exists():
        if existing and not any(p.exists() and not p.is_dir() for p in path.parents):
            raise StoreError(
                f"no store at {path}; {where} (a store is created by `mmtrack import-asv`, `mmtrack run` "
                "or `mmtrack bench`)"
            )
        problem = folder_problem(path.parent, "store folder")
        if problem:
            raise StoreError(f"{problem}; {where}")
        return True
    return os.access(path, os.R_OK | os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)


def make_engine(url: str, read_only: bool = False) -> Engine:
    """The engine for ``url``; ``read_only`` opens a SQLite file with ``mode=ro`` and no WAL switch."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise StoreError(
            f"database URL {url!r} is not valid; give e.g. sqlite:///path/mmtrack.db or "
            "postgresql://user@host/dbname (--db or MMTRACK_DB)"
        ) from None
    if parsed.get_backend_name() != "sqlite":
        try:
            return create_engine(url, pool_pre_ping=True)
        except (ArgumentError, ImportError, NoSuchModuleError) as exc:
            raise StoreError(
                f"database URL {redact(url)} is not valid ({exc}); mmtrack supports sqlite:/// and "
                "postgresql:// URLs (--db or MMTRACK_DB)"
            ) from None
    memory = is_in_memory(url)
    if read_only and not memory:
        return _read_only_engine(Path(parsed.database).expanduser())
    if not memory:
        try:
            Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the folder of the store {parsed.database}: {exc.strerror}; "
                            "check --db / MMTRACK_DB") from None
    engine = create_engine(
        url,
        connect_args={"timeout": BUSY_TIMEOUT_S, "check_same_thread": False},
        **({"poolclass": StaticPool} if memory else {}),
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record) -> None:  # noqa: ANN001
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (see _on_begin)
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        if not memory:
            cur.execute("PRAGMA journal_mode = WAL")
            cur.execute("PRAGMA synchronous = NORMAL")
        cur.execute("PRAGMA foreign_keys = ON")
        cur.execute("PRAGMA cache_size = -32000")  # 32 MiB of page cache: long series stay in memory
        if not memory:
            # Reads through a memory map instead of a read() per page: a series fetch touches
            # thousands of scattered pages (about 15% less CPU for 10,000 commits).
            cur.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
        cur.close()

    _begin_explicitly(engine)
    return engine


def _begin_explicitly(engine: Engine) -> None:
    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get("mmtrack_begin", "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")


def _read_only_engine(path: Path) -> Engine:
    """A read-only SQLite file (or one in a read-only folder): ``mode=ro``; ``immutable=1`` when the
    WAL's shared-memory file cannot be created beside it (nobody can be writing it then)."""
    import sqlite3
    from urllib.parse import quote

    base = f"file:{quote(str(path.resolve()))}?mode=ro"
    uri = base if os.access(path.parent, os.W_OK | os.X_OK) else base + "&immutable=1"

    def connect() -> sqlite3.Connection:
        conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
        conn.isolation_level = None  # we issue BEGIN ourselves
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        return conn

    engine = create_engine("sqlite://", creator=connect)
    _begin_explicitly(engine)
    return engine


def alembic_config(connection: Connection | None = None):  # -> alembic.config.Config
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


# The newest migration in migrations/versions. Every command opens the store and compares its
# revision with this one; asking Alembic's script directory instead imports Alembic and reads every
# migration file (about half a second per command). test_store_migrations checks it against Alembic.
SCHEMA_HEAD = "0014_i59_culprit"


def head_revision() -> str:
    return SCHEMA_HEAD


def _current_revision(conn: Connection) -> str | None:
    """The store's schema revision, read as Alembic reads it (its ``alembic_version`` table) without
    importing Alembic; a table with several rows (branched heads) is left to Alembic to report."""
    from sqlalchemy import inspect

    if not inspect(conn).has_table("alembic_version"):
        return None
    rows = conn.execute(text("SELECT version_num FROM alembic_version")).all()
    if len(rows) == 1:
        return rows[0][0]
    if not rows:
        return None
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(conn).get_current_revision()


def upgrade(store: Store, revision: str = "head") -> tuple[str | None, str | None]:
    """Upgrade the schema to ``revision``; returns (before, after). Safe to race."""
    from alembic import command

    with store.write() as conn:
        if store.dialect == "postgresql":
            with taking_lock():
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_ID})
        before = _current_revision(conn)
        if before is not None and before != head_revision():
            _check_known(before, store.url)
        command.upgrade(alembic_config(conn), revision)
        after = _current_revision(conn)
    return before, after


def _check_known(revision: str, url: str) -> None:
    from alembic.script import ScriptDirectory
    from alembic.util import CommandError

    try:
        ScriptDirectory.from_config(alembic_config()).get_revision(revision)
    except CommandError:
        raise StoreError(
            f"store {redact(url)} is at schema revision {revision}, which this mmtrack does not know; "
            "upgrade mmtrack"
        ) from None


def open_store(url: str | None = None, *, upgrade_schema: bool = True, existing: bool = False) -> Store:
    """Open the store at ``url`` (default: ``resolve_url(None)``), creating or upgrading it.

    ``existing=True`` (compare, detect, publish, list): refuse a store that does not exist or holds
    no mmtrack schema, read a read-only SQLite file read-only, and refuse a schema newer than this
    mmtrack. Without it, a read-only store is refused in one line when ``upgrade_schema`` (the caller
    means to write); ``db current`` and ``db upgrade`` open it read-only, and a write then fails in one line.
    """
    url = normalize_url(url) if url else resolve_url(None)
    global _opened_url
    _opened_url = url
    writable = check_sqlite_file(url, existing=existing)
    check_not_foreign(url)
    if not writable and upgrade_schema and not existing:  # a writer (run, import-asv): refuse up front
        raise StoreError(f"store {redact(url)} is read-only (file or folder not writable); "
                        "give a writable --db / MMTRACK_DB, or copy the store")
    engine = make_engine(url, read_only=not writable)
    store = Store(url=url, engine=engine, writable=writable)
    try:
        retry_locked(lambda: _ready(store, existing, upgrade_schema))
    except DatabaseError as exc:  # OperationalError too: unreachable, not a database, locked, ...
        engine.dispose()
        why = " ".join(str(exc.orig).split())
        # damaged, full, a server that dropped us: say what to do; a file that never was a store: the --db given
        known = None if "not a database" in why else store_fault_line(exc, generic=False)
        raise StoreError(known or f"cannot open the store at {redact(url)}: {why}; check --db / MMTRACK_DB") from None
    except UserError:
        engine.dispose()
        raise
    return store


_opened_url: str | None = None  # the store this command opened last: the one a fault names


#: What a store fault says (a word of the driver's message) -> what to do about it.
_DAMAGED = ("malformed", "not a database", "file is encrypted", "corrupt")
_FULL = ("disk is full", "disk i/o error", "file too large", "no space left", "could not extend", "could not write")
_LOST = ("terminating connection", "server closed the connection", "connection already closed",
         "connection is lost", "the connection is closed", "administrator command", "consuming input failed",
         "could not receive data", "ssl syscall")


def store_fault_line(exc: BaseException, *, generic: bool = True) -> str | None:
    """One line for a database fault that escaped a command (a damaged SQLite file, a full disk, a PostgreSQL
    backend terminated): what, which store (password masked), what to do; None for anything else. Every write is
    one transaction, so what was stored before the fault is kept: the line says so."""
    import sqlite3

    from sqlalchemy.exc import DBAPIError, SQLAlchemyError

    raw = isinstance(exc, sqlite3.Error) or type(exc).__module__.startswith("psycopg")  # the driver's, unwrapped
    if not isinstance(exc, SQLAlchemyError) and not raw:
        return None
    orig = exc if raw else getattr(exc, "orig", None) if isinstance(exc, DBAPIError) else None
    why = " ".join(str(orig if orig is not None else exc).split())[:300] or type(exc).__name__
    where = f"store {redact(_opened_url)}" if _opened_url else "the store"
    low = why.lower()
    if any(w in low for w in _DAMAGED):
        path = sqlite_path(_opened_url) if _opened_url else None
        fix = f"`sqlite3 {path} .recover`" if path else "the database's own repair"
        return (f"{where} is damaged ({why}); restore it from a backup, or rescue what it holds with {fix} "
                "into a new file, or rebuild it with `mmtrack import-asv`")
    if any(w in low for w in _FULL):
        return (f"{where}: cannot write ({why}); free space on its disk (or raise the file size limit) and run the "
                "command again: what was stored before is kept")
    if any(w in low for w in _LOST) or type(orig).__name__ in ("AdminShutdown", "InterfaceError"):
        return (f"lost the connection to {where} ({why}); check the database server and run the command again: "
                "what was committed before is kept")
    return f"{where} failed ({why}); check --db / MMTRACK_DB and run the command again" if generic else None


def _ready(store: Store, existing: bool, upgrade_schema: bool) -> None:
    """Check, create or upgrade the schema that ``open_store`` promises."""
    current = store.current_revision()  # also proves the database is reachable
    if existing:
        _check_readable(store, current)
        return
    if upgrade_schema and current != head_revision():
        upgrade(store)


def check_not_foreign(url: str) -> None:
    """Refuse a SQLite file that another application's tables fill, before opening it: mmtrack would add its own
    tables beside them (and switch the file to WAL). Read through a read-only connection that changes nothing."""
    import sqlite3
    from urllib.parse import quote

    path = sqlite_path(url)
    if path is None or not path.is_file() or path.stat().st_size == 0:
        return
    try:
        with closing(sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True)) as conn:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError:
        return  # not a database, locked, unreadable: open_store says so in its own line
    from .schema import metadata

    foreign = sorted(tables - set(metadata.tables) - {"alembic_version"})
    if "alembic_version" not in tables and foreign:
        shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
        raise StoreError(f"{redact(url)} is another application's database (tables {shown}) and holds no "
                        "mmtrack store; mmtrack adds no tables to it: give a new file or an mmtrack store with "
                        "--db / MMTRACK_DB")


def _check_readable(store: Store, current: str | None) -> None:
    """A store the read commands can query: an mmtrack schema this version knows, upgraded if behind."""
    if current is None:
        raise StoreError(f"{redact(store.url)} holds no mmtrack store (no schema); check --db / MMTRACK_DB, "
                        "or fill it with `mmtrack import-asv` or `mmtrack run`")
    if current == head_revision():
        return
    _check_known(current, store.url)
    if not store.writable:
        raise StoreError(f"store {redact(store.url)} is at schema revision {current}, older than this mmtrack's "
                        f"{head_revision()}, and read-only; upgrade a writable copy with `mmtrack db upgrade`")
    upgrade(store)
