"""The ROS packages build with colcon as ament_python packages, laid out as on a full ROS 2 install.

``simdist_core`` is a plain pip package (installed by scripts/setup_env.sh, also in Docker), so the
colcon workspace holds the three ament_python packages and ``colcon.meta``.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("simdist_ros", "go2_bringup", "ur5e_bringup")
COLCON = Path(sys.executable).with_name("colcon")


@pytest.mark.timeout(300)
def test_colcon_builds_the_workspace_with_the_ros_layout(tmp_path):
    if not COLCON.exists():
        pytest.fail(f"colcon is not installed next to {sys.executable}: run scripts/setup_env.sh")
    for pkg in PACKAGES:
        shutil.copytree(REPO / "src" / pkg, tmp_path / "src" / pkg,
                        ignore=shutil.ignore_patterns("*.egg-info", "__pycache__", "build"))
    shutil.copy(REPO / "colcon.meta", tmp_path / "colcon.meta")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}

    listing = subprocess.run([str(COLCON), "list"], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=120, check=True).stdout
    for pkg in PACKAGES:
        # Without catkin_pkg, or with a package.xml it rejects, colcon silently falls back to plain `python`.
        assert f"{pkg}\tsrc/{pkg}\t(ros.ament_python)" in listing, listing

    build = subprocess.run([str(COLCON), "--log-base", "log", "build", "--metas", "colcon.meta"], cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=280)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]

    install = tmp_path / "install"
    for robot in ("go2", "ur5e"):
        share = install / f"{robot}_bringup" / "share" / f"{robot}_bringup"
        assert (share / "launch" / "simdist.launch.py").is_file()
        assert (share / "config" / f"{robot}.yaml").is_file()
        assert (share / "rviz" / f"{robot}.rviz").is_file()
        assert (install / f"{robot}_bringup" / "share" / "ament_index" / "resource_index" / "packages"
                / f"{robot}_bringup").is_file()
    for name in ("record.launch.py", "sim_robot.launch.py"):  # `ros2 launch simdist_ros <name>`
        assert (install / "simdist_ros" / "share" / "simdist_ros" / "launch" / name).is_file()
    executables = {p.name for p in (install / "simdist_ros" / "lib" / "simdist_ros").iterdir()}
    assert {"sim_robot_node", "encoder_node", "planner_node", "replay_buffer_node", "finetuner_node",
            "recorder_node"} <= executables
    graphs = list(install.glob("simdist_ros/lib/python3*/site-packages/simdist_ros/graphs/*.yaml"))
    assert {g.name for g in graphs} == {"go2.yaml", "ur5e.yaml"}

    # ament_index finds the installed share folders once AMENT_PREFIX_PATH is set (as `source setup.bash` does).
    prefix = os.pathsep.join(str(install / pkg) for pkg in PACKAGES)
    probe = subprocess.run(
        [sys.executable, "-c", "from ament_index_python.packages import get_package_share_directory as g;"
         "print(g('go2_bringup'))"],
        env={**env, "AMENT_PREFIX_PATH": prefix}, capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, probe.stderr[-2000:]
    assert probe.stdout.strip() == str(install / "go2_bringup" / "share" / "go2_bringup")
