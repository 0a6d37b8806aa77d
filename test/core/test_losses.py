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

TERMS = ("consistency", "reward", "value", "bc", "probe")


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
    weights = LossWeights(consistency=1, reward=2, value=3, bc=4, probe=5)
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
    assert logs["consistency"] == logs["reward"] == logs["value"] == logs["bc"] == 0.0
    assert logs["probe"] > 0
    batch["valid"][:] = True
    batch["clean_expert"][:] = False
    assert world_model_loss(model, batch)[1]["bc"] == 0.0
    # a corrupted reward on an invalid step must not change the loss
    batch["valid"][:, -1] = False
    base = world_model_loss(model, batch)[1]["reward"]
    batch["rewards"][:, -1] += 1000.0
    assert world_model_loss(model, batch)[1]["reward"] == pytest.approx(base, rel=1e-6)


def test_dynamics_finetune_batch_needs_only_obs_actions_valid():
    torch.manual_seed(0)
    model = WorldModel(GO2, SMALL)
    batch = {k: v for k, v in make_batch(GO2).items() if k in ("obs", "actions", "valid")}
    loss, logs = world_model_loss(model, batch, LossWeights(consistency=1, reward=0, value=0, bc=0, probe=0))
    assert set(logs) == {"consistency", "loss"} and loss.item() > 0


def test_a_few_adam_steps_lower_the_loss():
    torch.manual_seed(0)
    model = WorldModel(GO2, SMALL)
    batch = make_batch(GO2, batch=8)
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    first = None
    for _ in range(30):
        loss, _ = world_model_loss(model, batch)
        first = first if first is not None else loss.item()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    assert loss.item() < 0.5 * first
