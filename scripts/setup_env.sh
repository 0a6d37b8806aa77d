#!/usr/bin/env bash
# Create or reuse .venv/ in the repo root and install SimDist with pinned dependencies.
# Idempotent: a stamp file holds the hash of the requirement files, so a second run is fast.
# Shared by the README commands, .ci/run and docker/ (one install recipe, no drift).
#
# Environment knobs (defaults suit a plain Debian/Python 3.11 machine with no ROS installed):
#   SIMDIST_VENV=PATH               where the virtualenv lives (default: <repo>/.venv)
#   SIMDIST_SYSTEM_ROS=1            a full ROS 2 install is sourced: the venv sees system packages and
#                                   the ros-* PyPI wheels are skipped (Docker, robot PCs)
#   SIMDIST_TORCH_INDEX_URL=URL     install the pinned torch from this index first (e.g. a CUDA build)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${SIMDIST_PYTHON:-python3}"
VENV="${SIMDIST_VENV:-$ROOT/.venv}"
SYSTEM_ROS="${SIMDIST_SYSTEM_ROS:-0}"
VENV_ARGS=()
[ "$SYSTEM_ROS" = 1 ] && VENV_ARGS+=(--system-site-packages)
[ -x "$VENV/bin/python" ] || "$PY" -m venv "${VENV_ARGS[@]}" "$VENV"
stamp="$VENV/.simdist-deps"
want="$( { cat requirements/*.txt src/*/setup.py src/simdist_core/pyproject.toml
           echo "$SYSTEM_ROS ${SIMDIST_TORCH_INDEX_URL:-}"; } 2>/dev/null | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "[setup] installing pinned dependencies into $VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  if [ -n "${SIMDIST_TORCH_INDEX_URL:-}" ]; then
    # The pin (torch==2.13.0) is then satisfied by the +cuXXX build installed here.
    "$VENV/bin/python" -m pip install -q --index-url "$SIMDIST_TORCH_INDEX_URL" "$(grep '^torch==' requirements/base.txt)"
  fi
  ros_req=requirements/ros.txt
  if [ "$SYSTEM_ROS" = 1 ]; then
    ros_req="$VENV/ros-no-wheels.txt"
    grep -v '^ros-' requirements/ros.txt > "$ros_req"
  fi
  "$VENV/bin/python" -m pip install -q -r requirements/base.txt -r "$ros_req" \
      -r requirements/robots.txt -r requirements/dev.txt
  "$VENV/bin/python" -m pip install -q --no-deps -r requirements/nodeps.txt
  "$VENV/bin/python" -m pip install -q --no-deps -e src/simdist_core -e src/simdist_ros \
      -e src/go2_bringup -e src/ur5e_bringup
  echo "$want" > "$stamp"
fi
# tf2_msgs has no wheel: build it from the installed rosidl generators (a few seconds, skipped once it imports).
# Not fatal: without it the nodes publish no /tf and RViz shows markers only in their own frames.
if "$VENV/bin/python" scripts/gen_tf2_msgs.py > "$VENV/gen_tf2_msgs.log" 2>&1; then
  tail -n 1 "$VENV/gen_tf2_msgs.log"
else
  echo "[setup] WARNING: tf2_msgs could not be built, nodes will publish no /tf; details in $VENV/gen_tf2_msgs.log"
fi
echo "[setup] ready: $VENV/bin/simdist"
