"""Heads on latents: reward, value, policy prior and the visualisation probe.

Reward and value heads are 1-layer attention heads as in the reference, simplified in one way:
each step's query attends to the context only (no self-attention across steps), so a step's
prediction depends on that step's latent and the context. That keeps reward/value a function of
the (predicted) state and lets the planner ask for the terminal value alone (1 query, not H).
Each head owns its target normaliser (mean/std buffers), so it is saved with the head's weights.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from simdist_core.models.layers import CrossAttentionBlock, DecoderBlock, mlp

if TYPE_CHECKING:
    from simdist_core.models.world_model import WorldModelConfig


class AttentionHead(nn.Module):
    """Scalar per step: query from (z_k[, a_k]) -> cross-attention to context -> linear.

    ``forward`` returns the normalised prediction; ``denormalize`` maps it to task units.
    """

    def __init__(self, in_dim: int, cfg: WorldModelConfig) -> None:
        super().__init__()
        self.register_buffer("target_mean", torch.zeros(()))
        self.register_buffer("target_std", torch.ones(()))
        self.query = nn.Linear(in_dim, cfg.width)
        self.blocks = nn.ModuleList(CrossAttentionBlock(cfg.width, cfg.heads, cfg.ffn) for _ in range(cfg.head_layers))
        self.out = nn.Sequential(nn.LayerNorm(cfg.width), nn.Linear(cfg.width, 1))

    def forward(self, features: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        """``features`` (B, L, in_dim), ``context`` (B or 1, S, W) -> normalised prediction (B, L)."""
        x = self.query(features)  # (B, L, W)
        for block in self.blocks:
            x = block(x, context)
        return self.out(x).squeeze(-1)

    def normalize(self, target: torch.Tensor) -> torch.Tensor:
        """Task units -> the head's normalised units."""
        return (target - self.target_mean) / self.target_std

    def denormalize(self, pred: torch.Tensor) -> torch.Tensor:
        """Normalised units -> task units."""
        return pred * self.target_std + self.target_mean

    @torch.no_grad()
    def fit_normalizer(self, targets: np.ndarray | torch.Tensor, tail: float = 0.001) -> None:
        """Set mean/std from target samples (any shape), winsorised at the ``tail`` quantiles; std >= 1e-3.

        Winsorised because the quadratic reward penalties have rare huge values (one violent fall
        in the Go2 pretraining data scores -3,630 against a typical -10..1.6): a plain std would be
        8x too wide and squash every ordinary reward into a sliver of the head's range.
        """
        values = torch.as_tensor(np.asarray(targets, dtype=np.float32)).reshape(-1)
        if values.numel() == 0 or not torch.isfinite(values).all():
            raise ValueError(f"fit_normalizer needs finite targets, got {values.numel()} values")
        lo, hi = np.quantile(values.numpy(), [tail, 1.0 - tail])
        values = values.clamp(float(lo), float(hi))
        self.target_mean.copy_(values.mean())
        self.target_std.copy_(values.std(unbiased=False).clamp_min(1e-3))


class PolicyPrior(nn.Module):
    """H actions from one latent: learned step queries + z token, decoder over the context, tanh."""

    def __init__(self, action_dim: int, max_horizon: int, cfg: WorldModelConfig) -> None:
        super().__init__()
        self.step_embed = nn.Parameter(torch.randn(max_horizon, cfg.width) * 0.02)
        self.z_query = nn.Linear(cfg.latent_dim, cfg.width)
        self.blocks = nn.ModuleList(DecoderBlock(cfg.width, cfg.heads, cfg.ffn) for _ in range(cfg.policy_layers))
        self.out = nn.Sequential(nn.LayerNorm(cfg.width), nn.Linear(cfg.width, action_dim))

    def forward(self, z: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        """``z`` (B, D), ``context`` (B, S, W) -> actions (B, H_max, A) in (-1, 1)."""
        x = self.step_embed + self.z_query(z)[:, None]  # (B, H, W)
        for block in self.blocks:
            x = block(x, context)
        return torch.tanh(self.out(x))


def make_probe(cfg: WorldModelConfig) -> nn.Module:
    """Latent (..., D) -> probe (..., 3), see ``RobotSpec.probe``; a pure read-out trained on detached latents."""
    return mlp(cfg.latent_dim, cfg.latent_dim, 3)
