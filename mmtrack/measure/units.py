"""One unit system for people: every value a renderer shows goes through here.

Values are stored raw in SI (seconds, bytes, ops/s); this module scales them for display:
durations in ns/µs/ms/s, bytes in B/KiB/MiB/GiB, rates in k/M/G. The terminal, markdown,
the pages (axes, hovers, tables) and JSON's ``display`` strings all use :func:`format_quantity`
or :func:`scale_for`, so a value and its unit never disagree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from .metrics import MetricFormat

_TIME_UNITS = {"s", "sec", "seconds", "second"}
_BYTE_UNITS = {"B", "bytes", "byte"}
_TIME = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
_BINARY = ((1024.0**4, "Ti"), (1024.0**3, "Gi"), (1024.0**2, "Mi"), (1024.0, "Ki"), (1.0, ""))
_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))


@dataclass(frozen=True, slots=True)
class Scale:
    """Divide raw values by ``factor`` and label them ``unit``."""

    factor: float
    unit: str

    def apply(self, value: float) -> float:
        return value / self.factor


#: perf's CPU-time counters count nanoseconds: per op they are CPU time, shown as such (the stored
#: unit, part of the series' identity, stays ``task-clock/op``).
_CPU_NS_UNITS = {"task-clock/op", "cpu-clock/op"}


#: Counts per op (callgrind's and perf's events): an SI prefix before the unit, ``1.27 M instr/op``.
_COUNT_UNITS = {"instr/op", "cycles/op", "misses/op", "instructions/op", "branches/op", "branch-misses/op",
                "cache-references/op", "cache-misses/op", "stalled-cycles-frontend/op", "stalled-cycles-backend/op",
                "L1-icache-load-misses/op"}


def _ladder(unit: str) -> tuple[tuple[float, str], ...] | None:
    """(factor, display unit) from largest to smallest, or None for a unit that is not scaled."""
    if unit in _TIME_UNITS:
        return _TIME
    if unit in _CPU_NS_UNITS:
        return tuple((f * 1e9, f"{label} CPU/op") for f, label in _TIME)
    if unit in _COUNT_UNITS:
        return tuple((f, f"{p} {unit}" if p else unit) for f, p in _SI)
    if unit in _BYTE_UNITS:
        return tuple((f, f"{p}B") for f, p in _BINARY)
    base, slash, per = unit.rpartition("/")
    if slash and per == "s" and base:
        if base in _BYTE_UNITS:
            return tuple((f, f"{p}B/s") for f, p in _BINARY)
        return tuple((f, f"{p}{base}/s") for f, p in _SI)
    return None


def scale_for(values: Iterable[float], unit: str) -> Scale:
    """One scale for several values (a chart's axis and its hovers), chosen by their median magnitude."""
    ladder = _ladder(unit)
    finite = sorted(abs(v) for v in values if v is not None and math.isfinite(v) and v != 0)
    if ladder is None or not finite:
        return Scale(1.0, unit)
    typical = finite[len(finite) // 2]
    for factor, label in ladder:
        if typical >= factor:
            return Scale(factor, label)
    return Scale(*ladder[-1])


def _significant(value: float) -> str:
    """3 significant digits, no exponent below 1e7 (``1.24``, ``12.4``, ``124``, ``1,240``)."""
    if value == 0:
        return "0"
    a = abs(value)
    if a >= 1e7 or a < 1e-3:
        return f"{value:.3g}"
    if a >= 100:
        return f"{value:,.0f}"
    return f"{value:.{2 - int(math.floor(math.log10(a)))}f}"


def format_number(value: float, fmt: MetricFormat = MetricFormat.NUMBER) -> str:
    """A short number for narrow columns: 3 significant digits (``91.8``, ``2.24e-05``); INTEGER exact."""
    if not math.isfinite(value):
        return "n/a"
    if fmt is MetricFormat.INTEGER:
        return f"{round(value):,d}"
    return _significant(value)


def format_value(value: float, fmt: MetricFormat = MetricFormat.NUMBER) -> str:
    """micromeasure's adaptive rule: 3 decimals in [0.001, 1000), else scientific; INTEGER exact."""
    if not math.isfinite(value):
        return "n/a"
    if fmt is MetricFormat.INTEGER:
        return f"{round(value):,d}"
    if value == 0 or 1e-3 <= abs(value) < 1e3:
        return f"{value:.3f}"
    if 1e3 <= abs(value) < 1e7:
        return f"{value:,.1f}"
    return f"{value:.3e}"


def format_duration(seconds: float) -> str:
    """Seconds as ``1.234 ms`` (3 decimals in the chosen unit)."""
    if not math.isfinite(seconds):
        return "n/a"
    if seconds and not 1e-11 <= abs(seconds) < 1e7:  # beyond ns and 100 days: 1e300 s was 301 digits
        return f"{seconds:.3e} s"
    for scale, unit in _TIME[:-1]:
        if abs(seconds) >= scale:
            return f"{seconds / scale:.3f} {unit}"
    return f"{seconds * 1e9:.2f} ns"


def format_si(value: float, unit: str) -> str:
    """A positive rate with a prefix (``1.23 Gops/s``, bytes binary: ``1.15 GiB/s``); ``n/a`` otherwise."""
    if not math.isfinite(value) or value <= 0:
        return "n/a"
    s = scale_for([value], unit)
    if s.unit == unit and _ladder(unit) is None:  # an unknown unit: SI prefix in front of it
        for factor, prefix in _SI:
            if value >= factor:
                return f"{value / factor:.2f} {prefix}{unit}"
    return f"{s.apply(value):.2f} {s.unit}"


def format_quantity(value: float | None, unit: str, fmt: MetricFormat = MetricFormat.NUMBER) -> str:
    """One value with its unit, scaled for people: ``24.8 ms``, ``61.0 MiB``, ``3.65 Gops/s``, ``1,105 count``."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if unit in _TIME_UNITS:
        return format_duration(value)
    if _ladder(unit) is not None:
        s = scale_for([value], unit)
        return f"{_significant(s.apply(value))} {s.unit}"
    text = format_value(value, fmt)
    return f"{text} {unit}" if unit else text


def format_spread(value: float | None, low: float | None, high: float | None, unit: str,
                  fmt: MetricFormat = MetricFormat.NUMBER) -> str:
    """asv's ``1.24±0.07 ms``: the value and half the width of its interval, in one scale."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return format_quantity(value, unit, fmt)
    half = (high - low) / 2
    s = scale_for([value], unit)
    shown = format_value(value, fmt) if _ladder(unit) is None else _significant(s.apply(value))
    label = unit if _ladder(unit) is None else s.unit
    return f"{shown}±{_same_decimals(s.apply(half), shown)}" + (f" {label}" if label else "")


def _same_decimals(spread: float, shown: str) -> str:
    """The spread with as many decimals as the value it stands beside (asv's ``1.24±0.07``)."""
    if "e" in shown:
        return f"{spread:.1g}"
    decimals = len(shown.partition(".")[2])
    return f"{spread:,.{decimals}f}"


__all__ = ["Scale", "scale_for", "format_quantity", "format_number", "format_spread", "format_duration", "format_value", "format_si"]
