"""Declaring engine benchmarks inside ordinary asv benchmark classes.

An engine benchmark is a method decorated with :func:`bench` or
:func:`bench_sample`. Its name keeps an asv prefix (``track_`` by convention),
so asv runs it as a standard benchmark: the decorated method, called by asv as
``method(*params)``, runs the engine and returns asv's samples form. The
original ``f(self, ctx, chunk_size, chunk_num)`` is kept on the declaration for
``mmtrack bench``, which drives the engine directly.

Options that depend on the asv parameters (throughput bytes, a fixed chunk
size) may be callables taking ``(self, *params)``; they are resolved after
``setup`` has run.
"""

from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING, Any, Callable

from ..measure.backend import MeasurementBackend, MeasurementDomain
from ..measure.metrics import DiagnosticResult
from ..measure.throughput import Throughput
from .declaration import ATTR, EngineDeclaration

if TYPE_CHECKING:
    from ..measure.concurrent import ConcurrentWorker

def _decorator(returns_sample: bool, options: dict[str, Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(fn)
        if len(sig.parameters) not in (3, 4):
            raise TypeError(
                f"{fn.__qualname__}: an engine benchmark takes (self, ctx, chunk_size, chunk_num), "
                f"or (ctx, chunk_size, chunk_num) at module level; got ({', '.join(sig.parameters)})"
            )
        decl = EngineDeclaration(fn=fn, returns_sample=returns_sample, **options)
        return _asv_entry(fn, decl, is_method=len(sig.parameters) == 4)

    return wrap


def _asv_entry(fn: Callable[..., Any], decl: EngineDeclaration, *, is_method: bool) -> Callable[..., Any]:
    """The function asv calls as ``method(*params)``: it runs the engine on ``decl``."""

    @functools.wraps(fn)
    def asv_entry(*args: Any) -> Any:
        # Imported here: the asv entry point is only reached under asv.
        from .entry import run_under_asv

        instance, params = (args[0], args[1:]) if is_method else (None, args)
        return run_under_asv(decl, instance, params, asv_entry)

    # asv reads the unit from the benchmark function; our samples are seconds per op.
    asv_entry.unit = "seconds"  # type: ignore[attr-defined]
    setattr(asv_entry, ATTR, decl)
    return asv_entry


def bench(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    throughput: Throughput | Callable[..., Throughput] | None = None,
    domain: MeasurementDomain | str = MeasurementDomain.CPU,
    backend: Callable[[], MeasurementBackend] | MeasurementBackend | None = None,
    chunk_size: int | Callable[..., int] | None = None,
    context: Callable[[int], Any] | None = None,
    factory: Callable[[], Any] | None = None,
    operations_per_chunk: int | Callable[[int], int] | None = None,
    diagnostic: Callable[..., DiagnosticResult] | None = None,
    diagnostic_samples: int = 3,
) -> Any:  # the decorator, or with ``fn`` the declared benchmark
    """Declare ``f(self, ctx, chunk_size, chunk_num) -> None`` as an engine benchmark.

    ``@bench`` bare or ``@bench(...)`` with options.
    """
    decorate = _decorator(False, _options({k: v for k, v in locals().items() if k != "fn"}))
    return decorate if fn is None else decorate(fn)


def bench_sample(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    throughput: Throughput | Callable[..., Throughput] | None = None,
    domain: MeasurementDomain | str = MeasurementDomain.CPU,
    backend: Callable[[], MeasurementBackend] | MeasurementBackend | None = None,
    chunk_size: int | Callable[..., int] | None = None,
    context: Callable[[int], Any] | None = None,
    factory: Callable[[], Any] | None = None,
    operations_per_chunk: int | Callable[[int], int] | None = None,
    diagnostic: Callable[..., DiagnosticResult] | None = None,
    diagnostic_samples: int = 3,
) -> Any:  # the decorator, or with ``fn`` the declared benchmark
    """Like :func:`bench`, but ``f`` returns a BenchSampleResult with custom metrics.

    ``@bench_sample`` bare or ``@bench_sample(...)`` with options.
    """
    decorate = _decorator(True, _options({k: v for k, v in locals().items() if k != "fn"}))
    return decorate if fn is None else decorate(fn)


def bench_concurrent(
    *,
    workers: "list[ConcurrentWorker] | tuple[ConcurrentWorker, ...] | Callable[..., list[ConcurrentWorker]]",
    sample_duration: float | None = None,
    lifecycle: Callable[[], Any] | None = None,
    metadata: dict[str, str] | None = None,
    domain: MeasurementDomain | str = MeasurementDomain.CPU,
    backend: Callable[[], MeasurementBackend] | MeasurementBackend | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare ``prepare(self, num_threads) -> ctx`` as a concurrent benchmark (micromeasure's concurrent group).

    Every sample prepares a fresh shared context, then runs each worker role's threads on it, released
    together, for ``sample_duration`` seconds (50 ms by default, as micromeasure's; see
    :mod:`mmtrack.measure.concurrent`).
    ``workers`` may be a callable ``(self, *params)`` when the roles depend on the asv parameters.
    """
    from ..measure.concurrent import DEFAULT_SAMPLE_DURATION, ConcurrentGroup  # loaded by concurrent benchmarks only

    group = {"workers": workers, "lifecycle": lifecycle, "metadata": dict(metadata or {}),
             "sample_duration": DEFAULT_SAMPLE_DURATION if sample_duration is None else sample_duration}
    if not callable(workers):
        ConcurrentGroup(**{**group, "workers": tuple(workers)})  # a bad declaration fails at import, as asv shows it

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(fn)
        if len(sig.parameters) not in (1, 2):
            raise TypeError(
                f"{fn.__qualname__}: a concurrent benchmark is prepare(self, num_threads) -> shared context, "
                f"or prepare(num_threads) at module level; got ({', '.join(sig.parameters)})"
            )
        decl = EngineDeclaration(
            fn=fn, returns_sample=False, domain=MeasurementDomain(domain), backend=backend, concurrent=group
        )
        return _asv_entry(fn, decl, is_method=len(sig.parameters) == 2)

    return wrap


def _options(given: dict[str, Any]) -> dict[str, Any]:
    if given["context"] is not None and given["factory"] is not None:
        raise TypeError("give either context= (called with chunk_size) or factory= (no arguments), not both")
    if not isinstance(given["diagnostic_samples"], int) or given["diagnostic_samples"] < 1:
        raise TypeError(f"diagnostic_samples must be a positive int, got {given['diagnostic_samples']!r}")
    return {**given, "domain": MeasurementDomain(given["domain"])}
