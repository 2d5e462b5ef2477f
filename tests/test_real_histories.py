"""Real asv histories as they come (issue 57): long names stored whole on both backends."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import text

from conftest import run_cli
from mmtrack.store.db import open_store
from test_store_support import BACKENDS, require_postgres, reset_postgres
from test_user_errors import write_result

# An environment name as asv builds it from a wide conda requirement matrix (530 characters).
PACKAGES = ["astropy", "bqplot0.12.6", "catboost", "cython", "dask", "h5py", "ipywidgets7.5.1", "lightgbm",
            "matplotlib3.1.1", "numba0.46.0", "numpy1.17.3", "pandas0.25.2", "pyarrow", "pytables", "scikit-learn",
            "scipy1.3.1", "seaborn", "statsmodels", "sympy", "tensorflow", "xarray", "xgboost"]


def long_env_name(length: int = 530) -> str:
    name = "conda-py3.7-" + "-".join(PACKAGES)
    while len(name) < length:
        name += "-" + "-".join(PACKAGES)
    return name[:length]


def backend_url(backend: str, tmp_path) -> str:
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    url = require_postgres()
    reset_postgres(url)
    return url


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_530_character_environment_name_is_imported_whole(tmp_path, backend):
    url = backend_url(backend, tmp_path)
    env = long_env_name()
    assert len(env) == 530
    results = tmp_path / "results"
    for i in range(16):  # a step at the ninth commit
        path = write_result(results, f"{i + 1:02x}" * 20, {"suite.T.time_a": (1e-3 if i < 8 else 2e-3) * (1 + 0.01 * (i * 7 % 5))},
                            date=1753724236000 + i * 86_400_000)
        data = json.loads(path.read_text())
        data["env_name"] = env
        path.write_text(json.dumps(data))
    proc = run_cli("import-asv", str(results), "--db", url, "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 file(s) failed" in proc.stdout
    with open_store(url) as store, store.engine.connect() as conn:
        names = conn.execute(text("SELECT name FROM environment")).scalars().all()
        runs = conn.execute(text("SELECT count(*) FROM run")).scalar()
    assert names == [env] and runs == 16
    # detect stores its change point under the same name: no column cuts it
    proc = run_cli("detect", "--db", url, "--no-progress", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (series,) = json.loads(proc.stdout)["series"]
    assert series["environment"] == env and series["changes"]
    with open_store(url) as store, store.engine.connect() as conn:
        stored = conn.execute(text("SELECT environment FROM change_point")).scalars().all()
    assert stored and set(stored) == {env}


# -- machine classes -------------------------------------------------------------------------------

EPYC = {"arch": "x86_64", "cpu": "AMD EPYC 7763 64-Core Processor", "num_cpu": "4", "os": "Linux 6.5.0-1025-azure",
        "ram": "16364592"}
XEON = {**EPYC, "cpu": "Intel(R) Xeon(R) Platinum 8272CL CPU @ 2.60GHz", "num_cpu": "2", "ram": "7110624"}


def hosted_run(results, host: str, hardware: dict, i: int, value: float = 1e-3) -> None:
    """The results of commit ``i`` measured on a runner named ``host`` (its own asv machine folder)."""
    path = write_result(results, f"{i + 1:02x}" * 20, {"suite.T.time_a": value * (1 + 0.01 * (i * 7 % 5))},
                        machine=host, date=1753724236000 + i * 86_400_000)
    info = {**hardware, "machine": host, "version": 1}
    (path.parent / "machine.json").write_text(json.dumps(info))
    data = json.loads(path.read_text())
    data["params"].update({k: v for k, v in info.items() if k != "version"})
    path.write_text(json.dumps(data))


def machines(db) -> dict[str, dict]:
    proc = run_cli("list", "machines", "--db", str(db), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return {r["name"]: r for r in json.loads(proc.stdout)}


def import_results(results, db, *args: str) -> str:
    proc = run_cli("import-asv", str(results), "--db", str(db), "--no-progress", *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_ephemeral_host_names_fold_into_one_class_whose_series_detect_analyses(tmp_path):
    results, db = tmp_path / "results", tmp_path / "store.db"
    for i in range(12):  # a new runner per run, kernels updated and RAM a little different on the way
        hardware = {**EPYC, "os": f"Linux 6.{5 + i // 4}.0-10{i:02d}-azure", "ram": str(16364592 + 1000 * i)}
        hosted_run(results, f"fv-az{500 + i}-{i * 37}", hardware, i)
    out = import_results(results, db)
    assert "1 machine(s) (12 hosts)" in out
    (name, record), = machines(db).items()
    assert name == "linux-azure-x86_64-amd-epyc-7763-4cpu-16gib"
    assert len(record["hosts"]) == 12 and record["runs"] == 12 and "AMD EPYC 7763" in record["hardware"]
    proc = run_cli("detect", "--db", str(db), "--dry-run", "--format", "json", "--no-progress")
    (series,) = json.loads(proc.stdout)["series"]
    assert series["machine"] == name and series["status"] == "ok" and series["points"] == 12
    # a host's name leads to its class
    proc = run_cli("detect", "--db", str(db), "--machine", "fv-az503-111", "--no-progress")
    assert proc.returncode == 2 and f"host of the machine class {name!r}" in proc.stderr, proc.stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_cpu_models_stay_apart_and_a_later_host_joins_its_class(tmp_path, backend):
    results, db = tmp_path / "results", backend_url(backend, tmp_path)
    hosted_run(results, "runner-a", EPYC, 0)
    hosted_run(results, "runner-b", XEON, 1)
    import_results(results, db)
    assert set(machines(db)) == {"runner-a", "runner-b"}  # one host each: named after it, as before classes
    hosted_run(results, "runner-c", {**EPYC, "os": "Linux 6.8.0-1021-azure"}, 2)
    import_results(results, db)
    found = machines(db)
    assert set(found) == {"linux-azure-x86_64-amd-epyc-7763-4cpu-16gib", "runner-b"}
    assert found["linux-azure-x86_64-amd-epyc-7763-4cpu-16gib"]["hosts"] == ["runner-a", "runner-c"]


def test_identical_machines_measuring_the_same_commits_stay_apart(tmp_path):
    results, db = tmp_path / "results", tmp_path / "store.db"
    for host in ("cpu00-omp", "cpu00-acc"):  # one VM type, two build modes, the same ten commits
        for i in range(10):
            hosted_run(results, host, EPYC, i, 1e-3 if host.endswith("omp") else 3e-3)
    import_results(results, db)
    assert set(machines(db)) == {"cpu00-omp", "cpu00-acc"}


def test_machine_class_rules_name_merge_and_split(tmp_path):
    results, db = tmp_path / "results", tmp_path / "store.db"
    for i in range(4):
        hosted_run(results, f"gha-{i}", EPYC, i)
    hosted_run(results, "gha-xeon", XEON, 5)
    hosted_run(results, "lab-box", EPYC, 6)
    # merge the Xeon runner into the hosted class, split the lab box off it, name both
    import_results(results, db, "--machine-class", "lab=lab-*", "--machine-class", "github=gha-*")
    found = machines(db)
    assert set(found) == {"github", "lab"}
    assert found["github"]["hosts"] == ["gha-0", "gha-1", "gha-2", "gha-3", "gha-xeon"]


def test_machine_classes_in_asv_conf_json(tmp_path):
    results, db = tmp_path / "results", tmp_path / "store.db"
    for i in range(3):
        hosted_run(results, f"ci-{i}", EPYC if i else XEON, i)
    (tmp_path / "asv.conf.json").write_text('{\n  // asv reads comments\n  "version": 1,\n'
                                            '  "machine_classes": {"ci": ["ci-*"]}\n}\n')
    import_results(results, db)
    assert machines(db)["ci"]["hosts"] == ["ci-0", "ci-1", "ci-2"]


def test_a_malformed_machine_class_rule_is_one_line(tmp_path):
    results = tmp_path / "results"
    hosted_run(results, "a", EPYC, 0)
    proc = run_cli("import-asv", str(results), "--db", str(tmp_path / "s.db"), "--machine-class", "nameonly")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "expected CLASS=HOST-GLOB" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


# -- format 1 -----------------------------------------------------------------------------------------


def test_format_1_conversion_matches_asvs_own(tmp_path):
    import copy
    from pathlib import Path

    from asv.results import Results

    from mmtrack.asvbridge.results_v1 import update_to_2

    files = sorted((Path(__file__).parent / "data/asv-results/conda/results").glob("*/*-*.json"))
    assert files
    for f in files:
        data = json.loads(f.read_text())
        assert data["version"] == 1
        theirs, ours = Results.update_to_2(copy.deepcopy(data)), update_to_2(copy.deepcopy(data))
        for row in theirs["results"].values():
            del row[12:]  # the profile column: mmtrack reads none
            while row and row[-1] is None:
                row.pop()
        assert ours == theirs, f
    # a file off the common path is asv's to convert, and to word
    with pytest.raises(Exception, match="missing key"):
        update_to_2({"commit_hash": "a" * 40, "results": {}})


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_store_built_at_0012_upgrades_in_place_and_then_takes_a_long_name(tmp_path, backend):
    from alembic import command
    from sqlalchemy import inspect

    from mmtrack.store.db import alembic_config, head_revision

    url = backend_url(backend, tmp_path)
    results = tmp_path / "results"
    write_result(results, "a" * 40, {"suite.T.time_a": 1e-3})
    import_results(results, url)
    with open_store(url) as store:
        with store.write() as conn:
            command.downgrade(alembic_config(conn), "0012_series_cache")
        with store.engine.connect() as conn:
            (name,) = [c for c in inspect(conn).get_columns("environment") if c["name"] == "name"]
            assert getattr(name["type"], "length", None) == 255  # the store as 0012 left it
    long_run = write_result(results, "b" * 40, {"suite.T.time_a": 1e-3})
    data = json.loads(long_run.read_text())
    data["env_name"] = long_env_name()
    long_run.write_text(json.dumps(data))
    import_results(results, url)  # upgrades the store first
    with open_store(url) as store, store.engine.connect() as conn:
        assert store.current_revision() == head_revision()
        names = set(conn.execute(text("SELECT name FROM environment")).scalars())
        runs = conn.execute(text("SELECT count(*) FROM run")).scalar()
    assert names == {"e1", long_env_name()} and runs == 2
