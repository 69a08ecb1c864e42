"""Persistence: SQLModel tables, engine and sessions, Alembic migrations, repositories."""
