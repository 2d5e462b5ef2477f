"""Putting an A/B measurement into the store: two ordinary runs and the pair that ties them.

Both sides are stored as runs of kind ``ab`` in one environment named after the
Python that ran them (``ab-py3.11``): the two sides' series line up with each
other, and stay apart from the history measured by ``mmtrack run``: compare, detect and the pages
read that history unless told ``--env ab-py3.11``.
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from typing import Any

from ..store.schema import AB_RUN_KIND
from .interleave import ABResult, Side


def ab_environment() -> str:
    return f"ab-py{sys.version_info.major}.{sys.version_info.minor}"


def _cases(side: Side) -> list[Any]:
    from ..store.ingest import EngineCaseRecord

    return [
        EngineCaseRecord(
            benchmark=c.benchmark,
            params=dict(c.params),
            status=c.status,  # type: ignore[arg-type]
            message=c.message or None,
            version=c.version,
            stats=c.record.stats if c.record is not None and c.status == "ok" else None,
            metrics=c.summaries() if c.status == "ok" else None,
        )
        for c in side.cases.values()
    ]


def record_pair(store: Any, result: ABResult, purpose: str, suite: str = "") -> int:
    """Store both sides and their pair; returns the pair's id."""
    import asv

    from .. import __version__
    from ..store.ingest import RunRecord, record_engine_run
    from ..store.models import ABPair

    run_ids = []
    for side in (result.base, result.head):
        run_ids.append(record_engine_run(
            store,
            RunRecord(
                machine=result.machine,
                environment=ab_environment(),
                commit=side.commit,
                started_at=result.started_at,
                kind=AB_RUN_KIND,
                suite=suite,
                tool_versions={"mmtrack": __version__, "asv": str(getattr(asv, "__version__", ""))},
                environment_info={"ab_side": side.label, "asv_environment": side.environment},
            ),
            _cases(side),
        ))
    with store.session() as session:
        pair = ABPair(purpose=purpose, base_run_id=run_ids[0], head_run_id=run_ids[1], rounds=result.rounds,
                      order="".join(result.order), seconds=result.seconds, created_at=datetime.now(timezone.utc))
        session.add(pair)
        session.commit()
        return pair.id
