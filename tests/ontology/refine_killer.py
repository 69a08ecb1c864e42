"""Run ``driftlens ARGS`` in this process, SIGKILLing it at the Nth call of one function.

``python -m tests.ontology.refine_killer POINT N ARGS…``: POINT names where the loop dies
(``round``: while a round's labels are written; ``rewrite``: inside the rewrite request;
``gate``: while the gate relabels; ``decide``: between a decision's version and its commit).
Used by ``test_refinement_resume.py`` to kill the loop where a real crash could.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
from typing import Any

POINTS = {
    "round": ("ontology.round_labeling", "upsert_step_labels"),
    "rewrite": ("ontology.refinement", "ask"),
    "gate": ("ontology.refinement", "label_items"),
    "decide": ("storage.repo.rounds", "decide_proposal"),
}


def main() -> None:
    point, nth, *args = sys.argv[1:]
    module_name, attr = POINTS[point]
    module = importlib.import_module(module_name)
    real = getattr(module, attr)
    calls = {"n": 0}

    def dying(*a: Any, **k: Any) -> Any:
        calls["n"] += 1
        if calls["n"] >= int(nth):
            if point == "round":
                real(*a, **k)  # the rows are written (not committed) when the process dies
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*a, **k)

    setattr(module, attr, dying)
    from app.cli import main as cli_main

    sys.argv = ["driftlens", *args]
    cli_main()


if __name__ == "__main__":
    main()
