"""What a site is built from, as one key: a republish with nothing new compares it and stops.

The manifest of a build records this key (``state["source"]``). The next ``mmtrack publish``
works it out again before it reads any series; when it matches and the site's files are all
there, nothing is read and nothing is written.

The key covers the store's digest (``mmtrack.store.digest``: its small tables, read without
SQLAlchemy on SQLite), the selection (benchmark regex, machine), the site's settings and the
mmtrack version, so that none of them can change without a rebuild.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from .model import SiteConfig


def source_key(store_digest_: str, config: SiteConfig, benchmark: str | None, machine: str | None) -> str:
    """The key a build records: the store's digest, the selection, the site settings, and the code that
    writes the pages (the mmtrack version, and the size and mtime of this package's files and of
    plotly.min.js, so that an edited page script or an upgraded plotly rebuilds without a version bump)."""
    from .. import __version__
    from .builder import FORMAT

    parts = [store_digest_, benchmark, machine, config.title, config.safe_commit_url, config.chunk_size,
             FORMAT, __version__, _code_stamp()]  # fmt: skip
    return hashlib.sha256(repr(parts).encode("utf-8", "surrogatepass")).hexdigest()


def _code_stamp() -> list[tuple[str, int, int]]:
    here = Path(__file__).resolve().parent
    files = sorted([*here.glob("*.py"), *(here / "assets").glob("*")])
    try:
        import importlib.util

        spec = importlib.util.find_spec("plotly")  # found, not imported (plotly takes seconds to import)
        if spec is not None and spec.origin:
            files.append(Path(spec.origin).parent / "package_data" / "plotly.min.js")
    except (ImportError, ValueError):
        pass
    stamp = []
    for f in files:
        try:
            st = f.stat()
        except OSError:
            continue
        stamp.append((f.name, st.st_size, st.st_mtime_ns))
    return stamp
