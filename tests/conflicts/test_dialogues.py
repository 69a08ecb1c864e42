"""Multi-session dialogues: the shipped sample, the validator, the dialogue extractor, the run."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from click.testing import Result
from sqlmodel import Session

from llm.specs import ModelSpec
from storage.errors import InputError
from storage.repo.runs import list_responses, require_run
from study.conflicts.dialogues import read_dialogues
from study.conflicts.items import import_bank_file, load_sample_banks
from study.conflicts.plan import ConflictGenerationOptions, generate_conflicts
from study.conflicts.sim.responder import dialogue_extract
from study.conflicts.tracks import SimDialogueExtractor, extract_bank, observability_label

BANKS = {b.instance_id: b for b in load_sample_banks()}


def test_sample_dialogues_state_then_revise_every_fact() -> None:
    dset = read_dialogues(None, BANKS.values())
    assert len(dset.by_instance) == 6
    types = Counter(BANKS[i].type for i in dset.by_instance)
    assert types == {"CPC": 2, "BOC": 2, "SCC": 2}
    for iid, d in dset.by_instance.items():
        assert d.stated() == set(range(len(BANKS[iid].core_memories)))
        turns = [t for s in d.sessions for t in s.turns]
        assert any(t.revises for t in turns), iid  # a later session revises earlier facts
        assert any(not any(t.states for t in s.turns) for s in d.sessions), iid  # filler
        assert all(not t.states for t in turns if t.role == "assistant")


def _write(tmp_path: Path, mutate: Callable[[dict], None]) -> Path:
    lines = []
    for line in read_dialogues_text().splitlines():
        obj = json.loads(line)
        if obj["instance_id"] == "p04_coffee_intake":
            mutate(obj)
        lines.append(json.dumps(obj))
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


def read_dialogues_text() -> str:
    from importlib import resources

    return resources.files("study.conflicts.data").joinpath("sample_dialogues.jsonl").read_text()


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda o: o["sessions"][0]["turns"][1].update(states=[2]), "assistant turn may not"),
        (lambda o: o["sessions"][0]["turns"][2].update(states=[9]), "index 9 is outside"),
        (lambda o: o["sessions"][4]["turns"][0].pop("states"), "[5] are stated by no user turn"),
        (lambda o: o["sessions"][0]["turns"][2].update(revises=[4]), "revises fact 4 before"),
        (lambda o: o.update(instance_id="nope"), "'nope' is not among the banks"),
    ],
)
def test_validator_names_the_line(
    tmp_path: Path, mutate: Callable[[dict], None], message: str
) -> None:
    path = _write(tmp_path, mutate)
    with pytest.raises(InputError) as err:
        read_dialogues(path, BANKS.values())
    assert message in str(err.value) and "line 4" in str(err.value)


def test_window_and_latest_wins_decide_what_survives() -> None:
    d = read_dialogues(None, BANKS.values()).by_instance["p04_coffee_intake"]
    inst = BANKS["p04_coffee_intake"]

    def run(window: int, overwrite: float, miss_rel: float = 0.0) -> str:
        ext = SimDialogueExtractor(
            window=window, p_miss=0.0, p_miss_relation=miss_rel, p_overwrite=overwrite
        )
        return extract_bank(ext, inst, seed=1, dialogue=d).observability

    assert run(window=5, overwrite=0.0) == "FULL"  # add-both: everything kept
    assert run(window=1, overwrite=1.0) == "None"  # the relapse overwrote the quit phase
    assert run(window=5, overwrite=1.0) == "FULL"  # one window: both phases seen together
    assert run(window=5, overwrite=0.0, miss_rel=1.0) == "PARTIAL"  # relation memories lost


def test_default_extractor_rates_give_all_three_labels() -> None:
    dset = read_dialogues(None, BANKS.values())
    ext = SimDialogueExtractor(window=2)
    labels: Counter[str] = Counter()
    for seed in range(60):
        for iid, d in dset.by_instance.items():
            bank = extract_bank(ext, BANKS[iid], seed=seed, dialogue=d)
            kept = [BANKS[iid].core_memories.index(m) for m in bank.memories]
            assert bank.observability == observability_label(BANKS[iid], kept)
            labels[bank.observability] += 1
    assert set(labels) == {"FULL", "PARTIAL", "None"}


def test_dialogue_extract_is_seeded() -> None:
    sessions: list[list[tuple[Sequence[int], Sequence[int]]]] = [
        [((0, 1), ())],
        [((2,), (0,))],
        [((3,), ())],
    ]
    a = dialogue_extract(
        sessions, (2,), window=1, p_miss=0.3, p_miss_relation=0.5, p_overwrite=0.5,
        rng=random.Random(4),
    )  # fmt: skip
    b = dialogue_extract(
        sessions, (2,), window=1, p_miss=0.3, p_miss_relation=0.5, p_overwrite=0.5,
        rng=random.Random(4),
    )  # fmt: skip
    assert a == b


def test_pipeline_track_runs_end_to_end_from_dialogues(session: Session) -> None:
    import_bank_file(None, session=session)
    opts = ConflictGenerationOptions(
        model=ModelSpec.parse("sim/mc-balanced"),
        run="dlg",
        doses=(0, 6),
        track="pipeline",
        extractor="sim-dialogue",
    )
    s = generate_conflicts(opts, session=session)
    assert s.planned == 6 * 2 and s.failed == 0  # only the instances with a dialogue
    run = require_run("dlg", session=session)
    assert run.config["memory_system"] == "sim-dialogue"
    assert run.config["dialogues"] == "sample:sample_dialogues.jsonl"
    dset = read_dialogues(None, BANKS.values())
    ext = SimDialogueExtractor()
    for r in list_responses(run.id or 0, session=session):
        ctx = r.request["context"]
        inst = BANKS[ctx["instance_id"]]
        bank = extract_bank(
            ext, inst, seed=int(run.config["run_seed"]), dialogue=dset.by_instance[inst.instance_id]
        )
        shown = [o["text"] for o in ctx["order"] if o["provenance"] == "core"]
        assert sorted(shown) == sorted(bank.memories)
        assert ctx["observability"] == bank.observability
    again = generate_conflicts(opts, session=session)
    assert again.requested == 0


def test_cli_dialogues_table(cli: Callable[..., Result]) -> None:
    assert cli("conflicts", "import", "--sample").exit_code == 0
    res = cli("conflicts", "dialogues", "--seed", "3")
    assert res.exit_code == 0, res.output
    assert "p04_coffee_intake" in res.output and "sim-dialogue" in res.output
