"""Where a publish spends its time, in-process, without a profiler: wall and CPU seconds per phase.

    PYTHONPATH=<source tree> python benchmarks/publish_phases.py <folder with store.db and site/>

Used for docs/publish.md ("One new commit"); run it from a folder that is not a checkout's root.
"""

import functools
import sys
import time
from pathlib import Path

start_wall, start_cpu = time.perf_counter(), time.process_time()
from mmtrack.commands.publish import PublishRequest, publish  # noqa: E402 - the imports are timed too
from mmtrack.publish import builder, fromstore, writer  # noqa: E402
from mmtrack.store import queries  # noqa: E402

PHASES = [
    (fromstore, "model_from_store"), (queries, "series_newest_many"), (builder, "_step_verdicts"),
    (builder, "_finish_benchmark"), (builder, "_old_call"), (writer, "_write_new"),
    (writer.SiteWriter, "finish"), (builder, "build_site"),
]
totals: dict[str, list[float]] = {"imports": [time.perf_counter() - start_wall, time.process_time() - start_cpu, 1]}


def timed(owner: object, name: str) -> None:
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


for owner, name in PHASES:
    timed(owner, name)
import mmtrack.commands.publish as command  # noqa: E402

command.build_site = builder.build_site  # imported by name there
folder = Path(sys.argv[1])
wall, cpu = time.perf_counter(), time.process_time()
_, report = publish(PublishRequest(out=folder / "site", db=f"sqlite:///{folder}/store.db", title="bench"))
totals["publish()"] = [time.perf_counter() - wall, time.process_time() - cpu, 1]
print(f"{len(report.written)} files written")
for name, (w, c, n) in totals.items():
    print(f"{name:20s} wall {w:6.3f}  cpu {c:6.3f}  calls {n}")
