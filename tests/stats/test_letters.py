"""The compact letter display for any number of groups (driftlens_core/effects.py)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from driftlens_core.effects import compact_letter_display, compact_letter_tokens, letter_token


def _check(diff: np.ndarray, tokens: tuple[tuple[str, ...], ...]) -> None:
    k = diff.shape[0]
    for i in range(k):
        assert tokens[i], f"condition {i} has no letter"
        assert len(set(tokens[i])) == len(tokens[i])
        for j in range(i + 1, k):
            share = bool(set(tokens[i]) & set(tokens[j]))
            # sharing a letter <=> not significantly different
            assert share == (not diff[i, j]), (i, j)


@st.composite
def patterns(draw: st.DrawFn) -> np.ndarray:
    k = draw(st.integers(1, 60))
    p = draw(st.floats(0.0, 1.0))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    upper = np.triu(rng.random((k, k)) < p, 1)
    return upper | upper.T


@settings(max_examples=60, deadline=None)
@given(patterns())
def test_letters_share_exactly_when_not_different(diff: np.ndarray) -> None:
    _check(diff, compact_letter_tokens(diff))


def test_forty_conditions_random_pattern_beyond_z() -> None:
    rng = np.random.default_rng(40)
    upper = np.triu(rng.random((40, 40)) < 0.5, 1)
    diff = upper | upper.T
    tokens = compact_letter_tokens(diff)
    _check(diff, tokens)
    assert any(len(t) > 1 for ts in tokens for t in ts)  # tokens beyond "z" are in use
    shown = compact_letter_display(diff)
    # multi-character tokens are rendered with separators, never glued together
    for ts, text in zip(tokens, shown, strict=True):
        assert text.split(",") == list(ts)


def test_token_names_continue_after_z() -> None:
    assert [letter_token(i) for i in (0, 25, 26, 27, 51, 52, 701, 702)] == [
        "a", "z", "aa", "ab", "az", "ba", "zz", "aaa",
    ]  # fmt: skip


def test_small_displays_are_unchanged_plain_letters() -> None:
    # a > b > c in means; a differs from c only: a="a", b="ab", c="b"
    diff = np.array([[0, 0, 1], [0, 0, 0], [1, 0, 0]], dtype=bool)
    assert compact_letter_display(diff) == ("a", "ab", "b")
