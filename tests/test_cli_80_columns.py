"""Every command's output at COLUMNS=80 keeps every character it prints on a wide terminal (issue 45).

Width alone is not enough: rich crops a line wider than the terminal, and an ellipsis shortens a cell, and both
fit in 80 columns. So each output is printed twice, at 80 and at 400 columns, and the characters each holds
(whitespace and the table rules aside) must be the same, in any order.
"""

from __future__ import annotations

import shutil
from collections import Counter

import pytest
from conftest import METPY_RESULTS, cli_env, run_cli

RULES = {chr(c) for c in range(0x2500, 0x2580)}  # box drawing: a table rule is as long as the table is wide


def characters(text: str) -> Counter:
    return Counter(ch for ch in text if not ch.isspace() and ch not in RULES)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The MetPy history (59 commits, 128 benchmarks, one machine with a long environment name), detected."""
    root = tmp_path_factory.mktemp("cols")
    results = root / "results"
    shutil.copytree(METPY_RESULTS, results)
    db = root / "store.db"
    assert run_cli("import-asv", str(results), "--db", str(db), "--no-progress", cwd=root).returncode == 0
    assert run_cli("detect", "--db", str(db), "--no-progress", cwd=root).returncode == 0
    return root, db


def _commits(root, db) -> list[str]:
    import json

    listed = run_cli("list", "commits", "--db", str(db), "--format", "json", cwd=root)
    return [c["sha"][:8] for c in json.loads(listed.stdout)]


COMMANDS = [
    ("compare", "{a}", "{b}"),
    ("compare", "{a}", "{b}", "--format", "markdown"),
    ("compare", "{first}", "{b}", "--only-changed"),
    ("detect", "--dry-run", "--all", "--no-progress"),
    ("list", "runs"),
    ("list", "commits"),
    ("list", "machines"),
    ("list", "benchmarks"),
    ("db", "current"),
    ("publish", "-o", "{site}", "--no-progress"),
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: "-".join(x for x in a if not x.startswith("{"))[:40])
def test_nothing_is_lost_at_80_columns(store, args):
    root, db = store
    shas = _commits(root, db)
    out = {}
    for cols in ("80", "400"):
        argv = [a.format(a=shas[-2], b=shas[-1], first=shas[0], site=root / f"site{cols}") for a in args]
        out[cols] = run_cli(*argv, "--db", str(db), cwd=root, env=cli_env(COLUMNS=cols))
    narrow, wide = out["80"], out["400"]
    assert narrow.returncode == wide.returncode, narrow.stderr
    if "markdown" not in args:  # a markdown table keeps a row on one line, whatever the terminal
        assert max(map(len, narrow.stdout.splitlines()), default=0) <= 80
    # publish says how long it took, and the two sites' names differ in their digits
    keep = (lambda t: "".join(ch for ch in t if not ch.isdigit())) if args[0] == "publish" else (lambda t: t)
    lost = characters(keep(wide.stdout)) - characters(keep(narrow.stdout))
    extra = characters(keep(narrow.stdout)) - characters(keep(wide.stdout))
    assert not lost and not extra, (lost, extra, narrow.stdout[:2000])


def test_the_update_summary_wraps_on_words(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(METPY_RESULTS, results)
    outs = {}
    for cols in ("80", "400"):
        proc = run_cli("update", str(results), "-o", str(tmp_path / f"site{cols}"), "--db",
                       str(tmp_path / f"s{cols}.db"), "--no-detect", cwd=tmp_path, env=cli_env(COLUMNS=cols))
        assert proc.returncode == 0, proc.stderr
        outs[cols] = proc.stdout
    assert max(map(len, outs["80"].splitlines())) <= 80
    # The seconds each step took, and the site's and store's names, differ in digits only.
    no_digits = {cols: characters("".join(ch for ch in out if not ch.isdigit())) for cols, out in outs.items()}
    assert no_digits["80"] == no_digits["400"], outs
