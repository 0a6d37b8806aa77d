"""Latent dynamics: (z_t, context, a_t..a_{t+H-1}) -> z_{t+1}..z_{t+H}.

Two kinds with one interface, chosen by ``WorldModelConfig.dynamics``:
    ``"transformer"``  multi-step decoder: all H future latents in ONE forward pass (the paper's model).
    ``"mlp"``          autoregressive MLP, H sequential steps (for speed/quality comparison).

Both accept a context/latent with batch 1 and actions with batch N (planner: N candidates from one
state); the transformer then projects the context's keys/values once (see ``layers.Attention``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from simdist_core.models.layers import DecoderBlock, SimNorm, mlp

if TYPE_CHECKING:
    from simdist_core.models.world_model import WorldModelConfig


class TransformerDynamics(nn.Module):
    """Queries = embedded future actions + step embedding; causal self-attention, cross-attention to context.

    Output k is ``z_{t+k+1}`` and depends on ``a_t..a_{t+k}`` only (causal mask), so a prefix of a
    plan predicts the same latents whatever comes after it.
    """

    def __init__(self, action_dim: int, max_horizon: int, cfg: WorldModelConfig) -> None:
        super().__init__()
        self.max_horizon = max_horizon
        self.action_embed = nn.Linear(action_dim, cfg.width)
        self.step_embed = nn.Parameter(torch.randn(max_horizon, cfg.width) * 0.02)
        self.blocks = nn.ModuleList(DecoderBlock(cfg.width, cfg.heads, cfg.ffn) for _ in range(cfg.layers))
        self.out = nn.Sequential(
            nn.LayerNorm(cfg.width), nn.Linear(cfg.width, cfg.latent_dim), SimNorm(cfg.simnorm_group)
        )

    def forward(self, z: torch.Tensor, context: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Predict latents.

        Args:
            z: (B or 1, D) current latent (already a context token; unused here).
            context: (B or 1, S, W) context tokens.
            actions: (B, H, A) actions in [-1, 1], H <= max_horizon.

        Returns:
            (B, H, D) predicted latents z_{t+1..t+H}.
        """
        del z  # z_t is the last context token
        h = actions.shape[1]
        x = self.action_embed(actions) + self.step_embed[:h]  # (B, H, W)
        for block in self.blocks:
            x = block(x, context)
        return self.out(x)


class MLPDynamics(nn.Module):
    """Autoregressive ``z_{k+1} = f(z_k, a_k)``; ignores the context tokens."""

    def __init__(self, action_dim: int, max_horizon: int, cfg: WorldModelConfig) -> None:
        super().__init__()
        self.max_horizon = max_horizon
        self.step = nn.Sequential(
            mlp(cfg.latent_dim + action_dim, (cfg.ffn, cfg.ffn), cfg.latent_dim), SimNorm(cfg.simnorm_group)
        )

    def forward(self, z: torch.Tensor, context: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Same contract as ``TransformerDynamics.forward``; H sequential MLP calls."""
        del context
        z = z.expand(actions.shape[0], -1)  # (B, D)
        out = []
        for k in range(actions.shape[1]):
            z = self.step(torch.cat([z, actions[:, k]], dim=-1))
            out.append(z)
        return torch.stack(out, dim=1)  # (B, H, D)


DYNAMICS: dict[str, type[nn.Module]] = {"transformer": TransformerDynamics, "mlp": MLPDynamics}
