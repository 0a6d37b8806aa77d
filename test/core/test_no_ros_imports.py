"""simdist_core must never import ROS: every module imports with rclpy and messages hidden."""

import pkgutil
import subprocess
import sys

import simdist_core

_SCRIPT = r"""
import importlib, pkgutil, sys
BLOCKED = ("rclpy", "std_msgs", "sensor_msgs", "geometry_msgs", "nav_msgs", "trajectory_msgs",
           "visualization_msgs", "diagnostic_msgs", "rosgraph_msgs", "builtin_interfaces")
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"ROS import {name!r} from simdist_core")
sys.meta_path.insert(0, Block())
import simdist_core
for info in pkgutil.walk_packages(simdist_core.__path__, "simdist_core."):
    importlib.import_module(info.name)
print("imported", len(list(pkgutil.walk_packages(simdist_core.__path__))))
"""


def test_core_imports_without_ros():
    modules = list(pkgutil.walk_packages(simdist_core.__path__, "simdist_core."))
    assert modules, "simdist_core has no modules?"
    result = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"a core module imports ROS or fails to import:\n{result.stderr[-3000:]}"
