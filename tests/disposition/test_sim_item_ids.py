"""Issue 37 item 7: in-process arms answer each stem as itself, even where texts repeat."""

from __future__ import annotations

import re

from llm.seeds import request_seed
from llm.types import SamplingParams
from storage.models import DispositionArm
from study.disposition.items import BatteryDocument
from study.disposition.plan import PlanItem, Reasoning, first_request, item_seed
from study.disposition.runs import arm_backend
from study.disposition.sim.responder import (
    DispositionSimBackend,
    ProbeInfo,
    answer_probe,
    parse_arm_model,
)
from tests.compare.conftest import battery_doc


def _shared_texts(doc: BatteryDocument) -> BatteryDocument:
    """The widened batteries with their "Case k." openings removed: 40 stems on 10 texts."""
    batteries = [
        b.model_copy(update={"stems": [
            s.model_copy(update={"paraphrases": [re.sub(r"^Case \d+\. ", "", x)
                                                 for x in s.paraphrases]})
            for s in b.stems
        ]})
        for b in doc.batteries
    ]  # fmt: skip
    return BatteryDocument(batteries=batteries)


def test_stems_sharing_a_text_are_answered_by_their_own_ids() -> None:
    """40 stems on 10 shared texts (as the comparison fixture once had): each stem keeps
    its own effect.

    Keyed by text, every stem of one text was answered as the last of them (10 items, not
    40); keyed by the request's item id, each reply is the one its own stem would get.
    """
    doc = _shared_texts(battery_doc(40))
    arm = DispositionArm(study="s", name="d075", model="sim/disp-qwen-d075-s1", dose=75,
                         train_seed=1, reasoning="off")  # fmt: skip
    backend = arm_backend(arm, doc)
    parsed = parse_arm_model("disp-qwen-d075-s1")
    assert parsed is not None and isinstance(backend, DispositionSimBackend)
    preset, dose, train_seed = parsed
    battery = doc.batteries[0]
    probes = [p for p in battery.probes() if p.paraphrase == battery.probes()[0].paraphrase]
    by_text: dict[str, list[str]] = {}
    for p in probes:
        by_text.setdefault(" ".join(p.text.split()), []).append(p.stem)
    assert len(probes) == 40 and len(by_text) == 10  # the fixture's shared texts
    sampling = SamplingParams(temperature=0.7, max_tokens=512)
    for p in probes:
        item = PlanItem(p, 1, item_seed(p, 1))
        req = first_request(item, Reasoning("off"), sampling, 0)
        got = backend.answer(req)
        want = answer_probe(
            ProbeInfo(battery.name, p.stem, p.paraphrase, battery.category_names,
                      battery.aligned_category), preset=preset, dose=dose,
            train_seed=train_seed, seed=request_seed(req) or 0, enable_thinking=False, prefill=None,
            max_tokens=512,
        )  # fmt: skip
        assert got.text == want.text, p.stem
