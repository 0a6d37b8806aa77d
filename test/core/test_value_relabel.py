"""New value labels without new rollouts: ``simdist value relabel``, a value-head-only finetune on them
(``FinetuneConfig.value_weight``), and ``simdist checkpoint graft`` of the new head into another checkpoint."""

import json
import shutil

import numpy as np
import pytest
import torch
from _train_testlib import fit_normalizers, tiny_model
from simdist_core.checkpoint import graft_main, load_checkpoint, read_manifest, save_checkpoint
from simdist_core.data import generate
from simdist_core.data.dataset import Dataset
from simdist_core.data.relabel import main as relabel_main
from simdist_core.data.relabel import relabel_values
from simdist_core.data.value_labels import ValueFunction
from simdist_core.training.adapt import FinetuneConfig, finetune_dynamics
from simdist_core.training.common import OptimConfig
from simdist_core.training.trainer import evaluate_loss, finetune_loss_weights

pytestmark = pytest.mark.timeout(600)
torch.set_num_threads(1)


def _generate(out, steps, seed, value_episodes):
    args = ["--robot", "go2", "--task", "flat", "--steps", str(steps), "--seed", str(seed), "--out", str(out),
            "--set", "episode_length_s=1", "--set", f"data.value.episodes={value_episodes}",
            "--set", "data.value.train_steps=60", "--set", "data.value.branch_states=2",
            "--set", "data.value.branch_steps=10", "--chunk-steps", "60", "--no-fsync"]
    assert generate.main(args) == 0
    return out


@pytest.fixture(scope="module")
def relabelled(tmp_path_factory):
    """A small dataset, a value function fitted apart from it (other seed, more episodes), and the relabelled copy."""
    root = tmp_path_factory.mktemp("relabel")
    data = _generate(root / "data", 400, 3, 1)
    other = _generate(root / "other", 10, 9, 3)
    out = root / "relabelled"
    assert relabel_main(["--data", str(data), "--value-fn", str(other), "--out", str(out)]) == 0
    return data, other, out


def test_relabel_recomputes_only_the_value_field(relabelled):
    data, other, out = relabelled
    src, dst, vf = Dataset(data), Dataset(out), ValueFunction.load(other)
    assert dst.n_steps == src.n_steps and set(dst.fields) == set(src.fields)
    rows = np.arange(src.n_steps)
    for name in src.fields:
        if name != "value":
            np.testing.assert_array_equal(dst.gather(name, rows), src.gather(name, rows))
    expected = vf(src.gather("priv/value_features", rows))
    expected[src.gather("terminated", rows).astype(bool)] = 0.0
    np.testing.assert_allclose(dst.gather("value", rows), expected, rtol=1e-6, atol=1e-6)
    assert not np.allclose(dst.gather("value", rows), src.gather("value", rows))  # the labels did change
    info = json.loads((out / "dataset.json").read_text())
    assert info["value_fn_sha256"] == vf.meta["weights_sha256"] != info["relabelled"]["from_value_fn_sha256"]
    assert info["relabelled"]["from_sha256"] == src.checksum() and info["relabelled"]["summary"]["rows"] == src.n_steps
    assert ValueFunction.load(out).meta["weights_sha256"] == vf.meta["weights_sha256"]  # stored with its labels


def test_relabel_refuses_bad_input_and_writes_nothing(relabelled, tmp_path, capsys):
    data, other, out = relabelled
    assert relabel_main(["--data", str(data), "--value-fn", str(other), "--out", str(out)]) == 2  # exists
    assert relabel_main(["--data", str(data), "--value-fn", str(tmp_path), "--out", str(tmp_path / "x")]) == 2
    corrupt = tmp_path / "corrupt"
    shutil.copytree(data, corrupt)
    value_file = next(corrupt.rglob("chunk-*/value.npy"))
    blob = bytearray(value_file.read_bytes())
    blob[-1] ^= 0xFF  # same size, different bytes: only the checksum can tell
    value_file.write_bytes(bytes(blob))
    capsys.readouterr()
    assert relabel_main(["--data", str(corrupt), "--value-fn", str(other), "--out", str(tmp_path / "y")]) == 2
    assert "sha256" in capsys.readouterr().err
    assert not (tmp_path / "y").exists() and not list(tmp_path.glob(".y.tmp-*"))
    wrong = ValueFunction({**ValueFunction.load(other).weights, "n_features": np.array([3])}, {})
    with pytest.raises(ValueError, match="value features"):
        relabel_values(data, tmp_path / "z", wrong)


def test_value_weight_trains_the_value_head_alone_on_the_new_labels(relabelled):
    _, _, out = relabelled
    dataset = Dataset(out)
    model = tiny_model("go2")
    fit_normalizers(model, dataset)
    model.fit_normalizer(values=dataset.gather("value", np.arange(dataset.n_steps)))
    cfg = FinetuneConfig(steps=150, batch_size=16, parts=("value",), value_weight=1.0, holdout_fraction=0.25,
                         holdout_windows=64, optim=OptimConfig(lr=3e-3, warmup_steps=5, cosine=False))  # fmt: skip
    new, report = finetune_dynamics(model, dataset, cfg)
    changed = {k.split(".")[0] for k, v in model.state_dict().items() if not torch.equal(v, new.state_dict()[k])}
    assert changed == {"value"}, changed
    assert "latent + value" in report.gate.reason, report.gate.reason  # the gate scores what was trained
    from simdist_core.data.sampler import WindowSampler
    from simdist_core.training.adapt import fixed_batches

    # the head fits its new labels (a tiny model with a random encoder: fit, not generalisation, is the claim)
    batches = fixed_batches(WindowSampler(dataset, model.spec, batch_size=16, seed=1), 128, 16, seed=1)
    weights = finetune_loss_weights(value=1.0)
    before, after = (evaluate_loss(m, batches, weights) for m in (model, new))
    assert after["value_encoded"] < 0.8 * before["value_encoded"] and after["value"] < 0.8 * before["value"], (
        before, after)
    assert after["consistency"] == pytest.approx(before["consistency"])  # dynamics and encoder untouched
    with pytest.raises(ValueError, match="add 'value'"):
        FinetuneConfig(value_weight=1.0)  # parts: dynamics only
    with pytest.raises(ValueError, match="value_weight"):
        FinetuneConfig(parts=("value",), value_weight=float("nan"))


def test_graft_takes_the_named_parts_and_keeps_the_rest(tmp_path, capsys):
    donor, recipient = tiny_model("go2", seed=1), tiny_model("go2", seed=2)
    save_checkpoint(tmp_path / "donor", donor, version=3)
    save_checkpoint(tmp_path / "recipient", recipient, version=5, extra={"task": "go2/foam"})
    out = tmp_path / "grafted"
    argv = ["--from", str(tmp_path / "donor"), "--parts", "value", "--into", str(tmp_path / "recipient")]
    assert graft_main([*argv, "--out", str(out)]) == 0
    grafted, manifest = load_checkpoint(out)
    d, r = read_manifest(tmp_path / "donor"), read_manifest(tmp_path / "recipient")
    assert manifest.parts["value"] == d.parts["value"] != r.parts["value"]
    assert all(manifest.parts[p] == r.parts[p] for p in manifest.parts if p != "value")
    assert manifest.version == 6 and manifest.parent_version == 5 and manifest.parts_changed == ("value",)
    assert manifest.extra["task"] == "go2/foam" and manifest.extra["graft"]["from_sha256"] == d.weights_sha256
    assert graft_main([*argv, "--out", str(out)]) == 2  # never overwrites
    save_checkpoint(tmp_path / "arm", tiny_model("ur5e"), version=1)
    capsys.readouterr()
    assert graft_main(["--from", str(tmp_path / "arm"), "--parts", "value", "--into", str(tmp_path / "recipient"),
                       "--out", str(tmp_path / "mixed")]) == 2  # fmt: skip
    assert "different robots" in capsys.readouterr().err and not (tmp_path / "mixed").exists()
    assert graft_main([*argv[:2], "--parts", "wheels", *argv[4:], "--out", str(tmp_path / "w")]) == 2
