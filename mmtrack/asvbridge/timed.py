"""asv's own ``time_`` benchmarks as engine cases, for an instrument that counts instead of timing.

``mmtrack run --instrument callgrind`` measures a suite's ``time_`` benchmarks without a rewrite: each one
becomes an engine benchmark whose operation is one call of the method with its parameters, named as asv
names it. asv's timing attributes (``number``, ``repeat``, ``warmup_time``) do not apply: the instrument
sizes its own chunks.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..measure.runner import BenchSpec
from .declaration import EngineDeclaration, declaration_of

PREFIX = "time_"


@dataclass(frozen=True, slots=True)
class AsvTimeDeclaration(EngineDeclaration):
    """An asv ``time_`` method or function, bound per case to a loop of ``chunk_size`` calls (``fn`` is the
    method itself: asv's code version and parameters are read from it)."""

    attr: str = ""

    def spec(self, instance: Any, params: tuple[Any, ...], name: str, param_names: list[str]) -> BenchSpec:
        spec = EngineDeclaration.spec(self, None, params, name, param_names)
        method = getattr(instance, self.attr) if instance is not None else self.extra["function"]

        def calls(_ctx: Any, chunk_size: int, _chunk_num: int) -> None:
            for _ in range(chunk_size):
                method(*params)

        spec.fn = calls
        return spec


def is_timed(obj: Any) -> bool:
    return isinstance(obj, AsvTimeDeclaration)


def time_benchmarks(module: Any, rel: str, file: Path, suite: Path, make: Any) -> Iterator[Any]:
    """``make(name, owner, attr, declaration, file, suite)`` for each asv ``time_`` benchmark of ``module``."""
    for attr, obj in vars(module).items():
        if attr.startswith("_"):
            continue
        if inspect.isclass(obj) and obj.__module__ == module.__name__:
            for mattr in dir(obj):
                method = getattr(obj, mattr, None)
                if mattr.startswith(PREFIX) and callable(method) and declaration_of(method) is None:
                    yield make(f"{rel}.{obj.__name__}.{mattr}", obj, mattr,
                               AsvTimeDeclaration(fn=method, returns_sample=False, attr=mattr), file, suite)
        elif (attr.startswith(PREFIX) and inspect.isfunction(obj) and obj.__module__ == module.__name__
              and declaration_of(obj) is None):
            yield make(f"{rel}.{attr}", None, attr, AsvTimeDeclaration(
                fn=obj, returns_sample=False, attr=attr, extra={"function": obj}), file, suite)
