#!/usr/bin/env bash
# First README command: set up, then run the main job on the embedded default
# (SQLite workspace, built-in simulator, no keys, no network).
set -euo pipefail
cd "$(dirname "$0")/.."
# Keep compiled bytecode (a machine may set PYTHONDONTWRITEBYTECODE=1, and uv installs none):
# the demo's own processes then compile each module once. docs/performance.md, "Bytecode".
unset PYTHONDONTWRITEBYTECODE
scripts/setup.sh
exec .venv/bin/driftlens demo "$@"
