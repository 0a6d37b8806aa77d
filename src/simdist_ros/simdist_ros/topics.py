"""Topic names of the SimDist graph, relative so that namespaces work (one robot per namespace).

Drivers (real or simulated) publish the sensor topics and consume ``COMMAND``; the rest of the graph
never knows which driver is running. Message types are standard ones only (no rosidl here).
"""

# Sensors (driver -> encoder, replay buffer, recorder). QoS: qos.SENSOR.
JOINT_STATES = "joint_states"  # sensor_msgs/JointState, MuJoCo joint order, absolute rad / rad/s / N m
IMU = "imu"  # sensor_msgs/Imu (orientation, angular velocity, linear acceleration) in the base frame
ODOM = "odom"  # nav_msgs/Odometry. Go2: estimated pose, twist in the base frame. UR5e: tool-tip pose (base frame)
HEIGHT_MAP = "height_map"  # sensor_msgs/Image 32FC1, rows x cols of the robot spec, metres, frame base_yaw
CAMERA_IMAGE = "camera/image_raw"  # sensor_msgs/Image rgb8 (UR5e), frame camera_optical_frame
WRENCH = "wrench"  # geometry_msgs/WrenchStamped at the UR5e tool flange
FOOT_CONTACTS = "foot_contacts"  # std_msgs/Float64MultiArray, contact force norms per foot (Go2)
TASK_COMMAND = "cmd_vel"  # geometry_msgs/Twist velocity command (Go2)
FIXTURE_POSE = "fixture_pose"  # geometry_msgs/PoseStamped registered fixture (hole) pose, base frame (UR5e command)
CLOCK = "/clock"  # rosgraph_msgs/Clock from the simulated robot (absolute: one clock per graph)

# Episodes (simulated robot -> encoder, replay buffer, recorder). QoS: qos.EPISODE_START.
EPISODE_START = "episode_start"  # std_msgs/Header: stamp = first observation of the new episode, frame_id = reason
EPISODE_RESULT = "episode_result"  # std_msgs/String JSON: how a simulated episode ended (qos.EPISODE_RESULT)

# Control. QoS: qos.COMMAND.
COMMAND = "joint_command"  # std_msgs/Float64MultiArray, normalised action in [-1, 1]^A (forward-command style)
EXECUTED_COMMAND = "executed_command"  # std_msgs/Float64MultiArray, the action the driver actually applied

# Learning stack.
LATENT = "latent"  # std_msgs/Float32MultiArray: layout dim0 = "stamp" carries obs time (see simdist_ros.msgs)
OBSERVATION = "observation"  # std_msgs/Float32MultiArray: what the encoder encoded + the action before it (msgs)
PLAN = "plan"  # trajectory_msgs/JointTrajectory, the MPPI mean (Go2: joint targets rad; UR5e: normalised steps)
PREDICTED_ROLLOUT = "predicted_rollout"  # visualization_msgs/MarkerArray: plan + sampled rollouts (probe head)
DIAGNOSTICS = "/diagnostics"  # diagnostic_msgs/DiagnosticArray
CHUNK_READY = "replay/chunk_ready"  # std_msgs/String JSON, transient-local (qos.ANNOUNCE)
MODEL_UPDATE = "model/update"  # std_msgs/String JSON, transient-local (qos.ANNOUNCE)
ESTOP = "estop"  # std_msgs/Bool, latched damping until reset (drivers)

# Visualisation (drivers, see simdist_ros.robot_tf).
TF = "/tf"  # tf2_msgs/TFMessage: joint frames, odom -> base_link (absolute, as tf2 listeners expect)
TF_STATIC = "/tf_static"  # tf2_msgs/TFMessage, transient-local: fixed frames
ROBOT_DESCRIPTION = "robot_description"  # std_msgs/String URDF, transient-local
