"""The seed's three agreement tables for a refinement loop's final version.

* **cross-model**: each labeler pair's exact agreement in the loop's first round (the start
  version) and in its latest round under the final version, read from the stored rounds;
* **within-model**: each labeler labels that final round's responses a second time (repeat
  1: another request seed, the same labeler) and the two passes are compared
  (:func:`ontology.validation.within_model_stability`);
* **robustness**: every definition of the final version is paraphrased by a model, each
  labeler relabels the same responses under the paraphrase, and the labels under the two
  wordings are compared (:func:`ontology.validation.definition_robustness`).

The extra labels are stored like any other (repeat 1, the ``~paraphrase`` version), so
computing the tables again labels nothing new.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session

from llm.specs import ModelSpec
from ontology.labelers.base import Progress
from ontology.refinement import RefineResult
from ontology.validation import definition_robustness, within_model_stability
from storage.errors import InputError


@dataclass(frozen=True)
class FinalTables:
    """The three tables of the final version (rows ready for the report; agreement in %)."""

    #: the labeling round the within-model and robustness tables relabel
    final_round: int
    cross: tuple[dict[str, Any], ...]
    within: tuple[dict[str, Any], ...]
    robustness: tuple[dict[str, Any], ...]
    notes: tuple[str, ...] = ()


def _final_round(result: RefineResult) -> dict[str, Any]:
    """The latest round under the final version (the last round when none is)."""
    if not result.rounds:
        raise InputError(f"Loop {result.loop_id} has no round yet: nothing to tabulate.")
    under = [r for r in result.rounds if r.get("version") == result.final_version]
    return (under or list(result.rounds))[-1]


def cross_rows(result: RefineResult) -> list[dict[str, Any]]:
    """Each labeler pair's agreement (%) in the first round and in the final round."""
    first, last = result.rounds[0], _final_round(result)
    start = f"{first.get('version')}, loop round {first.get('iteration')}"
    final = f"{last.get('version')}, loop round {last.get('iteration')}"
    pairs = list(dict.fromkeys([*(last.get("pairwise") or {}), *(first.get("pairwise") or {})]))
    rows = [
        {
            "labeler pair": pair.replace("|", " & "),
            f"final ({final}) %": 100.0 * (last.get("pairwise") or {}).get(pair, math.nan),
            f"start ({start}) %": 100.0 * (first.get("pairwise") or {}).get(pair, math.nan),
        }
        for pair in pairs
    ]
    return rows


def final_version_tables(
    result: RefineResult,
    *,
    session: Session,
    paraphraser: ModelSpec | None = None,
    progress: Progress | None = None,
) -> FinalTables:
    """Compute the cross-model, within-model and robustness tables of the final version.

    Args:
        result: the stored loop (:func:`ontology.refinement_loop.loop_result`).
        session: open session (the extra labels are stored and committed).
        paraphraser: the model that paraphrases the definitions (default: the loop's
            rewriter).
        progress: labeling progress callback.

    Raises:
        InputError: the loop has no round yet.
    """
    last = _final_round(result)
    number = int(last["round"])
    # the stored options are text: read back, the rewriter is parsed once here
    model = paraphraser or ModelSpec.parse(str(result.config.get("rewriter") or "sim/default"))
    within, robust, notes = [], [], []
    for labeler in result.config.get("labelers", []):
        stable = within_model_stability(number, labeler, session=session, progress=progress)
        robustness = definition_robustness(
            number, labeler, model=model, session=session, progress=progress
        )
        session.commit()
        s, r = stable.rows[0], robustness.rows[0]
        within.append(
            {"labeler": labeler, "within-model agreement %": s["agreement"], "steps": s["n_steps"]}
        )
        robust.append(
            {
                "labeler": labeler,
                "agreement under a paraphrase %": r["agreement"],
                "steps": r["n_steps"],
                "paraphrase": r["paraphrase_version"],
            }
        )
        notes += [*stable.notes, *robustness.notes]
    if last.get("version") != result.final_version:
        notes.append(
            f"no round was labeled under {result.final_version}: the tables use the last "
            f"round's version {last.get('version')}"
        )
    return FinalTables(
        final_round=number,
        cross=tuple(cross_rows(result)),
        within=tuple(within),
        robustness=tuple(robust),
        notes=tuple(dict.fromkeys(notes)),
    )
