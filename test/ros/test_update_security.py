"""Forged model updates over real DDS: the planner node (its own process) refuses each kind, counts it, keeps planning.

Regression for issue #16: the planner loaded whatever path ``model/update`` named, checked only a hash
the message itself supplied, took any version but the running one (rollbacks included), built the
model from the manifest's own config before comparing it, and read the weights with no size limit.
Now updates load only from ``update_dir`` and need the HMAC tag made with the key the finetuner shares.

The attacker here is a publisher on the DDS domain (this test's Observer). Some forgeries carry a valid
tag (as if the finetuner had been tricked into tagging them) so that each later check is shown to hold
on its own. The models are small random WorldModels: plumbing is under test, not skill.
"""

import hashlib
import json

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from node_harness import (
    NodeProcess,
    Observer,
    diag_values,
    fixed_latent_feed,
    signed_update,
    tiny_world_model,
    unique_namespace,
    update_source,
)
from simdist_core.checkpoint import MANIFEST_FILE, WEIGHTS_FILE, save_checkpoint, weights_size_limit
from simdist_core.models import WorldModel, WorldModelConfig
from simdist_core.robots import GO2
from std_msgs.msg import Float64MultiArray, String

from simdist_ros import qos, topics

HZ = 10.0
PLANNER = ["num_samples=16", "num_pi_samples=4", "iterations=1", "num_elites=4"]


def _finetuned(model, step):
    """``model`` with its dynamics moved (what a finetune round produces); other parts bit-identical."""
    import torch

    with torch.no_grad():
        for p in model.dynamics.parameters():
            p.add_(0.01 * step)
    return model


def _retag_oversized(path, key, limit):
    """Grow the weights past ``limit`` and rewrite the manifest's hash to match (as an insider could)."""
    weights = path / WEIGHTS_FILE
    with weights.open("ab") as f:
        f.truncate(limit + 4096)
    manifest = json.loads((path / MANIFEST_FILE).read_text())
    manifest["weights_sha256"] = hashlib.sha256(weights.read_bytes()).hexdigest()
    (path / MANIFEST_FILE).write_text(json.dumps(manifest))
    return signed_update(key, path)


@pytest.mark.timeout(300)
def test_forged_updates_are_refused_counted_and_the_old_model_keeps_planning(tmp_path):
    updates, key_file, key = update_source(tmp_path)
    evil = tmp_path / "elsewhere"
    model = tiny_world_model("go2")
    save_checkpoint(tmp_path / "shipped", model, version=1)
    ns = unique_namespace("update_security")
    params = {"checkpoint": str(tmp_path / "shipped"), "control_hz": HZ, "planner_overrides": PLANNER,
              "diagnostics_period_s": 0.25, "rollout_every_n": 0, "update_dir": str(updates),
              "update_key_file": str(key_file)}
    node = NodeProcess("planner_node", params, "planner", ns)
    obs = Observer(ns)
    try:
        commands = obs.collect(Float64MultiArray, topics.COMMAND, qos.command(HZ))
        diags = obs.collect(DiagnosticArray, topics.DIAGNOSTICS, qos.RELIABLE)
        update_pub = obs.publisher(String, topics.MODEL_UPDATE, qos.ANNOUNCE)
        feed = fixed_latent_feed(obs, HZ, seed=0, applied_delay=False)

        def values():
            return diag_values(diags, "planner")

        def count(key):
            return int(values().get(key, "-1"))

        def send(text, counter, expect, reason=None):
            """Publish one announcement, wait until ``counter`` reaches ``expect``; check the reason reported."""
            update_pub.publish(String(data=text))
            ok = obs.spin_until(lambda: count(counter) == expect, 60.0, on_spin=feed)
            assert ok, f"{counter} != {expect}: {values()}\n{node.log()[-3000:]}"
            if reason is not None:
                assert reason in values()["last_refusal"], values()["last_refusal"]

        def planned_commands():
            return sum(1 for c in commands if np.any(np.asarray(c.data) != 0.0))

        assert obs.spin_until(lambda: planned_commands() >= 5, 120.0, on_spin=feed), node.log()[-3000:]
        assert values()["updates_enabled"] == "True"

        # A genuine update first: the finetuner's path works, and v2 becomes the version to defend.
        save_checkpoint(updates / "v0002", _finetuned(model, 1), version=2, parent_version=1)
        v2_announcement = signed_update(key, updates / "v0002")
        send(v2_announcement, "swaps", 1)
        assert values()["model_version"] == "2"

        # 1. Not JSON.
        send("{'path': '/tmp/x'", "refused_malformed", 1, "not JSON")
        # 2. A valid checkpoint in the update folder, tagged with the wrong key (anyone on the domain).
        save_checkpoint(updates / "v0003", _finetuned(model, 2), version=3, parent_version=2)
        forged = json.loads(signed_update(b"\x01" * 32, updates / "v0003"))
        send(json.dumps(forged), "refused_unauthenticated", 1, "does not verify with the key")
        send(json.dumps({**forged, "tag": json.loads(v2_announcement)["tag"]}), "refused_unauthenticated", 2)
        # 3. A path outside the update folder (here even correctly tagged: the folder rule holds on its own).
        save_checkpoint(evil / "v0004", _finetuned(model, 3), version=4, parent_version=2)
        send(signed_update(key, evil / "v0004"), "refused_outside_update_dir", 1, "loads updates only from")
        # 4. The update folder's own name for v5 is a symlink out of it.
        save_checkpoint(evil / "v0005", _finetuned(model, 4), version=5, parent_version=2)
        (updates / "v0005").symlink_to(evil / "v0005")
        send(signed_update(key, updates / "v0005"), "refused_outside_update_dir", 2, "outside the update directory")
        # 5. Weights far larger than the running config needs (refused on the file size, never read).
        save_checkpoint(updates / "v0006", _finetuned(model, 5), version=6, parent_version=2)
        send(_retag_oversized(updates / "v0006", key, weights_size_limit(model)), "refused_oversized", 1,
             "a model of the running config needs at most")
        # 6. A model of another config (refused from the manifest, before any model is built).
        other = WorldModel(GO2, WorldModelConfig(latent_dim=8, width=16, heads=2, layers=1, ffn=32, policy_layers=1,
                                                 encoder_hidden=32))
        save_checkpoint(updates / "v0007", other, version=7, parent_version=2)
        send(signed_update(key, updates / "v0007"), "refused_config_mismatch", 1, "model config differs")
        assert values()["model_version"] == "2" and count("swaps") == 1

        # 7. Another genuine update, then the old one replayed, a correctly tagged rollback, a replay of the
        # running one (the finetuner re-announcing after a restart: ignored, not a refusal).
        save_checkpoint(updates / "v0009", _finetuned(model, 6), version=9, parent_version=2)
        v9_announcement = signed_update(key, updates / "v0009")
        send(v9_announcement, "swaps", 2)
        send(v2_announcement, "refused_not_newer", 1, "version 2 is not newer than version 9")
        send(signed_update(key, updates / "v0003"), "refused_not_newer", 2, "version 3 is not newer")
        send(v9_announcement, "updates_already_running", 1)

        final = values()
        assert final["model_version"] == "9" and count("swaps") == 2
        assert count("swaps_refused") == 9, final  # 1 malformed + 2 tag + 2 path + 1 size + 1 config + 2 older
        assert int(final["refused_invalid"]) == 0, "every forgery was caught by its own check"
        commands.clear()
        assert obs.spin_until(lambda: planned_commands() >= 10, 60.0, on_spin=feed), "the model must keep planning"
        # Refusals are logged with their reason (at most 5 lines per 10 s, so a flood cannot fill the disk).
        log = node.log()
        assert "refused model update (unauthenticated), keeping version 2" in log, log[-3000:]
        assert "refused model update (outside_update_dir)" in log, log[-3000:]
    finally:
        obs.close()
        rc = node.stop()
    assert rc == 0, node.log()[-3000:]
