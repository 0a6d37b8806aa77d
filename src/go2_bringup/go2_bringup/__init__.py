"""Unitree Go2 bringup: driver and helpers."""
