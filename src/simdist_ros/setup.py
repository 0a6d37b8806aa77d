"""ament_python package: SimDist ROS 2 nodes (thin adapters over simdist_core)."""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = "simdist_ros"

# Entry points: one line per node, `<executable> = simdist_ros.<role>_node:main`.
NODES = [
    "sim_robot_node",
    "encoder_node",
    "planner_node",
    "replay_buffer_node",
    "finetuner_node",
    "recorder_node",
]

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/config", glob("config/*")),
        (f"share/{PACKAGE}/launch", glob("launch/*.launch.py")),
    ],
    package_data={PACKAGE: ["graphs/*.yaml"]},
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="SimDist maintainers",
    maintainer_email="maintainers@simdist.dev",
    description="SimDist ROS 2 nodes",
    license="Apache-2.0",
    entry_points={"console_scripts": [f"{n} = {PACKAGE}.{n}:main" for n in NODES]},
)
