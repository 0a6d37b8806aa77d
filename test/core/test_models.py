"""World model: shapes per encoder, causality of the multi-step dynamics, input validation, freezing."""

import dataclasses
import math

import pytest
import torch
from simdist_core.config import from_dict, to_dict
from simdist_core.models import ENCODERS, PART_NAMES, Latent, LossWeights, WorldModel, WorldModelConfig, freeze_except
from simdist_core.models.encoders import FIXTURE_OFFSET_CLIP, fixture_frame
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



def _make_model(spec=GO2, cfg=SMALL, seed=0):
    torch.manual_seed(seed)
    return WorldModel(spec, cfg)


@pytest.mark.parametrize("spec", [GO2, UR5E], ids=lambda s: s.name)
def test_reference_size_shapes_and_dtypes(spec):
    model = _make_model(spec, WorldModelConfig())
    assert isinstance(model.encoder, ENCODERS[spec.encoder])
    assert [name for name, _ in model.named_children()] == list(PART_NAMES)
    assert list(model.parts()) == list(PART_NAMES)
    b, h, a = 3, spec.horizon, spec.action_dim
    latent = model.encode(random_model_input(spec, batch=b))
    # context = T proprio tokens + T action tokens + z_t token = 25 + 25 + 1
    assert latent.z.shape == (b, 64) and latent.z.dtype == torch.float32
    assert latent.context.shape == (b, 2 * spec.history + 1, 64)
    # SimNorm: each group of 8 latent components is a softmax, so it sums to 1
    torch.testing.assert_close(latent.z.reshape(b, 8, 8).sum(-1), torch.ones(b, 8))
    actions = torch.rand(b, h, a) * 2 - 1
    zs = model.predict(latent, actions)
    assert zs.shape == (b, h, 64)
    assert model.reward(latent, zs, actions).shape == (b, h)
    assert model.value(latent, zs[:, -1:]).shape == (b, 1)
    prior = model.pi(latent)
    assert prior.shape == (b, h, a) and prior.abs().max() < 1
    assert model.decode_probe(zs).shape == (b, h, 3)
    # the reference model has ~0.67 M parameters; ours is within the same size class
    assert 0.5e6 < model.num_parameters()["total"] < 1.0e6


def test_heads_reachable_as_parts_and_methods():
    model = _make_model()
    assert model.parts()["reward"] is model.reward_head and model.parts()["value"] is model.value_head
    assert callable(model.reward) and not isinstance(model.reward, torch.nn.Module)
    assert any(k.startswith("reward.") for k in model.state_dict())


@pytest.mark.parametrize("kind", ["transformer", "mlp"])
def test_dynamics_is_causal_and_batch1_context_broadcasts(kind):
    model = _make_model(cfg=dataclasses.replace(SMALL, dynamics=kind)).eval()
    latent = model.encode(random_model_input(GO2, batch=1))
    actions = torch.rand(6, 10, 12) * 2 - 1
    changed = actions.clone()
    changed[:, 4:] = -changed[:, 4:]
    with torch.no_grad():
        zs = model.predict(latent, actions)
        zs_changed = model.predict(latent, changed)
        expanded = Latent(latent.z.expand(6, -1), latent.context.expand(6, -1, -1))
        zs_expanded = model.predict(expanded, actions)
    # output k is z_{t+k+1}: it depends on a_t..a_{t+k} only, so steps 0..3 are unchanged
    torch.testing.assert_close(zs[:, :4], zs_changed[:, :4])
    assert (zs[:, 4:] - zs_changed[:, 4:]).abs().max() > 1e-4
    # sharing one context's keys/values across N candidates is exact
    torch.testing.assert_close(zs, zs_expanded, rtol=1e-5, atol=1e-5)


def test_encode_rejects_bad_input_with_clear_errors():
    model = _make_model(UR5E)
    obs = random_model_input(UR5E, batch=2)
    with pytest.raises(KeyError, match="'image'"):
        model.encode({k: v for k, v in obs.items() if k != "image"})
    with pytest.raises(ValueError, match=r"'proprio' has shape \(2, 24, 23\), expected \(B, \(25, 23\)\)"):
        model.encode({**obs, "proprio": obs["proprio"][:, 1:]})
    with pytest.raises(ValueError, match="'image' must be uint8"):
        model.encode({**obs, "image": obs["image"].float()})
    bad = obs["prev_actions"].clone()
    bad[1, 3, 2] = float("nan")
    with pytest.raises(ValueError, match="'prev_actions' contains NaN"):
        model.encode({**obs, "prev_actions": bad})
    with pytest.raises(ValueError, match="batch 1"):
        model.encode({**obs, "image": obs["image"][:1]})


def test_config_validation_names_field_and_value():
    with pytest.raises(ValueError, match="width=60, heads=8"):
        WorldModelConfig(width=60)
    with pytest.raises(ValueError, match="dynamics='rnn'"):
        WorldModelConfig(dynamics="rnn")
    with pytest.raises(ValueError, match="layers=0"):
        WorldModelConfig(layers=0)
    with pytest.raises(ValueError, match="bc=-1"):
        LossWeights(bc=-1)


def test_fit_normalizer_sets_buffers_and_denormalises():
    model = _make_model()
    proprio = torch.randn(1000, GO2.proprio_dim) * 3 + 2
    rewards = torch.randn(500) * 0.5 + 1.0
    model.fit_normalizer(proprio=proprio, rewards=rewards, values=rewards * 10)
    torch.testing.assert_close(model.encoder.proprio_mean, proprio.mean(0))
    torch.testing.assert_close(model.encoder.proprio_std, proprio.std(0, unbiased=False))
    head = model.reward_head
    torch.testing.assert_close(head.denormalize(head.normalize(rewards)), rewards)
    torch.testing.assert_close(model.value_head.target_mean, rewards.mean() * 10, rtol=0.01, atol=0.01)
    torch.testing.assert_close(model.value_head.target_std, rewards.std() * 10, rtol=0.02, atol=0.0)
    with pytest.raises(ValueError, match="finite"):
        model.fit_normalizer(rewards=torch.tensor([1.0, float("nan")]))


def test_reward_normaliser_ignores_a_rare_exploding_penalty():
    """One violent fall (-3,630 among rewards of about 1 +- 0.5) must not set the head's scale."""
    model = _make_model()
    rewards = torch.randn(5000, generator=torch.Generator().manual_seed(0)) * 0.5 + 1.0
    rewards[123] = -3630.0
    model.fit_normalizer(rewards=rewards)
    assert 0.45 < float(model.reward_head.target_std) < 0.55  # a plain std would be ~51
    assert 0.95 < float(model.reward_head.target_mean) < 1.05


def test_freeze_except_dynamics_leaves_other_parts_bit_identical():
    from test_losses import make_batch  # noqa: PLC0415 (shared builder)

    model = _make_model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    params = freeze_except(model, ("dynamics",))
    assert {id(p) for p in params} == {id(p) for p in model.dynamics.parameters()}
    optimiser = torch.optim.Adam(params, lr=1e-2)
    for _ in range(2):
        loss, _ = world_model_loss(model, make_batch(GO2, horizon=4))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    after = model.state_dict()
    changed = {k.split(".")[0] for k in before if not torch.equal(before[k], after[k])}
    assert changed == {"dynamics"}, f"only dynamics may change, changed: {changed}"
    with pytest.raises(KeyError, match="valid parts"):
        freeze_except(model, ("dynamic",))


def _ur5e_rows(tip_xy, yaw, batch=1):
    """Raw UR5e proprio (batch, T, P) with the tool tip at ``tip_xy`` (m, base frame) and tool yaw ``yaw`` (rad)."""
    proprio = torch.zeros(batch, UR5E.history, UR5E.proprio_dim)
    proprio[..., UR5E.proprio_slice("tcp_pos")] = torch.tensor([*tip_xy, 0.1])
    proprio[..., UR5E.proprio_slice("tcp_yaw")] = torch.tensor([math.cos(yaw), math.sin(yaw)])
    return proprio


def test_fixture_frame_is_the_tip_offset_along_the_fixture_axes_and_a_quarter_turn_yaw_error():
    hole = torch.tensor([[0.15, -0.5, math.pi / 2]])  # hole at (0.15, -0.5), fixture turned a quarter turn
    # 1 mm along base +y is 1 mm along the turned fixture's +x axis: 0.2 units of 5 mm, and no yaw error
    frame = fixture_frame(UR5E, _ur5e_rows((0.15, -0.499), math.pi / 2), hole)
    assert frame.shape == (1, UR5E.history, 4)
    torch.testing.assert_close(frame[0, 0], torch.tensor([0.2, 0.0, 0.0, 1.0]), atol=1e-4, rtol=0)
    # a yaw error and the same error plus a quarter turn fit the square hole alike: same input
    a = fixture_frame(UR5E, _ur5e_rows((0.15, -0.5), math.pi / 2 + 0.05), hole)
    b = fixture_frame(UR5E, _ur5e_rows((0.15, -0.5), math.pi / 2 + 0.05 + math.pi / 2), hole)
    torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    assert a[0, 0, 2] == pytest.approx(math.sin(0.2), abs=1e-5)
    # far away the offset saturates instead of growing without bound
    far = fixture_frame(UR5E, _ur5e_rows((0.45, -0.5), math.pi / 2), hole)
    assert far[0, 0, :2].abs().max() == pytest.approx(FIXTURE_OFFSET_CLIP)


def test_command_frame_model_sees_a_sub_millimetre_shift_of_the_command_and_old_configs_load():
    cfg = dataclasses.replace(SMALL, command_frame=True)
    model = _make_model(UR5E, cfg)
    obs = random_model_input(UR5E, batch=2)
    obs["proprio"] = _ur5e_rows((0.15, -0.5), 0.0, batch=2)
    obs["command"] = torch.tensor([[0.15, -0.5, 0.0]] * 2)
    shifted = {**obs, "command": obs["command"] + torch.tensor([0.0003, 0.0, 0.0])}  # 0.3 mm
    first, second = model.encode(obs), model.encode(shifted)
    assert first.z.shape == (2, cfg.latent_dim) and first.context.shape == (2, 2 * UR5E.history + 1, cfg.width)
    # the proprio tokens carry the frame, so the context moves as well as the latent
    assert (first.z - second.z).abs().max() > 1e-4
    assert (first.context[:, : UR5E.history] - second.context[:, : UR5E.history]).abs().max() > 1e-4
    from test_losses import make_batch  # noqa: PLC0415 (shared builder)

    loss, _ = world_model_loss(model, make_batch(UR5E, horizon=4))
    loss.backward()
    assert model.encoder.proprio_token.weight.grad[:, -4:].abs().sum() > 0, "the frame columns get gradient"
    # a model config saved before the option existed has no key for it: it loads with the option off
    saved = to_dict(SMALL)
    del saved["command_frame"]
    assert from_dict(WorldModelConfig, saved).command_frame is False
    with pytest.raises(ValueError, match="command_frame"):
        WorldModel(GO2, cfg)  # Go2's command is a velocity, not a pose


def test_ur5e_image_features_and_their_gradients_match_the_default_memory_layout():
    # The encoder runs its convolutions on channels-last memory for speed; the values must be the plain layout's.
    encoder = _make_model(UR5E).encoder
    image = torch.randint(0, 256, (6, 3, *UR5E.image_shape), dtype=torch.uint8)
    fast = encoder.extra_features({"image": image})
    plain = encoder.cnn((image.float() / 255.0 - 0.5).contiguous())
    torch.testing.assert_close(fast, plain, rtol=1e-5, atol=1e-6)
    grads = []
    for features in (fast, plain):
        encoder.zero_grad()
        features.pow(2).sum().backward(retain_graph=True)
        grads.append([p.grad.clone() for p in encoder.cnn.parameters()])
    for g_fast, g_plain in zip(*grads, strict=True):
        torch.testing.assert_close(g_fast, g_plain, rtol=1e-4, atol=1e-6)


def test_ur5e_image_features_are_exactly_those_of_out_of_place_scaling_and_activations():
    # The in-place scaling and activations (memory traffic only) change no bit of the features or their gradients.
    encoder = _make_model(UR5E).encoder
    image = torch.randint(0, 256, (6, 3, *UR5E.image_shape), dtype=torch.uint8)

    def reference(pixels):
        x = (pixels.float() / 255.0 - 0.5).contiguous(memory_format=torch.channels_last)
        for layer in encoder.cnn:
            x = torch.nn.functional.silu(x) if isinstance(layer, torch.nn.SiLU) else layer(x)
        return x

    assert all(layer.inplace for layer in encoder.cnn if isinstance(layer, torch.nn.SiLU))
    grads = []
    for fn in (lambda: encoder.extra_features({"image": image}), lambda: reference(image)):
        encoder.zero_grad()
        features = fn()
        features.pow(2).sum().backward()
        grads.append((features.detach(), [p.grad.clone() for p in encoder.cnn.parameters()]))
    (fast, g_fast), (ref, g_ref) = grads
    assert torch.equal(fast, ref)
    assert all(torch.equal(a, b) for a, b in zip(g_fast, g_ref, strict=True))
