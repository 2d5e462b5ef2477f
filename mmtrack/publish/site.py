"""Publishing a site (``mmtrack publish``, ``mmtrack update``): the request's settings (asv.conf.json's title and
commit URL), its checks, the model read from the store (kept open while the site is built), the drift since a
baseline, and the pages written."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import UserError, os_reason
from ..fsutil import unreadable_entry
from ..textsafe import bounded
from .model import SiteConfig, SiteModel
from .writer import WriteReport, check_tree


@dataclass(frozen=True, slots=True)
class PublishRequest:
    out: Path
    db: str | None = None  # a store URL (resolved by the CLI)
    title: str | None = None
    commit_url: str | None = None  # default: asv.conf.json's show_commit_url
    asv_config: Path | None = None  # default: ./asv.conf.json when present
    benchmark: str | None = None  # a regex on benchmark names
    machine: str | None = None
    baseline: str | None = None  # a ref: the regressions page shows each series' drift since it (drift_since.py)
    min_effect: float | None = None  # the drift's threshold (default: detect's)


TITLE_LIMIT = 200  # characters of a site title: a 5 MB project name would be written into every page


def asv_settings(path: Path | None) -> dict:
    """``project`` and ``show_commit_url`` from an asv.conf.json (``//`` comments allowed)."""
    if path is None:
        path = Path("asv.conf.json")
        if not path.is_file():
            return {}
    if not path.exists() and not path.is_symlink():
        raise UserError(f"{path}: no such asv config; pass --config PATH or leave it out")
    unreadable = unreadable_entry(path, "config file")  # a FIFO would block the read forever
    if unreadable is not None:
        raise UserError(f"{path}: {unreadable}; pass --config with the asv.conf.json to read")
    from asv.util import load_json

    try:
        conf = load_json(str(path), js_comments=True)
    except Exception as exc:  # noqa: BLE001 - asv raises its own error types
        raise UserError(f"{path}: not a readable asv config ({exc}); fix the file or pass --commit-url") from None
    if not isinstance(conf, dict):
        raise UserError(f"{path}: the asv config must be a JSON object, not {type(conf).__name__}; fix the file")
    return {k: conf[k] for k in ("project", "show_commit_url") if isinstance(conf.get(k), str)}


def site_config(request: PublishRequest) -> SiteConfig:
    asv = asv_settings(request.asv_config)
    url = request.commit_url if request.commit_url is not None else asv.get("show_commit_url")
    if url and not url.lower().startswith(("http://", "https://")):
        raise UserError(f"commit URL {url!r} is not http(s); pass --commit-url https://.../commit/")
    title = bounded(request.title or asv.get("project") or "mmtrack", TITLE_LIMIT)  # copied into every page
    kept = Path(".mmtrack") / "profiles"  # run --instrument callgrind's profiles: linked from regressed counts
    return SiteConfig(title=title, commit_url=url or None, profiles=kept.resolve() if kept.is_dir() else None)


def publish_site(
    request: PublishRequest,
    model: SiteModel | None = None,
    progress: Callable[[int, int], None] | None = None,
    store: Any | None = None,
    columns: Sequence[Any] = (),
) -> tuple[SiteModel | None, WriteReport]:
    """Build the site from ``model`` or, by default, from the store (kept open while the site is
    built: series are read only for the benchmarks that changed since the last build). ``store``:
    the store of ``request.db`` already open (``mmtrack update``), left open; ``columns``: series columns
    read from it already (:func:`mmtrack.publish.fromstore.model_from_store`).

    With nothing new in a SQLite store since the last build, no model is made (None) and the
    report's ``up_to_date`` says what the site shows: nothing was read or written."""
    from ..fsutil import folder_problem

    if request.min_effect is not None and not request.baseline:
        raise UserError("--min-effect sets the threshold of the drift since --baseline; add --baseline REF or drop "
                        "--min-effect")
    problem = folder_problem(request.out, "output folder")
    if problem:
        raise UserError(f"{problem}; pass -o with a writable folder")
    config = site_config(request)
    if Path(request.out).is_dir() and not Path(request.out).is_symlink():
        check_tree(Path(request.out))  # refuse a planted link before reading the store
    if model is not None:
        model = SiteModel(series=model.series, commits=model.commits, change_points=model.change_points, config=config,
                          alerts=model.alerts)
        _check_not_empty(model, request)
        return model, _write_site(model, request.out)
    up_to_date = None if request.baseline else _nothing_new(request, config)  # the drift is not in the digest
    if up_to_date is not None:
        return None, up_to_date
    from ..store import reads as q
    from ..store.db import open_store
    from .fromstore import model_from_store

    own = store is None
    store = store or open_store(request.db, existing=True)
    try:
        baseline = _baseline(store, request)  # a bad ref or threshold: one line before any series is read
        # Hundreds of thousands of records, none in a cycle: with the collector on, every
        # collection would traverse all of them again (docs/design/publish.md).
        with q.gc_paused():
            model = model_from_store(
                store, config, benchmark_pattern=request.benchmark, machine=request.machine, progress=progress,
                columns=columns,
            )
            _check_not_empty(model, request)
            if baseline is not None:
                model.drift = _drift(store, model, request, *baseline)
            return model, _write_site(model, request.out)
    finally:
        if own:
            store.close()


def _baseline(store: Any, request: PublishRequest) -> tuple[str, Any] | None:
    """``--baseline``'s commit and the drift's policy (its threshold), or None without a baseline."""
    from ..analysis.drift_since import drift_policy, resolve_baseline

    if not request.baseline:
        return None
    policy = drift_policy(request.min_effect)
    return resolve_baseline(store, request.baseline, None), policy


def _drift(store: Any, model: SiteModel, request: PublishRequest, sha: str, policy: Any) -> Any:
    """Every published series' drift since ``sha`` (the commit ``request.baseline`` names)."""
    from ..analysis.drift_since import drift_report
    from ..store import reads as q

    columns = q.series_columns(store, list(model.series))
    return drift_report(request.baseline or sha, sha, [c for c in columns if c.values], policy, model.alerts)


def _write_site(model: SiteModel, out: Path | str) -> WriteReport:
    """build_site, with what the folder checks up front cannot foresee (a full disk, a folder under /proc) as one
    line naming the output folder."""
    from .builder import build_site  # analysis and numpy: not loaded by a republish with nothing new

    try:
        return build_site(model, out)
    except OSError as exc:
        raise UserError(f"output folder {out}: cannot write the site ({os_reason(exc)}); pass -o with a writable "
                        "folder that has room") from None


def _nothing_new(request: PublishRequest, config: SiteConfig) -> WriteReport | None:
    """A report with ``up_to_date`` when the site in ``request.out`` was built from exactly what the
    SQLite store holds now (publish.source, store.digest), with the same selection and settings; else None."""
    from ..store.digest import plain_sqlite_path, sqlite_file_digest
    from .source import source_key
    from .writer import last_build_state

    path = plain_sqlite_path(request.db or "")
    if path is None or not Path(request.out).is_dir():
        return None
    state = last_build_state(Path(request.out))
    summary = (state or {}).get("summary")
    if not state or not isinstance(summary, dict) or not isinstance(state.get("source"), str):
        return None
    digest = sqlite_file_digest(path)
    if digest is None or source_key(digest, config, request.benchmark, request.machine) != state["source"]:
        return None
    return WriteReport(unchanged=int(summary.get("files", 0)), up_to_date={k: int(v) for k, v in summary.items()})


def _check_not_empty(model: SiteModel, request: PublishRequest) -> None:
    if not model.series:
        if request.benchmark or request.machine:
            raise UserError(
                f"no series in the store matches -b {request.benchmark or '.*'!r} --machine {request.machine or 'any'!r};"
                " check the filters (-b is a regex searched in benchmark names)"
            )
        raise UserError("no series in the store; run `mmtrack import-asv` or `mmtrack run` first")
