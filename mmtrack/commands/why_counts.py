"""Prints why a deterministic count regressed (:mod:`mmtrack.analysis.why_counts`) under a verb's comparison."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from ..analysis.why_counts import WhyChanged, why_counts_changed
from ..asvbridge.callgrind_run import profiles_of
from ..textsafe import term


def explain(comparison, project: Path, before: str, after: str, console: Console) -> None:
    """For each regressed callgrind ``instructions`` row: the top functions by instruction delta per op."""
    render(why_counts_changed(comparison.rows, profiles_of(project, before), profiles_of(project, after)), console)


def render(found: list[WhyChanged], console: Console) -> None:
    for why in found:
        name = term(why.row.name)  # type: ignore[attr-defined]
        if why.error:
            console.print(f"why {name} changed: {term(why.error)}", highlight=False)
            continue
        console.print(f"why {name} changed (instructions per op, callgrind_annotate of {why.before} and {why.after}):",
                      highlight=False, soft_wrap=True)
        for d in why.deltas:
            console.print(f"  {d.change:+12,.1f}  {d.before:12,.1f} -> {d.after:12,.1f}  {term(d.function)}",
                          highlight=False)
