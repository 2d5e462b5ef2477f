"""Where a publish spends its time, in-process, without a profiler: wall and CPU seconds per phase.

    PYTHONPATH=<source tree> python benchmarks/publish_phases.py <folder with store.db and site/>

Used for docs/design/archive/publish.md ("One new commit"); run it from a folder that is not a checkout's root.
Nothing runs at import: asv and ``mmtrack run`` import every file of ``benchmarks/``.
"""

from __future__ import annotations

import functools
import sys
import time
from pathlib import Path


def _timed(owner: object, name: str, totals: dict[str, list[float]]) -> None:
    """Replace ``owner.name`` by a wrapper adding its wall and CPU time to ``totals``."""
    fn = getattr(owner, name)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            t = totals.setdefault(name, [0.0, 0.0, 0])
            t[0] += time.perf_counter() - wall
            t[1] += time.process_time() - cpu
            t[2] += 1

    setattr(owner, name, wrapper)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    import mmtrack.commands.publish as command  # the imports are timed too
    from mmtrack.commands.publish import PublishRequest, publish
    from mmtrack.publish import builder, fromstore, writer
    from mmtrack.store import reads

    totals: dict[str, list[float]] = {"imports": [time.perf_counter() - start_wall, time.process_time() - start_cpu, 1]}
    phases = [
        (fromstore, "model_from_store"), (reads, "series_newest_many"), (builder, "_step_verdicts"),
        (builder, "_finish_benchmark"), (builder, "_old_call"), (writer, "_write_new"),
        (writer.SiteWriter, "finish"), (builder, "build_site"),
    ]
    for owner, name in phases:
        _timed(owner, name, totals)
    command.build_site = builder.build_site  # imported by name there
    folder = Path(args[0])
    wall, cpu = time.perf_counter(), time.process_time()
    _, report = publish(PublishRequest(out=folder / "site", db=f"sqlite:///{folder}/store.db", title="bench"))
    totals["publish()"] = [time.perf_counter() - wall, time.process_time() - cpu, 1]
    print(f"{len(report.written)} files written")
    for name, (w, c, n) in totals.items():
        print(f"{name:20s} wall {w:6.3f}  cpu {c:6.3f}  calls {n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
