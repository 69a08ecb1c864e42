"""What a newcomer reads: every simulator preset is listed where presets are listed."""

from __future__ import annotations

from collections.abc import Callable

from typer.testing import Result


def test_sim_presets_lists_the_sources_and_disposition_presets(cli: Callable[..., Result]) -> None:
    res = cli("sim", "presets")
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "sim/src-paper" in text and "sim/src-rigid" in text
    assert "sim/disp-qwen-d<dose>" in text and "sim/disp-null-d<dose>" in text
