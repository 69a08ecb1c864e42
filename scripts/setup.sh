#!/usr/bin/env bash
# Create ./.venv (if needed) and install the workbench into it, editable, with the
# compiled core rebuilt so a changed .pyx never runs stale. Usage: scripts/setup.sh [extras]
#
# Installs go through uv (itself installed from PyPI with pip) because it downloads in
# parallel: a fresh install takes well under a minute instead of more than two. Set
# DRIFTLENS_USE_PIP=1 to use plain pip instead.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
spec="."
[ -n "$extras" ] && spec=".[${extras}]"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
pip_install() { .venv/bin/python -m pip install -q --disable-pip-version-check "$@"; }
if [ "${DRIFTLENS_USE_PIP:-0}" = 1 ]; then
  install() { pip_install "$@"; }
else
  # --compile-bytecode: uv leaves it out by default, and with PYTHONDONTWRITEBYTECODE set
  # (as on the team machine) every process then compiled pandas and scipy from source:
  # about 3 s of CPU per CLI command.
  install() { .venv/bin/uv pip install -q --compile-bytecode --python .venv/bin/python "$@"; }
fi
# The editable install rebuilds the whole compiled core in a temporary folder every time
# (about 20 s of CPU, minutes on a loaded machine), so it is skipped when this checkout is
# already installed with the same metadata and extras; build_ext below rebuilds what changed.
stamp="$(pwd) [$extras] $(cat pyproject.toml setup.py | "$PY" -c 'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest()[:16])')"
installed() {
  [ "$(cat .venv/.driftlens-installed 2>/dev/null || true)" = "$stamp" ] && [ -x .venv/bin/driftlens ]
}
# Install output is kept quiet and shown only when something fails.
if ! { { [ "${DRIFTLENS_USE_PIP:-0}" = 1 ] || [ -x .venv/bin/uv ] || pip_install uv; } \
       && install "setuptools>=75" wheel "Cython>=3.0" "numpy>=2.0" \
       && { installed || { rm -f .venv/.driftlens-installed \
                           && install --no-build-isolation -e "$spec" \
                           && echo "$stamp" >.venv/.driftlens-installed; }; } \
       && .venv/bin/python setup.py -q build_ext --inplace \
       && rm -rf driftlens_workbench.egg-info; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "setup failed (see above)" >&2
  exit 1
fi
# (build_ext above: pip/uv install -e does not rebuild an extension when only its .pyx changed.
# The editable build leaves driftlens_workbench.egg-info in this folder; it is removed because
# Python run from here finds it before the installed metadata, and a stale copy hides the
# instruments' entry points: driftlens_plugins/registry.py.)
