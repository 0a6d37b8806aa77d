"""Dynamics-only finetuning: frozen parts stay bit-identical, shifted data lowers held-out error, the gate refuses
worse models, and ``simdist finetune`` never writes a model that failed the gate."""

import copy
import json

import numpy as np
import pytest
import torch
from _train_testlib import collect, fit_normalizers, tiny_model
from simdist_core.checkpoint import load_checkpoint, save_checkpoint
from simdist_core.data.sampler import WindowSampler
from simdist_core.training.adapt import fixed_batches, recent_split
from simdist_core.training.finetune import (
    EXIT_GATE_FAILED,
    FinetuneConfig,
    finetune_dynamics,
    main,
    validation_gate,
)
from simdist_core.training.trainer import evaluate_loss, finetune_loss_weights

pytestmark = pytest.mark.timeout(600)

SHIFTED = "go2/ptfe_slope"  # 8 deg incline at foot friction 0.22: out of the nominal distribution

@pytest.fixture(scope="module")
def shifted(tmp_path_factory):
    """A tiny model (normalisers fitted on nominal data) + shifted train data + separate held-out shifted data."""
    root = tmp_path_factory.mktemp("shifted")
    torch.set_num_threads(1)
    model = tiny_model()
    nominal = collect(root / "nominal", "go2/flat", model=model, episodes=3, seed=100)
    fit_normalizers(model, nominal)
    train = collect(root / "train", SHIFTED, model=model, episodes=8, seed=0)
    held = collect(root / "held", SHIFTED, model=model, episodes=4, seed=500)
    return model, train, held


def _holdout(dataset, spec):
    sampler = WindowSampler(dataset, spec, batch_size=32, seed=0)
    return fixed_batches(sampler, 96, 32, seed=0)


def _config(**kw):
    from simdist_core.training.common import OptimConfig

    base = dict(steps=80, batch_size=16, holdout_fraction=0.25, holdout_windows=64,
                optim=OptimConfig(lr=1e-3, warmup_steps=5, cosine=False))
    base.update(kw)
    return FinetuneConfig(**base)


def test_dynamics_only_changes_only_dynamics(shifted):
    model, train, _ = shifted
    before = copy.deepcopy(model.state_dict())
    new, report = finetune_dynamics(model, train, _config(steps=20))
    after = new.state_dict()
    changed = {k.split(".")[0] for k in before if not torch.equal(before[k], after[k])}
    assert changed == {"dynamics"}, f"only dynamics may change, changed parts: {changed}"
    # the caller's model is untouched (finetuning works on a copy)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert report.parts == ("dynamics",) and report.steps == 20


def test_full_finetune_changes_encoder_too(shifted):
    model, train, _ = shifted
    new, _ = finetune_dynamics(model, train, _config(steps=5, parts=("all",)))
    changed = {k.split(".")[0] for k, v in model.state_dict().items() if not torch.equal(v, new.state_dict()[k])}
    assert {"encoder", "dynamics"} <= changed


def test_finetune_on_shifted_data_lowers_heldout_latent_error(shifted):
    model, train, held = shifted
    holdout = _holdout(held, model.spec)  # episodes never seen in training (different seeds)
    weights = finetune_loss_weights()
    before = evaluate_loss(model, holdout, weights)["consistency"]
    new, report = finetune_dynamics(model, train, _config())
    after = evaluate_loss(new, holdout, weights)["consistency"]
    assert after < 0.9 * before, f"held-out latent error {before:.5f} -> {after:.5f}"
    assert report.gate.passed, report.gate.reason


def test_gate_refuses_model_with_perturbed_dynamics(shifted):
    model, _, held = shifted
    holdout = _holdout(held, model.spec)
    degraded = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in degraded.dynamics.parameters():
            p.add_(0.5 * torch.randn(p.shape, generator=gen))
    verdict = validation_gate(model, degraded, holdout)
    assert not verdict.passed and verdict.new_loss > verdict.old_loss, verdict.reason
    assert validation_gate(degraded, model, holdout).passed  # and the other way round it is an improvement
    same = validation_gate(model, copy.deepcopy(model), holdout)
    assert not same.passed, "an unchanged model is not 'better'"


def test_recent_split_holds_out_the_newest_episodes(shifted):
    _, train, _ = shifted
    sampler = WindowSampler(train, train_spec := shifted[0].spec, batch_size=8)
    tr, hold = recent_split(sampler, 0.25)
    ds = train
    held_eps = np.unique(ds.row_episode[hold.starts])
    train_eps = np.unique(ds.row_episode[tr.starts])
    assert not set(held_eps) & set(train_eps)
    assert held_eps.min() > train_eps.max(), "the held-out episodes are the most recently recorded ones"
    assert train_spec.name == "go2"


def test_config_rejects_unknown_parts():
    with pytest.raises(ValueError, match="parts"):
        FinetuneConfig(parts=("wheels",))


def _save(model, path):
    save_checkpoint(path, model, version=7)
    return path


def test_cli_writes_dynamics_only_checkpoint(shifted, tmp_path):
    model, train, _ = shifted
    parent = _save(model, tmp_path / "parent")
    out = tmp_path / "child"
    rc = main(["--checkpoint", str(parent), "--data", str(train.path), "--out", str(out), "--steps", "60",
               "--set", "batch_size=16", "--set", "optim.lr=1e-3", "--set", "optim.warmup_steps=5",
               "--set", "holdout_fraction=0.25", "--no-progress", "--json", str(tmp_path / "r.json")])
    assert rc == 0
    child, manifest = load_checkpoint(out)
    _, parent_manifest = load_checkpoint(parent)
    assert manifest.version == 8 and manifest.parent_version == 7
    assert manifest.parts_changed == ("dynamics",)
    for part in ("encoder", "reward", "value", "policy", "probe"):
        assert manifest.parts[part] == parent_manifest.parts[part]
    assert manifest.parts["dynamics"] != parent_manifest.parts["dynamics"]
    assert manifest.extra["gate"]["passed"] is True
    assert json.loads((tmp_path / "r.json").read_text())["written"] is True


def test_cli_refuses_to_write_when_gate_fails(shifted, tmp_path, capsys):
    model, train, _ = shifted
    parent = _save(model, tmp_path / "parent")
    out = tmp_path / "child"
    # demanding a 99% lower held-out error cannot be met by 5 small steps
    rc = main(["--checkpoint", str(parent), "--data", str(train.path), "--out", str(out), "--steps", "5",
               "--set", "batch_size=16", "--set", "min_improvement=0.99", "--no-progress"])
    assert rc == EXIT_GATE_FAILED
    assert not out.exists()
    assert "GATE FAILED" in capsys.readouterr().err


def test_cli_refuses_existing_out(shifted, tmp_path):
    model, train, _ = shifted
    parent = _save(model, tmp_path / "parent")
    assert main(["--checkpoint", str(parent), "--data", str(train.path), "--out", str(parent)]) == 2


def test_cli_reports_missing_data_clearly(shifted, tmp_path, capsys):
    model, _, _ = shifted
    parent = _save(model, tmp_path / "parent")
    rc = main(["--checkpoint", str(parent), "--data", str(tmp_path / "nothing"), "--out", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert rc == 2 and "--data" in err and "nothing' does not exist" in err
    assert not (tmp_path / "c").exists()
