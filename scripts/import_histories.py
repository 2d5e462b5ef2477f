"""Import each real asv history into its own SQLite store and tabulate what came in (docs/design/real-histories.md).

    nice -n 10 python scripts/import_histories.py [--only NAME ...] [--out /tmp/i57] [--markdown]

Per history: results files, failed files (and their first distinct failure lines), runs, machines as recorded
(asv's host names) and machine classes, series, series that ``detect`` analysed (enough commits), change points,
and the import's seconds (wall clock of ``mmtrack import-asv``, a subprocess). Reads the histories where the
project keeps them (``/work/shared/data/asv-results`` and its unpacked archives); never used by tests.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

SHARED = Path("/work/shared/data/asv-results")
UNPACKED = Path("/work/data/histories")
ROOT = Path(__file__).resolve().parent.parent

# name -> results folder (the one holding benchmarks.json and one folder per machine)
HISTORIES = {
    "metpy": SHARED / "metpy/results",
    "conda": SHARED / "conda/.asv/results",
    "openblas": SHARED / "openblas/results",
    "numba": UNPACKED / "numba/results",
    "sunpy": UNPACKED / "sunpy/results",
    "casabench": UNPACKED / "casabench/results",
    "cvxpy": UNPACKED / "cvxpy/results",
    "kedro": UNPACKED / "kedro/.asv/results",
    "thematrix": UNPACKED / "thematrix/results",
    "flowkit": UNPACKED / "flowkit/results",
    "sunpy-runs": UNPACKED / "sunpy-runs",
    "flowkit-runs": UNPACKED / "flowkit-runs",
}


def _mmtrack(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "mmtrack", *args], capture_output=True, text=True, env=env)


def _children_cpu() -> float:
    """CPU seconds (user and system) of the finished child processes, the import's worker included: less
    sensitive than the wall clock to other work on a shared machine."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _count_files(results: Path) -> int:
    return sum(1 for machine in results.iterdir() if machine.is_dir()
               for f in machine.iterdir() if f.suffix == ".json" and f.name != "machine.json")


def _store_counts(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as conn:
        one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        counts = {
            "runs": one("SELECT count(*) FROM run"),
            "hosts": one("SELECT count(DISTINCT host) FROM run"),
            "machines": one("SELECT count(*) FROM machine"),
            "series": one("SELECT count(*) FROM series"),
        }
        if "machine_host" in tables:  # machine classes (issue 57): hosts recorded per class
            counts["hosts"] = one("SELECT count(*) FROM machine_host")
        return counts


def _failure_lines(output: str, limit: int = 3) -> list[str]:
    """The distinct failure messages of an import's output (paths and numbers blurred), at most ``limit``."""
    seen: dict[str, str] = {}
    for line in output.splitlines():
        if ".json:" not in line:
            continue
        message = line.split(".json:", 1)[1].strip()
        shape = re.sub(r"\d+", "N", message)[:80]
        seen.setdefault(shape, line.strip()[:240])
    return list(seen.values())[:limit]


def measure(name: str, results: Path, out: Path, detect: bool = True) -> dict:
    db = out / f"{name}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    url = f"sqlite:///{db}"
    start, cpu = time.perf_counter(), _children_cpu()
    imported = _mmtrack("import-asv", str(results), "--db", url, "--no-progress")
    seconds, cpu = time.perf_counter() - start, _children_cpu() - cpu
    failed = re.search(r"(\d+) file\(s\) failed", imported.stdout + imported.stderr)
    row = {"history": name, "files": _count_files(results), "failed": int(failed.group(1)) if failed else -1,
           "failures": _failure_lines(imported.stdout + imported.stderr), "seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2),
           "import_rc": imported.returncode}
    row.update(_store_counts(db))
    row["files_per_second"] = round(row["files"] / seconds) if seconds else None
    if not detect:
        return row
    detected = _mmtrack("detect", "--db", url, "--dry-run", "--format", "json", "--no-progress")
    try:
        report = json.loads(detected.stdout)
    except ValueError:
        row.update(analysed=-1, change_points=-1, detect_error=(detected.stderr or detected.stdout)[-300:])
        return row
    series = report.get("series", [])
    row["analysed"] = sum(1 for s in series if s.get("status") == "ok")
    row["change_points"] = sum(len(s.get("changes", [])) for s in series)
    row["commit_order"] = report.get("commit_order")
    return row


COLUMNS = ("history", "files", "failed", "runs", "hosts", "machines", "series", "analysed", "change_points",
           "seconds", "cpu_seconds", "files_per_second")


def markdown(rows: list[dict]) -> str:
    head = "| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS) + "\n"
    return head + "".join("| " + " | ".join(str(r.get(c, "")) for c in COLUMNS) + " |\n" for r in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=sorted(HISTORIES), help="these histories only")
    parser.add_argument("--out", type=Path, default=Path("/tmp/i57"), help="where the stores and table go")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table at the end")
    parser.add_argument("--no-detect", action="store_true", help="import only (timing runs)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.only or HISTORIES:
        row = measure(name, HISTORIES[name], args.out, detect=not args.no_detect)
        print(json.dumps(row), flush=True)
        rows.append(row)
    (args.out / "histories.json").write_text(json.dumps(rows, indent=1))
    if args.markdown:
        print(markdown(rows))
    print(f"load: {os.getloadavg()}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
