"""The script ``driftlens app`` serves (the router, run from a folder without ``pages/``).

Streamlit takes a ``pages/`` folder next to the served script for an old-style multipage
app: until the first ``st.navigation`` call of the server, a deep link such as ``/runs``
runs that page on its own under Streamlit's automatic list of the folder's files instead
of the workbench's navigation. Serving this script, whose folder has no ``pages/``,
makes every run, the first included, go through :func:`app.ui.router.main`. The pages'
modules are loaded by the server process itself (:mod:`app.ui.serve_process`), not here:
this script runs again on every rerun of every session.
"""

from app.ui.router import main

main()
