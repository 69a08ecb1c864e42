"""Alembic environment and revisions (shipped with the package; no alembic.ini)."""
