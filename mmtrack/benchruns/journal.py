"""The bench journal: every finished case of ``mmtrack bench`` on disk at once, until the store has it.

A run writes ``<project>/.mmtrack/journal/<run>/run.json`` (where and on what it ran, and which
store it is for) and then one spool record per case as the case finishes
(:mod:`mmtrack.asvbridge.spool`: atomic files). The journal goes away once the run is in the
store. A run that was killed, or found the store locked, leaves its journal behind, and the next
``mmtrack bench`` on the same store saves it first.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..asvbridge import spool
from ..asvbridge.session import Outcome, Status
from ..fsutil import write_atomic
from ..results import BenchContext, CommitInfo

FORMAT = "mmtrack-journal/1"
JOURNAL_DIR = Path(".mmtrack") / "journal"
HEADER = "run.json"
UNREADABLE_DIR = Path(".mmtrack") / "journal-unreadable"  # case files no run could read, kept beside the journals


def store_digest(url: str) -> str:
    """Names the store a journal is for without writing its URL (which may hold a password)."""
    return hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]


@dataclass(slots=True)
class Journal:
    folder: Path
    context: BenchContext
    store: str  # store_digest of the target store
    store_label: str  # the redacted URL, for messages
    written: int = 0

    @classmethod
    def create(cls, project: Path, context: BenchContext, url: str, label: str) -> "Journal":
        stamp = context.started_at.strftime("%Y%m%dT%H%M%S")
        journal = cls(project / JOURNAL_DIR / f"{stamp}-{os.getpid()}", context, store_digest(url), label)
        write_atomic(journal.folder / HEADER, json.dumps(journal._header(), indent=1))
        return journal

    def _header(self) -> dict:
        ctx, commit = self.context, self.context.commit
        assert commit is not None
        return {
            "format": FORMAT,
            "store": self.store,
            "store_label": self.store_label,
            "suite": ctx.suite,
            "host": ctx.host,
            "started_at": ctx.started_at.isoformat(),
            "code_versions": ctx.code_versions,
            "commit": {
                "sha": commit.sha,
                "date": commit.date.isoformat() if commit.date else None,
                "message": commit.message,
                "dirty": commit.dirty,
                "branches": list(commit.branches),
            },
        }

    def add(self, outcome: Outcome) -> None:
        record = spool.SpoolRecord(
            benchmark=outcome.name,
            params=dict(outcome.params),
            status=outcome.status.value,
            machine=self.context.machine,
            commit=self.context.commit.sha if self.context.commit else None,
            message=outcome.message,
            version=self.context.code_versions.get(outcome.name),
            created=spool.now_iso(),
            stats=outcome.stats,
            info={"order": self.written},
        )
        spool.write(record, self.folder)
        self.written += 1

    def outcomes(self) -> list[Outcome]:
        """The cases written so far, in the order they finished."""
        return self.read()[0]

    def read(self) -> tuple[list[Outcome], list[spool.SpoolEntry]]:
        """The readable cases in the order they finished, and the case files that cannot be read."""
        entries = [e for e in spool.scan(self.folder) if e.path.name != HEADER]
        records = [e.record for e in entries if e.record is not None]
        records.sort(key=lambda r: int(r.info.get("order", 0)))
        outcomes = [Outcome(r.benchmark, r.params, Status(r.status), stats=r.stats, message=r.message)
                    for r in records]
        return outcomes, [e for e in entries if e.record is None]

    def set_aside(self, entries: list[spool.SpoolEntry]) -> Path:
        """Move unreadable case files out of the journal, kept for a person to look at: the folder they are in."""
        kept = self.folder.parent.parent / UNREADABLE_DIR.name / self.folder.name
        kept.mkdir(parents=True, exist_ok=True)
        for entry in entries:
            shutil.move(str(entry.path), str(kept / entry.path.name))
        return kept

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def load(folder: Path) -> Journal:
    """A journal left behind; raises ValueError if its header is not one."""
    try:
        d = json.loads((folder / HEADER).read_text(encoding="utf-8"))
        if d.get("format") != FORMAT:
            raise ValueError(f"format {d.get('format')!r}")
        c = d["commit"]
        commit = CommitInfo(
            sha=c["sha"],
            date=datetime.fromisoformat(c["date"]) if c.get("date") else None,
            message=c.get("message"),
            dirty=bool(c.get("dirty")),
            branches=tuple(c.get("branches") or ()),
        )
        context = BenchContext(
            d["suite"], dict(d["host"]), commit, datetime.fromisoformat(d["started_at"]), dict(d["code_versions"])
        )
        return Journal(folder, context, d["store"], d.get("store_label", ""))
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{folder}: not a readable bench journal ({exc})") from None


def leftovers(project: Path) -> list[Path]:
    """Journals of earlier runs under ``project`` (oldest first)."""
    base = project / JOURNAL_DIR
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if (p / HEADER).is_file())
