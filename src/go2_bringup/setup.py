"""ament_python package: go2 bringup (launch, config, RViz, hardware driver)."""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = "go2_bringup"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml")),
        (f"share/{PACKAGE}/rviz", glob("rviz/*.rviz")),
    ],
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="SimDist maintainers",
    maintainer_email="maintainers@simdist.dev",
    description="go2 bringup for SimDist",
    license="Apache-2.0",
    entry_points={"console_scripts": [
        "go2_driver_node = go2_bringup.go2_driver_node:main",
        "height_map_node = go2_bringup.height_map_node:main",
    ]},
)
