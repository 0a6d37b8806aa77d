"""SimDist core: world model, planner, simulation, data, training. Never imports ROS."""

__version__ = "0.1.0"
