"""``mmtrack import-asv RESULTS_DIR``: bring an asv history into the store."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from ..errors import EXIT_FAILURES, EXIT_OK, UserError
from ..store.asv_import import ImportSummary, find_results_files, import_asv_results
from ..store.db import open_store, redact


@dataclass(frozen=True, slots=True)
class ImportResult:
    summary: ImportSummary
    url: str  # the store, its password redacted

    @property
    def problems(self) -> list[str]:
        """One line per file that failed and per benchmark left out."""
        return [str(p) for p in [*self.summary.failed, *self.summary.left_out]]

    @property
    def exit_code(self) -> int:
        return EXIT_FAILURES if self.problems else EXIT_OK


def check_results_dir(results_dir: Path) -> None:
    """Refuse, in one line, a RESULTS_DIR that is no folder or holds no asv results."""
    if not results_dir.is_dir():
        raise UserError(f"{results_dir}: not a directory; give an asv results folder (the one with benchmarks.json)")
    check_results_folder(results_dir)


def run_import(url: str, results_dir: Path, progress: Callable[[int, int, str], None] | None = None,
               machine_classes: Sequence[str] = ()) -> ImportResult:
    """Import the asv results under ``results_dir`` into the store at ``url``; ``progress(done, total, file name)``
    sees each file. ``machine_classes``: ``CLASS=HOST-GLOB`` rules (``asvbridge.machine_class``)."""
    from ..asvbridge.machine_class import parse_rule

    rules = [parse_rule(text) for text in machine_classes]
    check_results_dir(results_dir)
    store = open_store(url)
    try:
        on_file = None if progress is None else lambda done, total, path: progress(done, total, Path(path).name)
        summary = import_asv_results(store, results_dir, on_file, machine_classes=rules)
    finally:
        store.close()
    return ImportResult(summary, redact(url))


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
