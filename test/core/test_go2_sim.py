"""Go2 simulation: constants, kinematics, low-level PD, terrains, observations and the task registry."""

import math
import os

import mujoco
import numpy as np
import pytest
from simdist_core.experts.go2_kinematics import foot_fk, foot_ik
from simdist_core.robots import GO2
from simdist_core.sim.assets import go2_xml_path
from simdist_core.sim.base import make_env
from simdist_core.sim.go2_constants import (
    DEFAULT_POSE_RAD,
    JOINT_NAMES,
    MUJOCO_TO_SDK,
    SDK_JOINT_NAMES,
    SDK_TO_MUJOCO,
)
from simdist_core.sim.go2_obs import SENSOR_KEYS, proprio_from_sensors, quat_to_rotmat
from simdist_core.sim.go2_rewards import VALUE_FEATURE_NAMES
from simdist_core.sim.go2_tasks import GO2_TASKS

PRIVILEGED_KEYS = (
    "base_pos",
    "base_quat",
    "base_lin_vel_world",
    "joint_pos",
    "joint_vel",
    "foot_contacts",
    "probe",
    "value_features",
    "terrain_slope_deg",
    "domain_friction",
)


def test_sdk_permutation_both_ways():
    mujoco_values = np.arange(12) * 10.0
    sdk_values = mujoco_values[MUJOCO_TO_SDK]
    # SDK slot 0 is FR_hip, MuJoCo index 3 (MuJoCo legs FL, FR, RL, RR; SDK legs FR, FL, RR, RL).
    assert sdk_values[0] == 30.0 and SDK_JOINT_NAMES[0] == "FR_hip_joint"
    assert [JOINT_NAMES[i] for i in MUJOCO_TO_SDK] == list(SDK_JOINT_NAMES)
    np.testing.assert_array_equal(sdk_values[SDK_TO_MUJOCO], mujoco_values)
    np.testing.assert_array_equal(MUJOCO_TO_SDK[SDK_TO_MUJOCO], np.arange(12))
    np.testing.assert_array_equal(SDK_TO_MUJOCO[MUJOCO_TO_SDK], np.arange(12))


def test_model_path_prefers_menagerie_root(tmp_path, monkeypatch):
    (tmp_path / "unitree_go2").mkdir()
    os.symlink(go2_xml_path(), tmp_path / "unitree_go2" / "go2.xml")
    monkeypatch.setenv("MENAGERIE_ROOT", str(tmp_path))
    assert go2_xml_path() == tmp_path / "unitree_go2" / "go2.xml"


def test_ik_inverts_mujoco_forward_kinematics():
    env = make_env("go2/flat")
    m, d, sc = env.model, env.data, env.scene
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = DEFAULT_POSE_RAD + rng.uniform(-0.4, 0.4, 12)
        d.qpos[:] = 0.0
        d.qpos[3] = 1.0
        d.qpos[sc.qpos_adr] = q
        mujoco.mj_kinematics(m, d)
        feet = d.geom_xpos[sc.foot_geom_ids]  # base at the origin, unrotated: world = base frame
        np.testing.assert_allclose(foot_fk(q.reshape(4, 3)), feet, atol=1e-9)
        np.testing.assert_allclose(foot_ik(feet).ravel(), q, atol=1e-9)


def test_native_pd_matches_reference_torque():
    env = make_env("go2/flat")
    m, d, sc = env.model, env.data, env.scene
    action = np.linspace(-0.5, 0.5, 12)
    d.qvel[:] = 0.0
    d.ctrl[sc.actuator_ids] = env.low_level.targets(action)
    mujoco.mj_forward(m, d)
    q = d.qpos[sc.qpos_adr]
    expected = env.low_level.torque(env.low_level.targets(action), q, np.zeros(12))
    np.testing.assert_allclose(d.actuator_force[sc.actuator_ids], expected, atol=1e-9)
    np.testing.assert_allclose(env.low_level.action_from_targets(env.low_level.targets(action)), action, atol=1e-6)


def test_stands_under_pd_for_two_seconds():
    env = make_env("go2/flat")
    env.reset(seed=0)
    heights = []
    for _ in range(100):  # 2 s at 50 Hz, zero action = default pose targets
        result = env.step(np.zeros(12))
        heights.append(env.data.qpos[2])
        assert not result.terminated
    # Kp 25 sags ~5 cm below the 0.256 m rigid standing height without gravity offsets, but stays up.
    assert 0.17 < min(heights) and max(heights) < 0.31, (min(heights), max(heights))


@pytest.mark.parametrize("task", sorted(GO2_TASKS))
def test_registry_smoke(task):
    env = make_env(task)
    obs = env.reset(seed=1)
    rng = np.random.default_rng(0)
    for _ in range(5):
        result = env.step(rng.uniform(-0.3, 0.3, GO2.action_dim))
    for o in (obs, result.obs):
        assert o["proprio"].shape == (GO2.proprio_dim,) and o["proprio"].dtype == np.float32
        assert o["command"].shape == (GO2.command_dim,)
        assert o["height_map"].shape == GO2.height_map_shape
        assert all(np.all(np.isfinite(v)) for v in o.values())
    assert math.isfinite(result.reward) and result.reward == pytest.approx(sum(result.reward_terms.values()))
    priv = env.privileged_state()
    assert all(k in priv for k in PRIVILEGED_KEYS)
    assert priv["probe"].shape == (3,) and priv["value_features"].shape == (len(VALUE_FEATURE_NAMES),)
    assert set(env.sensors()) == set(SENSOR_KEYS)
    assert set(env.metrics()) >= {"forward_progress_m", "fell", "falls", "duration_s"}
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros(11))
    with pytest.raises(ValueError, match="finite"):
        env.step(np.full(12, np.nan))


def test_overrides_apply_and_bad_values_error():
    env = make_env("go2/ptfe_slope", {"terrain.friction": "0.07", "terrain.slope_deg": "12"})
    env.reset(seed=0)
    np.testing.assert_allclose(env.model.geom_friction[env.scene.foot_geom_ids, 0], 0.07)
    assert env.terrain_height(np.array(1.0), np.array(0.0)) == pytest.approx(math.tan(math.radians(12)))
    with pytest.raises(ValueError, match="friction"):
        make_env("go2/flat", {"terrain.friction": "-1"})
    with pytest.raises(ValueError, match="valid keys"):
        make_env("go2/flat", {"terrain.fricton": "0.5"})
    with pytest.raises(ValueError, match="not a valid float"):
        make_env("go2/flat", {"terrain.slope_deg": "steep"})
    with pytest.raises(KeyError, match="go2/flat"):
        make_env("go2/ice")


def test_slope_collides_where_the_height_query_says():
    """Regression: a rotated world-body plane kept colliding as if flat; the slope is now a mocap body."""
    env = make_env("go2/slope", {"terrain.slope_deg": "10"})
    env.reset(seed=0)
    d = env.data
    d.qpos[0] = 2.0
    d.qpos[2] += 2.0 * math.tan(math.radians(10))
    mujoco.mj_forward(env.model, d)
    for _ in range(25):
        env.step(np.zeros(12))
    height = d.qpos[2] - env.terrain_height(np.array(d.qpos[0]), np.array(0.0))
    assert 0.17 < height < 0.31, f"base {height:.3f} m above the slope (fix: terrain plane on a mocap body)"


def test_rough_height_query_matches_what_mujoco_collides_with():
    """The height scan reads the hfield's own triangles: vertical mj_ray hits agree to well under 1 mm."""
    env = make_env("go2/rough")
    env.reset(seed=3)
    m, d, floor = env.model, env.data, env.scene.terrain.floor_geom_id
    rng = np.random.default_rng(0)
    xy = rng.uniform(-3.0, 3.0, (300, 2))
    ray_z, hit = [], np.zeros(1, np.int32)
    for x, y in xy:
        dist = mujoco.mj_ray(m, d, np.array([x, y, 1.0]), np.array([0.0, 0.0, -1.0]), None, 1, -1, hit)
        assert hit[0] == floor
        ray_z.append(1.0 - dist)
    query = env.terrain_height(xy[:, 0], xy[:, 1])
    scalar = np.array([env.scene.terrain.height_at(x, y) for x, y in xy])
    assert np.max(np.abs(query - ray_z)) < 1e-6
    assert np.max(np.abs(scalar - ray_z)) < 1e-6
    assert np.ptp(ray_z) > 0.01  # the patch is really bumpy here


def test_proprio_and_height_map_conventions():
    env = make_env("go2/slope", {"terrain.slope_deg": "10"})
    obs = env.reset(seed=0)
    sensors = env.sensors()
    np.testing.assert_array_equal(proprio_from_sensors(sensors, env.command, env.gait_phase()), obs["proprio"])
    gravity = obs["proprio"][GO2.proprio_slice("projected_gravity")]
    # Body pitched nose-up by 10 deg: gravity in the base frame is (-sin 10, 0, -cos 10).
    np.testing.assert_allclose(gravity, [-math.sin(math.radians(10)), 0, -math.cos(math.radians(10))], atol=2e-2)
    np.testing.assert_allclose(obs["proprio"][GO2.proprio_slice("gait_phase")], [1.0, 0.0], atol=1e-6)
    hm = obs["height_map"]
    # Rows go forward (uphill) in 0.1 m steps: each row is 0.1 tan(10 deg) = 17.6 mm higher.
    np.testing.assert_allclose(np.diff(hm, axis=0), 0.1 * math.tan(math.radians(10)), atol=1e-5)
    np.testing.assert_allclose(hm[5, 7], -env.data.qpos[2] + 0.0, atol=1e-5)  # row 5 is x = 0 (under the base)
    with pytest.raises(ValueError, match="joint_pos"):
        proprio_from_sensors({**sensors, "joint_pos": np.zeros(11)}, env.command, 0.0)
    with pytest.raises(ValueError, match="finite"):
        proprio_from_sensors({**sensors, "imu_gyro": np.array([0.0, np.nan, 0.0])}, env.command, 0.0)


def test_pretrain_randomises_domain_and_terrain():
    env = make_env("go2/pretrain")
    kinds, frictions = set(), []
    for seed in range(8):
        env.reset(seed=seed)
        kinds.add(env.scene.terrain.kind)
        frictions.append(env.domain["friction"])
        assert 0.4 <= env.domain["friction"] <= 1.2  # PTFE (~0.2) stays out of distribution
    assert len(kinds) >= 2 and np.ptp(frictions) > 0.2


def test_pretrain_can_draw_an_action_delay_per_episode_and_keeps_the_other_draws():
    delayed = make_env("go2/pretrain", {"randomization.action_delay_steps_range": "0,2"})
    plain = make_env("go2/pretrain")
    delays = set()
    for seed in range(10):
        delayed.reset(seed=seed)
        plain.reset(seed=seed)
        delays.add(delayed.action_delay_steps)
        assert plain.action_delay_steps == 0
        assert delayed.domain == plain.domain and delayed.scene.terrain.kind == plain.scene.terrain.kind
        np.testing.assert_array_equal(delayed.data.qpos, plain.data.qpos)
    assert delays == {0, 1, 2}
    # With a delay of d steps the action sent at step k is what the joints are driven to at step k + d.
    two = make_env("go2/pretrain", {"randomization.action_delay_steps_range": "2,2"})
    two.reset(seed=0)
    actions = np.random.default_rng(0).uniform(-0.5, 0.5, (5, 12))
    targets = []
    for a in actions:
        two.step(a)
        targets.append(two.data.ctrl[two.scene.actuator_ids].copy())
    np.testing.assert_allclose(targets[0], two.low_level.targets(np.zeros(12)))
    np.testing.assert_allclose(targets[4], two.low_level.targets(actions[2]))
    assert make_env("go2/flat", {"randomization.action_delay_steps_range": "1,1"}).action_delay_steps == 0
    with pytest.raises(ValueError, match="action_delay_steps_range"):
        make_env("go2/pretrain", {"randomization.action_delay_steps_range": "2,1"})


def test_set_command_reaches_observation_and_rejects_bad_input():
    env = make_env("go2/flat")
    env.reset(seed=0)
    env.set_command(np.array([0.8, 0.1, -0.2]))
    np.testing.assert_allclose(env.step(np.zeros(12)).obs["command"], [0.8, 0.1, -0.2], rtol=1e-6)
    np.testing.assert_allclose(env.privileged_state()["command"], [0.8, 0.1, -0.2])
    with pytest.raises(ValueError, match="command"):
        env.set_command(np.array([0.5, np.nan, 0.0]))


def test_reset_with_a_seed_is_reproducible():
    env = make_env("go2/pretrain")
    runs = []
    for _ in range(2):
        obs = env.reset(seed=7)
        for _ in range(5):
            obs = env.step(np.full(12, 0.1)).obs
        runs.append((obs["proprio"], obs["height_map"], env.domain["friction"]))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    assert runs[0][2] == runs[1][2]


def test_a_target_ramp_blends_each_new_target_in_as_the_driver_does(monkeypatch):
    """``target_ramp_s`` = the hardware driver's ``interpolation_s``: the motor target moves linearly from the last
    target to the new one over the ramp (0 on the period's first physics step); 0 steps to it (the default)."""
    stepped, ramped = make_env("go2/flat"), make_env("go2/flat", {"target_ramp_s": "0.02"})
    for env in (stepped, ramped):
        env.reset(seed=3)
    ids = ramped.scene.actuator_ids
    start = ramped.data.ctrl[ids].copy()
    action = np.full(12, 0.2)
    seen = []
    real_step = mujoco.mj_step

    def recording_step(model, data, nstep=1):
        seen.append(data.ctrl[ids].copy())
        real_step(model, data, nstep)

    monkeypatch.setattr(mujoco, "mj_step", recording_step)  # observe the motor targets of each physics step
    ramped.step(action)
    ramped.step(action)
    monkeypatch.undo()
    target = ramped.low_level.targets(action)
    assert len(seen) == 2 * ramped.n_substeps
    np.testing.assert_allclose(seen[0], start)
    np.testing.assert_allclose(seen[5], start + 0.5 * (target - start))
    np.testing.assert_allclose(seen[ramped.n_substeps], target)  # the same target again: no ramp left
    stepped.step(action)
    np.testing.assert_allclose(stepped.data.ctrl[ids], target)
    assert not np.allclose(stepped.data.qpos, ramped.data.qpos)
    with pytest.raises(ValueError, match="target_ramp_s"):
        make_env("go2/flat", {"target_ramp_s": "0.5"})


def test_the_driver_target_clamps_limit_each_physics_step(monkeypatch):
    """``target_max_step_rad`` / ``target_max_tracking_error_rad`` = the driver's safety clamps, every 2 ms."""
    env = make_env("go2/flat", {"target_max_step_rad": "0.05", "target_max_tracking_error_rad": "0.3"})
    env.reset(seed=3)
    ids, adr = env.scene.actuator_ids, env.scene.qpos_adr
    seen = []
    real_step = mujoco.mj_step

    def recording_step(model, data, nstep=1):
        seen.append((data.ctrl[ids].copy(), data.qpos[adr].copy()))
        real_step(model, data, nstep)

    before = env.data.ctrl[ids].copy()
    monkeypatch.setattr(mujoco, "mj_step", recording_step)
    action = np.zeros(12)
    action[1] = 1.0  # FL thigh: a 1 rad jump of the target
    env.step(action)
    monkeypatch.undo()
    ctrl = np.stack([c for c, _ in seen])
    steps = np.abs(np.diff(np.vstack([before, ctrl]), axis=0))
    assert steps.max() <= 0.05 + 1e-12
    assert all(np.all(np.abs(c - q) <= 0.3 + 1e-12) for c, q in seen)
    assert ctrl[-1, 1] < env.low_level.targets(action)[1] - 0.5, "the jump is still on its way"
    with pytest.raises(ValueError, match="target_max_step_rad"):
        make_env("go2/flat", {"target_max_step_rad": "-1"})


def test_leg_odometry_as_the_base_velocity_source_tracks_the_true_velocity_while_walking():
    """``base_velocity_source=leg_odometry``: the proprio's base velocity is the driver's estimate, not the truth."""
    from simdist_core.experts import make_policy

    odom_env = make_env("go2/flat", {"base_velocity_source": "leg_odometry"})
    vels, truths = [], []
    odom_env.reset(seed=5)
    expert = make_policy(odom_env, 1.0, np.random.default_rng(0))
    for _ in range(100):
        action = expert.act(odom_env)
        obs = odom_env.step(action).obs
        vels.append(obs["proprio"][0:3].copy())
        truths.append(quat_to_rotmat(odom_env.data.qpos[3:7]).T @ odom_env.data.qvel[0:3])
        np.testing.assert_allclose(odom_env.sensors()["base_lin_vel"], vels[-1], atol=1e-6)  # what odom publishes
    vels, truths = np.array(vels[50:]), np.array(truths[50:])
    assert not np.allclose(vels, truths, atol=1e-4), "the estimate is not the simulator's velocity"
    assert abs(vels[:, 0].mean() - truths[:, 0].mean()) < 0.15, "but it follows the forward speed"
    with pytest.raises(ValueError, match="base_velocity_source"):
        make_env("go2/flat", {"base_velocity_source": "gps"})


def test_commanded_distance_is_the_command_speed_times_the_time_stepped():
    env = make_env("go2/flat")
    env.reset(seed=7)
    assert env.metrics()["commanded_m"] == 0.0
    for _ in range(50):
        env.step(np.zeros(12))
    speed = math.hypot(env.command[0], env.command[1])
    assert env.metrics()["commanded_m"] == pytest.approx(speed * env.metrics()["duration_s"])
    env.reset(seed=8)
    assert env.metrics()["commanded_m"] == 0.0
