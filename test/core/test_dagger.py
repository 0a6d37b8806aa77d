"""``simdist dagger``: a planner drives a real task, the privileged expert's action at each reached state is stored as
the policy prior's imitation target, and ``simdist finetune --parts policy --set bc_weight=1`` fits the prior (only)
to those labels."""

import copy
import json

import numpy as np
import pytest
import torch
from _train_testlib import TINY_PLANNER, fit_normalizers, tiny_model
from simdist_core.checkpoint import save_checkpoint
from simdist_core.data.dagger import collect
from simdist_core.data.dagger import main as dagger_main
from simdist_core.data.dataset import Dataset
from simdist_core.data.sampler import WindowSampler
from simdist_core.experts import make_policy
from simdist_core.models.world_model import LossWeights
from simdist_core.planning.mppi import MPPIPlanner
from simdist_core.sim.base import make_env
from simdist_core.training.finetune import FinetuneConfig, finetune_dynamics
from simdist_core.training.finetune import main as finetune_main
from simdist_core.training.losses import world_model_loss

pytestmark = pytest.mark.timeout(600)

EPISODES, STEPS, SEED = 3, 30, 40


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """A tiny model's planner drives go2/slope with the heading hold; the expert labels every state."""
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("dagger")
    model = tiny_model()
    env = make_env("go2/slope", {})
    metrics = collect(env, MPPIPlanner(model, TINY_PLANNER, seed=0), root / "shard-dagger-0", episodes=EPISODES,
                      max_steps=STEPS, seed=SEED, heading_hold=True)
    dataset = Dataset(root)
    fit_normalizers(model, dataset)
    return model, dataset, metrics


def test_rows_hold_executed_actions_and_the_experts_labels(labelled):
    _, ds, metrics = labelled
    rows = np.arange(ds.n_steps)
    labels, executed = ds.gather("expert_action", rows), ds.gather("action", rows)
    clean = ds.gather("clean_expert", rows).astype(bool)
    steps = int(sum(m["steps"] for m in metrics))
    assert ds.n_steps == steps + EPISODES  # one final-observation row per episode
    assert clean.sum() == steps and not clean[ds.episode_ends - 1].any()  # final rows carry no label
    assert np.all(labels[~clean] == 0.0)
    assert np.all(np.abs(labels[clean]) <= 1.0) and np.all(np.isfinite(labels))
    # The untrained planner does not act like the expert: the label is the expert's, not the executed action.
    assert np.mean(np.abs(labels[clean] - executed[clean])) > 0.05


def test_first_label_is_what_the_expert_does_in_the_reset_state(labelled):
    _, ds, _ = labelled
    env = make_env("go2/slope", {})
    env.reset(seed=SEED)
    expected = np.clip(make_policy(env, 1.0, np.random.default_rng(SEED)).act(env), -1.0, 1.0)
    np.testing.assert_allclose(ds.gather("expert_action", np.array([0]))[0], expected, atol=1e-6)


def test_commands_recorded_are_the_held_ones_the_planner_saw(labelled):
    _, ds, _ = labelled
    yaw_rates = ds.gather("obs/command", np.arange(ds.n_steps))[:, 2]
    assert np.all(np.abs(yaw_rates) <= 0.5 + 1e-6)
    assert np.any(yaw_rates != 0.0)  # go2/slope commands yaw rate 0: a nonzero one is the hold's


def test_sampler_gives_labels_as_imitation_target_and_executed_actions_to_the_dynamics(labelled):
    model, ds, _ = labelled
    batch = WindowSampler(ds, model.spec, batch_size=8, seed=0).sample(starts=np.array([0, 5, 10]))
    h = model.spec.horizon
    for i, t in enumerate([0, 5, 10]):
        rows = np.arange(t, t + h)
        inside = rows < ds.episode_ends[0]
        torch.testing.assert_close(batch["actions"][i][inside], torch.from_numpy(ds.gather("action", rows[inside])))
        torch.testing.assert_close(batch["bc_actions"][i][inside],
                                   torch.from_numpy(ds.gather("expert_action", rows[inside])))


def test_store_without_labels_imitates_its_executed_actions(tmp_path):
    from _train_testlib import collect as collect_plain

    ds = collect_plain(tmp_path / "plain", episodes=1, max_steps=12)
    batch = WindowSampler(ds, tiny_model().spec, batch_size=4, seed=0).sample()
    assert torch.equal(batch["bc_actions"], batch["actions"])


def test_imitation_loss_reads_the_labels(labelled):
    model, ds, _ = labelled
    batch = WindowSampler(ds, model.spec, batch_size=16, seed=1).sample()
    weights = LossWeights(consistency=0, reward=0, value=0, reward_encoded=0, value_encoded=0, bc=1, probe=0)
    on_labels = world_model_loss(model, batch, weights)[1]["bc"]
    on_executed = world_model_loss(model, {**batch, "bc_actions": batch["actions"]}, weights)[1]["bc"]
    assert on_labels != on_executed


def _config(**kw):
    from simdist_core.training.common import OptimConfig

    base = dict(steps=60, batch_size=16, parts=("policy",), bc_weight=1.0, holdout_fraction=0.34,
                holdout_windows=48, optim=OptimConfig(lr=3e-3, warmup_steps=5, cosine=False))
    return FinetuneConfig(**{**base, **kw})


def test_finetune_fits_only_the_prior_to_the_labels(labelled):
    model, ds, _ = labelled
    before = copy.deepcopy(model.state_dict())
    new, report = finetune_dynamics(model, ds, _config())
    after = new.state_dict()
    changed = {k.split(".")[0] for k in before if not torch.equal(before[k], after[k])}
    assert changed == {"policy"}
    assert report.history[-1]["bc"] < report.history[0]["bc"]
    assert report.gate.passed, report.gate.reason


def test_bc_weight_needs_the_policy_part_and_labelled_data(labelled, tmp_path):
    from _train_testlib import collect as collect_plain

    with pytest.raises(ValueError, match="policy"):
        FinetuneConfig(bc_weight=1.0, parts=("dynamics",))
    with pytest.raises(ValueError, match="bc_weight"):
        FinetuneConfig(bc_weight=float("nan"), parts=("policy",))
    plain = collect_plain(tmp_path / "plain", episodes=2, max_steps=12)  # robot-style data: no expert at all
    with pytest.raises(ValueError, match="expert action labels"):
        finetune_dynamics(labelled[0], plain, _config(steps=2))


def test_cli_collects_and_refuses_a_second_run_into_the_same_shard(labelled, tmp_path, capsys):
    model, _, _ = labelled
    ckpt = tmp_path / "ckpt"
    save_checkpoint(ckpt, model, version=1)
    argv = ["--checkpoint", str(ckpt), "--task", "go2/flat", "--episodes", "1", "--seconds", "0.2", "--seed", "3",
            "--preset", "prior", "--heading-hold", "--out", str(tmp_path / "data")]
    assert dagger_main(argv) == 0
    assert (tmp_path / "data" / "dagger-3.json").is_file()
    assert Dataset(tmp_path / "data").n_steps == 11  # 10 steps + the final observation
    assert dagger_main(argv) == 2
    assert "already holds shard-dagger-3" in capsys.readouterr().err


def test_finetune_cli_needs_replay_data_for_a_replay_fraction(labelled, tmp_path, capsys):
    model, ds, _ = labelled
    ckpt = tmp_path / "ckpt"
    save_checkpoint(ckpt, model, version=1)
    code = finetune_main(["--checkpoint", str(ckpt), "--data", str(ds.path), "--parts", "policy", "--set",
                          "bc_weight=1", "--set", "replay_fraction=0.5", "--out", str(tmp_path / "out")])
    assert code == 2 and "needs --replay" in capsys.readouterr().err


def test_cli_labels_with_the_expert_overrides_it_is_given_and_refuses_unknown_ones(labelled, tmp_path, capsys):
    model, _, _ = labelled
    ckpt = tmp_path / "ckpt"
    save_checkpoint(ckpt, model, version=1)
    base = ["--checkpoint", str(ckpt), "--task", "go2/flat", "--episodes", "1", "--seconds", "0.2", "--preset",
            "prior", "--heading-hold"]
    assert dagger_main([*base, "--seed", "4", "--out", str(tmp_path / "a"), "--expert", "no_such_field=1"]) == 2
    assert "--expert" in capsys.readouterr().err and not (tmp_path / "a").exists()
    assert dagger_main([*base, "--seed", "4", "--out", str(tmp_path / "b"), "--expert", "accel_friction_cap=0.25"]) == 0
    record = json.loads((tmp_path / "b" / "dagger-4.json").read_text())
    assert record["expert_overrides"] == {"accel_friction_cap": "0.25"}
    assert dagger_main([*base, "--seed", "4", "--out", str(tmp_path / "c")]) == 0
    capped, plain = Dataset(tmp_path / "b"), Dataset(tmp_path / "c")
    # Same episode, same planner: the executed actions agree; the labels differ (the capped expert speeds up slower).
    executed = [ds.gather("action", np.arange(ds.n_steps - 1)) for ds in (capped, plain)]
    labels = [ds.gather("expert_action", np.arange(ds.n_steps - 1)) for ds in (capped, plain)]
    np.testing.assert_allclose(executed[0], executed[1], atol=1e-6)
    assert not np.allclose(labels[0], labels[1], atol=1e-4)
