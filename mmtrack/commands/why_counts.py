"""Prints why a deterministic count regressed (:mod:`mmtrack.analysis.why_counts`) under a verb's comparison."""

from __future__ import annotations

from pathlib import Path

from ..analysis.why_counts import WhyChanged, why_counts_changed
from ..asvbridge.callgrind_run import profiles_of


def explain(comparison, project: Path, before: str, after: str) -> list[WhyChanged]:
    """For each regressed callgrind ``instructions`` row: the top functions by instruction delta per op."""
    return why_counts_changed(comparison.rows, profiles_of(project, before), profiles_of(project, after))
