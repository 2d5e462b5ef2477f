"""Why a deterministic count regressed: the functions whose instructions per op moved, from the kept profiles.

For each regressed callgrind ``instructions`` row whose two sides' profiles were kept (one folder per side,
:func:`mmtrack.asvbridge.callgrind_run.profiles_of`), Valgrind's ``callgrind_annotate`` reads both
(:func:`mmtrack.measure.callgrind_diff.top_deltas`). Returns records; printing and linking are the callers'.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from ..asvbridge.callgrind_pool import kept_profile, profile_label
from ..measure.callgrind_diff import Delta, top_deltas
from .deterministic import is_deterministic

SHOWN = 8


@dataclass(frozen=True, slots=True)
class WhyChanged:
    """One regressed count: its row, both sides' kept profiles, and the top functions by delta (or why not)."""

    row: object  # compare.Row
    before: Path
    after: Path
    deltas: tuple[Delta, ...] = field(default_factory=tuple)
    error: str = ""


def regressed_counts(rows: Iterable) -> list:
    """The regressed ``instructions`` rows of a comparison (the rows a profile can explain)."""
    return [r for r in rows if r.verdict == "regressed" and is_deterministic(r.metric) and r.metric.name == "instructions"]


def case_label(row) -> str:
    """The file name stem a case's profile is kept under."""
    m = row.after or row.before
    return profile_label(row.benchmark, dict(m.params) if m else {})


def why_counts_changed(rows: Iterable, before: Path, after: Path, shown: int = SHOWN) -> list[WhyChanged]:
    """For each regressed count with both sides' profiles kept in ``before`` and ``after``: why it changed."""
    out = []
    for row in regressed_counts(rows):
        label = case_label(row)
        sides = kept_profile(before, label), kept_profile(after, label)
        if sides[0] is None or sides[1] is None:
            continue
        (old, old_ops), (new, new_ops) = sides
        try:
            out.append(WhyChanged(row, old, new, tuple(top_deltas(old, old_ops, new, new_ops, shown))))
        except (OSError, subprocess.CalledProcessError) as exc:
            out.append(WhyChanged(row, old, new, error=f"callgrind_annotate failed ({exc})"))
    return out


__all__ = ["SHOWN", "WhyChanged", "case_label", "regressed_counts", "why_counts_changed"]
