"""Why a deterministic count regressed: the functions whose instructions per op moved, from the kept profiles."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..analysis.deterministic import is_deterministic
from ..asvbridge.callgrind_pool import kept_profile, profile_label
from ..asvbridge.callgrind_run import profiles_of
from ..measure.callgrind_diff import top_deltas

SHOWN = 8


@dataclass(frozen=True, slots=True)
class Explanation:
    """One regressed row's top functions by instruction delta per op, or why callgrind_annotate could not say."""

    name: str  # the row's benchmark and parameters
    old: Path  # the kept profiles of the two commits
    new: Path
    deltas: list[Any] = field(default_factory=list)  # measure.callgrind_diff's deltas, largest first
    failure: str | None = None  # callgrind_annotate's error


def explain(comparison, project: Path, before: str, after: str) -> list[Explanation]:
    """For each regressed callgrind ``instructions`` row whose two profiles were kept: its explanation."""
    found = []
    for row in comparison.rows:
        if row.verdict != "regressed" or not is_deterministic(row.metric) or row.metric.name != "instructions":
            continue
        m = row.after or row.before
        label = profile_label(row.benchmark, list(dict(m.params).values()) if m else [])
        sides = kept_profile(profiles_of(project, before), label), kept_profile(profiles_of(project, after), label)
        if None in sides:
            continue
        (old, old_ops), (new, new_ops) = sides  # type: ignore[misc]
        try:
            found.append(Explanation(row.name, old, new, top_deltas(old, old_ops, new, new_ops, SHOWN)))
        except (OSError, subprocess.CalledProcessError) as exc:
            found.append(Explanation(row.name, old, new, failure=str(exc)))
    return found
