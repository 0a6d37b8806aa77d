"""Finetuner node in a real rclpy graph: a round in a worker process, gated atomic checkpoint, announcement."""

import json
import signal

import numpy as np
import pytest
import rclpy
import torch
from _graph_helpers import AnnounceCollector, DiagnosticsCollector, start_node, stop, wait_for
from simdist_core.checkpoint import save_checkpoint, verify_checkpoint
from simdist_core.checkpoint_auth import create_key_file, read_key, verify_tag
from simdist_core.data.chunks import ChunkWriter
from simdist_core.data.transitions import make_record
from simdist_core.models.world_model import WorldModel
from simdist_core.robots import GO2
from simdist_ros.finetuner_node import latest_checkpoint
from std_msgs.msg import String

from simdist_ros import qos, topics


def make_checkpoint(path, version=0, seed=0):
    """A randomly initialised Go2 world model (until trained checkpoints are shipped)."""
    torch.manual_seed(seed)
    return save_checkpoint(path, WorldModel(GO2), version=version)


def fill_replay(root, n_steps, episode_len=150, seed=0, shard="shard-replay-0000"):
    rng = np.random.default_rng(seed)
    with ChunkWriter(root / shard, chunk_steps=100, fsync=False) as writer:
        for i in range(n_steps):
            obs = {"proprio": (0.1 * rng.normal(size=GO2.proprio_dim)).astype(np.float32),
                   "command": np.array([0.5, 0, 0], np.float32),
                   "height_map": np.full(GO2.height_map_shape, -0.27, np.float32)}
            action = rng.uniform(-1, 1, GO2.action_dim).astype(np.float32)
            writer.append(make_record(GO2, obs, action, i * 20_000_000, i // episode_len))


@pytest.mark.timeout(300)
def test_finetuner_round_announces_verified_dynamics_only_checkpoint(tmp_path):
    initial = make_checkpoint(tmp_path / "init")
    fill_replay(tmp_path / "replay", 300)
    out = tmp_path / "ckpt"
    key_file = create_key_file(tmp_path / "launch" / "model_update.key")
    params = {"robot": "go2", "checkpoint": str(tmp_path / "init"), "replay_dir": str(tmp_path / "replay"),
              "output_dir": str(out), "min_new_steps": 100, "steps_per_round": 10, "batch_size": 8,
              "max_rounds": 1, "check_period_s": 0.2, "update_key_file": str(key_file)}
    proc = start_node("finetuner_node", params, tmp_path / "ft.log")
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        collector = AnnounceCollector(context, topics.MODEL_UPDATE)
        diag = DiagnosticsCollector(context, collector.executor)
        assert wait_for(lambda: collector.items, 180, collector.spin), (tmp_path / "ft.log").read_text()[-3000:]
        ann = collector.items[-1]
        assert stop(proc, signal.SIGINT) == 0, (tmp_path / "ft.log").read_text()[-3000:]

        assert ann["version"] == initial.version + 1 and ann["parent_version"] == initial.version
        assert ann["parts_changed"] == ["dynamics"]
        manifest = verify_checkpoint(ann["path"])
        assert ann["sha256"] == manifest.weights_sha256 and ann["parts"] == manifest.parts
        assert verify_tag(read_key(key_file), ann["tag"], version=ann["version"], weights_sha256=ann["sha256"],
                          parts=ann["parts"]), "announced with the tag the planner checks"
        assert manifest.parts["encoder"] == initial.parts["encoder"], "the encoder must stay bit-identical"
        assert manifest.parts["dynamics"] != initial.parts["dynamics"]
        assert ann["val_loss"] < ann["old_val_loss"], "announced only because the gate passed"
        assert latest_checkpoint(out) == (1, out / "v0001")

        # Restart: the newest own checkpoint is re-announced (late planners catch up), nothing is rewritten.
        collector.items.clear()
        proc = start_node("finetuner_node", params, tmp_path / "ft2.log")
        diag.latest.clear()
        assert wait_for(lambda: collector.items and diag.find("finetuner"), 60, collector.spin), \
            (tmp_path / "ft2.log").read_text()[-3000:]
        assert collector.items[-1]["version"] == 1 and collector.items[-1].get("resumed") is True
        assert stop(proc, signal.SIGINT) == 0
        assert sorted(p.name for p in out.iterdir()) == ["v0001"]

        # Restart with another model in the same output_dir: its lineage is refused, not resumed or announced.
        make_checkpoint(tmp_path / "init2", seed=1)
        collector.items.clear()
        diag.latest.clear()
        no_round = {**params, "checkpoint": str(tmp_path / "init2"), "min_new_steps": 100_000}  # only the resume logic
        proc = start_node("finetuner_node", no_round, tmp_path / "ft3.log")
        # A status the stopped second node sent may still arrive after the clear: wait for the third node's own.
        third = lambda: (diag.find("finetuner") or {}).get("parent", "").endswith("init2")  # noqa: E731
        assert wait_for(third, 60, collector.spin), (diag.find("finetuner"), (tmp_path / "ft3.log").read_text()[-3000:])
        assert not collector.items, "another model's lineage must not be re-announced"
        assert stop(proc, signal.SIGINT) == 0
        assert "not a dynamics-only descendant" in (tmp_path / "ft3.log").read_text()
    finally:
        if proc.poll() is None:
            stop(proc, signal.SIGKILL)
        rclpy.shutdown(context=context)


@pytest.mark.timeout(300)
def test_forged_chunk_counts_start_no_round(tmp_path):
    """Regression: the finetuner took ``known_steps = max(known_steps, total_steps, disk)`` from any
    chunk_ready, so one forged huge count started round after round (and hot swaps) on data that did not
    exist. The fix counts only sealed chunks on disk; the message is a doorbell."""
    make_checkpoint(tmp_path / "init")
    fill_replay(tmp_path / "replay", 50)
    key_file = create_key_file(tmp_path / "launch" / "model_update.key")
    params = {"robot": "go2", "checkpoint": str(tmp_path / "init"), "replay_dir": str(tmp_path / "replay"),
              "output_dir": str(tmp_path / "ckpt"), "min_new_steps": 100, "steps_per_round": 1, "batch_size": 8,
              "check_period_s": 0.2, "update_key_file": str(key_file)}
    proc = start_node("finetuner_node", params, tmp_path / "ft.log")
    log = lambda: (tmp_path / "ft.log").read_text()[-3000:]  # noqa: E731
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        collector = AnnounceCollector(context, topics.MODEL_UPDATE)
        diag = DiagnosticsCollector(context, collector.executor)
        pub = collector.node.create_publisher(String, topics.CHUNK_READY, qos.ANNOUNCE)

        def values():
            return diag.find("finetuner") or {}

        assert wait_for(lambda: values().get("known_steps") == "50", 120, collector.spin), log()
        forged = {"path": "/nowhere/chunk-999999", "steps": 10**9, "sha256": "0" * 64, "index": 999999,
                  "total_steps": 10**9, "dropped": {}}
        pub.publish(String(data=json.dumps(forged)))
        assert wait_for(lambda: values().get("chunk_counts_refused") == "1", 60, collector.spin), log()
        pub.publish(String(data="{not json"))
        assert wait_for(lambda: values().get("chunk_ready_malformed") == "1", 60, collector.spin), log()
        diag.latest.clear()  # a report written after both were handled
        assert wait_for(lambda: values().get("known_steps"), 60, collector.spin)
        assert values()["rounds"] == "0" and values()["known_steps"] == "50", f"forged count: a round: {values()}"
        assert "counting only those on disk" in log()

        # Real data arriving on disk does start a round: the doorbell works, only its count is ignored.
        fill_replay(tmp_path / "replay", 100, seed=1, shard="shard-replay-0001")
        pub.publish(String(data=json.dumps({**forged, "total_steps": 100})))
        assert wait_for(lambda: values().get("rounds") == "1", 60, collector.spin), log()
        assert values()["known_steps"] == "150" and values()["chunk_counts_refused"] == "1"
        assert stop(proc, signal.SIGINT) == 0, log()
    finally:
        if proc.poll() is None:
            stop(proc, signal.SIGKILL)
        rclpy.shutdown(context=context)


def test_finetuner_refuses_to_start_without_a_safe_key(tmp_path):
    import os
    import subprocess
    import sys

    make_checkpoint(tmp_path / "init")
    key_file = create_key_file(tmp_path / "k.key")
    os.chmod(key_file, 0o644)
    base = ["--ros-args", "-p", f"checkpoint:={tmp_path / 'init'}", "-p", f"output_dir:={tmp_path / 'ckpt'}"]
    for extra, message in (([], "update_key_file must name"),
                           (["-p", f"update_key_file:={key_file}"], "chmod 600")):
        boot = "import sys; from simdist_ros.finetuner_node import main; sys.exit(main())"
        result = subprocess.run([sys.executable, "-c", boot, *base, *extra],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 1 and message in result.stdout + result.stderr, result.stderr[-2000:]


def test_latest_checkpoint_skips_corrupt(tmp_path):
    make_checkpoint(tmp_path / "v0001", version=1)
    make_checkpoint(tmp_path / "v0002", version=2)
    weights = tmp_path / "v0002" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-10])  # truncated: must be skipped
    assert latest_checkpoint(tmp_path) == (1, tmp_path / "v0001")


@pytest.mark.timeout(180)
def test_worker_round_anchors_to_the_configured_checkpoint_not_to_its_parent(tmp_path):
    """A later round's parent is an earlier finetune; the action-effect anchor keeps the lineage's root."""
    from simdist_core.checkpoint import load_checkpoint
    from simdist_ros.finetuner_node import run_round

    make_checkpoint(tmp_path / "init")
    model, _ = load_checkpoint(tmp_path / "init")
    with torch.no_grad():  # an earlier round's dynamics: actions act differently than in the root
        model.dynamics.action_embed.weight.mul_(1.5)
    save_checkpoint(tmp_path / "v0001", model, version=1, parent_version=0, parts_changed=("dynamics",))
    fill_replay(tmp_path / "replay", 300)
    config = {"steps": 3, "batch_size": 8, "holdout_fraction": 0.2, "seed": 0, "anchor_weight": 1.0}
    results = {}
    for name, anchor_to in (("root", str(tmp_path / "init")), ("none", None)):
        job = {"parent": str(tmp_path / "v0001"), "replay_dir": str(tmp_path / "replay"),
               "output_dir": str(tmp_path / f"out_{name}"), "config": config, "cpu_duty": 1.0, "anchor_to": anchor_to}
        results[name] = run_round(job)["report"]
    assert results["root"]["anchor_first"] > 0, "the parent's action effect differs from the root's"
    assert results["none"]["anchor_first"] == 0.0, "without anchor_to the round anchors to its own parent"
    config.pop("anchor_weight")
    job = {"parent": str(tmp_path / "v0001"), "replay_dir": str(tmp_path / "replay"),
           "output_dir": str(tmp_path / "out_off"), "config": config, "cpu_duty": 1.0, "anchor_to": None}
    assert run_round(job)["report"]["anchor_first"] is None  # off by default: the method as published


@pytest.mark.timeout(180)
def test_finetuner_loop_guard_reads_the_planner_counters_and_survives_forged_ones(tmp_path):
    """The guard's input is the planner's status on /diagnostics: between rounds it learns the loop's miss rate
    from the counters' increments; a malformed status is counted and changes nothing."""
    from simdist_ros import msgs

    make_checkpoint(tmp_path / "init")
    key_file = create_key_file(tmp_path / "launch" / "model_update.key")
    params = {"robot": "go2", "checkpoint": str(tmp_path / "init"), "replay_dir": str(tmp_path / "replay"),
              "output_dir": str(tmp_path / "ckpt"), "check_period_s": 0.2, "update_key_file": str(key_file)}
    proc = start_node("finetuner_node", params, tmp_path / "ft.log")
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        diag = DiagnosticsCollector(context)
        pub = diag.node.create_publisher(msgs.DiagnosticArray, topics.DIAGNOSTICS, qos.RELIABLE)

        def planner(ticks, missed, late):
            status = msgs.make_status("planner: planner", "ok", "",
                                      {"ticks": ticks, "missed_ticks": missed, "deadline_misses": late})
            pub.publish(msgs.make_diagnostics([status], 0))

        assert wait_for(lambda: diag.find("finetuner") is not None, 120, diag.spin), \
            (tmp_path / "ft.log").read_text()[-3000:]
        finetuner = lambda: diag.find("finetuner")  # noqa: E731
        assert finetuner()["loop_guard_duty"] == "0.1" and finetuner()["loop_baseline_missed"] == "0"
        counts = [(100, 0, 0), (190, 10, 5), (280, 20, 10)]  # 10 % missed and 5 % late in each report after the first
        for ticks, missed, late in counts:
            planner(ticks, missed, late)
            diag.spin(0.3)
        assert wait_for(lambda: float(finetuner()["loop_baseline_missed"]) > 0.015, 10, diag.spin), finetuner()
        assert float(finetuner()["loop_baseline_late"]) > 0.0075, finetuner()
        assert finetuner()["running"] == "False" and finetuner()["loop_guard_duty"] == "0.1"
        baseline = finetuner()["loop_baseline_missed"]
        status = msgs.make_status("planner: planner", "ok", "", {"ticks": "lots", "missed_ticks": "1"})
        pub.publish(msgs.make_diagnostics([status], 0))
        assert wait_for(lambda: finetuner()["loop_reports_malformed"] == "1", 10, diag.spin), finetuner()
        assert finetuner()["loop_baseline_missed"] == baseline
        assert stop(proc, signal.SIGINT) == 0, (tmp_path / "ft.log").read_text()[-3000:]
    finally:
        if proc.poll() is None:
            stop(proc, signal.SIGKILL)
        rclpy.shutdown(context=context)


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("large_pages", "seen"), [(True, "1"), (False, "None")])
def test_the_worker_gets_2mb_pages_unless_turned_off(tmp_path, large_pages, seen):
    """``large_pages`` (default true) starts the worker with ``THP_MEM_ALLOC_ENABLE=1``, read by torch's first
    allocation there; with it off the worker keeps the environment the node was started with."""
    import os
    import subprocess
    import sys

    make_checkpoint(tmp_path / "init")
    key_file = create_key_file(tmp_path / "k.key")
    args = ["--ros-args", "-p", f"checkpoint:={tmp_path / 'init'}", "-p", f"output_dir:={tmp_path / 'ckpt'}",
            "-p", f"replay_dir:={tmp_path / 'replay'}", "-p", f"update_key_file:={key_file}",
            "-p", f"large_pages:={str(large_pages).lower()}"]
    boot = ("import os, sys, rclpy; from simdist_ros.finetuner_node import FinetunerNode; rclpy.init(args=sys.argv); "
            "node = FinetunerNode(); print('worker sees', node._pool.submit(os.getenv, 'THP_MEM_ALLOC_ENABLE')"
            ".result(timeout=120)); node.destroy_node(); rclpy.shutdown()")
    env = {k: v for k, v in os.environ.items() if k != "THP_MEM_ALLOC_ENABLE"}
    result = subprocess.run([sys.executable, "-c", boot, *args], capture_output=True, text=True, timeout=240, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"worker sees {seen}" in result.stdout, result.stdout[-2000:]
