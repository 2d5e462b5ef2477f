"""Saving a ``mmtrack bench`` run: a line while another writer holds the store's lock, and the finished cases that
earlier runs (killed, or blocked by a lock) left in their journals."""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..asvbridge.session import Outcome
from ..benchruns import journal as bench_journal
from ..errors import UserError
from ..results import BenchContext
from ..store.url import redact
from .bench_events import (
    JournalCasesUnreadable,
    JournalOfAnotherStore,
    JournalSaved,
    JournalStillNotSaved,
    JournalUnreadable,
    WaitingForLock,
)
from .reporting import Report, silent

LOCK_NOTICE_S = 2.0  # a wait for the write lock longer than this is worth a line: another writer holds it
LOCK_POLL_S = 0.1


@contextmanager
def _waiting_notice(report: Report, label: str) -> Iterator[None]:
    """One line once this process has waited for the store's lock LOCK_NOTICE_S on end; a save that is only
    slow (a first migration, a loaded machine) says nothing, since no other writer is there to blame."""
    from ..store.db import BUSY_TIMEOUT_S, waiting_for_lock

    done = threading.Event()

    def watch() -> None:
        waited = 0.0
        while not done.wait(LOCK_POLL_S):
            waited = waited + LOCK_POLL_S if waiting_for_lock() else 0.0
            if waited >= LOCK_NOTICE_S:
                report(WaitingForLock(label, BUSY_TIMEOUT_S))
                return

    watcher = threading.Thread(target=watch, name="mmtrack-lock-notice", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


def save(url: str, ctx: BenchContext, outcomes: list[Outcome], report: Report) -> tuple[int | None, str]:
    """Save one run; returns (run id, "") or (None, why it was not saved)."""
    from ..benchruns.history import save_run
    from ..store.db import open_store

    with _waiting_notice(report, redact(url)):
        try:
            with open_store(url) as store:
                return save_run(store, ctx, outcomes), ""
        except UserError as exc:
            return None, str(exc)
        except Exception as exc:  # noqa: BLE001  (the journal keeps the measurements: say why, exit 2)
            return None, f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def _journal_is_live(folder: Path) -> bool:
    """A journal whose writer still runs (its folder name ends in the writer's pid)."""
    try:
        pid = int(folder.name.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover_journals(project: Path, url: str, report: Report = silent) -> None:
    """Save the finished cases that earlier runs (killed, or blocked by a lock) left in their journals."""
    for folder in bench_journal.leftovers(project):
        if _journal_is_live(folder):
            continue
        try:
            journal = bench_journal.load(folder)
        except ValueError as exc:
            report(JournalUnreadable(str(exc)))
            continue
        if journal.store != bench_journal.store_digest(url):
            report(JournalOfAnotherStore(folder, journal.store_label))
            continue
        outcomes, unreadable = journal.read()
        if unreadable:
            kept = journal.set_aside(unreadable)
            first = unreadable[0]
            why = " ".join(first.error.replace(str(first.path), "").strip(": ").split())
            report(JournalCasesUnreadable(folder, len(unreadable), f"{first.path.name}: {why}", kept))
        if not outcomes:
            journal.remove()
            continue
        run_id, why = save(url, journal.context, outcomes, report)
        if run_id is None:
            report(JournalStillNotSaved(folder, why))
            continue
        journal.remove()
        report(JournalSaved(len(outcomes), journal.context.started_at, run_id))
