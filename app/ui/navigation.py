"""The page registry: (file under ``app/pages``, title, icon) per section.

Pages from each capability plug in here; the router and the tests both read it.
"""

from __future__ import annotations

SECTIONS: dict[str, list[tuple[str, str, str]]] = {
    "Workbench": [
        ("home.py", "Home", ":material/home:"),
    ],
}

DEFAULT_PAGE = "home.py"
