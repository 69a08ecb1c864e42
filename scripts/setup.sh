#!/usr/bin/env bash
# Create ./.venv (if needed) and install the workbench into it, editable, with the
# compiled core rebuilt so a changed .pyx never runs stale. Usage: scripts/setup.sh [extras]
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip setuptools wheel "Cython>=3.0" "numpy>=2.0"
spec="."
[ -n "$extras" ] && spec=".[${extras}]"
.venv/bin/python -m pip install -q --disable-pip-version-check --no-build-isolation -e "$spec"
# pip install -e does not rebuild extensions when only a .pyx changed; this does.
.venv/bin/python setup.py -q build_ext --inplace >/dev/null
