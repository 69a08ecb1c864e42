"""Reasoning drift's judge-robustness adapter (the plugin's ``robustness`` part).

Reasoning drift has two judges: the step labeler, whose labels the drift is measured on
(:mod:`study.reasoning.labeler_robustness`, asked with ``--labeler L``), and the response
judge of ``driftlens judge`` (helpfulness, distraction, acknowledgement:
:mod:`study.reasoning.response_judge_robustness`, asked without ``--labeler``).
"""

from __future__ import annotations

from study.judge_robustness.result import RobustnessResult
from study.judge_robustness.service import RobustnessAsk


def run_robustness(run: str, ask: RobustnessAsk) -> RobustnessResult:
    """The step labeler's robustness when ``ask.options["labeler"]`` names one, else the
    response judge's (``ask.primary`` or the run's only judge; ``ask.judges`` the others).
    """
    if ask.options.get("labeler"):
        from study.reasoning.labeler_robustness import run_robustness as labeler_robustness

        return labeler_robustness(run, ask)
    from study.reasoning.response_judge_robustness import response_judge_robustness

    return response_judge_robustness(run, ask)
