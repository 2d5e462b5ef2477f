"""``mmtrack import-asv RESULTS_DIR``: bring an asv history into the store."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from ..errors import EXIT_FAILURES, EXIT_OK, UserError
from ..store.asv_import import ImportSummary, find_results_files, import_asv_results
from ..store.db import open_store, redact
from ..tables import unwrapped
from ..textsafe import markup as escape  # markup escaped, and a file name's control characters too
from .progress import progress_bar


def run_import(url: str, results_dir: Path, console: Console, err_console: Console, *, progress: bool = True) -> int:
    """Import, print one line per unreadable file and a summary; returns the exit code."""
    if not results_dir.is_dir():
        raise UserError(f"{results_dir}: not a directory; give an asv results folder (the one with benchmarks.json)")
    check_results_folder(results_dir)
    store = open_store(url)
    try:
        with progress_bar(err_console if progress else None, "importing", detail=True) as tick:
            on_file = None if tick is None else lambda done, total, path: tick(done, total, Path(path).name)
            summary = import_asv_results(store, results_dir, on_file)
    finally:
        store.close()
    for problem in [*summary.failed, *summary.left_out]:
        err_console.print(f"[red]error:[/] {escape(str(problem))}", highlight=False, soft_wrap=True)
    console.print(format_summary(summary, redact(url)), highlight=False, soft_wrap=unwrapped(console))
    return EXIT_FAILURES if summary.failed or summary.left_out else EXIT_OK


def _holds_results(folder: Path) -> bool:
    """Whether ``folder`` is an asv results folder: its benchmarks.json, or results files in its machine folders.
    A project root's ``results/benchmarks.json`` is not a results file of a machine called "results"."""
    return (folder / "benchmarks.json").is_file() or any(
        f.name != "benchmarks.json" for f, _ in find_results_files(folder))


def check_results_folder(folder: Path, verb: str = "mmtrack import-asv") -> None:
    """Refuse, in one line, a folder that holds no asv results, naming the results folder of a project root."""
    if _holds_results(folder):
        return
    candidates = [folder / "results", folder / ".asv" / "results"]
    conf = folder / "asv.conf.json"
    if conf.is_file():
        try:
            from asv.util import load_json

            configured = load_json(str(conf), js_comments=True).get("results_dir")
            if isinstance(configured, str):
                candidates.insert(0, folder / configured)
        except Exception:  # noqa: BLE001 - an unreadable config only loses a hint
            pass
    found = next((c for c in candidates if c.is_dir() and _holds_results(c)), None)
    if found is not None:
        raise UserError(f"{folder} is a project, not an asv results folder; pass its results folder: "
                        f"{verb} {found}")
    raise UserError(f"{folder} holds no asv results (no benchmarks.json, no <machine>/*.json); give the folder "
                    "`asv run` writes to (asv.conf.json's results_dir, default .asv/results)")


def format_summary(s: ImportSummary, url: str) -> str:
    r = s.results
    lines = [
        f"imported {s.imported} new run(s), replaced {s.replaced}, skipped {s.unchanged} already imported, "
        f"{len(s.failed)} file(s) failed, "
        + (f"{len(s.left_out)} benchmark(s) left out, " if s.left_out else "")
        + f"of {s.files} results file(s)",
    ]
    if s.imported or s.replaced:
        lines.append(
            f"  {s.result_count} results ({r['ok']} ok, {r['failed']} failed, {r['skipped']} skipped), "
            f"{len(s.benchmarks)} benchmarks, {len(s.commits)} commits, "
            f"{len(s.machines)} machine(s), {len(s.environments)} environment(s)"
        )
    lines.append(f"  into {url}")
    return "\n".join(lines)
