"""Shared pytest settings: headless MuJoCo and a private ROS domain per test session."""

import os

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
# A private DDS domain per test process so parallel runs on one machine never cross-talk.
os.environ.setdefault("ROS_DOMAIN_ID", str(100 + os.getpid() % 100))
