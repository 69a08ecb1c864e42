"""The Streamlit server process of ``driftlens app``: page imports start with the process.

``python -m app.ui.serve_process run <script> [flags]`` is ``python -m streamlit run …``
with one difference: the background import of every page's modules
(:mod:`app.ui.warm_imports`) starts before the server does, not when the first browser
session runs the script. Streamlit runs every session's script in this process, so a
module imported here is loaded for all of them, and a fresh server's first page no longer
shares the cores with those imports (scipy, pandas, the study code: seconds on two cores).
"""

from __future__ import annotations

import sys

from app.ui.navigation import PAGES_DIR  # light: no page module, no scipy
from app.ui.warm_imports import part_modules, start_warm_imports


def main() -> None:
    """Start the page imports, then hand the command line to Streamlit's own CLI."""
    start_warm_imports(PAGES_DIR, extra=part_modules())
    from streamlit.web import cli  # after the thread started: it imports in parallel

    sys.argv[0] = "streamlit"
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main()
