"""Static regression pages: a plain site model rendered with Plotly, offline.

The names load on first use (PEP 562): a republish with nothing new reads ``model`` and ``writer`` alone, without
the builder's analysis and numpy (most of its CPU)."""

from __future__ import annotations

from typing import Any

__all__ = ["SiteConfig", "SiteModel", "WriteReport", "bench_id", "build_site", "model_from_points"]

_WHERE = {"SiteConfig": "model", "SiteModel": "model", "model_from_points": "model", "WriteReport": "writer",
          "bench_id": "encode", "build_site": "builder"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value
