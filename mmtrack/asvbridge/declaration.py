"""EngineDeclaration: what a decorator recorded about one engine benchmark, and how to bind it to a case."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable

from ..measure.backend import MeasurementBackend, MeasurementDomain
from ..measure.metrics import DiagnosticResult
from ..measure.runner import BenchSpec
from ..measure.throughput import Throughput

ATTR = "__mmtrack__"


@dataclass(frozen=True, slots=True)
class EngineDeclaration:
    """What a decorator recorded about one engine benchmark method."""

    fn: Callable[..., Any]
    returns_sample: bool
    throughput: Throughput | Callable[..., Throughput] | None = None
    domain: MeasurementDomain = MeasurementDomain.CPU
    backend: Callable[[], MeasurementBackend] | MeasurementBackend | None = None
    chunk_size: int | Callable[..., int] | None = None
    context: Callable[[int], Any] | None = None
    factory: Callable[[], Any] | None = None
    operations_per_chunk: int | Callable[[int], int] | None = None
    diagnostic: Callable[..., DiagnosticResult] | None = None
    diagnostic_samples: int = 3
    extra: dict[str, Any] = field(default_factory=dict)
    # bench_concurrent: fn is prepare(num_threads); workers may be a callable (self, *params) -> list.
    concurrent: dict[str, Any] | None = None

    def spec(self, instance: Any, params: tuple[Any, ...], name: str, param_names: list[str]) -> BenchSpec:
        """Bind this declaration to a set-up instance and one parameter combination."""

        def resolve(option: Any) -> Any:
            if callable(option) and not isinstance(option, (Throughput, MeasurementBackend, type)):
                return option(instance, *params) if instance is not None else option(*params)
            return option

        throughput = resolve(self.throughput) or Throughput.ops()
        if not isinstance(throughput, Throughput):
            raise TypeError(f"benchmark {name!r}: throughput must be a Throughput, got {type(throughput).__name__}")
        chunk_size = resolve(self.chunk_size)
        if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
            raise TypeError(f"benchmark {name!r}: chunk_size must be a positive int, got {chunk_size!r}")
        backend = self.backend
        if isinstance(backend, MeasurementBackend):
            instance_backend = backend
            backend = lambda: instance_backend  # noqa: E731  (a shared, user-made instance)
        ops = self.operations_per_chunk
        if isinstance(ops, int):
            fixed_ops = ops
            ops = lambda _chunk: fixed_ops  # noqa: E731
        if self.factory is not None:
            factory = self.factory
            context = lambda _chunk: factory()  # noqa: E731
        else:
            context = self.context
        fn = self.fn
        diagnostic = self.diagnostic
        concurrent = None
        if self.concurrent is not None:
            from ..measure.concurrent import ConcurrentGroup  # loaded by concurrent benchmarks only

            options = dict(self.concurrent)
            options["workers"] = tuple(resolve(options["workers"]))
            concurrent = ConcurrentGroup(**options)
        return BenchSpec(
            name=name,
            fn=functools.partial(fn, instance) if instance is not None else fn,
            returns_sample=self.returns_sample,
            throughput=throughput,
            domain=MeasurementDomain(self.domain),
            backend=backend,
            chunk_size=chunk_size,
            context=context,
            operations_per_chunk=ops,
            diagnostic=_bind(diagnostic, instance),
            diagnostic_samples=self.diagnostic_samples,
            params={n: repr(p) for n, p in zip(param_names, params)},
            concurrent=concurrent,
        )


def _bind(fn: Callable[..., Any] | None, instance: Any) -> Callable[..., Any] | None:
    if fn is None or instance is None:
        return fn
    return functools.partial(fn, instance)


def declaration_of(obj: Any) -> EngineDeclaration | None:
    return getattr(obj, ATTR, None)
