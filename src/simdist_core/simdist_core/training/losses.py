"""World-model loss on a ``WindowBatch`` (contract in the project brief / ``data.sampler``).

Terms (masked means over normalised targets; MSE, except Huber for the four reward and value terms):
    consistency  predict(encode(o_t), a_t..a_{t+H-1})[k] vs stop-grad encode(o_{t+k+1}).z, mask ``valid``
    reward       reward head on (predicted z_{t+k+1}, a_{t+k}) vs normalised r_{t+k}, mask ``valid``
    value        value head on predicted z_{t+k+1} vs normalised V(s_{t+k+1}), mask ``valid``
    reward_encoded, value_encoded
                 the same heads on the stop-grad encoder latents encode(o_{t+k+1}).z instead
    bc           policy prior pi(z_t)[k] vs its target ``bc_actions`` (a_{t+k} unless the store holds expert
                 labels of a learner's states), mask ``clean_expert & valid``
    probe        probe(detached encode(o_{t+k}).z) vs privileged probe target, k = 0..H
Which parts each term trains: consistency -> encoder, dynamics; reward -> reward, dynamics, encoder;
value -> value, dynamics, encoder; reward_encoded -> reward; value_encoded -> value; bc -> policy,
encoder; probe -> probe only (pure read-out).
Reward and value terms are Huber (quadratic within 1 normalised unit, linear beyond) so that a rare
exploding penalty cannot dominate a batch's gradient.

Why the ``*_encoded`` terms: trained on predicted latents alone (TD-MPC2, and the SimDist reference
code), the heads learn the pretrained dynamics' own prediction manifold. On the Go2 checkpoint that
shipped before them, the value head's error on its pretraining data was 5.5x larger on encoder
latents than on predicted ones; a dynamics-only finetune moves predictions onto the encoder's latents
of the new floor, where the frozen heads then misjudged them, and the planner got worse as the model
got better.
A term whose weight is 0 is skipped, and then its batch keys may be absent (dynamics finetuning on
robot data needs only obs, actions and valid).
"""

from __future__ import annotations

import torch

from simdist_core.models.world_model import LossWeights, WorldModel


def _masked_mean(err: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``err`` (B, L) over entries where ``mask`` (B, L) is true; 0 if none."""
    mask = mask.to(err.dtype)
    return (err * mask).sum() / mask.sum().clamp_min(1.0)


def _huber(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Elementwise Huber loss, delta 1: equal to the squared error for |error| <= 1 (x2 to match MSE there)."""
    return 2.0 * torch.nn.functional.smooth_l1_loss(pred, target, reduction="none", beta=1.0)


def _step(obs: dict[str, torch.Tensor], index: int | slice) -> dict[str, torch.Tensor]:
    """Select step(s) of a stepped model input (B, H+1, ...) and fold them into the batch axis."""
    if isinstance(index, int):
        return {key: value[:, index] for key, value in obs.items()}
    return {key: value[:, index].flatten(0, 1) for key, value in obs.items()}  # (B*K, ...)


def world_model_loss(
    model: WorldModel, batch: dict[str, torch.Tensor | dict[str, torch.Tensor]], weights: LossWeights | None = None
) -> tuple[torch.Tensor, dict[str, float]]:
    """Weighted world-model loss and its terms for logging.

    Args:
        model: the world model (its parts may be partly frozen).
        batch: a WindowBatch: ``obs`` (dict, step axis H+1), ``actions`` (B, H, A), ``rewards`` (B, H),
            ``values`` (B, H), ``clean_expert`` (B, H) bool, ``valid`` (B, H) bool, ``probe`` (B, H+1, 3).
        weights: term weights; defaults to ``model.cfg.loss``.

    Returns:
        The scalar loss and ``{"loss": ..., "<term>": unweighted value, ...}`` for the computed terms.
    """
    w = weights or model.cfg.loss
    obs: dict[str, torch.Tensor] = batch["obs"]  # type: ignore[assignment]
    actions: torch.Tensor = batch["actions"]  # type: ignore[assignment]
    valid: torch.Tensor = batch["valid"]  # type: ignore[assignment]
    b, h = actions.shape[:2]
    latent = model.encode(_step(obs, 0))
    terms: dict[str, torch.Tensor] = {}

    targets = None
    if w.consistency > 0 or w.probe > 0 or w.reward_encoded > 0 or w.value_encoded > 0:
        with torch.no_grad():  # stop-gradient targets z_{t+1..t+H}
            targets = model.encode(_step(obs, slice(1, h + 1))).z.reshape(b, h, -1)  # (B, H, D)
    zs = None
    if w.consistency > 0 or w.reward > 0 or w.value > 0:
        zs = model.predict(latent, actions)  # (B, H, D)
        if w.consistency > 0:
            terms["consistency"] = _masked_mean((zs - targets).pow(2).mean(-1), valid)
    # Heads on predicted latents, then on encoder latents (context detached too: those terms fit heads only).
    for suffix, z, context in (("", zs, latent.context), ("_encoded", targets, latent.context.detach())):
        if getattr(w, "reward" + suffix) > 0:
            head = model.reward_head
            pred = head(torch.cat([z, actions], dim=-1), context)  # (B, H) normalised
            terms["reward" + suffix] = _masked_mean(_huber(pred, head.normalize(batch["rewards"])), valid)
        if getattr(w, "value" + suffix) > 0:
            head = model.value_head
            pred = head(z, context)  # (B, H) normalised
            terms["value" + suffix] = _masked_mean(_huber(pred, head.normalize(batch["values"])), valid)
    if w.bc > 0:
        prior = model.pi(latent)[:, :h]  # (B, H, A)
        mask = batch["clean_expert"].bool() & valid.bool()
        target = batch.get("bc_actions", actions)
        terms["bc"] = _masked_mean((prior - target).pow(2).mean(-1), mask)
    if w.probe > 0:
        zs_seen = torch.cat([latent.z.detach()[:, None], targets], dim=1)  # (B, H+1, D), no grad to encoder
        mask = torch.cat([torch.ones_like(valid[:, :1]), valid], dim=1)  # step 0 is always in the episode
        terms["probe"] = _masked_mean((model.decode_probe(zs_seen) - batch["probe"]).pow(2).mean(-1), mask)

    loss = sum((getattr(w, name) * value for name, value in terms.items()), start=actions.new_zeros(()))
    logs = {name: float(value.detach()) for name, value in terms.items()}
    logs["loss"] = float(loss.detach())
    return loss, logs
