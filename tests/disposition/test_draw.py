"""The second-pass samples are drawn from natural keys, and studies drawn by id resume."""

from __future__ import annotations

import random

from study.disposition.draw import ResponseKey, drawn_sample, id_sample, key_sample

KEYS: list[ResponseKey] = [
    (arm, "oversight", f"ov-{s:02d}", p, k)
    for arm in ("reference", "treated")
    for s in range(12)
    for p in range(3)
    for k in (1, 2)
]  # 144 responses


def test_the_draw_depends_on_keys_and_seed_not_on_database_ids() -> None:
    ids = list(range(1, len(KEYS) + 1))
    shuffled = ids[:]
    random.Random(3).shuffle(shuffled)  # the same answers stored in another order
    one = drawn_sample(dict(zip(ids, KEYS, strict=True)), 0.1, 0, stored=())
    other = drawn_sample(dict(zip(shuffled, KEYS, strict=True)), 0.1, 0, stored=())
    by_one = {i: k for i, k in zip(ids, KEYS, strict=True)}
    by_other = {i: k for i, k in zip(shuffled, KEYS, strict=True)}
    assert sorted(by_one[i] for i in one) == sorted(by_other[i] for i in other)
    assert len(one) == round(0.1 * len(KEYS)) == 14
    # another seed, another draw; the old id draw differs from it (what a new study changes)
    assert key_sample(KEYS, 0.1, 1) != key_sample(KEYS, 0.1, 0)
    assert set(id_sample(ids, 0.1, 0)) != one
    # at least one when there is anything; nothing at share 0
    assert len(key_sample(KEYS[:3], 0.1, 0)) == 1 and key_sample(KEYS, 0.0, 0) == []


def test_a_study_drawn_by_id_before_resumes_the_set_it_drew() -> None:
    keys = dict(zip(range(1, len(KEYS) + 1), KEYS, strict=True))
    old = set(id_sample(list(keys), 0.1, 0))
    new = drawn_sample(keys, 0.1, 0, stored=())
    # all of the old draw stored, or part of it (a pass cut short): the old set again
    assert drawn_sample(keys, 0.1, 0, stored=old) == old
    part = sorted(old - new)[:3]
    assert drawn_sample(keys, 0.1, 0, stored=part) == old
    # a study drawn by key resumes its own draw (part of it stored)
    assert drawn_sample(keys, 0.1, 0, stored=sorted(new)[:5]) == new
    # stored scores that fit neither draw (the share was changed): the key draw
    assert drawn_sample(keys, 0.1, 0, stored=sorted(set(keys) - old - new)[:4]) == new
