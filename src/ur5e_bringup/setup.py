"""ament_python package: ur5e bringup (launch, config, RViz, hardware driver)."""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = "ur5e_bringup"

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
    description="ur5e bringup for SimDist",
    license="Apache-2.0",
    entry_points={"console_scripts": [
        "ur5e_driver_node = ur5e_bringup.ur5e_driver_node:main",
        "camera_node = ur5e_bringup.camera_node:main",
    ]},
)
