"""``mmtrack import-asv RESULTS_DIR``: bring an asv history into the store."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..errors import EXIT_FAILURES, EXIT_OK, UserError
from ..store.db import open_store, redact
from ..store.ingest import ImportSummary, import_asv_results


def run_import(url: str, results_dir: Path, console: Console, err_console: Console, *, progress: bool = True) -> int:
    """Import, print one line per unreadable file and a summary; returns the exit code."""
    if not results_dir.is_dir():
        raise UserError(f"{results_dir}: not a directory; give an asv results folder (the one with benchmarks.json)")
    store = open_store(url)
    try:
        if progress and err_console.is_terminal:
            with Progress(
                TextColumn("importing"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.description}"),
                console=err_console,
                transient=True,
            ) as bar:
                task = bar.add_task("", total=None)

                def tick(done: int, total: int, path: str) -> None:
                    bar.update(task, completed=done, total=total, description=escape(Path(path).name))

                summary = import_asv_results(store, results_dir, tick)
        else:
            summary = import_asv_results(store, results_dir)
    finally:
        store.close()
    for problem in summary.failed:
        err_console.print(f"[red]error:[/] {escape(str(problem))}", highlight=False, soft_wrap=True)
    console.print(format_summary(summary, redact(url)), highlight=False, soft_wrap=True)
    return EXIT_FAILURES if summary.failed else EXIT_OK


def format_summary(s: ImportSummary, url: str) -> str:
    r = s.results
    lines = [
        f"imported {s.imported} new run(s), replaced {s.replaced}, skipped {s.unchanged} already imported, "
        f"{len(s.failed)} file(s) failed, of {s.files} results file(s)",
    ]
    if s.imported or s.replaced:
        lines.append(
            f"  {s.result_count} results ({r['ok']} ok, {r['failed']} failed, {r['skipped']} skipped), "
            f"{len(s.benchmarks)} benchmarks, {len(s.commits)} commits, "
            f"{len(s.machines)} machine(s), {len(s.environments)} environment(s)"
        )
    lines.append(f"  into {url}")
    return "\n".join(lines)
