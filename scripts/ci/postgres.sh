#!/usr/bin/env bash
# Start (or stop) a throw-away PostgreSQL server on 127.0.0.1 for the test suite.
#
#   eval "$(scripts/ci/postgres.sh)"      # start; prints: export DRIFTLENS_TEST_PG_URL=...
#   scripts/ci/postgres.sh --stop          # stop it and delete its data
#   scripts/ci/postgres.sh --status        # print the URL if it is running, exit 1 if not
#
# Installs Debian's `postgresql` (apt-get, as root) when initdb/pg_ctl are missing. The
# cluster lives in a temporary folder, trusts local TCP connections only (listen on
# 127.0.0.1, no Unix socket), and runs as a non-root user (`postgres` when we are root,
# since PostgreSQL refuses to run as root). Only the export line goes to stdout; progress
# goes to stderr. Running it again while the server is up prints the same line.
#
# Environment: DRIFTLENS_PG_STATE (state folder, default one per checkout:
#              /tmp/driftlens-pg-$UID-<hash of the checkout's path>),
#              DRIFTLENS_PG_DB (database name, default driftlens_test),
#              DRIFTLENS_PG_IDLE_S / DRIFTLENS_PG_START_CAP_S (start-up: give up after
#              60 s without a new byte in its log or data folder, or 900 s in all).
set -euo pipefail

DB_NAME="${DRIFTLENS_PG_DB:-driftlens_test}"
PG_SUPERUSER="postgres"

LOG_NAME=postgres.sh
# shellcheck source=scripts/ci/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
STATE_DIR="${DRIFTLENS_PG_STATE:-$(checkout_state_dir pg)}"

find_bindir() {
  local d
  if command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then
    dirname "$(readlink -f "$(command -v pg_ctl)")"
    return 0
  fi
  # Debian installs the server binaries outside PATH.
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/pg_ctl" ] && [ -x "$d/initdb" ]; then
      echo "$d"
      return 0
    fi
  done
  return 1
}

install_postgres() {
  [ "$(id -u)" = 0 ] || die "initdb/pg_ctl not found and not root: install Debian's 'postgresql' package."
  log "installing Debian postgresql (apt-get)..."
  apt_install postgresql
}

# Wait until the server ($1 bindir, $2 data folder, $3 port, $4 log) accepts connections
# (its log says so; a connection attempt during start-up would log a FATAL line itself):
# as long as its log or data folder still grows (DRIFTLENS_PG_IDLE_S, default 60 s
# without progress; DRIFTLENS_PG_START_CAP_S, default 900 s in all). Fails at once when the
# postmaster has exited (a port taken meanwhile: the caller tries another).
wait_accepting() {
  local seen=0
  startup_clock "${DRIFTLENS_PG_IDLE_S:-60}" "${DRIFTLENS_PG_START_CAP_S:-900}"
  while still_starting "$4" "$2"; do
    if grep -q "ready to accept connections" "$4" 2>/dev/null; then return 0; fi
    if [ -f "$2/postmaster.pid" ]; then
      seen=1
    elif [ "$seen" = 1 ]; then
      return 1  # it started and exited (its log says why)
    fi
    sleep 0.5
  done
  return 1
}

# Run a command as the cluster owner.
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    if command -v runuser >/dev/null 2>&1; then
      runuser -u "$OWNER" -- "$@"
    else
      su "$OWNER" -s /bin/sh -c "$(printf '%q ' "$@")"
    fi
  else
    "$@"
  fi
}

pick_owner() {
  if [ "$(id -u)" != 0 ]; then
    OWNER="$(id -un)"
    return
  fi
  if id postgres >/dev/null 2>&1; then
    OWNER=postgres
  else
    OWNER=driftlens-pg
    id "$OWNER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /bin/sh "$OWNER"
  fi
}

url_for() { echo "postgresql+psycopg://${PG_SUPERUSER}@127.0.0.1:$1/${DB_NAME}"; }

export_line() { echo "export DRIFTLENS_TEST_PG_URL=$(url_for "$PG_PORT")"; }

running() {
  load_state || return 1
  [ -n "${PG_BINDIR:-}" ] && [ -d "${PG_DATA:-/nonexistent}" ] || return 1
  OWNER="$PG_OWNER"
  as_owner "$PG_BINDIR/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1
}

stop() {
  nothing_to_stop && return 0
  OWNER="$PG_OWNER"
  if as_owner "$PG_BINDIR/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1; then
    log "stopping server on port $PG_PORT"
    as_owner "$PG_BINDIR/pg_ctl" -D "$PG_DATA" -m fast -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$PG_ROOT" "$STATE_DIR"
  log "stopped and removed"
}

where() { echo "on port $PG_PORT"; }

start() {

  local bindir
  if ! bindir="$(find_bindir)"; then
    install_postgres
    bindir="$(find_bindir)" || die "postgresql installed but initdb/pg_ctl still not found"
  fi
  pick_owner

  local root data port attempt
  root="$(mktemp -d "${TMPDIR:-/tmp}/driftlens-pg.XXXXXX")"
  data="$root/data"
  chmod 755 "$root"
  [ "$(id -u)" = 0 ] && chown "$OWNER" "$root"
  log "initialising cluster in $data (owner $OWNER, $("$bindir/postgres" --version))"
  as_owner "$bindir/initdb" -D "$data" -U "$PG_SUPERUSER" --auth=trust --encoding=UTF8 \
    --locale=C.UTF-8 >"$root/initdb.log" 2>&1 ||
    as_owner "$bindir/initdb" -D "$data" -U "$PG_SUPERUSER" --auth=trust --encoding=UTF8 \
      --no-locale >"$root/initdb.log" 2>&1 ||
    { cat "$root/initdb.log" >&2; die "initdb failed"; }

  for attempt in 1 2 3 4 5; do
    port="$(pick_port)"
    # started without pg_ctl's fixed wait (-t 60 failed on a loaded machine while the
    # server was still recovering): wait while its log or data folder grows, as for
    # Label Studio and vLLM, and give up only when it stops without accepting connections
    as_owner "$bindir/pg_ctl" -D "$data" -l "$root/server.log" -W \
      -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
      start >/dev/null 2>&1 9>&- || true
    if wait_accepting "$bindir" "$data" "$port" "$root/server.log"; then
      break
    fi
    as_owner "$bindir/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
    log "start on port $port failed (attempt $attempt)"
    port=""
  done
  [ -n "$port" ] || { tail -n 20 "$root/server.log" >&2 || true; die "server did not start"; }

  write_state "PG_ROOT=$root" "PG_DATA=$data" "PG_BINDIR=$bindir" "PG_PORT=$port" \
    "PG_OWNER=$OWNER"
  as_owner "$bindir/createdb" -h 127.0.0.1 -p "$port" -U "$PG_SUPERUSER" "$DB_NAME" ||
    die "createdb $DB_NAME failed"
  log "running on 127.0.0.1:$port, database $DB_NAME"
  echo "export DRIFTLENS_TEST_PG_URL=$(url_for "$port")"
}

main "$@"
