"""The job tests use the storage tests' PostgreSQL fixture (a fresh database per test)."""

from tests.storage.conftest import _fresh_engines, pg_url  # noqa: F401
