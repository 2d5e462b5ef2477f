"""What an engine benchmark does when real asv calls it.

asv runs an engine benchmark as a standard ``track_`` benchmark (unit
"seconds"). The entry point runs the engine, writes every metric to the spool
(see :mod:`mmtrack.asvbridge.spool`) and returns asv's samples form of the
primary duration, seconds per operation: ``{"samples": [...], "number": n}``.
asv then stores the median, the 99% CI and the quartiles, and its own compare
and publish work on it as on any timing benchmark.

asv attaches per-run attributes (``--quick``, ``-a repeat=...``) to its benchmark
object after building it, so they are read here, at run time, from the asv
benchmark object that called us. That object also gives asv's own name, code
version, parameter labels and the ``setup_cache`` value of this case.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..measure.conditions import WORKER_PER_CASE
from ..measure.runner import RunOptions, run_benchmark
from . import spool
from .declaration import EngineDeclaration
from .host import host_name

ASV_UNIT = "seconds"


@dataclass(frozen=True, slots=True)
class AsvCase:
    """The asv benchmark case being run, as asv names it."""

    name: str
    params: tuple[Any, ...]  # the raw parameter values, setup_cache value excluded
    param_names: tuple[str, ...]
    labels: tuple[str, ...]  # asv's labels of those values (what its results files hold)
    param_index: int | None
    version: str | None
    attrs: Mapping[str, Any]  # what asv attached for this run (--quick, -a NAME=VALUE)

    @property
    def param_labels(self) -> dict[str, str]:
        return dict(zip(self.param_names, self.labels))


def _find_asv_benchmark(max_depth: int = 8) -> Any | None:
    """The asv_runner Benchmark object whose ``run`` called us, if any."""
    frame = sys._getframe(2)
    for _ in range(max_depth):
        if frame is None:
            return None
        candidate = frame.f_locals.get("self")
        if candidate is not None and hasattr(candidate, "_attr_sources") and hasattr(candidate, "_current_params"):
            return candidate
        frame = frame.f_back
    return None


def _extra_attrs(bench: Any) -> dict[str, Any]:
    """Attributes asv set for this run (``--quick``, ``--attribute``); empty without them."""
    sources = getattr(bench, "_attr_sources", [])
    first = sources[0] if sources else None
    if isinstance(first, type) and first.__name__ == "ExtraBenchmarkAttrs":
        return {k: v for k, v in vars(first).items() if not k.startswith("_")}
    return {}


def _asv_case(bench: Any) -> AsvCase:
    values = tuple(bench._current_params)
    raw = list(getattr(bench, "_params", []) or [])
    shown = list(getattr(bench, "params", []) or [])
    labels: list[str] = []
    index: int | None = 0 if raw else None
    for dim, value in enumerate(values):
        choices = raw[dim] if dim < len(raw) else []
        j = next((k for k, c in enumerate(choices) if c is value), None)
        if j is None:
            j = next((k for k, c in enumerate(choices) if _same(c, value)), None)
        if j is None or dim >= len(shown):
            labels.append(repr(value))
            index = None
            continue
        labels.append(shown[dim][j])
        if index is not None:
            index = index * len(choices) + j
    return AsvCase(
        name=str(bench.name),
        params=values,
        param_names=tuple(getattr(bench, "param_names", []) or []),
        labels=tuple(labels),
        param_index=index,
        version=getattr(bench, "version", None),
        attrs=_extra_attrs(bench),
    )


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001  (arrays and other odd values)
        return False


def _fallback_case(decl: EngineDeclaration, instance: Any, args: tuple[Any, ...], entry: Any) -> AsvCase:
    """Called outside asv (a direct call): name the case from Python's names."""
    owner = type(instance) if instance is not None else entry
    name = f"{owner.__module__}.{owner.__qualname__}" + (f".{entry.__name__}" if instance is not None else "")
    holder = instance if instance is not None else entry
    grid = getattr(holder, "params", []) or []
    dims = 0 if not grid else (len(grid) if isinstance(grid[0], (list, tuple)) else 1)
    params = args[len(args) - dims :] if dims else ()
    names = list(getattr(holder, "param_names", []) or [])
    names += [f"param{i + 1}" for i in range(len(names), dims)]
    return AsvCase(name, tuple(params), tuple(names), tuple(repr(p) for p in params), None, None, {})


def options_from_asv(attrs: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> RunOptions:
    """The engine budget for this run.

    - ``asv run --quick`` (asv sets number=1, repeat=1, warmup_time=0) or
      ``MMTRACK_QUICK=1``: :meth:`RunOptions.quick`.
    - ``-a warmup_time=X``: X seconds of warm-up.
    - ``-a repeat=N``: exactly N samples; ``-a repeat=(MIN, MAX, SECONDS)``: between
      MIN and MAX samples, about SECONDS of measuring, as asv's own repeat.
    - ``-a sample_time=X``: chunks calibrated to take about X seconds, as asv's own sample_time.
    """
    environ = os.environ if environ is None else environ
    quick = bool(environ.get("MMTRACK_QUICK")) or (
        attrs.get("number") == 1 and attrs.get("repeat") == 1 and attrs.get("warmup_time") == 0
    )
    if quick:
        return RunOptions.quick()
    options = RunOptions()
    changes: dict[str, Any] = {}
    warm = attrs.get("warmup_time")
    if isinstance(warm, (int, float)) and warm > 0:
        changes["warm_up"] = float(warm)
    repeat = attrs.get("repeat")
    if isinstance(repeat, int) and repeat >= 1:
        changes.update(min_samples=repeat, max_samples=repeat)
    elif isinstance(repeat, (list, tuple)) and len(repeat) == 3:
        lo, hi, seconds = repeat
        changes.update(min_samples=int(lo), max_samples=int(hi), duration=float(seconds))
    sample_time = attrs.get("sample_time")
    if isinstance(sample_time, (int, float)) and sample_time > 0:
        changes["target_chunk"] = float(sample_time)
    return dataclasses.replace(options, **changes) if changes else options


def _record(case: AsvCase, status: str, anchor: Path | None) -> tuple[spool.SpoolRecord, Path]:
    environ = os.environ
    record = spool.SpoolRecord(
        benchmark=case.name,
        params=case.param_labels,
        status=status,
        machine=host_name(),
        # asv's managed environments say which commit they benchmark; that wins.
        commit=environ.get("ASV_COMMIT") or environ.get(spool.ENV_COMMIT) or None,
        environment=environ.get("ASV_ENV_NAME") or None,
        run_id=environ.get(spool.ENV_RUN_ID) or None,
        version=case.version,
        param_index=case.param_index,
        created=spool.now_iso(),
    )
    return record, spool.spool_dir_from_env(anchor)


def _write(record: spool.SpoolRecord, spool_dir: Path) -> None:
    try:
        spool.write(record, spool_dir)
    except OSError as exc:
        # asv's own result must survive: say it on stderr (asv shows it with -e) and go on.
        print(f"mmtrack: could not write the spool file for {record.benchmark} in {spool_dir}: {exc}", file=sys.stderr)


def run_under_asv(decl: EngineDeclaration, instance: Any, args: tuple[Any, ...], entry: Any) -> dict[str, Any]:
    """Run the engine and return asv's samples form of the primary duration (s/op)."""
    bench = _find_asv_benchmark()
    case = _asv_case(bench) if bench is not None else _fallback_case(decl, instance, args, entry)
    module = sys.modules.get((type(instance) if instance is not None else entry).__module__)
    anchor = Path(module.__file__).resolve().parent if module is not None and getattr(module, "__file__", None) else None
    # asv runs each benchmark in a process of its own, forked per benchmark: one worker per case.
    options = dataclasses.replace(options_from_asv(case.attrs), process_model=WORKER_PER_CASE)
    record, spool_dir = _record(case, "ok", anchor)
    record.options = dataclasses.asdict(options)
    try:
        stats = run_benchmark(decl.spec(instance, case.params, case.name, list(case.param_names)), options)
    except BaseException as exc:
        if type(exc).__name__ == "SkipNotImplemented" or isinstance(exc, KeyboardInterrupt):
            raise
        record.status = "failed"
        record.message = f"{type(exc).__name__}: {exc}"
        record.info = {"traceback": traceback.format_exc(limit=-3)}
        _write(record, spool_dir)
        raise
    record.metrics = stats.tracked_metrics()
    record.stats = stats
    record.info = {"unit": ASV_UNIT}
    _write(record, spool_dir)
    samples = [d / o if o else math.nan for d, o in zip(stats.durations, stats.operations)]
    return {"samples": samples, "number": stats.chunk_size}
