"""``mmtrack import-asv RESULTS_DIR``: bring an asv history into the store (what it brought in: an
:class:`~mmtrack.store.asv_import.ImportResult`)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from ..asvbridge.results_folder import check_results_folder
from ..store.asv_import import ImportResult, import_asv_results
from ..store.db import open_store, redact


def run_import(url: str, results_dir: Path, progress: Callable[[int, int, str], None] | None = None,
               machine_classes: Sequence[str] = ()) -> ImportResult:
    """Import the asv results under ``results_dir`` into the store at ``url``; ``progress(done, total, file name)``
    sees each file. ``machine_classes``: ``CLASS=HOST-GLOB`` rules (``asvbridge.machine_class``)."""
    from ..asvbridge.machine_class import parse_rule

    rules = [parse_rule(text) for text in machine_classes]
    check_results_folder(results_dir)
    store = open_store(url)
    try:
        on_file = None if progress is None else lambda done, total, path: progress(done, total, Path(path).name)
        summary = import_asv_results(store, results_dir, on_file, machine_classes=rules)
    finally:
        store.close()
    return ImportResult(summary, redact(url))
