"""Discovering a suite in worker processes, so that ``mmtrack bench`` never imports a benchmark file itself.

A benchmark file runs code at import: it may call ``os._exit``, crash or loop forever. A worker
imports the files one by one and sends back each file's benchmarks as plain records
(:class:`~.discover.FoundBenchmark`); when an import ends its worker, or outlasts the timeout that
cases get, that file is one :class:`~.discover.ImportFailure` and a fresh worker goes on with the next.
"""

from __future__ import annotations

import signal
import time
from multiprocessing.connection import Connection
from pathlib import Path

from .discover import ImportFailure, Suite, discover, suite_files
from .worker import end_worker, guard_worker, next_message, start_worker


def discover_in_workers(path: Path | str, timeout: float) -> Suite:
    """The engine benchmarks under ``path``, as :func:`~.discover.discover` finds them, each file imported in
    a worker that may take at most ``timeout`` seconds for it."""
    root, todo = suite_files(path)
    suite = Suite(root=root)
    while todo:
        process, receive = start_worker(_discover_main, Path(path), tuple(todo), timeout)
        lost: tuple[Path, str] | None = None  # the file whose import ended the worker, and how
        try:
            while todo:
                message, error = next_message(process, receive, time.monotonic() + timeout, timeout)
                file = todo.pop(0)
                if message is None:
                    lost = (file, error)
                    break
                _, found, failure = message
                suite.benchmarks.extend(found)
                if failure is not None:
                    suite.failures.append(failure)
        finally:
            written = end_worker(process, receive)  # the files' prints: captured, never on the terminal raw
        if lost is not None:
            said = f" ({written.last_line})" if written is not None and written.last_line else ""
            suite.failures.append(ImportFailure(lost[0], f"worker {lost[1]} while importing it{said}"))
    return suite


def _discover_main(conn: Connection, path: Path, files: tuple[Path, ...], timeout: float) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it ends this worker
    guard_worker(timeout * len(files))
    for file in files:
        try:
            part = discover(path, only=file)
            found = [b.found() for b in part.benchmarks]
        except Exception as exc:  # noqa: BLE001  (e.g. params that are not a list: that file fails, not the run)
            conn.send(("found", [], ImportFailure(file, f"{type(exc).__name__}: {exc}")))
            continue
        conn.send(("found", found, part.failures[0] if part.failures else None))
