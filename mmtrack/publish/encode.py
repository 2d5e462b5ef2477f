"""How a site's data reaches its pages: classic scripts calling ``MM.<kind>(...)``, every name and message
as JSON with ``<``, ``>`` and ``&`` escaped, floats packed, file names from hashes and fixed words only."""


from __future__ import annotations

import hashlib
import json
import math
import struct
from importlib import resources
from typing import Any

import orjson

from ..results import CommitInfo, SeriesKey
from .source import FORMAT, plotly_js_file

# What a script may not hold raw: "</script>" and friends, and the two line separators that end a line of JS.
_JS_ESCAPES = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"),
               ("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029"))
MESSAGE_CHARS = 300


def bench_id(name: str) -> str:
    """The file-name id of a benchmark: a hash, so any name is a safe file name."""
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _refuse_nonfinite(value: Any) -> None:
    """Raise ValueError on a NaN or an infinity anywhere in ``value`` (orjson would write null)."""
    t = type(value)
    if t is list or t is tuple:
        try:  # a list of numbers, the bulk of a points chunk: one sum in C, finite unless one is not
            total = sum(value)
            if total - total == 0:
                return
        except TypeError:  # None or other values among them
            pass
        _refuse_nonfinite_in(value)
    elif t is dict:
        _refuse_nonfinite_in(value.values())
    else:
        _refuse_nonfinite_in((value,))


def _refuse_nonfinite_in(values: Any) -> None:
    for v in values:
        t = type(v)
        if t is str or t is int or t is bool or v is None:
            continue
        if t is list or t is tuple or t is dict:
            _refuse_nonfinite(v)
            continue
        try:  # a float, or a numpy scalar
            finite = v - v == 0
        except TypeError:
            continue
        if not finite:
            raise ValueError(f"out of range float value in JSON: {v!r}")


def js_bytes(value: Any) -> bytes:
    """JSON safe to place in a script (no ``</script>``, no raw U+2028), as UTF-8; NaN refused."""
    _refuse_nonfinite(value)
    data = orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY)
    for raw, escaped in _JS_ESCAPES:
        if raw in data:
            data = data.replace(raw, escaped)
    return data


def bench_data(bid: str, part: str | int) -> str:
    """A benchmark's data file, ``data/b/<id>.meta.js`` or ``data/b/<id>.<k>.js`` (``part`` "": the prefix
    of them all). One folder for every benchmark: data/ is staged whole at every build (writer), and a
    folder per benchmark cost a mkdir and an rmdir each time (2 ms each on ext4 with discard)."""
    return f"data/b/{bid}.{part}.js" if part != "" else f"data/b/{bid}."


def js_json(value: Any) -> str:
    return js_bytes(value).decode()


def js_call(fn: str, *args: Any) -> bytes:
    return b"MM.%s(%s);\n" % (fn.encode(), b",".join(js_bytes(a) for a in args))


def plotly_js() -> bytes:
    """plotly.min.js as shipped inside the plotly Python package."""
    path = plotly_js_file()
    try:
        if path is not None:
            return path.read_bytes()
    except FileNotFoundError:  # pragma: no cover - broken install
        pass
    from ..errors import UserError

    raise UserError("plotly.min.js not found in the plotly package; reinstall plotly (pip install plotly)")


def _asset(name: str) -> bytes:
    return (resources.files("mmtrack.publish") / "assets" / name).read_bytes()


_MISSING = struct.pack("<d", float("nan"))


def _floats(values: list[Any]) -> bytes:
    try:
        return struct.pack(f"<{len(values)}d", *values)
    except struct.error:  # None among them
        return b"".join(_MISSING if v is None else struct.pack("<d", v) for v in values)


def _fingerprint(bid: str, k: int, row: list[Any]) -> str:
    """What a points chunk holds, hashed without encoding it as JSON."""
    h = hashlib.sha256(f"{FORMAT}:{bid}:{k}:{len(row)}".encode())
    for cols in row:
        if cols is None:
            h.update(b"-")
            continue
        h.update(struct.pack("<I", len(cols["i"])))
        h.update(struct.pack(f"<{len(cols['i'])}q", *cols["i"]))
        for name in ("m", "lo", "hi"):
            h.update(_floats(cols[name]))
    return h.hexdigest()


def _finite(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


def _iso(c: CommitInfo) -> str | None:
    return c.date.isoformat(timespec="seconds") if c.date else None


def _first_line(msg: str | None) -> str:
    if not msg:
        return ""
    line = msg.strip().splitlines()[0] if msg.strip() else ""
    return line if len(line) <= MESSAGE_CHARS else line[: MESSAGE_CHARS - 1] + "…"


def _metric_label(key: SeriesKey) -> str:
    return str(key.metric)


def _params(key: SeriesKey) -> dict[str, str]:
    try:
        value = json.loads(key.params) if key.params else {}
    except ValueError:
        return {"params": key.params}
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {"params": key.params}


