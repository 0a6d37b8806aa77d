"""What both starters add to a graph's nodes before starting them: DDS security and the discovery range.

``security:=true`` (launch argument): every node runs in its enclave ``/simdist/<node>`` of ``keystore``
(made by ``simdist security init``) with ``ROS_SECURITY_ENABLE=true`` and ``ROS_SECURITY_STRATEGY=Enforce``,
so a node without a valid identity and signed permissions cannot join the domain and no node can publish,
subscribe, serve or call beyond its grant. Before anything starts, the keystore is checked for every
node's enclave and loaded once in a probe process with this machine's DDS: the pip wheels' Fast DDS is
built without the security plugins, and there the launch stops with a one-line reason instead of nodes
failing one by one.

Discovery range: the simulated graph needs no other machine, so unless the user chose a range
(``ROS_AUTOMATIC_DISCOVERY_RANGE`` or the older ``ROS_LOCALHOST_ONLY``), ``sim:=true`` keeps discovery on
this host (``LOCALHOST``). The real graph keeps ROS's default (the subnet): a robot PC may serve a monitor.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from simdist_ros.access_policy import OPERATOR, enclave_name
from simdist_ros.graph import GraphError, ProcessSpec

ENCLAVE_FILES = ("cert.pem", "key.pem", "identity_ca.cert.pem", "permissions_ca.cert.pem", "governance.p7s",
                 "permissions.p7s")
"""What rcl hands to the DDS security plugins from ``<keystore>/enclaves/<enclave>/``."""
NO_PLUGINS = ("this Fast DDS was built without the DDS security plugins (the pip wheels are): security:=true "
              "needs a ROS 2 install built with them, e.g. the Docker image (docker/README.md)")
_PROBE = """
import rclpy
from rclpy.node import Node
from rclpy.parameter import Parameter
rclpy.init()
# Only a /parameter_events writer, which the operator's grant allows: the probe tests that the keystore
# loads (identity chain, signed governance and permissions), not a node's grant.
node = Node("security_probe", start_parameter_services=False, enable_rosout=False,
            parameter_overrides=[Parameter("start_type_description_service", value=False)])
node.destroy_node()
rclpy.shutdown()
"""


class SecurityError(GraphError):
    """``security:=true`` cannot be honoured; the one-line message says why and what to do."""


@dataclass(frozen=True, kw_only=True)
class SecurePlan:
    """The nodes as they will start, and the environment variables added for all of them."""

    nodes: list[ProcessSpec]
    """Nodes, with ``--enclave`` arguments when security is on."""
    env: dict[str, str]
    """Variables to add to the nodes' environment."""


def security_environment(keystore: Path) -> dict[str, str]:
    """The variables rcl reads: keystore, security on, and refuse to run without it (``Enforce``)."""
    return {"ROS_SECURITY_KEYSTORE": str(keystore), "ROS_SECURITY_ENABLE": "true",
            "ROS_SECURITY_STRATEGY": "Enforce"}


def with_enclaves(nodes: Sequence[ProcessSpec]) -> list[ProcessSpec]:
    """Each node with ``--ros-args --enclave /simdist/<node> --`` in front of its own arguments.

    A separate ``--ros-args`` section, closed by ``--``, so it composes with whatever ROS arguments the
    starter adds after it (``ros2 launch`` and ``simdist launch`` both add their own section).
    """
    return [dataclasses.replace(n, arguments=("--ros-args", "--enclave", enclave_name(n.name), "--", *n.arguments))
            for n in nodes]


def check_keystore(keystore: Path, nodes: Sequence[ProcessSpec]) -> None:
    """Every node has a complete enclave in ``keystore``, and none is an external tool.

    Raises:
        SecurityError: naming the nodes without an enclave and the command that makes them.
    """
    external = [n.name for n in nodes if n.external]
    if external:
        raise SecurityError(f"{external} are external tools with no enclave in the SimDist access policy: launch "
                            "them with false (e.g. rviz:=false) and watch from a monitoring machine")
    missing = [n.name for n in nodes
               if not all((keystore / "enclaves" / enclave_name(n.name).lstrip("/") / f).is_file()
                          for f in ENCLAVE_FILES)]
    if missing:
        raise SecurityError(f"keystore {keystore} has no complete enclave for {missing}: create it with "
                            "`simdist security init <robot> --keystore <folder>`")


def security_probe(keystore: Path, environ: Mapping[str, str], timeout_s: float = 120.0) -> str | None:
    """Load ``keystore`` (the operator's enclave) in a fresh rclpy process with security enforced.

    Returns:
        None if it loads; otherwise a one-line reason (:data:`NO_PLUGINS` where the DDS has no plugins).
    """
    env = {k: v for k, v in environ.items() if k != "ROS_SECURITY_ENCLAVE_OVERRIDE"}
    env.update(security_environment(keystore))
    cmd = [sys.executable, "-c", _PROBE, "--ros-args", "--enclave", enclave_name(OPERATOR)]
    try:
        result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return f"the keystore probe did not finish within {timeout_s:g} s"
    if result.returncode == 0:
        return None
    output = result.stderr + result.stdout
    if "security libraries" in output:  # rmw_fastrtps: "This Fast DDS version doesn't have the security libraries"
        return NO_PLUGINS
    last = next((line.strip() for line in reversed(output.splitlines()) if line.strip()), "no output")
    return f"keystore {keystore} did not load with security enforced: {last}"


def _true(values: Mapping[str, str], name: str) -> bool:
    return str(values.get(name, "false")).lower() in ("true", "1", "yes", "on")


def secure_plan(values: Mapping[str, str], nodes: Sequence[ProcessSpec], environ: Mapping[str, str]) -> SecurePlan:
    """The nodes and added environment for these launch-argument values (see the module docstring).

    Args:
        values: every launch argument's value (defaults included).
        nodes: the nodes that will start.
        environ: the environment the nodes would get otherwise (a range the user set there is kept).

    Raises:
        SecurityError: ``security:=true`` and the keystore is incomplete or does not load here.
    """
    env: dict[str, str] = {}
    if _true(values, "sim") and not {"ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_LOCALHOST_ONLY"} & set(environ):
        env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    if not _true(values, "security"):
        return SecurePlan(nodes=list(nodes), env=env)
    keystore = Path(values.get("keystore") or "keystore").expanduser().absolute()
    check_keystore(keystore, nodes)
    reason = security_probe(keystore, {**environ, **env})
    if reason is not None:
        raise SecurityError(reason)
    return SecurePlan(nodes=with_enclaves(nodes), env={**env, **security_environment(keystore)})
