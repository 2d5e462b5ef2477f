"""Which machines, environments, metrics and series a command looks at, and the one-line
errors for names the store does not know. Kept light (no numpy, no scipy): publish and every
verb's argument checks import it."""

from __future__ import annotations

import difflib
import fnmatch
from typing import Any, Iterable, Sequence

from ..errors import EXIT_USAGE, UserError, user_regex
from ..results import MetricKey, SeriesKey


def nearest(name: str, candidates: Iterable[str], n: int = 5) -> list[str]:
    """The closest valid names (difflib), then prefix matches, for an error message."""
    pool = sorted(set(candidates))
    close = difflib.get_close_matches(name, pool, n=n, cutoff=0.4)
    close += [c for c in pool if c.lower().startswith(name.lower()[:3]) and c not in close]
    return close[:n]


def unknown(what: str, name: str, candidates: Iterable[str], hint: str = "") -> UserError:
    pool = sorted(set(candidates))
    near = nearest(name, pool)
    if near:
        listing = f"nearest: {', '.join(near)}"
    elif pool:
        listing = f"known: {', '.join(pool[:8])}{', ...' if len(pool) > 8 else ''}"
    else:
        listing = "the store has none yet"
    return UserError(f"unknown {what} {name!r}; {listing}{hint}", EXIT_USAGE)


def check_machine_env(store: Any, machine: str | None, env: str | None) -> None:
    from .reads import catalog as q

    if machine is not None:
        names = [m.name for m in q.list_machines(store)]
        if machine not in names:
            owner = next((name for name, hosts in q.hosts_by_machine(store).items() if machine in hosts), None)
            if owner is not None:  # a host folded into a machine class (asvbridge.machine_class)
                raise UserError(f"{machine!r} is a host of the machine class {owner!r}; give --machine {owner} "
                                "(`mmtrack list machines` lists the classes and their hosts)", EXIT_USAGE)
            raise unknown("machine", machine, names)
    if env is not None:
        names = [e.name for e in q.list_environments(store, machine)]
        if env not in names:
            raise unknown("environment", env, names, f" (on machine {machine})" if machine else "")


def metric_matches(key: MetricKey, patterns: Sequence[str]) -> bool:
    """``--metric`` matches the metric name, ``section/name`` or the full ``str(MetricKey)``."""
    if not patterns:
        return True
    names = (key.name, f"{key.section}/{key.name}", str(key))
    return any(fnmatch.fnmatchcase(n, p) for p in patterns for n in names)


def check_metrics(store: Any, patterns: Sequence[str]) -> None:
    from .reads import catalog as q

    if not patterns:
        return
    keys = q.list_metrics(store)
    for p in patterns:
        if not any(metric_matches(k, [p]) for k in keys):
            raise unknown("metric", p, [k.name for k in keys] + [f"{k.section}/{k.name}" for k in keys])


def series_keys(
    store: Any,
    *,
    machine: str | None = None,
    env: str | None = None,
    benchmark: str | None = None,
    metrics: Sequence[str] = (),
) -> list[SeriesKey]:
    """Every recorded (machine, environment, benchmark case, metric) the filters select;
    ``benchmark`` is a regular expression searched in the name."""
    from .reads import catalog as q

    if benchmark:
        user_regex(benchmark, "-b")
    keys = q.list_series(store, machine=machine, environment=env, benchmark=benchmark)
    if benchmark and not keys:
        raise unknown("benchmark", benchmark, [c.name for c in q.list_benchmarks(store)])
    return [k for k in keys if metric_matches(k.metric, metrics)]
