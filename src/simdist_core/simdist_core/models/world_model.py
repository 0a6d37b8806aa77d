"""The latent world model: named parts, one short method each (like TD-MPC2's world_model.py).

Parts (``WorldModel.parts()``; each is a submodule of that exact name, so a checkpoint can hash
it and finetuning can pick it):
    ``encoder``   model-input window -> latent z_t (B, D) + context tokens (B, S, W)
    ``dynamics``  (latent, actions (B, H, A)) -> z_{t+1..t+H} (B, H, D)
    ``reward``    per-step reward of (z_{t+k+1}, a_{t+k});  ``value`` per-step value V(z)
    ``policy``    policy prior: H actions from z_t;  ``probe`` z -> 3 numbers for visualisation
Normalisers are buffers of the part that uses them (proprio in ``encoder``, reward/value target
mean/std in ``reward``/``value``), so they live in the checkpoint.

The ``reward``/``value`` submodules share their names with the ``reward()``/``value()`` methods:
``model.reward(...)`` is the method (class attributes win over ``nn.Module.__getattr__``), and
``model.reward_head`` / ``model.parts()["reward"]`` is the module.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch
from torch import nn

from simdist_core.models.dynamics import DYNAMICS
from simdist_core.models.encoders import make_encoder
from simdist_core.models.heads import AttentionHead, PolicyPrior, make_probe
from simdist_core.robots import RobotSpec

PART_NAMES: tuple[str, ...] = ("encoder", "dynamics", "reward", "value", "policy", "probe")


@dataclass(frozen=True, kw_only=True)
class LossWeights:
    """Weights of the world-model loss terms (a weight of 0 skips the term and its batch keys)."""

    consistency: float = 1.0
    """Latent consistency: predict(encode(o_t), a) vs stop-grad encode(o_{t+k})."""
    reward: float = 1.0
    """Reward head on predicted latents (Huber on normalised targets)."""
    value: float = 1.0
    """Value head on predicted latents (Huber on normalised targets)."""
    reward_encoded: float = 1.0
    """Reward head on the encoder's (stop-grad) latents of the visited states: keeps the frozen head valid
    where a finetuned dynamics model moves its predictions (the head sees both manifolds)."""
    value_encoded: float = 1.0
    """Value head on the encoder's (stop-grad) latents, for the same reason."""
    bc: float = 4.0
    """Masked behaviour cloning of the policy prior on clean expert steps."""
    probe: float = 1.0
    """Probe read-out MSE (detached latents, so it never shapes the encoder)."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not (isinstance(value, int | float) and np.isfinite(value) and value >= 0):
                raise ValueError(f"loss weight {f.name} must be a finite number >= 0, got {f.name}={value!r}")


@dataclass(frozen=True, kw_only=True)
class WorldModelConfig:
    """Sizes and kinds of the world model's parts; defaults are the reference Go2 model."""

    latent_dim: int = 64
    """D: latent width (divisible by ``simnorm_group``)."""
    width: int = 64
    """W: token width of context, dynamics and heads (divisible by ``heads``)."""
    heads: int = 8
    """Attention heads."""
    layers: int = 2
    """Dynamics decoder layers."""
    ffn: int = 256
    """Feed-forward width in attention blocks (and hidden width of the MLP dynamics)."""
    head_layers: int = 1
    """Attention layers in the reward and value heads."""
    policy_layers: int = 4
    """Decoder layers in the policy prior."""
    encoder_hidden: int = 128
    """Hidden width of the encoder's history and fusion MLPs."""
    simnorm_group: int = 8
    """Group size of the simplicial normalisation on latents."""
    dynamics: Literal["transformer", "mlp"] = "transformer"
    """Dynamics kind: multi-step transformer (one pass) or autoregressive MLP."""
    command_frame: bool = False
    """Also feed the encoder, beside each proprio row, the robot's pose in the command's frame
    (``RobotSpec.command_frame``; the UR5e: the tip's offset from the commanded hole and its yaw error). The
    inputs hold that offset to 0.23 mm, but a latent learned from absolute positions kept it only to 2.4 mm and
    lost the yaw (``bench_results/ur5e_latent_readout.json``), against a clearance of 0.5 mm. Off in models
    trained before it existed."""
    loss: LossWeights = field(default_factory=LossWeights)
    """Default loss weights for ``training.losses.world_model_loss``."""

    def __post_init__(self) -> None:
        for name in ("latent_dim", "width", "heads", "layers", "ffn", "head_layers", "policy_layers",
                     "encoder_hidden", "simnorm_group"):  # fmt: skip
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {name}={value!r}")
        if self.width % self.heads:
            raise ValueError(f"width must be divisible by heads, got width={self.width}, heads={self.heads}")
        if self.latent_dim % self.simnorm_group:
            raise ValueError(
                f"latent_dim must be divisible by simnorm_group, got {self.latent_dim=}, {self.simnorm_group=}"
            )
        if self.dynamics not in DYNAMICS:
            raise ValueError(f"dynamics must be one of {sorted(DYNAMICS)}, got dynamics={self.dynamics!r}")
        if not isinstance(self.loss, LossWeights):
            raise ValueError(f"loss must be a LossWeights, got {type(self.loss).__name__}")


@dataclass(frozen=True, eq=False)
class Latent:
    """What the encoder gives the planner: z_t (B, D) and context tokens (B, S, W). Compared by identity."""

    z: torch.Tensor
    context: torch.Tensor

    @classmethod
    def from_numpy(cls, z: np.ndarray, context: np.ndarray, device: torch.device | str = "cpu") -> Latent:
        """Rebuild a batch-of-one latent from arrays z (D,) and context (S, W), e.g. from a ROS message."""
        return cls(
            torch.as_tensor(np.asarray(z, np.float32), device=device).reshape(1, -1),
            torch.as_tensor(np.asarray(context, np.float32), device=device).reshape(1, *np.shape(context)[-2:]),
        )

    def to(self, device: torch.device | str) -> Latent:
        """The same latent on ``device``."""
        return Latent(self.z.to(device), self.context.to(device))

    def detach(self) -> Latent:
        """The same latent without autograd history."""
        return Latent(self.z.detach(), self.context.detach())


class WorldModel(nn.Module):
    """Encoder, dynamics, reward, value, policy prior and probe for one robot."""

    def __init__(self, spec: RobotSpec, cfg: WorldModelConfig | None = None) -> None:
        super().__init__()
        self.spec = spec
        self.cfg = cfg = cfg or WorldModelConfig()
        a, h = spec.action_dim, spec.horizon
        self.encoder = make_encoder(spec, cfg)
        self.dynamics = DYNAMICS[cfg.dynamics](a, h, cfg)
        # Registered directly: add_module refuses names that are also methods (see module docstring).
        self._modules["reward"] = AttentionHead(cfg.latent_dim + a, cfg)
        self._modules["value"] = AttentionHead(cfg.latent_dim, cfg)
        self.policy = PolicyPrior(a, h, cfg)
        self.probe = make_probe(cfg)

    # ---- parts -------------------------------------------------------------------------------
    def parts(self) -> dict[str, nn.Module]:
        """The named parts, in ``PART_NAMES`` order."""
        return {name: self._modules[name] for name in PART_NAMES}  # not getattr: see module docstring

    @property
    def reward_head(self) -> AttentionHead:
        """The ``reward`` submodule (``model.reward`` is the method)."""
        return self._modules["reward"]  # type: ignore[return-value]

    @property
    def value_head(self) -> AttentionHead:
        """The ``value`` submodule (``model.value`` is the method)."""
        return self._modules["value"]  # type: ignore[return-value]

    def num_parameters(self) -> dict[str, int]:
        """Trainable parameter count per part and ``total``."""
        counts = {name: sum(p.numel() for p in part.parameters()) for name, part in self.parts().items()}
        counts["total"] = sum(counts.values())
        return counts

    # ---- the model's methods -----------------------------------------------------------------
    def encode(self, obs: dict[str, torch.Tensor]) -> Latent:
        """Encode a model-input window (layout in ``simdist_core.robots``) after validating it.

        Raises:
            KeyError: a required key is missing.
            ValueError: wrong shape/dtype or non-finite values (the message names the key and both sizes).
        """
        self._check_obs(obs)
        z, context = self.encoder(obs)
        return Latent(z, context)

    def predict(self, latent: Latent, actions: torch.Tensor) -> torch.Tensor:
        """Future latents: ``actions`` (N, H, A) in [-1, 1] from ``latent`` (batch N or 1) -> (N, H, D)."""
        if actions.ndim != 3 or actions.shape[-1] != self.spec.action_dim or actions.shape[1] > self.spec.horizon:
            raise ValueError(
                f"actions must be (N, H<={self.spec.horizon}, {self.spec.action_dim}), got {tuple(actions.shape)}"
            )
        return self.dynamics(latent.z, latent.context, actions)

    def reward(self, latent: Latent, zs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Reward r_{t+k} (task units) for ``actions`` (N, H, A) leading to ``zs`` (N, H, D) -> (N, H)."""
        head = self.reward_head
        return head.denormalize(head(torch.cat([zs, actions], dim=-1), latent.context))

    def value(self, latent: Latent, zs: torch.Tensor) -> torch.Tensor:
        """Value V(z) (task units) of latents ``zs`` (N, L, D) -> (N, L)."""
        head = self.value_head
        return head.denormalize(head(zs, latent.context))

    def pi(self, latent: Latent) -> torch.Tensor:
        """Policy prior: (B, H, A) actions in (-1, 1) from ``latent`` (batch B)."""
        return self.policy(latent.z, latent.context)

    def decode_probe(self, z: torch.Tensor) -> torch.Tensor:
        """Probe read-out (..., 3) of latents (..., D); meaning in ``RobotSpec.probe``."""
        return self.probe(z)

    # ---- normalisation -----------------------------------------------------------------------
    def fit_normalizer(
        self,
        *,
        proprio: np.ndarray | torch.Tensor | None = None,
        rewards: np.ndarray | torch.Tensor | None = None,
        values: np.ndarray | torch.Tensor | None = None,
    ) -> None:
        """Set normaliser buffers from data: proprio rows (..., P), reward and value samples (any shape)."""
        if proprio is not None:
            self.encoder.fit_normalizer(proprio)
        if rewards is not None:
            self.reward_head.fit_normalizer(rewards)
        if values is not None:
            self.value_head.fit_normalizer(values)

    def _check_obs(self, obs: dict[str, torch.Tensor]) -> None:
        spec = self.spec
        expected: dict[str, tuple[int, ...]] = {
            "proprio": (spec.history, spec.proprio_dim),
            "prev_actions": (spec.history, spec.action_dim),
        }
        if spec.command_dim:
            expected["command"] = (spec.command_dim,)
        if spec.height_map_shape:
            expected["height_map"] = tuple(spec.height_map_shape)
        if spec.image_shape:
            expected["image"] = (3, *spec.image_shape)
        batch = None
        for key, trailing in expected.items():
            if key not in obs:
                raise KeyError(f"{spec.name} model input is missing {key!r}; got keys {sorted(obs)}")
            x = obs[key]
            if not isinstance(x, torch.Tensor) or x.ndim != len(trailing) + 1 or tuple(x.shape[1:]) != trailing:
                got = tuple(x.shape) if hasattr(x, "shape") else type(x).__name__
                raise ValueError(f"{spec.name} model input {key!r} has shape {got}, expected (B, {trailing})")
            if batch is not None and x.shape[0] != batch:
                raise ValueError(f"{spec.name} model input {key!r} has batch {x.shape[0]}, other keys have {batch}")
            batch = x.shape[0]
            if key == "image":
                if x.dtype != torch.uint8:
                    raise ValueError(f"{spec.name} model input 'image' must be uint8, got {x.dtype}")
            elif not torch.isfinite(x).all():
                raise ValueError(f"{spec.name} model input {key!r} contains NaN or inf")


def freeze_except(model: WorldModel, parts: tuple[str, ...] = ("dynamics",)) -> list[nn.Parameter]:
    """Make only ``parts`` trainable (``requires_grad``); everything else is frozen.

    Returns:
        The trainable parameters, to hand to the optimiser (so frozen parts never change).

    Raises:
        KeyError: an unknown part name (the message lists the valid ones).
    """
    unknown = set(parts) - set(PART_NAMES)
    if unknown:
        raise KeyError(f"unknown parts {sorted(unknown)}; valid parts: {list(PART_NAMES)}")
    trainable: list[nn.Parameter] = []
    for name, part in model.parts().items():
        for param in part.parameters():
            param.requires_grad_(name in parts)
            if name in parts:
                trainable.append(param)
    return trainable
