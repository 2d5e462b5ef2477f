"""The versioned JSON report of one ``mmtrack bench`` run (``MMTRACK_OUTPUT``).

External orchestrators read it; its shape is pinned by
``mmtrack/schemas/bench-report.schema.json`` and ``schema_version``.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

from ..measure.serialize import stats_to_dict
from ..results import CommitInfo

SCHEMA_VERSION = 1


def schema() -> dict[str, Any]:
    return json.loads(resources.files("mmtrack.schemas").joinpath("bench-report.schema.json").read_text())


def build_report(
    *,
    outcomes: list,
    suite: str,
    host: dict[str, str],
    commit: CommitInfo | None,
    started_at: datetime,
    code_versions: dict[str, str],
    run_id: int | None = None,
    comparison: dict[str, Any] | None = None,
    import_failures: list[tuple[str, str]] = (),
) -> dict[str, Any]:
    from .. import __version__

    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "mmtrack", "version": __version__},
        "created_at": datetime.now(timezone.utc).isoformat(),
        "started_at": started_at.isoformat(),
        "suite": suite,
        "host": dict(host),
        "commit": None
        if commit is None
        else {
            "sha": commit.sha,
            "date": commit.date.isoformat() if commit.date else None,
            "message": commit.message,
            "dirty": commit.dirty,
        },
        "run_id": run_id,
        "import_failures": [{"path": p, "message": m} for p, m in import_failures],
        "results": [
            {
                "name": o.name,
                "params": dict(o.params),
                "status": o.status.value,
                "message": o.message,
                "code_version": code_versions.get(o.name),
                "stats": stats_to_dict(o.stats) if o.stats is not None else None,
            }
            for o in outcomes
        ],
        "comparison": comparison,
    }


def write_report(path: Path | str, report: dict[str, Any]) -> Path:
    from ..fsutil import write_atomic

    return write_atomic(path, json.dumps(report, indent=2, allow_nan=False) + "\n")
