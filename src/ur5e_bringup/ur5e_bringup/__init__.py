"""UR5e bringup: driver and helpers."""
