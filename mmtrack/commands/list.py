"""``mmtrack list runs|commits|machines|benchmarks``: what the store holds, as a table or JSON.

Read-only: a missing store is refused (``open_store(existing=True)``), never created.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import EXIT_USAGE, UserError, user_regex

WHATS = ("runs", "commits", "machines", "benchmarks")


@dataclass(frozen=True, slots=True)
class ListRequest:
    what: str
    db: str | None = None
    machine: str | None = None
    env: str | None = None
    benchmark: str | None = None  # a regex searched in benchmark names
    limit: int | None = None  # the first N rows (runs and commits: the latest N)


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def collect(request: ListRequest, store: Any | None = None) -> list[dict[str, Any]]:
    """The records asked for, as plain JSON-ready dicts (full shas, ISO dates)."""
    from ..store.db import open_store
    from ..store.selection import check_machine_env

    if request.what not in WHATS:
        raise UserError(f"unknown list {request.what!r}; choose from {', '.join(WHATS)}", EXIT_USAGE)
    if request.limit is not None and request.limit < 1:
        raise UserError(f"--limit {request.limit} must be 1 or more", EXIT_USAGE)
    if request.benchmark is not None and request.what != "benchmarks":
        raise UserError(f"-b/--bench selects benchmarks: it does not apply to `list {request.what}`; drop it, "
                        "or run `mmtrack list benchmarks -b REGEX`", EXIT_USAGE)
    if request.benchmark:
        user_regex(request.benchmark, "-b")
    own = store is None
    store = store or open_store(request.db, existing=True)
    try:
        check_machine_env(store, request.machine, request.env)
        records = _records(store, request)
    finally:
        if own:
            store.close()
    if request.limit is None:
        return records
    # Runs are listed latest first, commits oldest first: either way the latest N.
    return records[-request.limit :] if request.what == "commits" else records[: request.limit]


def _hardware(info: dict[str, Any]) -> str:
    """A machine class's hardware in words ("" when its machine.json names no CPU)."""
    from ..asvbridge.machine_class import hardware_of

    hardware = hardware_of(info)
    return hardware.describe() if hardware is not None else ""


def _records(store: Any, request: ListRequest) -> list[dict[str, Any]]:
    from ..store import reads as q

    runs = q.runs(store, machine=request.machine, environment=request.env)
    return _RECORDS.get(request.what, _benchmark_records)(store, request, runs)


def _run_records(store: Any, request: ListRequest, runs: list[Any]) -> list[dict[str, Any]]:
    return [
        {"id": r.id, "started_at": _iso(r.started_at), "sha": r.commit.sha, "dirty": r.commit.dirty,
         "machine": r.machine, "host": r.host, "environment": r.environment, "kind": r.kind, "suite": r.suite,
         "results": r.results}
        for r in runs
    ]


def _commit_records(store: Any, request: ListRequest, runs: list[Any]) -> list[dict[str, Any]]:
    from ..store import reads as q

    per_commit = Counter(r.commit.sha for r in runs)
    return [
        {"sha": c.sha, "date": _iso(c.date), "branches": list(c.branches), "runs": per_commit[c.sha],
         "message": (c.message or "").split("\n", 1)[0]}
        for c in q.commits(store, request.machine, request.env)
    ]


def _machine_records(store: Any, request: ListRequest, runs: list[Any]) -> list[dict[str, Any]]:
    from ..store import reads as q

    per_machine = Counter(r.machine for r in runs)
    hosts = q.hosts_by_machine(store)
    return [
        {"name": mi.name, "runs": per_machine[mi.name], "hosts": hosts.get(mi.name, []),
         "hardware": _hardware(mi.info),
         "environments": [e.name for e in q.list_environments(store, mi.name)
                          if request.env is None or e.name == request.env], "info": dict(mi.info)}
        for mi in q.list_machines(store)
        if (request.machine is None or mi.name == request.machine) and (request.env is None or per_machine[mi.name])
    ]


def _benchmark_records(store: Any, request: ListRequest, runs: list[Any]) -> list[dict[str, Any]]:
    from ..store import reads as q

    measured = None  # benchmarks: those with a series on --machine / --env, when either is given
    if request.machine is not None or request.env is not None:
        measured = {k.benchmark for k in q.list_series(store, machine=request.machine, environment=request.env)}
    from .detection_limits import limits_by_case

    limits = limits_by_case(store, request.machine, request.env, request.benchmark)
    return [
        {"name": b.name, "params": dict(b.params), "type": b.type, "unit": b.unit, "versions": list(b.versions),
         "detection_limits": limits.get((b.name, b.params_key), [])}
        for b in q.list_benchmarks(store, request.benchmark)
        if measured is None or b.name in measured
    ]


# What each ``list`` word lists; any other word lists benchmarks.
_RECORDS: dict[str, Callable[[Any, ListRequest, list[Any]], list[dict[str, Any]]]] = {
    "runs": _run_records, "commits": _commit_records, "machines": _machine_records}
