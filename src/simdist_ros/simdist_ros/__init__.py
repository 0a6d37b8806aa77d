"""SimDist ROS 2 nodes."""
