# Helpers shared by the throw-away test servers (postgres.sh, labelstudio.sh, vllm.sh); sourced.
#
# The sourcing script sets LOG_NAME (the prefix of its messages) first. Messages go to
# stderr, so stdout carries only the export line the script prints.

log() { printf '%s: %s\n' "${LOG_NAME:-$(basename "$0")}" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Whether nothing listens on 127.0.0.1:$1.
port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Print a random free TCP port on 127.0.0.1 (20000-59999).
pick_port() {
  local p i
  for i in $(seq 1 50); do
    p=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
    if port_free "$p"; then echo "$p"; return 0; fi
  done
  die "no free TCP port found on 127.0.0.1"
}

# The default state folder of server NAME ($1: pg, ls, vllm) for this checkout:
# /tmp/driftlens-NAME-UID-HASH, HASH from the checkout's real path. Keyed by the checkout,
# because two checkouts on one machine shared /tmp/driftlens-NAME-UID, so one's --stop
# stopped the servers the other's tests were using. The caches (~/.cache/driftlens/...)
# stay shared: they are filled under lock_cache. DRIFTLENS_*_STATE overrides it (e.g. the
# old /tmp/driftlens-NAME-UID, to reach a server started before this change).
checkout_state_dir() {
  local root digest
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
  if command -v sha256sum >/dev/null 2>&1; then
    digest="$(printf '%s' "$root" | sha256sum | cut -c1-12)"
  else
    digest="$(printf '%s' "$root" | cksum | cut -d' ' -f1)"
  fi
  echo "/tmp/driftlens-$1-$(id -u)-$digest"
}

# Hold the server's lock (${STATE_DIR}.lock) until the script exits: one start, stop or
# status at a time. Several checkouts and test runs share these servers; two starts racing
# on one state folder stopped each other's server, and a --status during a start saw no
# server, so that run later stopped the server the other one was using. A server started
# under the lock must not inherit its descriptor (start it with 9>&-), or the lock would
# live as long as the server.
lock_state() {
  command -v flock >/dev/null 2>&1 || return 0
  exec 9>"${STATE_DIR%/}.lock"
  flock -w 900 9 || die "${STATE_DIR%/}.lock: another start or stop still runs after 15 minutes"
}

# Hold a lock on a shared cache folder ($1: the folder; fd 8) while it is filled: two
# checkouts starting vllm.sh at once read a tokenizer the other was still converting.
# Released with unlock_cache. The cache is shared by every checkout; the lock sits beside it.
lock_cache() {
  command -v flock >/dev/null 2>&1 || return 0
  mkdir -p "$(dirname "$1")"
  exec 8>"${1%/}.lock"
  flock -n 8 && return 0
  log "waiting for ${1%/}.lock (another checkout fills the cache)"
  flock -w 3600 8 || die "${1%/}.lock: the cache is still being filled after an hour"
}
unlock_cache() { exec 8>&-; }

# Start-up waits that scale with what the server reports, not a fixed number: wait while
# its log still grows (imports, migrations, weight loading go slower on a loaded machine),
# give up after $1 s without a new byte, or $2 s in all. Call startup_clock IDLE CAP once,
# then `still_starting PATH...` in the wait loop (files or folders: Label Studio's
# migrations print nothing for minutes at load 12, but its database grows).
startup_clock() { _SU_IDLE=$1; _SU_CAP=$2; _SU_START=$SECONDS; _SU_LAST=$SECONDS; _SU_SIZE=-1; }
still_starting() {
  local size=0 f
  for f in "$@"; do
    if [ -d "$f" ]; then
      size=$((size + $(du -sb "$f" 2>/dev/null | cut -f1)))
    elif [ -f "$f" ]; then
      size=$((size + $(wc -c <"$f")))
    fi
  done
  if [ "$size" != "$_SU_SIZE" ]; then _SU_SIZE=$size; _SU_LAST=$SECONDS; fi
  [ $((SECONDS - _SU_LAST)) -lt "$_SU_IDLE" ] && [ $((SECONDS - _SU_START)) -lt "$_SU_CAP" ]
}

# The state of a started server, $STATE_DIR/env (NAME=value lines): write_state keeps
# its arguments there (readable by this user only); load_state reads them into the shell
# and is false when there is none; nothing_to_stop says so when there is none (and is
# true then).
write_state() {
  mkdir -p "$STATE_DIR"
  ( umask 077; printf '%s\n' "$@" >"$STATE_DIR/env" )
}
load_state() {
  [ -f "$STATE_DIR/env" ] || return 1
  # shellcheck disable=SC1091
  . "$STATE_DIR/env"
}
nothing_to_stop() {
  load_state && return 1
  log "nothing to stop ($STATE_DIR/env not found)"
}

# The start-up clock ran out: show the end of the server's log ($1), stop what was
# started, and fail with "$2 for IDLE s, or CAP s in all".
gave_up_starting() {
  tail -n 30 "$1" >&2 || true
  stop >/dev/null 2>&1 || true
  die "$2 for $_SU_IDLE s, or $_SU_CAP s in all"
}

# Start the server unless it already runs (then say where, and print export_line); the
# state of one that is gone is stopped and removed first.
start_unless_running() {
  if running; then
    log "already running $(where)"
    export_line
    return 0
  fi
  [ -d "$STATE_DIR" ] && stop >/dev/null 2>&1 || true
  start
}

# The command line of a server script: start (default), --stop, --status, --help. The
# script defines start, stop, running, where (where a running server listens) and
# export_line (what --status prints).
main() {
  case "${1:-}" in
    "" | --start) lock_state; start_unless_running ;;
    --stop) lock_state; stop ;;
    --status)
      lock_state
      if running; then export_line; else exit 1; fi
      ;;
    -h | --help) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p;}' "$0" ;;
    *) die "unknown option $1 (use --stop, --status or nothing)" ;;
  esac
}

# Install Debian packages (root only). The package lists are refreshed only when no
# refresh happened in the last hour, so the scripts of one test run share one update.
apt_install() {
  [ "$(id -u)" = 0 ] || die "installing $* needs root (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  local stamp=/tmp/driftlens-apt-updated  # apt leaves its lists untouched when nothing changed
  if [ -z "$(find "$stamp" -mmin -60 2>/dev/null)" ]; then
    apt-get update -qq >&2
    touch "$stamp"
  fi
  apt-get install -y -qq "$@" >&2
}
