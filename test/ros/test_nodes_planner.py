"""The planner node in its own process: commands/markers/diagnostics at rate, hold on stale input,
hot swap of a valid checkpoint with zero missed ticks, refusal of corrupt / encoder-changing updates.
Forged updates of every kind are in test_update_security.py.

The model is a small randomly initialised WorldModel saved with ``save_checkpoint`` (shapes and
plumbing are under test, not skill). The test publishes latents itself, stamped with its wall clock.
"""

import json
import time

import numpy as np
import pytest
import torch
from diagnostic_msgs.msg import DiagnosticArray
from node_harness import (
    NodeProcess,
    Observer,
    diag_values,
    every,
    fixed_latent_feed,
    signed_update,
    tiny_world_model,
    unique_namespace,
    update_source,
)
from simdist_core.checkpoint import WEIGHTS_FILE, save_checkpoint
from simdist_core.sim.go2_constants import DEFAULT_POSE_RAD, JOINT_NAMES
from simdist_core.sim.go2_lowlevel import Go2LowLevel
from std_msgs.msg import Float32MultiArray, Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import MarkerArray

from simdist_ros import msgs, qos, topics

HZ = 10.0  # slower than the Go2's 50 Hz so that a shared 2-core CI machine rarely misses ticks by itself
PLANNER = ["num_samples=16", "num_pi_samples=4", "iterations=1", "num_elites=4"]


def _announce(pub, key, path, parts=("dynamics",)):
    pub.publish(String(data=signed_update(key, path, parts)))


def _int(store, key):
    return int(diag_values(store, "planner").get(key, "-1"))


@pytest.mark.timeout(300)
def test_planner_node_plans_holds_and_hot_swaps(tmp_path):
    model = tiny_world_model("go2")
    save_checkpoint(tmp_path / "v1", model, version=1)
    updates, key_file, key = update_source(tmp_path)
    ns = unique_namespace("planner")
    params = {"checkpoint": str(tmp_path / "v1"), "control_hz": HZ, "planner_overrides": PLANNER,
              "rollout_every_n": 2, "diagnostics_period_s": 0.25, "stale_ticks": 3.0,
              "update_dir": str(updates), "update_key_file": str(key_file),
              "adapted_prior_weight": 3.0, "adapted_after_data_steps": 100}  # fmt: skip
    node = NodeProcess("planner_node", params, "planner", ns)
    obs = Observer(ns)
    try:
        commands = obs.collect(Float64MultiArray, topics.COMMAND, qos.command(HZ))
        plans = obs.collect(JointTrajectory, topics.PLAN, qos.RELIABLE)
        markers = obs.collect(MarkerArray, topics.PREDICTED_ROLLOUT, qos.RELIABLE)
        diags = obs.collect(DiagnosticArray, topics.DIAGNOSTICS, qos.RELIABLE)
        latent_pub = obs.publisher(Float32MultiArray, topics.LATENT, qos.LATENT(HZ))
        update_pub = obs.publisher(String, topics.MODEL_UPDATE, qos.ANNOUNCE)
        rng = np.random.default_rng(0)
        z, ctx = rng.normal(size=16), rng.normal(size=(51, 16))

        def send_latent():  # a robot that reports it applied each command on time (else the planner estimates
            # the delay from the latent's age, which a loaded CI machine can push past one period)
            latent_pub.publish(msgs.make_latent({"z": z, "context": ctx, "applied_delay": np.zeros(1)},
                                                obs.node.get_clock().now().nanoseconds))

        feed = every(1.0 / HZ, send_latent)

        # 1. Before any latent: hold (zeros) and say why.
        assert obs.spin_until(lambda: len(commands) >= 3 or not node.alive(), 120.0), node.log()[-3000:]
        assert all(np.allclose(c.data, 0.0) for c in commands)
        assert obs.spin_until(lambda: _int(diags, "holds_no_latent") > 0, 30.0)

        # 2. Fresh latents: planned (non-zero) commands, plans over the horizon, rollout markers.
        commands.clear()
        assert obs.spin_until(lambda: len(commands) >= 20 and len(markers) >= 5, 60.0, on_spin=feed)
        planned = [msgs.command_to_array(c, 12) for c in commands]
        assert all(a.shape == (12,) and np.all(np.abs(a) <= 1.0) for a in planned)
        # Each planned command carries its plan (send_plan); undelayed, the action is the plan's first row.
        carried = [msgs.read_command(c, 12)[1] for c in commands if np.any(msgs.command_to_array(c, 12) != 0.0)]
        assert carried and all(p is not None and p.shape == (25, 12) and np.all(np.abs(p) <= 1.0) for p in carried)
        assert all(np.allclose(p[0], msgs.command_to_array(c, 12), atol=1e-6) for c, p in
                   zip((c for c in commands if np.any(msgs.command_to_array(c, 12) != 0.0)), carried, strict=True))
        assert sum(1 for a in planned if np.any(a != 0.0)) >= 10, "fresh latents must give planned actions"
        assert len(plans[-1].points) == 25 and tuple(plans[-1].joint_names) == JOINT_NAMES
        targets = msgs.plan_to_array(plans[-1], 12)  # joint targets in rad, as the driver converts the command
        assert np.all(np.abs(targets - DEFAULT_POSE_RAD) <= Go2LowLevel().config.action_scale_rad + 1e-9)
        assert not np.allclose(targets, DEFAULT_POSE_RAD)
        paths = msgs.markers_to_paths(markers[-1])
        assert len(paths) == 1 + 8 and all(len(p) == 26 for p in paths)  # plan + num_rollouts, H + 1 positions
        assert {m.header.frame_id for m in markers[-1].markers[1:]} == {"base_yaw"}
        assert diag_values(diags, "planner")["model_version"] == "1"
        # A latent that starts an episode clears the warm start (once per such latent); the others do not.
        assert _int(diags, "warm_start_resets") == 0
        latent_pub.publish(msgs.make_latent({"z": z, "context": ctx, "episode_start": np.ones(1)},
                                            obs.node.get_clock().now().nanoseconds))
        assert obs.spin_until(lambda: _int(diags, "warm_start_resets") == 1, 30.0, on_spin=feed)
        # With the encoder's episode counter, a change of counter resets once even without the mark (the marked
        # latent may be replaced in the keep-last-1 queue by the next one); an unchanged counter never does.
        def send_episode(k):
            latent_pub.publish(msgs.make_latent({"z": z, "context": ctx, "episode_start": np.zeros(1),
                                                 "episode": np.array([k])}, obs.node.get_clock().now().nanoseconds))
        episode_feed = every(1.0 / HZ, lambda: send_episode(7.0))
        assert obs.spin_until(lambda: _int(diags, "warm_start_resets") == 2, 30.0, on_spin=episode_feed)
        obs.spin_until(lambda: False, 1.0, on_spin=episode_feed)
        assert _int(diags, "warm_start_resets") == 2
        # Latents that say the robot's steps had one period of delay: the planner plans around it (the last
        # command sent starts every candidate) and counts those ticks.
        def send_delayed():
            latent_pub.publish(msgs.make_latent({"z": z, "context": ctx, "episode": np.array([7.0]),
                                                 "applied_delay": np.ones(1)}, obs.node.get_clock().now().nanoseconds))
        delayed_feed = every(1.0 / HZ, send_delayed)
        commands.clear()
        assert obs.spin_until(lambda: _int(diags, "compensated_delay_1") >= 5, 30.0, on_spin=delayed_feed)
        # Planned one period ahead, the action is the plan's row 1; row 0 is the command already in flight.
        late = [c for c in commands if msgs.read_command(c, 12)[1] is not None][-3:]
        assert late and all(np.allclose(msgs.read_command(c, 12)[1][1], msgs.command_to_array(c, 12), atol=1e-6)
                            for c in late)
        assert _int(diags, "warm_start_resets") == 2  # same episode
        # The planner reports the Gaussian sample count it plans with (the configured 16 at most).
        assert 0 <= _int(diags, "num_samples") <= 16

        # 3. Latents stop: after stale_ticks the planner holds zeros and reports it.
        stale_before = _int(diags, "holds_stale")
        assert obs.spin_until(lambda: _int(diags, "holds_stale") > stale_before + 3, 30.0)
        commands.clear()
        assert obs.spin_until(lambda: len(commands) >= 3, 30.0)
        assert all(np.allclose(c.data, 0.0) for c in commands), "stale latent must give the hold action"
        assert "holding default pose: latent is" in node.log()

        # 4. Hot swap a valid dynamics-only update while planning: zero missed ticks. It was finetuned on more robot
        # data than adapted_after_data_steps, so the planner loosens its tie to the policy prior to 3.
        assert float(diag_values(diags, "planner")["prior_weight"]) == 0.0  # the shipped model: the config's tie
        with torch.no_grad():
            for p in model.dynamics.parameters():
                p.add_(0.01)
        save_checkpoint(updates / "v0002", model, version=2, parent_version=1, parts_changed=("dynamics",),
                        extra={"data_steps": 150})
        obs.spin_until(lambda: False, 1.0, on_spin=feed)  # planning again before the swap
        _announce(update_pub, key, updates / "v0002")
        assert obs.spin_until(lambda: diag_values(diags, "planner").get("model_version") == "2", 60.0, on_spin=feed)
        tie = lambda: float(diag_values(diags, "planner").get("prior_weight", "nan"))  # noqa: E731
        assert obs.spin_until(lambda: tie() == 3.0, 30.0, on_spin=feed), node.log()[-3000:]
        values = diag_values(diags, "planner")
        assert int(values["swaps"]) == 1 and int(values["swaps_refused"]) == 0
        # The bar is zero ticks missed because of a swap. A loaded shared machine also drops ticks by itself, so
        # the swap window may miss at most its share of the background rate (zero when the background is zero).
        in_swap, window = int(values["missed_ticks_in_swap"]), int(values["ticks_in_swap"])
        background = int(values["missed_ticks"]) - in_swap
        background_rate = background / max(int(values["ticks"]) - window, 1)
        assert in_swap <= 3 * background_rate * window, f"ticks missed during the swap: {values}"

        # 5. A corrupt checkpoint is refused; version 2 keeps planning.
        save_checkpoint(updates / "v0003", model, version=3, parent_version=2, parts_changed=("dynamics",))
        weights = updates / "v0003" / WEIGHTS_FILE
        blob = bytearray(weights.read_bytes())
        blob[len(blob) // 2] ^= 0xFF
        weights.write_bytes(bytes(blob))
        _announce(update_pub, key, updates / "v0003")
        assert obs.spin_until(lambda: _int(diags, "swaps_refused") == 1, 60.0, on_spin=feed), node.log()[-3000:]
        # 6. An update that claims to change the frozen encoder is refused too.
        save_checkpoint(updates / "v0004", model, version=4, parent_version=2, parts_changed=("encoder", "dynamics"))
        _announce(update_pub, key, updates / "v0004", parts=("encoder", "dynamics"))
        assert obs.spin_until(lambda: _int(diags, "swaps_refused") == 2, 60.0, on_spin=feed), node.log()[-3000:]
        commands.clear()
        t_end = time.monotonic() + 2.0
        obs.spin_until(lambda: time.monotonic() > t_end, 5.0, on_spin=feed)
        values = diag_values(diags, "planner")
        assert values["model_version"] == "2" and int(values["swaps"]) == 1
        assert sum(1 for c in commands if np.any(np.asarray(c.data) != 0.0)) >= 5, "old model must keep planning"
        log = node.log()
        assert "refused model update" in log and "sha256" in log and "encoder is frozen" in log
    finally:
        obs.close()
        rc = node.stop()
    assert rc == 0, f"planner_node did not exit cleanly (rc={rc}):\n{node.log()[-3000:]}"


class _Log:
    """Records what the swapper logs (the node passes its rclpy logger)."""

    def __init__(self):
        self.lines = []

    def info(self, m):
        self.lines.append(("info", m))

    def error(self, m):
        self.lines.append(("error", m))


def _wait(pred, timeout_s=60.0):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end and not pred():
        time.sleep(0.01)
    return pred()


def test_model_swapper_screens_verifies_and_hands_over_once(tmp_path):
    """The swap worker on its own (no DDS): malformed, unauthenticated, manifest/hash mismatches and a
    different encoder are refused with a reason and counted per kind; a good update reaches the tick once.
    Every forgery over DDS is in test_update_security.py."""
    from simdist_ros.model_swap import ModelSwapper, build_planner, load_model
    from simdist_ros.model_update import parse_announcement

    updates, _, key = update_source(tmp_path)
    model = tiny_world_model("go2")
    save_checkpoint(tmp_path / "v1", model, version=1)
    running, manifest = load_model(tmp_path / "v1", "cpu")
    planner = build_planner(running, manifest, "cpu", tuple(PLANNER), "cpu", 0)
    with torch.no_grad():
        for p in model.dynamics.parameters():
            p.mul_(1.01)
    save_checkpoint(updates / "v0002", model, version=2, parent_version=1, parts_changed=("dynamics",))
    save_checkpoint(updates / "v0003", tiny_world_model("go2", seed=1), version=3)  # the encoder differs
    good = json.loads(signed_update(key, updates / "v0002"))
    mismatched = {**good, "version": 4, "tag": json.loads(signed_update(key, updates / "v0002"))["tag"]}
    log = _Log()
    swapper = ModelSwapper(running, manifest, log, "cpu", update_dir=updates, key=key)
    try:
        cases = [
            ("not json", "malformed"),
            (json.dumps({"path": "x"}), "malformed"),
            (json.dumps({**good, "sha256": "0" * 64}), "unauthenticated"),  # the tag covers the weights hash
            (json.dumps(mismatched), "unauthenticated"),  # a tag moved onto another version
            (signed_update(key, updates / "v0003"), "frozen_part"),
        ]
        for i, (text, kind) in enumerate(cases, start=1):
            swapper.submit(text, 0)
            assert _wait(lambda i=i: swapper.counts()["swaps_refused"] == i), swapper.counts()
            assert swapper.counts()["last_refusal"].startswith(kind), (kind, swapper.counts()["last_refusal"])
            assert swapper.take(planner, 0) is None
        assert all(level == "error" and "refused model update" in line for level, line in log.lines)
        swapper.submit(json.dumps(good), 0)
        assert _wait(lambda: swapper._candidate is not None)
        assert swapper.take(planner, 0) == "2" and swapper.take(planner, 0) is None
        assert planner.model is swapper.model and swapper.version == "2"
        counts = swapper.counts()
        assert counts["swaps"] == 1 and counts["missed_ticks_in_swap"] == 0
        assert {k: counts[f"refused_{k}"] for k in ("malformed", "unauthenticated", "frozen_part")} == {
            "malformed": 2, "unauthenticated": 2, "frozen_part": 1}
        swapper.submit(json.dumps(good), 0)  # the finetuner re-announcing after a restart: not a refusal
        assert _wait(lambda: swapper.counts()["updates_already_running"] == 1)
        assert swapper.counts()["swaps_refused"] == 5

        # Updates load into a spare built at start-up, and the model a swap retired becomes the next spare:
        # the running model is never written, and each swapped-in model holds exactly its checkpoint's weights.
        v2_model, retired = swapper.model, running
        with torch.no_grad():
            for p in model.dynamics.parameters():
                p.mul_(1.01)
        save_checkpoint(updates / "v0005", model, version=5, parent_version=2, parts_changed=("dynamics",))
        v2_weights = {k: v.clone() for k, v in v2_model.state_dict().items()}
        swapper.submit(signed_update(key, updates / "v0005"), 0)
        assert _wait(lambda: swapper._candidate is not None)
        assert all(torch.equal(v, v2_weights[k]) for k, v in v2_model.state_dict().items()), "running model written"
        assert swapper.take(planner, 0) == "5" and planner.model is swapper.model
        assert swapper.model is retired  # the model the first swap retired, loaded with v5
        expected = {k: v for k, v in model.state_dict().items()}
        assert all(torch.equal(v, expected[k]) for k, v in swapper.model.state_dict().items())
        swapper.submit(signed_update(key, updates / "v0003"), 0)  # refused: the spare (v2's model) stays unused
        assert _wait(lambda: swapper.counts()["swaps_refused"] == 6)
        assert swapper._spare.model is v2_model
    finally:
        swapper.close()
    assert parse_announcement(json.dumps(good)).parts_changed == ("dynamics",)


def test_planner_without_update_source_refuses_every_update(tmp_path):
    from simdist_ros.model_swap import ModelSwapper, load_model

    updates, _, key = update_source(tmp_path)
    model = tiny_world_model("go2")
    save_checkpoint(updates / "v0001", model, version=1)
    running, manifest = load_model(updates / "v0001", "cpu")
    save_checkpoint(updates / "v0002", model, version=2)
    swapper = ModelSwapper(running, manifest, _Log(), "cpu")  # no update_dir, no key
    try:
        assert not swapper.enabled
        swapper.submit(signed_update(key, updates / "v0002"), 0)
        assert swapper.counts()["refused_disabled"] == 1 and swapper._pending is None
    finally:
        swapper.close()


def test_tick_stats_counts_missed_ticks_on_the_node_clock():
    from simdist_ros.runtime import TickStats

    stats = TickStats(0.02)  # 50 Hz: 20 ms periods
    period = 20_000_000
    assert [stats.start(t) for t in (0, period, 2 * period)] == [0, 0, 0]
    stats.stop()
    # The next tick starts 4 periods later: ticks at 3 and 4 periods never ran (rcl skips, it does not bunch).
    assert stats.start(5 * period) == 2
    assert stats.start(int(6.4 * period)) == 0  # 1.4 periods: late, not missed
    assert (stats.ticks, stats.missed_ticks) == (5, 2)
    p50, p99 = stats.percentiles_ms()
    assert 0.0 <= p50 <= p99


def test_build_planner_presets_and_overrides(tmp_path):
    from simdist_core.planning.mppi import PRESETS, PlannerConfig
    from simdist_ros.model_swap import build_planner, load_model

    model = tiny_world_model("go2")
    stored = PlannerConfig(num_samples=8, num_pi_samples=2, iterations=1, num_elites=2)
    save_checkpoint(tmp_path / "with", model, version=1, planner_config=stored)
    save_checkpoint(tmp_path / "without", model, version=1)
    m, manifest = load_model(tmp_path / "with", "cpu")
    assert build_planner(m, manifest, "auto", (), "cpu", 0).cfg == stored  # the checkpoint's config wins
    assert build_planner(m, manifest, "auto", ("iterations=3",), "cpu", 0).cfg.iterations == 3
    assert build_planner(m, manifest, "prior", (), "cpu", 0).cfg == PRESETS["prior"]  # a named preset wins
    m2, manifest2 = load_model(tmp_path / "without", "cpu")
    assert build_planner(m2, manifest2, "auto", (), "cpu", 0).cfg == PRESETS["cpu"]
    with pytest.raises(KeyError, match="stores no"):
        build_planner(m2, manifest2, "checkpoint", (), "cpu", 0)
    with pytest.raises(KeyError, match="valid"):
        build_planner(m2, manifest2, "gpu_fast", (), "cpu", 0)
    with pytest.raises(ValueError, match="unknown config key"):
        build_planner(m2, manifest2, "cpu", ("no_such_key=1",), "cpu", 0)


@pytest.mark.timeout(300)
def test_planner_node_refuses_a_reference_checkpoint_it_would_not_use(tmp_path):
    """``reference_checkpoint`` without ``reference_returns`` is a configuration mistake: the node stops at start
    and says so, instead of running without what its operator asked for."""
    model = tiny_world_model("go2")
    save_checkpoint(tmp_path / "v1", model, version=1)
    params = {"checkpoint": str(tmp_path / "v1"), "control_hz": HZ, "planner_overrides": PLANNER,
              "reference_checkpoint": str(tmp_path / "v1")}
    node = NodeProcess("planner_node", params, "planner", unique_namespace("planner_reference"))
    try:
        deadline = time.monotonic() + 120.0
        while node.alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not node.alive(), node.log()[-3000:]
        assert "no reference_returns" in node.log()
    finally:
        node.stop()


@pytest.mark.timeout(300)
def test_planner_node_with_reference_returns_swaps_dynamics_updates_and_refuses_others(tmp_path):
    """``reference_returns=min`` over DDS: a dynamics-only update is swapped in and planned with (beside the model the
    node started with); an update that also changed the reward head passes the swapper's checks (the reward is no
    frozen part) but not the planner's, is refused as a config mismatch, and the running model keeps planning."""
    model = tiny_world_model("go2")
    save_checkpoint(tmp_path / "v1", model, version=1)
    updates, key_file, key = update_source(tmp_path)
    ns = unique_namespace("planner_reference")
    params = {"checkpoint": str(tmp_path / "v1"), "control_hz": HZ,
              "planner_overrides": [*PLANNER, "reference_returns=min"], "diagnostics_period_s": 0.25,
              "update_dir": str(updates), "update_key_file": str(key_file)}  # fmt: skip
    node = NodeProcess("planner_node", params, "planner", ns)
    obs = Observer(ns)
    try:
        commands = obs.collect(Float64MultiArray, topics.COMMAND, qos.command(HZ))
        diags = obs.collect(DiagnosticArray, topics.DIAGNOSTICS, qos.RELIABLE)
        update_pub = obs.publisher(String, topics.MODEL_UPDATE, qos.ANNOUNCE)
        feed = fixed_latent_feed(obs, HZ, seed=1)
        planned = lambda: sum(1 for c in commands if np.any(np.asarray(c.data) != 0.0))  # noqa: E731
        assert obs.spin_until(lambda: planned() >= 5 or not node.alive(), 120.0, on_spin=feed), node.log()[-3000:]

        with torch.no_grad():
            for p in model.dynamics.parameters():
                p.add_(0.01)
        save_checkpoint(updates / "v0002", model, version=2, parent_version=1, parts_changed=("dynamics",))
        _announce(update_pub, key, updates / "v0002")
        assert obs.spin_until(lambda: diag_values(diags, "planner").get("model_version") == "2", 60.0,
                              on_spin=feed), node.log()[-3000:]
        commands.clear()
        assert obs.spin_until(lambda: planned() >= 5, 30.0, on_spin=feed), "the swapped-in model must plan"

        with torch.no_grad():
            for p in model.reward_head.parameters():
                p.add_(0.01)
        save_checkpoint(updates / "v0003", model, version=3, parent_version=2, parts_changed=("reward", "dynamics"))
        _announce(update_pub, key, updates / "v0003", parts=("reward", "dynamics"))
        mismatch = lambda: _int(diags, "refused_config_mismatch")  # noqa: E731
        assert obs.spin_until(lambda: mismatch() == 1, 60.0, on_spin=feed), node.log()[-3000:]
        commands.clear()
        assert obs.spin_until(lambda: planned() >= 5, 30.0, on_spin=feed)
        values = diag_values(diags, "planner")
        assert values["model_version"] == "2" and int(values["swaps"]) == 1
        assert "dynamics only" in node.log()
    finally:
        obs.close()
        rc = node.stop()
    assert rc == 0, f"planner_node did not exit cleanly (rc={rc}):\n{node.log()[-3000:]}"
