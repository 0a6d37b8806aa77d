"""Action-effect anchor: keep what the simulation taught about how *other* actions turn out while finetuning.

A robot's experience holds the actions its planner chose, a narrow band around one plan per state, while the
planner ranks many other action sequences every tick. Dynamics fitted to the chosen actions alone are free to
change how their predictions respond to the rest: on the PTFE slope every dynamics-only finetune of the Go2
model predicted the chosen plan and random perturbations of it about equally well in the first second after a
standing start (the pretrained dynamics told them apart), and fell within 2 s in a third more of its episodes.

The anchor penalises the change in *action effect*, not in prediction: for each training window's start
latent ``z``, its recorded action sequence ``a`` and a perturbed sequence ``a'`` drawn like the planner's
Gaussian candidates (``a + std * noise``, clipped to the action bounds),

    anchor = mean_k,d ( [f(z, a') - f(z, a)] - [f_ref(z, a') - f_ref(z, a)] )^2

with ``f`` the dynamics being finetuned and ``f_ref`` the frozen pretrained ones. The offset the new floor
adds to every prediction (``f(z, a) - f_ref(z, a)``) is left to the latent-consistency loss; only the
difference between actions, which the robot's data barely constrain, is held near the simulation's. The
consistency term still moves it wherever the recorded actions do vary.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import torch

from simdist_core.models.world_model import Latent, WorldModel


class ActionEffectAnchor:
    """Callable ``(model, batch) -> (weighted term, {"anchor": unweighted value})`` added to a finetune's loss.

    Args:
        reference: the pretrained world model; only read (under ``no_grad``), never changed.
        weight: the term's weight beside latent consistency (weight 1).
        noise_std: std of the Gaussian action perturbation, in the planner's [-1, 1] action units.
        seed: seed of the perturbations (a finetune with the same seeds draws the same ones).
        start_steps: anchor only the windows that start within this many control steps of their episode's
            start (``episode_step`` of the batch); None anchors every window. The robot's data are narrowest at a
            standing start, where every PTFE finetune lost the action effect, while the gait once walking is
            where the finetune adapts.

    The model being finetuned must share the reference's encoder (a frozen one): the two action effects are
    compared in one latent space. ``FinetuneConfig`` refuses the anchor where the encoder trains.
    """

    def __init__(self, reference: WorldModel, *, weight: float, noise_std: float, seed: int = 0,
                 start_steps: int | None = None) -> None:  # fmt: skip
        if not (weight > 0 and noise_std > 0):
            raise ValueError(f"need weight > 0 and noise_std > 0, got {weight=}, {noise_std=}")
        if start_steps is not None and start_steps < 1:
            raise ValueError(f"start_steps must be >= 1 or None, got {start_steps=}")
        self.reference, self.weight, self.noise_std, self.start_steps = reference, weight, noise_std, start_steps
        self.generator = torch.Generator().manual_seed(seed)

    def perturb(self, actions: torch.Tensor) -> torch.Tensor:
        """``actions`` (B, H, A) plus Gaussian noise, clipped to [-1, 1] (the planner's Gaussian candidates)."""
        noise = torch.randn(actions.shape, generator=self.generator).to(actions.device, actions.dtype)
        return (actions + self.noise_std * noise).clamp(-1.0, 1.0)

    def __call__(self, model: WorldModel, batch: Mapping[str, Any]) -> tuple[torch.Tensor, dict[str, float]]:
        """The weighted anchor term on ``batch`` (a WindowBatch: ``obs``, ``actions``, ``valid``, ``episode_step``)."""
        actions, valid = batch["actions"], batch["valid"]
        perturbed = self.perturb(actions)  # drawn for every window, so the draws do not depend on which are kept
        obs = {key: value[:, 0] for key, value in batch["obs"].items()}
        if self.start_steps is not None:  # only the windows that start near their episode's start are rolled out
            keep = (batch["episode_step"] < self.start_steps).nonzero().squeeze(1)
            if keep.numel() == 0:
                return actions.new_zeros(()), {"anchor": 0.0}
            actions, perturbed, valid = actions[keep], perturbed[keep], valid[keep]
            obs = {key: value[keep] for key, value in obs.items()}
        both = torch.cat([actions, perturbed])  # (2B, H, A): recorded, then perturbed
        b = actions.shape[0]
        with torch.no_grad():
            latent = self.reference.encode(obs)
            ref = self.reference.predict(_twice(latent), both)
        new = model.predict(_twice(latent), both)
        drift = (new[b:] - new[:b]) - (ref[b:] - ref[:b])  # (B, H, D): change of the action effect
        mask = valid.to(drift.dtype)
        term = (drift.pow(2).mean(-1) * mask).sum() / mask.sum().clamp_min(1.0)
        return self.weight * term, {"anchor": float(term.detach())}


def action_effect_drift(reference: WorldModel, model: WorldModel, batches: Iterable[Mapping[str, Any]],
                        noise_std: float = 0.5, seed: int = 0) -> float:  # fmt: skip
    """How far a finetune moved the action effect: the mean unweighted anchor term of ``model`` against ``reference``.

    One fixed draw of perturbations per ``seed``, so that checkpoints scored with the same seed compare.
    """
    probe = ActionEffectAnchor(reference, weight=1.0, noise_std=noise_std, seed=seed)
    with torch.no_grad():
        return float(np.mean([probe(model, batch)[1]["anchor"] for batch in batches]))


def _twice(latent: Latent) -> Latent:
    """The latent batch stacked on itself, to roll out recorded and perturbed actions in one call."""
    return Latent(torch.cat([latent.z, latent.z]), torch.cat([latent.context, latent.context]))
