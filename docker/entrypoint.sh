#!/usr/bin/env bash
# Source ROS and the SimDist workspace, put the pinned venv first on PATH, then run the command.
set -eo pipefail
# shellcheck disable=SC1090
source "/opt/ros/${ROS_DISTRO}/setup.bash"
# shellcheck disable=SC1091
source /opt/simdist/install/setup.bash
export PATH="${SIMDIST_VENV:-/opt/simdist/.venv}/bin:${PATH}"
exec "$@"
