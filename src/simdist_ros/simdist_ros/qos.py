"""QoS by role, used by both ends of every topic (a mismatch silently drops messages)."""

from rclpy.duration import Duration
from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    QoSProfile,
    ReliabilityPolicy,
    qos_profile_sensor_data,
)

SENSOR = qos_profile_sensor_data
"""Best-effort, keep-last 5: a late sensor sample is worth less than the next one."""


def command(control_hz: float) -> QoSProfile:
    """Reliable keep-last-1 with a deadline of two ticks: a missed deadline is a diagnostics event."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=1,
        reliability=ReliabilityPolicy.RELIABLE,
        deadline=Duration(seconds=2.0 / control_hz),
    )


def executed(control_hz: float) -> QoSProfile:
    """``executed_command``: reliable with a two-tick deadline like ``command``, but keep-last 2 s of ticks.

    It is the record of what the robot did, and the replay buffer, the recorder and bag conversion need
    every sample (a step without it is dropped). A reliable writer with depth 1 overwrites a sample a
    slow reader has not acknowledged yet (the likely cause of a recorder test that once kept 29 of 60).
    Readers keep their own profiles; history depth does not affect QoS compatibility.
    """
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=max(1, int(round(2.0 * control_hz))),
        reliability=ReliabilityPolicy.RELIABLE,
        deadline=Duration(seconds=2.0 / control_hz),
    )


OBSERVATION = executed
"""``observation`` (encoder -> replay buffer): every sample is training data, so the contract of
``executed_command``: reliable, two-tick deadline, the writer keeps 2 s of samples for a slow reader."""

DRIVER_COMMAND = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE)
"""What a robot (driver or simulated) requests on ``joint_command``: reliable, newest only, NO deadline.

A subscription that requests a deadline refuses every publisher that offers none, which a publisher with
default QoS does not (DDS calls the pair incompatible and delivers nothing): a teleop tool or
``ros2 topic pub`` was silently ignored. The planner still offers its two-tick deadline and counts its own
misses; the driver's watchdog on command age is what protects the robot. A best-effort publisher stays
incompatible (a reliable reader cannot take it); drivers count and log that.
"""

LATENT = command
"""The latent stream has the same contract as commands: newest only, two-tick deadline."""

ANNOUNCE = QoSProfile(
    history=HistoryPolicy.KEEP_LAST,
    depth=1,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
"""Chunk-ready and model-update announcements: a late joiner still gets the latest one."""

EPISODE_START = QoSProfile(
    history=HistoryPolicy.KEEP_LAST,
    depth=5,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
"""``episode_start`` reset announcements (simdist_core.data.episodes).

Reliable: a lost announcement would merge two episodes wherever the jump rule does not catch the reset
(a reset pose close to the last one). Keep-last 5, not 1: resets can come a few ticks apart (a robot that
falls at once), and a reader that is a few ticks behind must still get each one. Transient-local: a node
that joins late (or restarts) gets the latest announcements; a past one is harmless, it only splits.
"""

EPISODE_RESULT = QoSProfile(
    history=HistoryPolicy.KEEP_LAST,
    depth=100,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
"""``episode_result``: the simulator's own verdict on each finished episode (benchmarks, evaluation scripts).
Reliable and transient-local with 100 kept: an evaluator counting episodes must see every one, including
the short ones a fall ends a second apart, and one that joins late still gets the recent ones.
"""

RELIABLE = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10, reliability=ReliabilityPolicy.RELIABLE)
"""Visualisation, plans, diagnostics: reliable, small queue."""
