"""The "judge robustness" section every instrument's report carries (results or "not
assessed"), as plain lines the Markdown and HTML writers escape."""

from __future__ import annotations

from collections.abc import Sequence

from study.judge_robustness.result import RobustnessResult

HEADING = "Judge robustness"


def _ci(lo: float, hi: float) -> str:
    return f"[{lo:.2f}, {hi:.2f}]"


def robustness_lines(results: Sequence[RobustnessResult]) -> list[str]:
    """The section's lines; one "not assessed" line when no run was tested."""
    if not results:
        return [
            "Not assessed: the judge was not re-judged or swapped for these runs "
            "(driftlens judges robustness --instrument I --run R --judge SPEC)."
        ]
    out: list[str] = []
    for r in results:
        free_w, both_w = r.widths
        flips = (
            f"{r.resample_flip_rate:.1%} over {r.resamples - 1} resamples"
            if r.resample_flip_rate is not None
            else "no resamples"
        )
        out.append(
            f"Run {r.run}, judge {r.primary}, {r.n_items} answers re-judged "
            f"({', '.join(f'{k} {n}' for k, n in sorted(r.strata.items()))}); {r.measure}."
        )
        out.append(
            f"Mean {r.mean:.2f}: judge-free 95% interval {_ci(*r.judge_free)} (width "
            f"{free_w:.2f}), judge-inclusive {_ci(*r.judge_inclusive)} (width {both_w:.2f}); "
            f"the judge's share of the variance {r.judge_share:.1%}."
        )
        out.append(f"Verdict flip rate of the same judge: {flips}.")
        for ln in r.lines[1:]:
            if ln.kind == "alternative":
                rate = "–" if ln.flip_rate is None else f"{ln.flip_rate:.1%}"
                out.append(
                    f"Alternative judge {ln.judge}: flip rate {rate}, mean {ln.mean:.2f} "
                    f"{_ci(ln.ci_low, ln.ci_high)}, {ln.conclusion}."
                )
        if r.conclusion_flips:
            out.extend(f"Conclusion flips under {c}." for c in r.conclusion_flips)
        else:
            out.append(
                f"No conclusion flips: every judgement reads the mean as {r.lines[0].conclusion}."
            )
        out.extend(r.notes)
    return out
