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

# Bump when the data file format changes: fingerprints then miss, and the site is rebuilt.
# 2: encoded by orjson (0.00001 where json wrote 1e-05; both read back exactly).
# 3: a benchmark's data files side by side in data/b (bench_data), not in a folder of their own.
# 4: the compare page's verdicts in data/verdicts.js, not in each meta.js.
# 5: an instruction count series lists its points' kept callgrind profiles (publish/profiles.py).
# 6: the points of 16 groups of benchmarks per chunk file (publish/chunks.py), not one file per benchmark.
FORMAT = 6
#: The analysis modules behind the compare page's verdicts (the builder's reuse token hashes them too).
VERDICT_CODE = ("compare.py", "detect.py", "frames.py", "noise.py", "policy.py")


def source_key(store_digest_: str, config: SiteConfig, benchmark: str | None, machine: str | None) -> str:
    """The key a build records: the store's digest, the selection, the site settings, and the code that
    writes the pages (the mmtrack version, and the size and mtime of this package's files, of the analysis
    code behind the pages' verdicts and of plotly.min.js, so that an edited page script, edited verdict rules
    or an upgraded plotly rebuild without a version bump)."""
    from .. import __version__

    parts = [store_digest_, benchmark, machine, config.title, config.safe_commit_url, config.chunk_size,
             FORMAT, __version__, _code_stamp()]  # fmt: skip
    return hashlib.sha256(repr(parts).encode("utf-8", "surrogatepass")).hexdigest()


def _code_stamp() -> list[tuple[str, int, int]]:
    here = Path(__file__).resolve().parent
    files = sorted([*here.glob("*.py"), *(here / "assets").glob("*")])
    files += [here.parent / "analysis" / name for name in VERDICT_CODE]
    plotly = plotly_js_file()
    if plotly is not None:
        files.append(plotly)
    stamp = []
    for f in files:
        try:
            st = f.stat()
        except OSError:
            continue
        stamp.append((f.name, st.st_size, st.st_mtime_ns))
    return stamp


def plotly_js_file() -> Path | None:
    """plotly.min.js inside the plotly Python package, found without importing plotly (its import is slow)."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("plotly")
    except (ImportError, ValueError):
        return None
    return Path(spec.origin).parent / "package_data" / "plotly.min.js" if spec is not None and spec.origin else None
