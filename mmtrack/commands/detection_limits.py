"""The detection limits of a store's series (:mod:`mmtrack.analysis.detection_limit`), by benchmark case: what
``mmtrack list benchmarks`` shows beside each case, per metric, machine and environment."""

from __future__ import annotations

from collections import Counter
from typing import Any


def limits_by_case(store: Any, machine: str | None, env: str | None, pattern: str | None
                   ) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(benchmark, params key) -> one record per series of the case (machine, environment, metric, the limits as
    :meth:`~mmtrack.analysis.detection_limit.DetectionLimit.as_dict`; ``one_commit`` and ``confirmed`` None where
    the history is too short for a noise model or no step up to x16 is found). A lone step passes the suite's
    false-alarm budget at ``fdr / series``, ``series`` those of its machine and environment (detect's family).
    Stated from the same commits as the pages (:func:`~mmtrack.analysis.detection_limit.stated_limit`)."""
    from ..analysis.budget import DEFAULT_FDR
    from ..analysis.detection_limit import state_offset, stated_limit
    from ..store import reads as q

    keys = q.list_series(store, machine=machine, environment=env, benchmark=pattern)
    family = Counter((k.machine, k.environment) for k in q.list_series(store, machine=machine, environment=env))
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for col in q.series_columns(store, keys):
        key = col.key
        record = stated_limit(col.values, family[key.machine, key.environment], DEFAULT_FDR,
                              state_offset(key.benchmark))
        out.setdefault((key.benchmark, key.params), []).append(
            {"machine": key.machine, "environment": key.environment, "metric": str(key.metric), **record})
    return out


__all__ = ["limits_by_case"]
