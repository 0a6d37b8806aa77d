#!/usr/bin/env bash
# Create or reuse .venv/ in the repo root and install SimDist with pinned dependencies.
# Idempotent: a stamp file holds the hash of the requirement files, so a second run is fast.
# Shared by the README commands, .ci/run and docker/ (one install recipe, no drift).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${SIMDIST_PYTHON:-python3}"
VENV="${SIMDIST_VENV:-$ROOT/.venv}"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
stamp="$VENV/.simdist-deps"
want="$(cat requirements/*.txt src/*/setup.py src/simdist_core/pyproject.toml 2>/dev/null | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "[setup] installing pinned dependencies into $VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -r requirements/base.txt -r requirements/ros.txt \
      -r requirements/robots.txt -r requirements/dev.txt
  "$VENV/bin/python" -m pip install -q --no-deps -r requirements/nodeps.txt
  "$VENV/bin/python" -m pip install -q --no-deps -e src/simdist_core -e src/simdist_ros \
      -e src/go2_bringup -e src/ur5e_bringup
  echo "$want" > "$stamp"
fi
echo "[setup] ready: $VENV/bin/simdist"
