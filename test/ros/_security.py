"""Shared by the DDS security tests: one keystore per robot per session, the installed OMG schemas, skips."""

import importlib.util
import os
from pathlib import Path

import pytest
from simdist_ros.keystore import KeystoreConfig, create_keystore

REQUIRE = os.environ.get("SIMDIST_REQUIRE_DDS_SECURITY") == "1"
"""Set by the Docker build: a check that would skip here (no plugins, no schemas) fails there instead."""


def skip_or_fail(reason: str) -> None:
    """Skip with ``reason``, or fail with it where the environment promises DDS security (Docker build)."""
    if REQUIRE:
        pytest.fail(f"SIMDIST_REQUIRE_DDS_SECURITY=1 but {reason}")
    pytest.skip(reason)


def installed_schemas() -> tuple[Path, Path] | None:
    """(governance.xsd, permissions.xsd) of the OMG DDS-Security 1.1 schemas a ROS 2 install ships with sros2.

    Not vendored in this repository: their licence terms are unclear, so the tests here check the structure
    with explicit assertions and validate against the schema files only where ROS installed them.
    """
    spec = importlib.util.find_spec("sros2")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "policy" / "schemas" / "dds"
    files = (folder / "governance.xsd", folder / "permissions.xsd")
    return files if all(f.is_file() for f in files) else None


def make_keystore(root: Path, robot: str, mode: str = "both") -> Path:
    """A keystore for ``robot`` on this session's ROS_DOMAIN_ID (set by test/conftest.py)."""
    path = root / f"{robot}_{mode}"
    create_keystore(KeystoreConfig(path=path, robot=robot, mode=mode,
                                   domain_id=int(os.environ.get("ROS_DOMAIN_ID") or 0), valid_days=30))
    return path
