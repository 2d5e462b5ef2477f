"""Why a deterministic count regressed: the functions whose instructions per op moved, from the kept profiles."""

from __future__ import annotations

import subprocess
from pathlib import Path

from rich.console import Console

from ..analysis.deterministic import is_deterministic
from ..asvbridge.callgrind_pool import kept_profile, profile_label
from ..asvbridge.callgrind_run import profiles_of
from ..measure.callgrind_diff import top_deltas
from ..textsafe import term

SHOWN = 8


def explain(comparison, project: Path, before: str, after: str, console: Console) -> None:
    """For each regressed callgrind ``instructions`` row: the top functions by instruction delta per op."""
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
            deltas = top_deltas(old, old_ops, new, new_ops, SHOWN)
        except (OSError, subprocess.CalledProcessError) as exc:
            console.print(f"why {term(row.name)} changed: callgrind_annotate failed ({term(str(exc))})",
                          highlight=False)
            continue
        console.print(f"why {term(row.name)} changed (instructions per op, callgrind_annotate of {old} and {new}):",
                      highlight=False, soft_wrap=True)
        for d in deltas:
            console.print(f"  {d.change:+12,.1f}  {d.before:12,.1f} -> {d.after:12,.1f}  {term(d.function)}",
                          highlight=False)
