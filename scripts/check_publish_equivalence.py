"""Check that ``mmtrack publish`` writes the same site as another revision (default: main).

Checks out the reference revision in a temporary git worktree, and with each checkout imports the MetPy asv results
of tests/data/asv-results into a SQLite store at one path, publishes, then imports the conda results into it and
publishes twice more (the incremental paths). The two sites must be byte-identical, file by file, but for two code
stamps of the build manifest that differ by design between checkouts: ``state.source`` (the package files' sizes and
mtimes) and ``state.site`` (a hash of the analysis code, which a refactor of it changes).

Usage: ``PYTHONPATH=$PWD python3 -m scripts.check_publish_equivalence [--rev main]``; exit 1 on a difference.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "asv-results"
MANIFEST = ".mmtrack-site.json"
STAMPS = ("source", "site")


def build(checkout: Path, work: Path, name: str) -> list[Path]:
    """The sites ``checkout`` publishes: after the MetPy import, and after the conda import (published twice)."""
    db, site = f"sqlite:///{work / 'store.db'}", work / f"{name}-site"
    (work / "store.db").unlink(missing_ok=True)

    def mmtrack(*args: str) -> None:
        subprocess.run([sys.executable, "-m", "mmtrack", *args], cwd=checkout, check=True, capture_output=True,
                       env={"PYTHONPATH": str(checkout), "PATH": "/usr/bin:/bin"})

    publish = ("publish", "-o", str(site), "--db", db, "--title", "MetPy", "--commit-url", "https://x/",
               "--no-progress")
    mmtrack("import-asv", str(DATA / "metpy" / "results"), "--db", db, "--no-progress")
    mmtrack(*publish)
    first = shutil.copytree(site, work / f"{name}-site-first")
    mmtrack("import-asv", str(DATA / "conda" / "results"), "--db", db, "--no-progress")
    mmtrack(*publish)
    mmtrack(*publish)
    return [first, site]


def differences(a: Path, b: Path) -> tuple[int, list[str]]:
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    out = sorted({str(p.relative_to(b)) for p in b.rglob("*") if p.is_file()} ^ {str(f) for f in files})
    for f in files:
        if f.name == MANIFEST and (b / f).exists():
            x, y = (json.loads((d / f).read_text()) for d in (a, b))
            for m in (x, y):
                for stamp in STAMPS:
                    m["state"].pop(stamp, None)
            if x != y:
                out.append(f"{f} (beyond the code stamps)")
        elif (b / f).exists() and not filecmp.cmp(a / f, b / f, shallow=False):
            out.append(str(f))
    return len(files), out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="main")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work, reference = Path(tmp), Path(tmp) / "reference"
        subprocess.run(["git", "worktree", "add", "-q", "--detach", str(reference), args.rev], cwd=ROOT, check=True)
        try:
            ref_sites = build(reference, work, "reference")
            new_sites = build(ROOT, work, "new")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(reference)], cwd=ROOT, check=True)
        failed = False
        for label, a, b in zip(("after the MetPy import", "after the conda import"), ref_sites, new_sites):
            n, diff = differences(a, b)
            listed = f": {', '.join(diff[:10])}" if diff else ""
            print(f"site {label}: {n} files compared, {len(diff)} differ{listed}")
            failed |= bool(diff)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
