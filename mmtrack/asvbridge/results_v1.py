"""asv results files of format 1 (asv 0.2 to 0.4) converted to format 2, as ``asv.results.Results.update_to_2`` does.

asv's converter spent half of a format-1 history's import (numba's 3,460 files: 56 s of 124 under a profiler),
mostly in its recursive rounding of every statistic and its per-column getters. This one gives the same dict, column
for column (tests/test_real_histories.py compares them), in one pass per benchmark; any file off its path (a missing
key, a damaged entry) goes to asv's own converter, so that errors read as asv words them.
"""

from __future__ import annotations

from typing import Any


def _truncated(item: Any) -> Any:
    """``asv.util.truncate_float_list``: floats to five significant digits, in nested lists too."""
    kind = type(item)
    if kind is float:
        return float(f"{item:.4e}")
    if kind is list:
        return [_truncated(x) for x in item]
    return item


_STAT_GETTERS = (
    lambda z: z["ci_99"][0],
    lambda z: z["ci_99"][1],
    lambda z: z.get("q_25"),
    lambda z: z.get("q_75"),
    lambda z: z.get("number"),
    lambda z: z.get("repeat"),
)
COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25",
           "stats_q_75", "stats_number", "stats_repeat", "samples", "profile"]


def _none_if_all_none(value: Any) -> Any:
    if type(value) is list and all(x is None for x in value):
        return None
    return value


def _row(value: Any, version: Any, started: Any, duration: Any) -> list[Any]:
    if type(value) is not dict:
        value = {"result": [value], "samples": None, "stats": None, "params": []}
    result = value["result"]
    if type(result) is not list:
        result = [result]
    stats = value.get("stats")
    if "stats" in value and type(stats) is not list:
        stats = [stats]
    params = value.get("params", [])
    row = [_none_if_all_none(result), [] if params is None else params, _none_if_all_none(version),
           _none_if_all_none(started), _none_if_all_none(_truncated(duration))]
    if stats is None or all(z is None for z in stats):  # most entries: no statistics, six empty columns
        row.extend((None,) * len(_STAT_GETTERS))
    else:
        for getter in _STAT_GETTERS:
            row.append(_none_if_all_none(_truncated([None if z is None else getter(z) for z in stats])))
    row.append(_none_if_all_none(value.get("samples")))
    row.append(None)  # profiles: mmtrack reads none
    while row and row[-1] is None:
        row.pop()
    return row


def update_to_2(d: dict[str, Any]) -> dict[str, Any]:
    """Format 1 ``d`` as format 2, equal to asv's ``Results.update_to_2(d)`` in every column mmtrack reads."""
    try:
        return _convert(d)
    except Exception:  # noqa: BLE001 - off the common path: asv's converter raises its own words
        from asv.results import Results

        return Results.update_to_2(d)


def _convert(d: dict[str, Any]) -> dict[str, Any]:
    if "env_name" in d:
        env_name = d["env_name"]
        d["python"], d["requirements"]  # asv reads them (and raises) even where the name is given
    else:
        from asv import environment

        env_name = environment.get_env_name("", d["python"], d["requirements"], {})
    versions = d.get("benchmark_version", {})
    started = d.get("started_at", {})
    durations = d.get("duration", {})
    results = d["results"]
    return {
        "commit_hash": d["commit_hash"], "date": d["date"], "env_name": env_name, "params": d["params"],
        "python": d["python"], "requirements": d["requirements"], "env_vars": d.get("env_vars", {}),
        "result_columns": list(COLUMNS),
        "results": {name: _row(results[name], versions.get(name), started.get(name), durations.get(name))
                    for name in sorted(results)},
        "durations": {k: v for k, v in durations.items() if k.startswith("<")},
    }
