"""``python -m app.cli``: the ``driftlens`` command (how submitted jobs are started)."""

from app.cli import main

main()
