"""Observation encoders: model input window -> latent ``z_t`` and context tokens.

One registry, ``ENCODERS``, maps ``RobotSpec.encoder`` to a class; the world model never
branches on robot names. Every encoder shares the proprio/action tokeniser and the fusion MLP
and adds one exteroceptive feature (a height-map CNN or an RGB CNN).

Context tokens (what dynamics, reward and value heads attend to), width W:
    T proprio tokens, T action tokens and one token for ``z_t`` -> (B, 2T + 1, W).
The proprio normaliser (mean/std buffers) lives here, so it is saved with the encoder's weights.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from simdist_core.models.layers import SimNorm, mlp
from simdist_core.robots import RobotSpec

if TYPE_CHECKING:
    from simdist_core.models.world_model import WorldModelConfig


class ProprioEncoder(nn.Module):
    """Shared part: proprio + previous-action history (+ command) and one extra feature.

    Subclasses implement ``extra_dim`` and ``extra_features(obs) -> (B, extra_dim)``.
    """

    extra_dim: int = 0

    def __init__(self, spec: RobotSpec, cfg: WorldModelConfig) -> None:
        super().__init__()
        self.spec = spec
        t, p, a, w = spec.history, spec.proprio_dim, spec.action_dim, cfg.width
        self.register_buffer("proprio_mean", torch.zeros(p))
        self.register_buffer("proprio_std", torch.ones(p))
        c = spec.command_dim
        # Fixed command scaling from the spec; non-persistent, so checkpoints hold no copy that could disagree.
        self.register_buffer("command_offset", torch.tensor(spec.command_offset or (0.0,) * c), persistent=False)
        self.register_buffer("command_scale", torch.tensor(spec.command_scale or (1.0,) * c), persistent=False)
        self.proprio_token = nn.Linear(p, w)
        self.action_token = nn.Linear(a, w)
        self.time_embed = nn.Parameter(torch.zeros(2, t, w))  # (kind, T, W): proprio / action rows
        self.history_mlp = mlp(t * (p + a), cfg.encoder_hidden, cfg.encoder_hidden)
        self.fusion = nn.Sequential(
            mlp(cfg.encoder_hidden + self.extra_dim + spec.command_dim, cfg.encoder_hidden, cfg.latent_dim),
            SimNorm(cfg.simnorm_group),
        )
        self.z_token = nn.Linear(cfg.latent_dim, w)
        nn.init.normal_(self.time_embed, std=0.02)

    def extra_features(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """Exteroceptive feature (B, extra_dim); none in the base class."""
        return obs["proprio"].new_zeros(obs["proprio"].shape[0], 0)

    def forward(self, obs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """Encode a validated model-input batch.

        Args:
            obs: ``proprio`` (B, T, P), ``prev_actions`` (B, T, A), ``command`` (B, C) if C > 0,
                plus the subclass's extra key.

        Returns:
            ``z`` (B, D) on the simplex groups and ``context`` (B, 2T + 1, W).
        """
        proprio = (obs["proprio"] - self.proprio_mean) / self.proprio_std  # (B, T, P)
        actions = obs["prev_actions"]  # (B, T, A)
        history = self.history_mlp(torch.cat([proprio, actions], dim=-1).flatten(1))  # (B, hidden)
        parts = [history, self.extra_features(obs)]
        if self.spec.command_dim:
            parts.append((obs["command"] - self.command_offset) / self.command_scale)
        z = self.fusion(torch.cat(parts, dim=-1))  # (B, D)
        tokens = [
            self.proprio_token(proprio) + self.time_embed[0],  # (B, T, W)
            self.action_token(actions) + self.time_embed[1],  # (B, T, W)
            self.z_token(z)[:, None],  # (B, 1, W)
        ]
        return z, torch.cat(tokens, dim=1)

    @torch.no_grad()
    def fit_normalizer(self, proprio: np.ndarray | torch.Tensor) -> None:
        """Set the proprio mean/std from data rows (..., P); tiny std is floored to keep it finite."""
        rows = torch.as_tensor(np.asarray(proprio, dtype=np.float32)).reshape(-1, self.spec.proprio_dim)
        if rows.shape[0] == 0 or not torch.isfinite(rows).all():
            raise ValueError(f"fit_normalizer needs finite proprio rows, got shape {tuple(rows.shape)}")
        self.proprio_mean.copy_(rows.mean(0))
        self.proprio_std.copy_(rows.std(0, unbiased=False).clamp_min(1e-3))


class ProprioHeightmapEncoder(ProprioEncoder):
    """Go2: history MLP + height-map CNN (1 x Hm x Wm, metres) + command -> fusion MLP."""

    extra_dim = 64

    def __init__(self, spec: RobotSpec, cfg: WorldModelConfig) -> None:
        super().__init__(spec, cfg)
        if spec.height_map_shape is None:
            raise ValueError(f"encoder 'proprio_heightmap' needs spec.height_map_shape, got None for {spec.name}")
        self.cnn = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.SiLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.SiLU(),
            nn.Conv2d(32, 32, 3, stride=2, padding=1), nn.SiLU(),
            nn.AdaptiveAvgPool2d((3, 3)), nn.Flatten(),
            nn.Linear(32 * 9, self.extra_dim),
        )  # fmt: skip

    def extra_features(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """Height map (B, Hm, Wm) -> (B, 64)."""
        return self.cnn(obs["height_map"][:, None])


class ProprioImageEncoder(ProprioEncoder):
    """UR5e: history MLP + small RGB CNN on a uint8 image (B, 3, h, w) -> fusion MLP."""

    extra_dim = 64

    def __init__(self, spec: RobotSpec, cfg: WorldModelConfig) -> None:
        super().__init__(spec, cfg)
        if spec.image_shape is None:
            raise ValueError(f"encoder 'proprio_image' needs spec.image_shape, got None for {spec.name}")
        self.cnn = nn.Sequential(
            nn.Conv2d(3, 32, 4, stride=2), nn.SiLU(),
            nn.Conv2d(32, 32, 3, stride=2), nn.SiLU(),
            nn.Conv2d(32, 32, 3, stride=2), nn.SiLU(),
            nn.AdaptiveAvgPool2d((4, 4)), nn.Flatten(),
            nn.Linear(32 * 16, self.extra_dim),
        )  # fmt: skip

    def extra_features(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """uint8 image (B, 3, h, w) -> (B, 64); pixels scaled to [-0.5, 0.5]."""
        return self.cnn(obs["image"].float() / 255.0 - 0.5)


ENCODERS: dict[str, type[ProprioEncoder]] = {
    "proprio_heightmap": ProprioHeightmapEncoder,
    "proprio_image": ProprioImageEncoder,
}


def make_encoder(spec: RobotSpec, cfg: WorldModelConfig) -> ProprioEncoder:
    """Build the encoder named by ``spec.encoder``.

    Raises:
        KeyError: unknown encoder kind; the message lists the valid ones.
    """
    try:
        cls = ENCODERS[spec.encoder]
    except KeyError:
        raise KeyError(f"{spec.name}: unknown encoder {spec.encoder!r}; valid: {sorted(ENCODERS)}") from None
    return cls(spec, cfg)
