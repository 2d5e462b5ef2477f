"""The verbs in mmtrack/commands/ are a Python API: they return results and print nothing (docs/architecture.md).

The command line renders what they return (mmtrack/cli_results.py); here a Python caller gets the same results
with nothing on its stdout or stderr, and no module of the verbs has a way to the terminal.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = ROOT / "mmtrack" / "commands"
METPY_RESULTS = Path(__file__).parent / "data" / "asv-results" / "metpy" / "results"

#: Calls that write to the terminal, whoever they are called on (a rich console, click, a file of sys).
WRITING_CALLS = {"print", "echo", "secho", "print_json"}
#: Modules whose import means output: the terminal's console and the CLI's own modules.
TERMINAL_MODULES = {"click", "rich.console", "terminal", "cli", "cli_events", "cli_results", "cli_progress"}


def terminal_writes(source: str) -> list[str]:
    """Every place in ``source`` that reaches the terminal: a print or echo call, ``sys.stdout``/``sys.stderr``,
    an import of a console or of the CLI; as ``line: what``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name in WRITING_CALLS:
                found.append(f"{node.lineno}: {name}()")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "sys" \
                and node.attr in ("stdout", "stderr", "__stdout__", "__stderr__"):
            found.append(f"{node.lineno}: sys.{node.attr}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            names += [f"{node.module}.{a.name}" for a in node.names] if isinstance(node, ast.ImportFrom) else []
            hits = [n for n in names if n.lstrip(".") in TERMINAL_MODULES or n.split(".")[0] == "click"]
            found += [f"{node.lineno}: import {n}" for n in hits]
    return found


def test_no_module_of_the_verbs_writes_to_the_terminal():
    wrong = {p.name: terminal_writes(p.read_text()) for p in sorted(COMMANDS.glob("*.py"))}
    wrong = {name: hits for name, hits in wrong.items() if hits}
    assert not wrong, f"mmtrack/commands/ writes to the terminal (return a result or report an event): {wrong}"


def test_the_check_finds_each_way_to_the_terminal():
    planted = (
        "import sys\nimport click\nfrom ..terminal import echo\nfrom rich.console import Console\n"
        "def f(console):\n    print('x')\n    click.echo('x')\n    console.print('x')\n    sys.stderr.write('x')\n"
    )
    hits = terminal_writes(planted)
    for what in ("print()", "echo()", "sys.stderr", "import click", "import rich.console", "import terminal"):
        assert any(what in h for h in hits), (what, hits)
    assert terminal_writes("import math\nx = math.log(2)\nout = proc.stdout\n") == []


@pytest.fixture(scope="module")
def metpy_store(tmp_path_factory) -> str:
    """A real SQLite store of the MetPy slice in tests/data, made through the import verb's API."""
    from mmtrack.commands.import_asv import ImportResult, run_import

    url = f"sqlite:///{tmp_path_factory.mktemp('api') / 'metpy.db'}"
    result = run_import(url, METPY_RESULTS)
    assert isinstance(result, ImportResult)
    assert result.summary.imported > 1 and result.problems == [] and result.exit_code == 0
    return url


def test_compare_and_detect_return_their_results_and_print_nothing(metpy_store, capsys):
    from mmtrack.commands.compare import CompareOutcome, CompareRequest, run_compare
    from mmtrack.commands.detect import DetectOutcome, DetectRequest, run_detect
    from mmtrack.commands.list import ListRequest, collect

    commits = collect(ListRequest("commits", db=metpy_store))
    assert len(commits) > 2
    a, b = commits[-2]["sha"], commits[-1]["sha"]
    compared = run_compare(CompareRequest(a=a, b=b, db=metpy_store))
    assert isinstance(compared, CompareOutcome)
    assert compared.before.commit.sha == a and compared.after.commit.sha == b
    assert compared.comparison.rows and compared.exit_code in (0, 1)
    detected = run_detect(DetectRequest(db=metpy_store, store_results=False))
    assert isinstance(detected, DetectOutcome)
    assert detected.reports and detected.stored is None
    assert {r.status for r in detected.reports} - {"too_short"}  # some series were long enough to judge
    assert capsys.readouterr() == ("", "")


def test_bench_returns_its_run_and_reports_events_to_the_caller(capsys):
    from mmtrack.asvbridge.session import Status
    from mmtrack.commands.bench import BenchRequest, BenchResult, BenchRun, run_bench

    request = BenchRequest(path=ROOT / "examples", pattern="Basic", quick=True, save=False, compare="none",
                           processes=1, overrides={"max_samples": 8, "pin_cpu": False})
    events: list[object] = []
    result = run_bench(request, report=events.append)
    assert isinstance(result, BenchResult) and result.exit_code == 0 and result.run_id is None
    assert [o.status for o in result.run.outcomes] == [Status.OK]
    assert result.run.outcomes[0].stats.samples >= 2
    assert [type(e) for e in events][:1] == [BenchRun] and events[0] is result.run
    assert capsys.readouterr() == ("", "")


def test_every_name_the_python_api_page_lists_imports():
    """docs/reference/python-api.md names each verb function, request and result by its dotted path: each exists."""
    import importlib
    import re

    page = (ROOT / "docs" / "reference" / "python-api.md").read_text(encoding="utf-8")
    names = set(re.findall(r"`(mmtrack(?:\.\w+)+)", page))
    assert len(names) >= 25, sorted(names)
    for dotted in sorted(names - {"mmtrack.commands"}):  # the package itself, named in the prose
        module, _, attr = dotted.rpartition(".")
        assert hasattr(importlib.import_module(module), attr), f"docs/reference/python-api.md: {dotted} does not exist"
