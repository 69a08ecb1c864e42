#!/usr/bin/env bash
# First README command: set up, then run the main job on the embedded default
# (SQLite workspace, built-in simulator, no keys, no network).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/driftlens demo "$@"
