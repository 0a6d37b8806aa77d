"""Observation encoders: model input window -> latent ``z_t`` and context tokens.

One registry, ``ENCODERS``, maps ``RobotSpec.encoder`` to a class; the world model never
branches on robot names. Every encoder shares the proprio/action tokeniser and the fusion MLP
and adds one exteroceptive feature (a height-map CNN or an RGB CNN).

Context tokens (what dynamics, reward and value heads attend to), width W:
    T proprio tokens, T action tokens and one token for ``z_t`` -> (B, 2T + 1, W).
The proprio normaliser (mean/std buffers) lives here, so it is saved with the encoder's weights.
With ``WorldModelConfig.command_frame`` each proprio row is extended by the robot's pose in the command's
frame (``COMMAND_FRAMES``), so the history MLP, the latent and the proprio tokens all see it.
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


FIXTURE_OFFSET_UNIT_M = 0.005
"""The fixture-frame offset is fed in units of 5 mm: the 0.5 mm clearance is 0.1, the approach (up to ~5 cm) 10."""
FIXTURE_OFFSET_CLIP = 10.0


def fixture_frame(spec: RobotSpec, proprio: torch.Tensor, command: torch.Tensor) -> torch.Tensor:
    """The tool tip in the commanded fixture's frame: (B, T, 4) from raw ``proprio`` (B, T, P) and ``command`` (B, 3).

    Columns: the tip's lateral offset from the commanded hole along the fixture's x and y axes (units of
    ``FIXTURE_OFFSET_UNIT_M``, clipped to +-``FIXTURE_OFFSET_CLIP``), then sin and cos of 4 x the yaw error (a
    square peg fits every quarter turn, so errors a quarter turn apart are the same input). Each history row uses
    the current command: the fixture does not move during an episode.
    """
    tip_xy = proprio[..., spec.proprio_slice("tcp_pos")][..., :2]  # (B, T, 2) base frame, m
    cos_sin = proprio[..., spec.proprio_slice("tcp_yaw")]  # (B, T, 2)
    hole_xy, hole_yaw = command[:, None, :2], command[:, None, 2]  # (B, 1, 2), (B, 1)
    dx, dy = (tip_xy - hole_xy).unbind(-1)
    c, s = torch.cos(hole_yaw), torch.sin(hole_yaw)
    along = torch.stack([c * dx + s * dy, -s * dx + c * dy], dim=-1) / FIXTURE_OFFSET_UNIT_M  # rotate by -yaw
    yaw_error = torch.atan2(cos_sin[..., 1], cos_sin[..., 0]) - hole_yaw
    return torch.cat([along.clamp(-FIXTURE_OFFSET_CLIP, FIXTURE_OFFSET_CLIP),
                      torch.stack([torch.sin(4 * yaw_error), torch.cos(4 * yaw_error)], dim=-1)], dim=-1)  # fmt: skip


COMMAND_FRAMES = {"fixture": (fixture_frame, 4)}
"""``RobotSpec.command_frame`` kind -> (function (spec, raw proprio, command) -> (B, T, F), F)."""


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
        self.frame, f = None, 0
        if cfg.command_frame:
            if spec.command_frame not in COMMAND_FRAMES:
                raise ValueError(f"{spec.name}: command_frame needs a RobotSpec.command_frame in "
                                 f"{sorted(COMMAND_FRAMES)}, got {spec.command_frame!r}")  # fmt: skip
            self.frame, f = COMMAND_FRAMES[spec.command_frame]
        c = spec.command_dim
        # Fixed command scaling from the spec; non-persistent, so checkpoints hold no copy that could disagree.
        self.register_buffer("command_offset", torch.tensor(spec.command_offset or (0.0,) * c), persistent=False)
        self.register_buffer("command_scale", torch.tensor(spec.command_scale or (1.0,) * c), persistent=False)
        self.proprio_token = nn.Linear(p + f, w)
        self.action_token = nn.Linear(a, w)
        self.time_embed = nn.Parameter(torch.zeros(2, t, w))  # (kind, T, W): proprio / action rows
        self.history_mlp = mlp(t * (p + f + a), cfg.encoder_hidden, cfg.encoder_hidden)
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
        if self.frame is not None:
            proprio = torch.cat([proprio, self.frame(self.spec, obs["proprio"], obs["command"])], dim=-1)  # (B, T, P+F)
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
        # In-place activations: a training batch's target images give convolution outputs of ~0.8 GB, and a fresh
        # buffer for each activation costs another pass over memory (same values and gradients, tested).
        self.cnn = nn.Sequential(
            nn.Conv2d(3, 32, 4, stride=2), nn.SiLU(inplace=True),
            nn.Conv2d(32, 32, 3, stride=2), nn.SiLU(inplace=True),
            nn.Conv2d(32, 32, 3, stride=2), nn.SiLU(inplace=True),
            nn.AdaptiveAvgPool2d((4, 4)), nn.Flatten(),
            nn.Linear(32 * 16, self.extra_dim),
        )  # fmt: skip

    def extra_features(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """uint8 image (B, 3, h, w) -> (B, 64); pixels scaled to [-0.5, 0.5].

        The convolutions run on channels-last memory: on a CPU oneDNN's kernels for it take about 0.6 of the time
        of the default layout's forward and backward (a training batch is B x 26 images, most of an update); the
        features are the same up to summation order. The uint8 image is laid out channels-last before it is
        converted (a quarter of the bytes to move) and scaled in place: the same values as ``x / 255 - 0.5``.
        """
        pixels = obs["image"].contiguous(memory_format=torch.channels_last).float()
        return self.cnn(pixels.div_(255.0).sub_(0.5))


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
