"""Issue 37 item 7: the served disposition simulator keys probes by item id, not by text.

A battery widened by reusing the shipped stems' texts under new stem ids (40 stems, 10
texts per tendency) was 40 items in-process (keyed by the request's tag) but 10 over
HTTP, where the simulator looked probes up by text: every stem sharing a text answered
as the last of them. Now the served simulator finds the item from the request's text and
the seed the plan derived from its id, and both routes answer every request alike.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from llm.backends import get_backend
from llm.batch import run_chat_batch
from llm.specs import ModelSpec
from llm.types import SamplingParams
from study.disposition.items import BatteryDocument, Stem, batteries_to_yaml, load_sample_batteries
from study.disposition.plan import Reasoning, build_plan, first_request
from study.disposition.sim.responder import DispositionSimBackend
from study.disposition.sim_endpoint import ServedProbes, probe_index, probe_registry
from study.sim_endpoint import SimProcess

N_STEMS = 40
TENDENCIES = ("self_interest", "oversight")


def _widened() -> BatteryDocument:
    """Each tendency's shipped stems reused under 40 ids (the texts repeat)."""
    out = []
    for b in load_sample_batteries().batteries:
        if b.name in TENDENCIES:
            stems = [
                Stem(id=f"{b.stems[k % len(b.stems)].id}-{k:02d}",
                     paraphrases=b.stems[k % len(b.stems)].paraphrases[:3])
                for k in range(N_STEMS)
            ]  # fmt: skip
            out.append(b.model_copy(update={"stems": stems}))
    return BatteryDocument(batteries=out)


def test_the_seed_names_the_item_among_probes_sharing_a_text() -> None:
    doc = _widened()
    texts = {" ".join(p.text.split()) for p in doc.probes()}
    assert len(texts) < len(doc.probes())  # the widened battery does repeat its texts
    lookup = ServedProbes(doc)
    by_text = {(i.battery, i.stem) for i in probe_registry(doc).values()}
    by_item = set()
    for item in build_plan(doc.probes(), samples=2):
        req = first_request(item, Reasoning("off"), SamplingParams(), attempt=1)
        from llm.seeds import request_seed

        seed = request_seed(req)
        assert seed is not None
        got = lookup(" ".join(item.probe.text.split()), seed)
        assert got is not None
        assert (got.battery, got.stem, got.paraphrase) == (
            item.probe.battery, item.probe.stem, item.probe.paraphrase,
        )  # fmt: skip
        by_item.add((got.battery, got.stem))
    # the items a served arm can tell apart: 10 per tendency by text, all 40 by item id
    assert len(by_text) == 2 * 10
    assert len(by_item) == 2 * N_STEMS
    assert lookup("no such probe", 1) is None


def test_served_arms_answer_every_stem_as_itself(tmp_path: Path) -> None:
    doc = _widened()
    path = tmp_path / "wide.yaml"
    path.write_text(batteries_to_yaml(doc), encoding="utf-8")
    plan = build_plan(doc.probes(), samples=2)
    sampling = SamplingParams(temperature=0.7, max_tokens=1024)
    requests = [first_request(it, Reasoning("off"), sampling, 0) for it in plan]
    model = "disp-qwen-d075-s1"
    in_process = DispositionSimBackend(model, probe_registry(doc), index=probe_index(doc))
    expected = [in_process.answer(r).text for r in requests]
    key = secrets.token_urlsafe(12)
    with SimProcess(
        api_key=key, module="study.disposition.sim_endpoint", args=("--batteries", str(path))
    ) as url:
        env = {**os.environ, "DSIM_BASE_URL": url, "DSIM_API_KEY": key}
        served = run_chat_batch(
            get_backend(ModelSpec.parse(f"openai-api/dsim/{model}"), env=env), requests
        )
    assert all(r.error is None for r in served), served[0]
    same: dict[tuple[str, str], bool] = {}
    for it, want, got in zip(plan, expected, served, strict=True):
        k = (it.probe.battery, it.probe.stem)
        same[k] = same.get(k, True) and got.text == want
    as_itself = sum(same.values())
    # every stem answered as itself (before: about 10 per tendency, the last of each text)
    assert as_itself == 2 * N_STEMS, as_itself
