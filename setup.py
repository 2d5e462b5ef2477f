"""Package layout that pyproject.toml cannot express: the top-level ``migrations/`` folder (the Alembic
environment and its revisions) ships inside the wheel as ``mmtrack/store/migrations``, so an installed
mmtrack can upgrade a store. Everything else is declared in pyproject.toml."""

from setuptools import find_namespace_packages, setup

MIGRATIONS = ["mmtrack.store.migrations", "mmtrack.store.migrations.versions"]

setup(
    # namespace discovery: data folders without __init__.py (mmtrack/publish/assets) are packages of the wheel too
    packages=find_namespace_packages(include=["mmtrack", "mmtrack.*"], exclude=["*.__pycache__"]) + MIGRATIONS,
    package_dir={"mmtrack.store.migrations": "migrations", "mmtrack.store.migrations.versions": "migrations/versions"},
    py_modules=["mmtrack_perf"],  # the console entry point
)
