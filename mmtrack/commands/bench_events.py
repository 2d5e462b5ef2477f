"""What ``mmtrack bench`` reports while it runs: one frozen record per event, rendered by mmtrack/cli_events.py."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..benchruns.history import BaselineResult


@dataclass(frozen=True, slots=True)
class WaitingForLock:
    store: str  # the store, its password redacted
    timeout: float  # seconds until the save gives up


@dataclass(frozen=True, slots=True)
class JournalUnreadable:
    problem: str  # the journal and what is wrong with it


@dataclass(frozen=True, slots=True)
class JournalCasesUnreadable:
    folder: Path  # the journal
    cases: int  # case files that cannot be read
    problem: str  # the first one's file and what is wrong with it, one line
    kept: Path  # where they were moved to


@dataclass(frozen=True, slots=True)
class JournalOfAnotherStore:
    folder: Path
    store: str  # the store the journal's run belongs to


@dataclass(frozen=True, slots=True)
class JournalStillNotSaved:
    folder: Path
    why: str


@dataclass(frozen=True, slots=True)
class JournalSaved:
    cases: int
    started_at: datetime
    run_id: int


@dataclass(frozen=True, slots=True)
class NothingToSave:
    """No case ran: the run is not saved."""


@dataclass(frozen=True, slots=True)
class Saved:
    run_id: int
    commit: str  # its short sha, or ""
    store: str


@dataclass(frozen=True, slots=True)
class SaveFailed:
    store: str
    why: str
    cases: int  # finished cases, kept in the journal
    journal: Path


@dataclass(frozen=True, slots=True)
class ComparisonFailed:
    error: str  # the exception's type
    message: str


@dataclass(frozen=True, slots=True)
class Compared:
    baseline: BaselineResult  # the comparison with the baseline, or a note why there is none


@dataclass(frozen=True, slots=True)
class CountsExplained:
    explanations: list[Any]  # analysis.why_counts.WhyChanged per regressed instruction count


@dataclass(frozen=True, slots=True)
class ReportWritten:
    path: Path  # MMTRACK_OUTPUT's JSON report
