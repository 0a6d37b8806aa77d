"""Simulated UR5e + 2F-85: registry smoke test, overrides, success criterion, shift, low-level controller.

Real MuJoCo throughout. Rendering is slow on this CPU, so only the smoke test renders.
"""

import math

import numpy as np
import pytest
from simdist_core.robots import UR5E
from simdist_core.sim.base import make_env
from simdist_core.sim.ur5e import proprio_from_sensors
from simdist_core.sim.ur5e_tasks import DEFAULT_CONFIGS

UR5E_TASKS = sorted(DEFAULT_CONFIGS)
FAST = {"render": "false"}


def _make(task="ur5e/peg", **overrides):
    return make_env(task, {**FAST, **overrides})


@pytest.mark.timeout(120)
@pytest.mark.parametrize("task", UR5E_TASKS)
def test_registry_smoke_every_ur5e_task(task):
    env = make_env(task)  # renders
    obs = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(3):
        result = env.step(rng.uniform(-1, 1, size=UR5E.action_dim))
    for o in (obs, result.obs):
        assert o["proprio"].shape == (UR5E.proprio_dim,) and o["proprio"].dtype == np.float32
        assert o["image"].shape == (*UR5E.image_shape, 3) and o["image"].dtype == np.uint8
        assert np.all(np.isfinite(o["proprio"]))
    assert result.obs["image"].std() > 1.0, "rendered image should not be blank"
    assert result.info["image_rendered"] is True
    assert all(math.isfinite(v) for v in result.reward_terms.values())
    assert result.reward == pytest.approx(sum(result.reward_terms.values()))
    priv = env.privileged_state()
    assert priv["probe"].shape == (3,) and np.allclose(priv["probe"], priv["tcp_pos"], atol=1e-6)
    assert priv["value_features"].shape == (10,) and np.all(np.isfinite(priv["value_features"]))
    assert set(env.metrics()) >= {"success", "insertion_depth_m", "duration_s"}
    env.close()


def test_render_false_gives_flagged_zero_image():
    env = _make()
    env.reset(seed=1)
    result = env.step(np.zeros(4))
    assert result.info["image_rendered"] is False
    assert not result.obs["image"].any()


def test_reset_is_seeded_and_grid_sets_the_fixture_range():
    env = _make(**{"fixture.grid": "wide"})
    draws = []
    for seed in range(12):
        env.reset(seed=seed)
        draws.append(env.privileged_state()["fixture_pos"][:2].copy())
    env.reset(seed=3)
    assert np.allclose(env.privileged_state()["fixture_pos"][:2], draws[3])
    offsets = np.abs(np.array(draws) - np.array(DEFAULT_CONFIGS["ur5e/peg"].fixture.center_m))
    assert offsets.max() <= 0.08 and offsets.max() > 0.02, "wide grid draws within +-8 cm, beyond the narrow 2 cm"


def test_overrides_apply_and_bad_values_error():
    env = _make(**{"fixture.grid": "wide", "shift.latency_steps": "2", "scene.clearance_m": "0.002"})
    assert env.cfg.fixture.grid == "wide" and env.cfg.shift.latency_steps == 2
    assert env.hole_half_m == pytest.approx(0.01 + 0.001)
    with pytest.raises(ValueError, match="grid"):
        _make(**{"fixture.grid": "huge"})
    with pytest.raises(ValueError, match="latency_steps"):
        _make(**{"shift.latency_steps": "-1"})
    with pytest.raises(ValueError, match="latency_steps"):
        _make(**{"shift.latency_steps": "two"})
    with pytest.raises(ValueError, match="valid keys"):
        _make(**{"shift.nonsense": "1"})
    with pytest.raises(ValueError, match="servo_gain_scale"):
        _make(**{"shift.servo_gain_scale": "0"})
    with pytest.raises(KeyError, match="valid tasks"):
        make_env("ur5e/unknown")


def test_randomised_latency_draws_per_episode_and_leaves_the_other_draws_alone():
    randomised = _make(**{"shift.latency_steps_max": "2"})
    fixed = _make()
    drawn = {}
    for seed in range(12):
        randomised.reset(seed=seed)
        fixed.reset(seed=seed)
        drawn[seed] = randomised.latency_steps
        assert fixed.latency_steps == 0
        # The latency is drawn after everything else: the seed's fixture and start are as without it.
        for key in ("fixture_pos", "tcp_pos"):
            np.testing.assert_array_equal(randomised.privileged_state()[key], fixed.privileged_state()[key])
    assert set(drawn.values()) == {0, 1, 2}
    # An episode with drawn latency L moves exactly as one with L fixed.
    seed = next(s for s, latency in drawn.items() if latency == 2)
    randomised.reset(seed=seed)
    late = _make(**{"shift.latency_steps": "2"})
    late.reset(seed=seed)
    fixed.reset(seed=seed)
    actions = np.random.default_rng(0).uniform(-1, 1, (6, UR5E.action_dim))
    for a in actions:
        randomised.step(a)
        late.step(a)
        fixed.step(a)
    np.testing.assert_allclose(randomised.privileged_state()["tcp_pos"], late.privileged_state()["tcp_pos"])
    assert np.abs(randomised.privileged_state()["tcp_pos"] - fixed.privileged_state()["tcp_pos"]).max() > 1e-4
    with pytest.raises(ValueError, match="latency_steps_max"):
        _make(**{"shift.latency_steps_max": "21"})


def _place_fixture_under_tip(env, depth_m, lateral_m=0.0):
    """Move the mocap fixture so the tip is ``depth_m`` into the hole (negative: above it), offset laterally."""
    priv = env.privileged_state()
    pos = priv["tcp_pos"] - np.array([lateral_m, 0.0, env.cfg.scene.fixture_height_m - depth_m])
    env.fixture_pos, env.fixture_yaw = pos, float(priv["tcp_yaw"])
    env.sim.set_fixture(pos, env.fixture_yaw)


@pytest.mark.parametrize(
    ("depth_m", "lateral_m", "success"),
    [(0.025, 0.0, True), (0.005, 0.0, False), (-0.005, 0.0, False), (0.025, 0.03, False)],
)
def test_peg_success_only_when_fully_in(depth_m, lateral_m, success):
    env = _make()
    env.reset(seed=0)
    if lateral_m:  # tip beside the fixture, below its top: must not count as inserted
        _place_fixture_under_tip(env, depth_m, lateral_m=env.cfg.scene.fixture_half_size_m + lateral_m)
    else:
        _place_fixture_under_tip(env, depth_m)
    result = env.step(np.zeros(4))
    assert result.terminated is success
    assert env.metrics()["success"] is success
    if success:
        assert result.reward_terms["success"] > 0 and env.metrics()["insertion_depth_m"] >= 0.02
        assert env.metrics()["reached_hole"] == env.metrics()["entered_hole"] == 1.0


@pytest.mark.parametrize(
    ("depth_m", "lateral_m", "yaw_offset_rad", "funnel"),
    [(-0.03, 0.0, 0.0, (0, 0, 0, 0)),  # above the hole, not down at it
     (-0.002, 0.0, 0.0, (1, 1, 1, 0)),  # at the hole top, centred, yaw fits
     (-0.002, 0.0, 0.2, (1, 1, 0, 0)),  # at the hole top, centred, yaw 0.2 rad off (the peg fits within ~0.05)
     (-0.002, 0.004, 0.0, (1, 0, 0, 0)),  # at the hole top, 4 mm off centre (0.5 mm clearance each side)
     (0.006, 0.0, 0.0, (1, 1, 1, 1))],  # 6 mm in, not yet the 20 mm of a success
)
def test_peg_funnel_says_how_far_an_episode_got(depth_m, lateral_m, yaw_offset_rad, funnel):
    env = _make()
    env.reset(seed=0)
    assert env.metrics()["reached_hole"] == 0.0, "a reset starts a fresh funnel"
    _place_fixture_under_tip(env, depth_m, lateral_m)
    env.fixture_yaw += yaw_offset_rad
    env.sim.set_fixture(env.fixture_pos, env.fixture_yaw)
    env.step(np.zeros(4))
    m = env.metrics()
    stages = (m["reached_hole"], m["centred_at_hole"], m["aligned_at_hole"], m["entered_hole"])
    assert stages == funnel and not m["success"]
    # 10 mm half-width peg, 1 mm clearance: centred it fits up to ~0.05 rad (3 degrees) of yaw error
    assert env.outline_excess_m(0.0, 0.045) < 0 < env.outline_excess_m(0.0, 0.06)
    env.reset(seed=1)
    assert (env.metrics()["reached_hole"], env.metrics()["entered_hole"]) == (0.0, 0.0)


def test_table_leg_turns_count_only_clockwise_on_the_helix():
    env = _make("ur5e/table_leg")
    env.reset(seed=0)
    _place_fixture_under_tip(env, env.cfg.thread.engage_depth_m)
    for _ in range(5):
        env.step(np.array([0.0, 0.0, 0.0, 1.0]))  # counter-clockwise: unscrewing
    assert env.thread_progress_rad == 0.0
    for _ in range(10):
        env.step(np.array([0.0, 0.0, -0.05, -1.0]))  # clockwise, following the pitch down
    assert env.thread_progress_rad > 0.5
    assert not env.metrics()["success"]


def test_proprio_from_sensors_layout_and_bad_input():
    env = _make()
    env.reset(seed=0)
    raw = env.sensors(image=False)
    row = proprio_from_sensors(raw)
    assert row.shape == (23,) and row.dtype == np.float32
    assert np.allclose(row[UR5E.proprio_slice("joint_pos")], raw["joint_pos"], atol=1e-6)
    assert np.allclose(row[UR5E.proprio_slice("tcp_pos")], raw["tcp_pos"], atol=1e-6)
    yaw = float(env.privileged_state()["tcp_yaw"])
    assert np.allclose(row[UR5E.proprio_slice("tcp_yaw")], [math.cos(yaw), math.sin(yaw)], atol=1e-5)
    assert np.allclose(env.reset(seed=0)["proprio"], row, atol=1e-5)
    with pytest.raises(ValueError, match="wrench"):
        proprio_from_sensors({**raw, "wrench": np.full(6, np.nan)})
    with pytest.raises(ValueError, match="joint_pos"):
        proprio_from_sensors({**raw, "joint_pos": np.zeros(5)})
    with pytest.raises(ValueError, match="tcp_quat"):
        proprio_from_sensors({k: v for k, v in raw.items() if k != "tcp_quat"})


def test_step_rejects_bad_actions():
    env = _make()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros(3))
    with pytest.raises(ValueError, match="finite"):
        env.step(np.array([0.0, np.nan, 0.0, 0.0]))


def test_low_level_moves_by_max_step_with_roll_pitch_locked():
    env = _make()
    env.reset(seed=0)
    start = env.privileged_state()["tcp_pos"].copy()
    for _ in range(20):
        env.step(np.array([0.5, 0.0, 0.0, 0.5]))
    for _ in range(10):
        env.step(np.zeros(4))
    priv = env.privileged_state()
    moved = priv["tcp_pos"] - start
    # 20 steps x 0.5 x 5 mm = 0.05 m along x (slow enough to stay inside the leash), nothing along y/z
    assert moved[0] == pytest.approx(0.05, abs=0.002) and np.all(np.abs(moved[1:]) < 0.002)
    rot = env.data.site_xmat[env.sim.lowlevel.site_id].reshape(3, 3)
    assert rot[2, 2] < -math.cos(math.radians(1.0)), "tool axis must stay within 1 deg of straight down"


def test_shifted_variant_replays_nominal_actions_differently():
    """Open-loop replay of the same action sequence ends elsewhere under the real-world shift."""
    rng = np.random.default_rng(5)
    actions = np.clip(rng.normal(0.0, 0.6, size=(40, 4)), -1, 1)
    ends = {}
    for task in ("ur5e/peg", "ur5e/peg", "ur5e/peg_shifted", "ur5e/peg_mild_shift"):
        env = _make(task)
        env.reset(seed=2)
        for a in actions:
            env.step(a)
        ends.setdefault(task, []).append(env.privileged_state()["tcp_pos"].copy())
    assert np.allclose(ends["ur5e/peg"][0], ends["ur5e/peg"][1]), "nominal replay must be deterministic"
    assert np.linalg.norm(ends["ur5e/peg_shifted"][0] - ends["ur5e/peg"][0]) > 0.001
    mild, strong = (np.linalg.norm(ends[t][0] - ends["ur5e/peg"][0])
                    for t in ("ur5e/peg_mild_shift", "ur5e/peg_shifted"))
    assert 0.001 < mild < strong, "the mild stand-in moves the arm off the nominal path, less than the strong one"


def test_joint_command_matches_the_sim_ik_for_the_real_driver():
    """The real driver runs the same IK on a kinematics-only MjData fed with measured joints."""
    from simdist_core.sim.ur5e_scene import mujoco

    env = _make()
    env.reset(seed=0)
    ll = env.sim.lowlevel
    ll.apply_action(np.array([0.3, -0.2, 0.1, 0.4]), env.data)
    mujoco.mj_forward(env.model, env.data)
    ll.ik_step(env.data)
    expected = env.data.ctrl[ll.act_ids].copy()
    kin = mujoco.MjData(env.model)
    command = ll.joint_command(kin, env.data.qpos[ll.qpos_adr].copy())
    assert np.allclose(command, expected, atol=1e-9)


def test_rendering_does_not_depend_on_mujoco_import_order():
    """Regression: make_env imports the Go2 tasks (and mujoco) first, so MUJOCO_GL set by the UR5e
    module came too late and mujoco.Renderer fell back to GLFW, which fails headless."""
    import os
    import subprocess
    import sys

    code = ("import mujoco\nfrom simdist_core.sim.base import make_env\n"
            "env = make_env('ur5e/peg'); env.reset(seed=0)\n"
            "print(float(env.step([0.0, 0.0, 0.0, 0.0]).obs['image'].std()))\n")
    child_env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM", "DISPLAY")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env, timeout=120)
    assert out.returncode == 0, f"fix: OffscreenCamera owns an EGL context; stderr: {out.stderr[-800:]}"
    assert float(out.stdout.strip().splitlines()[-1]) > 1.0
