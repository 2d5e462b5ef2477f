"""What an engine benchmark does when real asv calls it."""

from __future__ import annotations

import os
from typing import Any

from ..measure.runner import RunOptions, run_benchmark
from .declare import EngineDeclaration


def _options() -> RunOptions:
    return RunOptions.quick() if os.environ.get("MMTRACK_QUICK") else RunOptions()


def run_under_asv(decl: EngineDeclaration, instance: Any, params: tuple[Any, ...], entry: Any) -> dict[str, Any]:
    """Run the engine and return asv's samples form of the primary duration (s/op)."""
    owner = type(instance) if instance is not None else entry
    name = f"{owner.__module__}.{owner.__qualname__}" + (f".{entry.__name__}" if instance is not None else "")
    param_names = list(getattr(instance if instance is not None else entry, "param_names", []) or [])
    stats = run_benchmark(decl.spec(instance, params, name, param_names), _options())
    samples = [d / o for d, o in zip(stats.durations, stats.operations)]
    return {"samples": samples, "number": stats.chunk_size}
