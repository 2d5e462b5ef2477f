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
