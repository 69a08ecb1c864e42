#!/usr/bin/env bash
# Start (or stop) a throw-away Label Studio 1.23.2 server on 127.0.0.1 for the test suite.
#
#   eval "$(scripts/ci/labelstudio.sh)"   # start; prints: export LABEL_STUDIO_URL=... LABEL_STUDIO_API_KEY=...
#   scripts/ci/labelstudio.sh --stop       # stop it and delete its data
#   scripts/ci/labelstudio.sh --status     # print the export line if it is running, exit 1 if not
#
# Label Studio runs from its own virtual environment (its pinned dependencies must not
# constrain ours), installed once and reused: $DRIFTLENS_LABELSTUDIO_VENV, default
# ~/.cache/driftlens/labelstudio-1.23.2/venv. The data folder is temporary. The admin user
# and its legacy API token are generated here; only the export line goes to stdout, and
# the state file holding the token is readable by its owner only.
#
# Environment: DRIFTLENS_LS_STATE (state folder, default one per checkout:
#              /tmp/driftlens-ls-$UID-<hash of the checkout's path>),
#              DRIFTLENS_LABELSTUDIO_VENV (virtual environment), PYTHON (to create it).
set -euo pipefail

LS_VERSION="1.23.2"
VENV="${DRIFTLENS_LABELSTUDIO_VENV:-$HOME/.cache/driftlens/labelstudio-${LS_VERSION}/venv}"
PY="${PYTHON:-python3}"

LOG_NAME=labelstudio.sh
# shellcheck source=scripts/ci/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
STATE_DIR="${DRIFTLENS_LS_STATE:-$(checkout_state_dir ls)}"

installed_version() {
  [ -x "$VENV/bin/python" ] || return 1
  "$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("label-studio"))' 2>/dev/null
}

install_ls() {
  if [ "$(installed_version || true)" = "$LS_VERSION" ]; then return 0; fi
  log "installing label-studio==$LS_VERSION into $VENV (about a minute)..."
  mkdir -p "$(dirname "$VENV")"
  [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "label-studio==$LS_VERSION" >&2 ||
    die "pip could not install label-studio==$LS_VERSION"
}

export_line() { echo "export LABEL_STUDIO_URL=http://127.0.0.1:$LS_PORT LABEL_STUDIO_API_KEY=$LS_TOKEN"; }

healthy() {
  "$PY" - "$1" <<'EOF' >/dev/null 2>&1
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1] + "/health", timeout=3) as r:
    sys.exit(0 if r.status == 200 else 1)
EOF
}

running() {
  load_state || return 1
  kill -0 "$LS_PID" 2>/dev/null && healthy "http://127.0.0.1:$LS_PORT"
}

stop() {
  nothing_to_stop && return 0
  if kill -0 "$LS_PID" 2>/dev/null; then
    log "stopping server on port $LS_PORT"
    # The server was started in its own session: signal the whole group (uvicorn workers).
    kill -TERM -- "-$LS_PID" 2>/dev/null || kill -TERM "$LS_PID" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$LS_PID" 2>/dev/null || break; sleep 0.5; done
    kill -KILL -- "-$LS_PID" 2>/dev/null || true
  fi
  rm -rf "$LS_ROOT" "$STATE_DIR"
  log "stopped and removed"
}

where() { echo "on port $LS_PORT"; }

start() {
  lock_cache "$(dirname "$VENV")"
  install_ls
  unlock_cache

  local root token password port pid
  root="$(mktemp -d "${TMPDIR:-/tmp}/driftlens-ls.XXXXXX")"
  token="$("$PY" -c 'import secrets; print(secrets.token_hex(20))')"
  password="$("$PY" -c 'import secrets; print(secrets.token_urlsafe(18))')"
  port="$(pick_port)"
  mkdir -p "$STATE_DIR" "$root/data"
  chmod 700 "$STATE_DIR" "$root"
  log "starting Label Studio $LS_VERSION on 127.0.0.1:$port (data in $root/data)"
  # setsid: its own process group, so --stop ends the server and every child it spawned.
  env LABEL_STUDIO_USERNAME="admin@driftlens.test" LABEL_STUDIO_PASSWORD="$password" \
    LABEL_STUDIO_USER_TOKEN="$token" LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN=true \
    LABEL_STUDIO_LATEST_VERSION_CHECK=false LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK=false \
    LABEL_STUDIO_BASE_DATA_DIR="$root/data" COLLECT_ANALYTICS=false \
    setsid "$VENV/bin/label-studio" start --data-dir "$root/data" --port "$port" \
    --internal-host 127.0.0.1 --host "http://127.0.0.1:$port" --no-browser \
    >"$root/server.log" 2>&1 </dev/null 9>&- &
  pid=$!
  write_state "LS_ROOT=$root" "LS_PID=$pid" "LS_PORT=$port" "LS_TOKEN=$token"
  load_state
  # as long as the server logs or its database grows (migrations at load 11 took longer
  # than a fixed 240 s)
  startup_clock "${DRIFTLENS_LS_IDLE_S:-240}" "${DRIFTLENS_LS_START_CAP_S:-1800}"
  while still_starting "$root/server.log" "$root/data"; do
    if healthy "http://127.0.0.1:$port"; then
      log "running on 127.0.0.1:$port (pid $pid)"
      export_line
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || { tail -n 30 "$root/server.log" >&2 || true; die "server exited"; }
    sleep 1
  done
  gave_up_starting "$root/server.log" "server did not answer: nothing new in its log"
}

main "$@"
