"""Alembic migrations of the history store (run programmatically, no alembic.ini)."""
