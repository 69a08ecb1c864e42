"""Front ends: the ``driftlens`` CLI and the Streamlit workbench. Nothing imports ``app``."""
