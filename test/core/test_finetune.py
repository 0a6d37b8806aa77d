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
from simdist_core.training.anchor import action_effect_drift
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


@pytest.fixture(scope="module")
def flat_data(shifted, tmp_path_factory):
    """Nominal (flat-ground) data of the same tiny model: what a replay of the simulation data draws from."""
    root = tmp_path_factory.mktemp("flat")
    return collect(root / "replay", "go2/flat", model=shifted[0], episodes=4, seed=200), \
        collect(root / "held", "go2/flat", model=shifted[0], episodes=3, seed=700)


def test_replay_puts_simulation_windows_into_every_training_batch(shifted, flat_data, monkeypatch):
    from simdist_core.training import adapt

    model, train, _ = shifted
    replay, _ = flat_data
    cfg = _config(steps=3, replay_fraction=0.25)
    assert cfg.split_batch() == (12, 4) and _config().split_batch() == (16, 0)
    seen = []
    update = adapt.DynamicsFinetuner.update
    monkeypatch.setattr(adapt.DynamicsFinetuner, "update", lambda self, b: seen.append(b) or update(self, b))
    new, report = finetune_dynamics(model, train, cfg, replay=replay)
    assert report.replay_per_batch == 4 and report.to_json()["replay_per_batch"] == 4
    # The last 4 windows of each batch are the replay sampler's draws (its own seed), the first 12 the robot's.
    expected = WindowSampler(replay, model.spec, batch_size=4, seed=cfg.seed + 2)
    for batch in seen:
        assert batch["actions"].shape[0] == 16
        torch.testing.assert_close(batch["actions"][12:], expected.sample()["actions"])
    robot = WindowSampler(train, model.spec, batch_size=16, seed=0)
    robot_windows = robot.sample(robot.starts)["actions"].flatten(1)  # every window of the robot's experience
    for batch in seen:
        rows = batch["actions"][:12].flatten(1)
        assert all(bool((robot_windows == row).all(1).any()) for row in rows), "a robot row is not robot data"
        assert not any(bool((robot_windows == row).all(1).any()) for row in batch["actions"][12:].flatten(1))
    changed = {k.split(".")[0] for k, v in model.state_dict().items() if not torch.equal(v, new.state_dict()[k])}
    assert changed == {"dynamics"}, "replay changes what the batches hold, not which parts train"


def test_replay_keeps_the_simulation_dynamics_that_robot_data_alone_overwrites(shifted, flat_data):
    model, train, held = shifted
    replay, flat_held = flat_data
    plain, _ = finetune_dynamics(model, train, _config(steps=150))
    mixed, _ = finetune_dynamics(model, train, _config(steps=150, replay_fraction=0.5), replay=replay)
    models = {"before": model, "plain": plain, "mixed": mixed}
    flat_err, shifted_err = ({name: evaluate_loss(m, batches, finetune_loss_weights())["consistency"]
                              for name, m in models.items()}
                             for batches in (_holdout(flat_held, model.spec), _holdout(held, model.spec)))
    assert flat_err["mixed"] < flat_err["plain"], flat_err
    assert shifted_err["mixed"] < shifted_err["before"], shifted_err  # and it still learns the new floor


def test_replay_needs_data_and_a_fraction_below_one(shifted):
    model, train, _ = shifted
    with pytest.raises(ValueError, match="replay data"):
        finetune_dynamics(model, train, _config(steps=1, replay_fraction=0.5))
    for bad in (1.0, -0.1, float("nan")):
        with pytest.raises(ValueError, match="replay_fraction"):
            _config(replay_fraction=bad)


@pytest.fixture(scope="module")
def shifted_with_reward(shifted, tmp_path_factory):
    """Shifted experience that also records the simulator's reward of each transition (train, held out)."""
    model, _, _ = shifted
    root = tmp_path_factory.mktemp("rewarded")
    return (collect(root / "train", SHIFTED, model=model, episodes=8, seed=0, record_reward=True),
            collect(root / "held", SHIFTED, model=model, episodes=4, seed=500, record_reward=True))


def test_reward_weight_fits_the_reward_head_to_the_recorded_reward(shifted, shifted_with_reward):
    model, _, _ = shifted
    train, held = shifted_with_reward
    assert "reward" in train.fields and float(np.abs(train.array("reward")).sum()) > 0
    cfg = _config(steps=80, parts=("dynamics", "reward"), reward_weight=1.0)
    new, report = finetune_dynamics(model, train, cfg)
    changed = {k.split(".")[0] for k, v in model.state_dict().items() if not torch.equal(v, new.state_dict()[k])}
    assert changed == {"dynamics", "reward"}, changed  # encoder, value, policy stay frozen
    holdout = _holdout(held, model.spec)
    reward_terms = finetune_loss_weights(reward=1.0)
    before, after = (evaluate_loss(m, holdout, reward_terms) for m in (model, new))
    assert after["reward_encoded"] < 0.9 * before["reward_encoded"], (before, after)  # episodes never trained on
    assert report.gate.passed and "latent + reward" in report.gate.reason, report.gate.reason
    # without the reward weight the same parts see only the latent loss: the reward head gets no gradient
    plain, _ = finetune_dynamics(model, train, _config(steps=5, parts=("dynamics", "reward")))
    assert all(torch.equal(v, plain.state_dict()[k]) for k, v in model.state_dict().items() if k.startswith("reward"))


def test_reward_on_encoded_latents_only_leaves_the_dynamics_to_the_latent_loss(shifted, shifted_with_reward):
    model, _, _ = shifted
    train, held = shifted_with_reward
    from simdist_core.training.common import OptimConfig

    # the one coupling left is the gradient-norm clip shared by all trained parts: off here to see the rest
    optim = OptimConfig(lr=1e-3, warmup_steps=5, cosine=False, grad_clip=0.0)
    encoded = _config(steps=40, parts=("dynamics", "reward"), reward_weight=1.0, reward_on_predicted=False, optim=optim)
    assert encoded.loss_weights.reward == 0.0 and encoded.loss_weights.reward_encoded == 1.0
    new, report = finetune_dynamics(model, train, encoded)
    plain, _ = finetune_dynamics(model, train, _config(steps=40, optim=optim))  # the method: same seed and batches
    both, _ = finetune_dynamics(model, train, _config(steps=40, parts=("dynamics", "reward"), reward_weight=1.0,
                                                      optim=optim))
    dynamics = [k for k in model.state_dict() if k.startswith("dynamics")]
    # no reward gradient reaches the dynamics: they end where the latent loss alone takes them ...
    assert all(torch.equal(new.state_dict()[k], plain.state_dict()[k]) for k in dynamics)
    # ... which fitting the head on predicted latents too does not
    assert not all(torch.equal(both.state_dict()[k], plain.state_dict()[k]) for k in dynamics)
    holdout = _holdout(held, model.spec)
    before, after = (evaluate_loss(m, holdout, finetune_loss_weights(reward=1.0)) for m in (model, new))
    assert after["reward_encoded"] < 0.9 * before["reward_encoded"], (before, after)
    assert "latent + reward" in report.gate.reason, report.gate.reason


def test_reward_weight_needs_recorded_rewards_and_the_reward_head(shifted):
    model, train, _ = shifted  # robot experience as recorded: no reward
    with pytest.raises(ValueError, match="reward per transition"):
        finetune_dynamics(model, train, _config(steps=1, parts=("dynamics", "reward"), reward_weight=1.0))
    with pytest.raises(ValueError, match="add 'reward'"):
        _config(reward_weight=1.0)  # parts: dynamics only
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="reward_weight"):
            _config(parts=("dynamics", "reward"), reward_weight=bad)
    assert _config(parts=("all",), reward_weight=0.5).loss_weights.reward == 0.5


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


def test_anchor_is_zero_for_the_reference_itself_and_grows_when_actions_act_differently(shifted):
    from simdist_core.training.anchor import ActionEffectAnchor

    model, train, _ = shifted
    batch = WindowSampler(train, model.spec, batch_size=16, seed=0).sample()
    anchor = ActionEffectAnchor(model, weight=2.0, noise_std=0.5, seed=1)
    same = copy.deepcopy(model)
    for p in same.dynamics.parameters():
        p.requires_grad_(True)
    term, logs = anchor(same, batch)
    assert float(term.detach()) == 0.0 and logs["anchor"] == 0.0
    term.backward()
    assert all(p.grad is None or not p.grad.any() for p in same.dynamics.parameters())
    bent = copy.deepcopy(model)
    with torch.no_grad():  # the same dynamics, but actions now move the predictions twice as hard
        bent.dynamics.action_embed.weight.mul_(2.0)
    term, logs = anchor(bent, batch)
    assert logs["anchor"] > 0 and float(term.detach()) == pytest.approx(2.0 * logs["anchor"])
    perturbed = anchor.perturb(batch["actions"])
    assert perturbed.abs().max() <= 1.0 and not torch.equal(perturbed, batch["actions"])


def test_anchor_keeps_the_simulation_action_effect_while_the_dynamics_learn_the_new_floor(shifted):
    model, train, held = shifted
    plain, _ = finetune_dynamics(model, train, _config(steps=150))
    anchored, report = finetune_dynamics(model, train, _config(steps=150, anchor_weight=10.0))
    assert "anchor" in report.history[-1] and report.history[-1]["loss"] > report.history[-1]["consistency"]
    changed = {k.split(".")[0] for k, v in model.state_dict().items() if not torch.equal(v, anchored.state_dict()[k])}
    assert changed == {"dynamics"}, changed
    holdout = _holdout(held, model.spec)  # episodes never trained on
    drift = {name: action_effect_drift(model, m, holdout, seed=99)
             for name, m in (("plain", plain), ("anchored", anchored))}  # fmt: skip
    assert drift["anchored"] < 0.2 * drift["plain"], drift
    err = {name: evaluate_loss(m, holdout, finetune_loss_weights())["consistency"]
           for name, m in (("before", model), ("anchored", anchored))}
    assert err["anchored"] < err["before"], err  # and it still learns the new floor
    # A later round starts from a finetune; anchored to the pretrained model, it pulls the action effect back.
    later, _ = finetune_dynamics(plain, train, _config(steps=150, anchor_weight=10.0), anchor_to=model)
    assert action_effect_drift(model, later, holdout, seed=99) < 0.5 * drift["plain"], drift


def test_anchor_on_start_windows_only_ignores_the_rest_of_each_episode(shifted):
    from simdist_core.training.anchor import ActionEffectAnchor

    model, train, _ = shifted
    batch = WindowSampler(train, model.spec, batch_size=64, seed=0).sample()
    bent = copy.deepcopy(model)
    with torch.no_grad():
        bent.dynamics.action_embed.weight.mul_(2.0)
    everywhere = ActionEffectAnchor(model, weight=1.0, noise_std=0.5, seed=1)
    start = int(batch["episode_step"].min()) + 1  # at least one window starts that early, not all of them
    assert (batch["episode_step"] >= start).any()
    at_start = ActionEffectAnchor(model, weight=1.0, noise_std=0.5, seed=1, start_steps=start)
    late = {key: value for key, value in batch.items()}
    late["episode_step"] = batch["episode_step"] + start  # every window now starts past the start window
    assert at_start(bent, late)[1]["anchor"] == 0.0
    assert at_start(bent, batch)[1]["anchor"] > 0.0 and everywhere(bent, batch)[1]["anchor"] > 0.0
    # It rolls out only the start windows, yet equals the anchor everywhere with the late windows masked out (the
    # same perturbations: they are drawn for every window either way).
    masked = {**batch, "valid": batch["valid"] & (batch["episode_step"] < start)[:, None]}
    value = ActionEffectAnchor(model, weight=1.0, noise_std=0.5, seed=1, start_steps=start)(bent, batch)[0]
    oracle = ActionEffectAnchor(model, weight=1.0, noise_std=0.5, seed=1)(bent, masked)[0]
    torch.testing.assert_close(value, oracle, rtol=1e-5, atol=0.0)
    rows = []
    predict = bent.predict
    bent.predict = lambda latent, actions: rows.append(actions.shape[0]) or predict(latent, actions)
    at_start(bent, batch)
    assert rows == [2 * int((batch["episode_step"] < start).sum())] and rows[0] < 2 * len(batch["episode_step"])
    # A window that covers every window's start is the anchor everywhere (same seed, same perturbations).
    widest = int(batch["episode_step"].max()) + 1
    wide = ActionEffectAnchor(model, weight=1.0, noise_std=0.5, seed=1, start_steps=widest)
    fresh = ActionEffectAnchor(model, weight=1.0, noise_std=0.5, seed=1)
    assert wide(bent, batch)[1]["anchor"] == fresh(bent, batch)[1]["anchor"]
    with pytest.raises(ValueError, match="start_steps"):
        ActionEffectAnchor(model, weight=1.0, noise_std=0.5, start_steps=0)


def test_anchor_needs_a_frozen_encoder_and_sane_settings():
    for parts in (("all",), ("dynamics", "encoder")):
        with pytest.raises(ValueError, match="frozen encoder"):
            _config(anchor_weight=1.0, parts=parts)
    for bad in ({"anchor_weight": -1.0}, {"anchor_weight": float("nan")}, {"anchor_noise_std": 0.0},
                {"anchor_noise_std": float("inf")}, {"anchor_start_s": -0.5}, {"anchor_start_s": float("nan")}):
        with pytest.raises(ValueError, match="anchor_"):
            _config(**bad)
    assert _config(parts=("all",)).anchor_weight == 0.0  # off by default: the method as published
