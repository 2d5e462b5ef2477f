"""What a build reuses of the last one: its per-benchmark state while the settings, the verdict code and the
commit order still match, a benchmark's files kept whole, and the proof that a series only gained points."""

from __future__ import annotations

import hashlib
from importlib import resources
from typing import Any, Sequence

from ..results import SeriesKey
from .encode import (
    bench_data,
)
from .model import SiteModel
from .source import VERDICT_CODE
from .writer import SiteWriter


def _analysis_stamp() -> str:
    """A hash of the code behind the compare page's verdicts: the pages of a site built by other
    verdict code are rebuilt (a carried-on benchmark keeps its older steps' verdicts)."""
    h = hashlib.sha256()
    for name in VERDICT_CODE:
        h.update((resources.files("mmtrack.analysis") / name).read_bytes())
    return h.hexdigest()


def _order_hash(shas: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(shas).encode()).hexdigest()


def _reusable(writer: SiteWriter, model: SiteModel, site_token: str, order: list[str]) -> dict[str, Any]:
    """The last build's per-benchmark state, when its files are still valid for this build:
    same format and settings, and the commits it placed still at the same positions."""
    old = writer.old_state
    n_old = old.get("n_commits")
    if (
        model.bench_state is None
        or old.get("site") != site_token
        or not isinstance(n_old, int)
        or n_old > len(order)
        or old.get("order") != _order_hash(order[:n_old])
        or not isinstance(old.get("benchmarks"), dict)
    ):
        return {}
    return old["benchmarks"]


def _keep_benchmark(writer: SiteWriter, bid: str) -> bool:
    """Keep every file of a benchmark from the last build, if all are still there."""
    keys = [f"b/{bid}.html", *writer.old_files(bench_data(bid, ""))]
    chunks = writer.chunks.chunks_then(bid)
    if not all(writer.keepable(k) for k in keys) or not all(writer.chunks.keepable(bid, k) for k in chunks):
        return False
    for k in keys:
        writer.keep(k)
    for c in chunks:
        writer.chunks.keep(bid, c)
    return True


def _appended_only(keys: Sequence[SeriesKey], model: SiteModel, old_tails: Any) -> bool:
    """Whether the store's counters prove that each series of a benchmark (``keys``, sorted) only gained
    newer points since the build that recorded ``old_tails``: the same series rows, and as many more
    appends as changes (models.Series.appends). Reads nothing."""
    if model.revisions is None or not isinstance(old_tails, list) or len(old_tails) != len(keys):
        return False
    for key, tail in zip(keys, old_tails):
        if not isinstance(tail, list) or len(tail) != 7 or key not in model.revisions:
            return False
        key_repr, changes, appends, ids, marker, _, _ = tail
        now_changes, now_appends, now_ids = model.revisions[key]
        if key_repr != repr(key) or list(now_ids) != ids or marker is None:
            return False
        if now_changes - changes != now_appends - appends or now_changes < changes:
            return False  # a point replaced or removed (or a revision the last build did not see)
    return True
