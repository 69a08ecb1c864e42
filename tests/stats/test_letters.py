"""The compact letter display for any number of groups (driftlens_core/effects.py)."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from driftlens_core.effects import compact_letter_display, compact_letter_tokens, letter_token


def _check(diff: np.ndarray, tokens: tuple[tuple[str, ...], ...]) -> None:
    k = diff.shape[0]
    for i in range(k):
        assert tokens[i], f"condition {i} has no letter"
        assert len(set(tokens[i])) == len(tokens[i])
    # One column per distinct token: two conditions share a letter when their rows meet.
    # (A matrix product instead of a set intersection per pair: a random pattern can have
    # thousands of letters.)
    column = {t: n for n, t in enumerate(sorted({t for ts in tokens for t in ts}))}
    member = np.zeros((k, len(column)), dtype=np.int64)
    for i, ts in enumerate(tokens):
        member[i, [column[t] for t in ts]] = 1
    share = (member @ member.T) > 0
    # sharing a letter <=> not significantly different
    wrong = np.argwhere(np.triu(share == diff, 1))
    assert wrong.size == 0, [tuple(int(x) for x in ij) for ij in wrong[:5]]


def _banded(k: int, width: int) -> np.ndarray:
    """Conditions in mean order that differ when more than ``width`` ranks apart.

    The shape of a real display: k - width overlapping groups, e.g. 58 at 60 conditions,
    so the tokens run well past "z".
    """
    ranks = np.arange(k)
    return np.abs(ranks[:, None] - ranks[None, :]) > width


def _triangles(parts: int) -> np.ndarray:
    """Conditions in triples that differ within their triple only: 3**parts letters.

    Every letter takes one condition of each triple (the most groups k conditions can
    have, Moon and Moser), so a search that misses a branch leaves some pair unshared.
    """
    part = np.arange(3 * parts) // 3
    diff = part[:, None] == part[None, :]
    np.fill_diagonal(diff, False)
    return diff


@st.composite
def patterns(draw: st.DrawFn) -> np.ndarray:
    # At most 24 conditions: a random pattern on k conditions can have up to 3**(k/3)
    # letters (6,561 at 24; 3**20, beyond any time limit, at 60), and 24 random conditions
    # already need tokens past "z" most of the time. The 60-condition shapes are the
    # examples below; 40 random conditions are the fixed test after this one.
    k = draw(st.integers(1, 24))
    p = draw(st.floats(0.0, 1.0))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    upper = np.triu(rng.random((k, k)) < p, 1)
    return upper | upper.T


@settings(max_examples=60, deadline=None)
@given(patterns())
@example(_banded(60, 2))
@example(_banded(60, 0))
@example(_triangles(5))
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
