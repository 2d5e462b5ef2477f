"""Choosing the baseline of a ``mmtrack bench`` run: the latest *compatible* earlier run.

A previous run is compatible only when all of these match: the host (a run whose
host is unknown is never compared automatically), the suite identity, the same
benchmark cases (name and params), and per case the throughput configuration,
measurement domain, backend label, benchmark code version, the sampling conditions
that change speed (process model, Python build, GIL, GC: measure/conditions.py), and for a
concurrent benchmark its roles, thread counts, sample window and metadata.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping


@dataclass(frozen=True, slots=True)
class CaseIdentity:
    """What must match, per case, for two runs to be compared."""

    benchmark: str
    params: str  # canonical params
    throughput: str  # e.g. "4096 bytes"
    domain: str
    backend_label: str
    version: str | None
    scenario: str = ""  # a concurrent benchmark's roles, thread counts, sample window and metadata
    # conditions.COMPARABLE as (field, value) pairs; empty for runs stored before they were recorded
    conditions: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class RunIdentity:
    run_id: int
    host: str | None
    suite: str | None
    cases: Mapping[tuple[str, str], CaseIdentity] = field(default_factory=dict)
    label: str = ""  # how to name the run to a person (id, commit, time)


def _case_name(key: tuple[str, str]) -> str:
    bench, params = key
    return bench if params in ("", "{}") else f"{bench} {params}"


def incompatibility(current: RunIdentity, previous: RunIdentity) -> str | None:
    """Why ``previous`` cannot be this run's baseline, or None when it can."""
    if not previous.host:
        return "its host is unknown"
    if previous.host != current.host:
        return f"it ran on host {previous.host!r}, this run on {current.host!r}"
    if previous.suite != current.suite:
        return f"it ran suite {previous.suite!r}, this run {current.suite!r}"
    missing = sorted(set(current.cases) - set(previous.cases))
    extra = sorted(set(previous.cases) - set(current.cases))
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"{len(missing)} benchmark(s) are new, e.g. {_case_name(missing[0])}")
        if extra:
            parts.append(f"{len(extra)} benchmark(s) are gone, e.g. {_case_name(extra[0])}")
        return "its benchmarks differ: " + "; ".join(parts)
    for key, case in current.cases.items():
        old = previous.cases[key]
        for attr, what in (
            ("throughput", "throughput configuration"),
            ("domain", "measurement domain"),
            ("backend_label", "backend"),
            ("version", "benchmark code version"),
            ("scenario", "concurrent scenario"),
        ):
            if getattr(old, attr) != getattr(case, attr):
                return f"{_case_name(key)} changed its {what} ({getattr(old, attr)} → {getattr(case, attr)})"
        # A run stored before conditions were recorded has none: unknown is not a difference.
        before, now = dict(old.conditions), dict(case.conditions)
        for name in before.keys() & now.keys():
            if before[name] != now[name]:
                what = name.replace("_", " ")
                return f"{_case_name(key)} was measured under another {what} ({before[name]} → {now[name]})"
    return None


@dataclass(frozen=True, slots=True)
class BaselineChoice:
    baseline: RunIdentity | None
    # Why the most recent earlier run was skipped, when it was (one line for the user).
    skipped_latest: tuple[RunIdentity, str] | None = None


def latest_compatible(current: RunIdentity, previous_runs: Iterable[RunIdentity]) -> BaselineChoice:
    """Walk earlier runs, newest first; the first compatible one is the baseline."""
    skipped: tuple[RunIdentity, str] | None = None
    for run in previous_runs:
        if run.run_id == current.run_id:
            continue
        reason = incompatibility(current, run)
        if reason is None:
            return BaselineChoice(run, skipped)
        if skipped is None:
            skipped = (run, reason)
    return BaselineChoice(None, skipped)
