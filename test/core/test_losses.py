"""World-model loss: each term trains exactly the parts it should, masks work, training lowers it."""

import pytest
import torch
from simdist_core.models import LossWeights, WorldModel, WorldModelConfig
from simdist_core.planning.bench import random_model_input
from simdist_core.robots import GO2, UR5E
from simdist_core.training.losses import world_model_loss

SMALL = WorldModelConfig(latent_dim=16, width=16, heads=2, ffn=32, encoder_hidden=32, policy_layers=1)


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """The CI machine has 2 shared cores: 2 intra-op threads contend with everything else running."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)

TERMS = ("consistency", "reward", "value", "reward_encoded", "value_encoded", "bc", "probe")


def make_batch(spec, batch=4, horizon=5, seed=0):
    """A WindowBatch with the contract's keys and shapes (random content)."""
    g = torch.Generator().manual_seed(seed)
    steps = [random_model_input(spec, batch=batch, seed=seed + k) for k in range(horizon + 1)]
    obs = {key: torch.stack([s[key] for s in steps], dim=1) for key in steps[0]}  # (B, H+1, ...)
    return {
        "obs": obs,
        "actions": torch.rand(batch, horizon, spec.action_dim, generator=g) * 2 - 1,
        "rewards": torch.randn(batch, horizon, generator=g),
        "values": torch.randn(batch, horizon, generator=g) * 5,
        "clean_expert": torch.rand(batch, horizon, generator=g) > 0.3,
        "valid": torch.ones(batch, horizon, dtype=torch.bool),
        "probe": torch.randn(batch, horizon + 1, 3, generator=g),
    }


def _only(term):
    return LossWeights(**{t: (1.0 if t == term else 0.0) for t in TERMS})


# term -> parts whose parameters receive gradient (hand-derived from the loss definitions)
EXPECTED_PARTS = {
    "consistency": {"encoder", "dynamics"},
    "reward": {"encoder", "dynamics", "reward"},
    "value": {"encoder", "dynamics", "value"},
    "reward_encoded": {"reward"},  # on stop-grad encoder latents: the heads fit the encoder, never reshape it
    "value_encoded": {"value"},
    "bc": {"encoder", "policy"},
    "probe": {"probe"},
}


@pytest.mark.parametrize("term", TERMS)
def test_gradients_reach_exactly_the_expected_parts(term):
    torch.manual_seed(0)
    model = WorldModel(GO2, SMALL)
    loss, logs = world_model_loss(model, make_batch(GO2), _only(term))
    assert set(logs) == {term, "loss"}
    loss.backward()
    reached = {
        name for name, part in model.parts().items()
        if any(p.grad is not None and p.grad.abs().sum() > 0 for p in part.parameters())
    }
    assert reached == EXPECTED_PARTS[term]


def test_all_terms_logged_and_weighted_sum():
    torch.manual_seed(0)
    model = WorldModel(UR5E, SMALL)
    weights = LossWeights(consistency=1, reward=2, value=3, reward_encoded=6, value_encoded=7, bc=4, probe=5)
    loss, logs = world_model_loss(model, make_batch(UR5E), weights)
    assert set(logs) == {*TERMS, "loss"}
    expected = sum(getattr(weights, t) * logs[t] for t in TERMS)
    assert loss.item() == pytest.approx(expected, rel=1e-5)
    assert all(torch.isfinite(torch.tensor(v)) for v in logs.values())


def test_masks_remove_invalid_and_perturbed_steps():
    torch.manual_seed(0)
    model = WorldModel(GO2, SMALL)
    batch = make_batch(GO2)
    batch["valid"][:] = False
    batch["clean_expert"][:] = True
    _, logs = world_model_loss(model, batch)
    # nothing valid: every masked term is exactly 0; probe still counts step 0 of each window
    assert all(logs[t] == 0.0 for t in TERMS if t != "probe")
    assert logs["probe"] > 0
    batch["valid"][:] = True
    batch["clean_expert"][:] = False
    assert world_model_loss(model, batch)[1]["bc"] == 0.0
    # a corrupted reward on an invalid step must not change the loss
    batch["valid"][:, -1] = False
    base = world_model_loss(model, batch)[1]["reward"]
    batch["rewards"][:, -1] += 1000.0
    assert world_model_loss(model, batch)[1]["reward"] == pytest.approx(base, rel=1e-6)


def test_head_terms_are_quadratic_near_the_target_and_linear_for_outliers():
    """A rare exploding penalty must not dominate: the error's cost grows linearly beyond 1 normalised unit."""
    torch.manual_seed(0)
    model = WorldModel(GO2, SMALL)
    batch = make_batch(GO2)
    weights = LossWeights(consistency=0, reward=1, value=0, reward_encoded=0, value_encoded=0, bc=0, probe=0)

    def reward_loss(offset):
        shifted = dict(batch, rewards=batch["rewards"].clone())
        shifted["rewards"][0, 0] += offset * float(model.reward_head.target_std)
        return world_model_loss(model, shifted, weights)[1]["reward"]

    base = reward_loss(0.0)
    growth_100, growth_1000 = reward_loss(100.0) - base, reward_loss(1000.0) - base
    assert growth_1000 == pytest.approx(10 * growth_100, rel=0.05)  # linear, not 100x as MSE would be

def test_dynamics_finetune_batch_needs_only_obs_actions_valid():
    torch.manual_seed(0)
    model = WorldModel(GO2, SMALL)
    batch = {k: v for k, v in make_batch(GO2).items() if k in ("obs", "actions", "valid")}
    weights = LossWeights(consistency=1, reward=0, value=0, reward_encoded=0, value_encoded=0, bc=0, probe=0)
    loss, logs = world_model_loss(model, batch, weights)
    assert set(logs) == {"consistency", "loss"} and loss.item() > 0


def test_a_few_adam_steps_lower_the_loss():
    torch.manual_seed(0)
    model = WorldModel(GO2, SMALL)
    batch = make_batch(GO2, batch=8)
    model.fit_normalizer(rewards=batch["rewards"], values=batch["values"])  # as pretraining does
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    first = None
    for _ in range(30):
        loss, _ = world_model_loss(model, batch)
        first = first if first is not None else loss.item()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    assert loss.item() < 0.5 * first
