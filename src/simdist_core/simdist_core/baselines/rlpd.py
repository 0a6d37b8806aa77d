"""RLPD (Ball, Smith, Kostrikov, Levine 2023, "Efficient Online Reinforcement Learning with Offline Data").

SAC with three changes that let it use offline data online: **symmetric sampling** (every batch is
half offline data, half online replay), **LayerNorm critics**, and a **large ensemble** of critics
(10) whose target takes the minimum over a **random subset of 2**, with many critic updates per
environment step (UTD ratio). One update = ``utd_ratio`` critic minibatches, then one actor and one
temperature step on the last minibatch (as in the authors' code). The actor maximises the
ensemble-mean Q minus the entropy term; the temperature tracks a target entropy of ``-A / 2``.

RLPD itself starts online from scratch with the offline data only in its buffer. Here an optional
offline phase (``offline_steps`` updates on offline-only batches) warm-starts it from the pretraining
dataset, so minute 0 of the benchmark is a trained policy; ``offline_steps=0`` is the paper's setting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from simdist_core.baselines.common import (
    Batch,
    Normalizer,
    OfflineTransitions,
    ReplayBuffer,
    mlp,
    soft_update,
)
from simdist_core.data.sampler import concat_batches

LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0
"""Range of the actor's log std (jaxrl's tanh-Gaussian policy, which RLPD uses)."""


@dataclass(frozen=True, kw_only=True)
class RLPDConfig:
    """RLPD hyperparameters; defaults are the paper's locomotion settings unless a field says otherwise."""

    hidden: int = 256
    """Width of the actor and critic MLPs (paper: 256)."""
    layers: int = 2
    """Hidden layers of each MLP (paper: 2)."""
    num_critics: int = 10
    """Critic ensemble size (paper: 10)."""
    critic_subset: int = 2
    """Critics whose minimum forms the target, drawn at random per update (paper: 2)."""
    critic_layer_norm: bool = True
    """LayerNorm after each critic hidden layer (paper: on)."""
    utd_ratio: int = 20
    """Critic updates per environment step (paper: 20). CPU runs scale this down."""
    batch_size: int = 256
    """Minibatch per critic update, half offline and half online (paper: 256)."""
    offline_ratio: float = 0.5
    """Share of each online-phase batch drawn from the offline data (paper: 0.5, symmetric sampling)."""
    lr: float = 3e-4
    """Adam learning rate of actor, critics and temperature (paper: 3e-4)."""
    discount: float = 0.99
    """Discount (paper: 0.99)."""
    tau: float = 0.005
    """Polyak rate of the target critics (paper: 0.005)."""
    init_temperature: float = 1.0
    """Initial SAC temperature (paper: 1.0)."""
    backup_entropy: bool = True
    """Subtract the entropy term in the critic target (SAC default)."""
    offline_steps: int = 2000
    """Updates on offline-only batches before going online (not in the paper, which uses 0; see module doc)."""
    update_every: int = 1
    """Environment steps per update round online (1 = every step, as in the paper); CPU runs may raise it."""
    history: int = 25
    """Newest rows of the proprio/action window in the flat observation (25 = the world model's whole window)."""
    seed: int = 0
    """Seed of network init and batch sampling."""

    def __post_init__(self) -> None:
        if not 1 <= self.critic_subset <= self.num_critics:
            raise ValueError(f"need 1 <= critic_subset <= num_critics, got {self.critic_subset=}, {self.num_critics=}")
        if not 0.0 <= self.offline_ratio <= 1.0:
            raise ValueError(f"offline_ratio must be in [0, 1], got {self.offline_ratio=}")
        for name in ("hidden", "layers", "utd_ratio", "batch_size", "update_every", "history"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {name}={getattr(self, name)}")
        if self.offline_steps < 0:
            raise ValueError(f"offline_steps must be >= 0, got {self.offline_steps=}")


class EnsembleLinear(nn.Module):
    """``E`` independent linear layers applied in one batched matmul: (E, B, in) -> (E, B, out)."""

    def __init__(self, ensemble: int, in_dim: int, out_dim: int) -> None:
        super().__init__()
        bound = 1.0 / math.sqrt(in_dim)  # nn.Linear's default init, per member
        self.weight = nn.Parameter(torch.empty(ensemble, in_dim, out_dim).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(ensemble, 1, out_dim).uniform_(-bound, bound))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(E, B, in) -> (E, B, out)."""
        return torch.baddbmm(self.bias, x, self.weight)


class CriticEnsemble(nn.Module):
    """``E`` Q-networks Q(s, a) with optional LayerNorm after each hidden layer; returns (E, B)."""

    def __init__(self, ensemble: int, in_dim: int, hidden: int, layers: int, layer_norm: bool) -> None:
        super().__init__()
        mods: list[nn.Module] = []
        width = in_dim
        for _ in range(layers):
            norm = [nn.LayerNorm(hidden)] if layer_norm else []
            mods += [EnsembleLinear(ensemble, width, hidden), *norm, nn.ReLU()]
            width = hidden
        mods.append(EnsembleLinear(ensemble, width, 1))
        self.net, self.ensemble = nn.Sequential(*mods), ensemble

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """(B, D), (B, A) -> (E, B)."""
        x = torch.cat([obs, action], dim=-1)
        return self.net(x.unsqueeze(0).expand(self.ensemble, *x.shape)).squeeze(-1)


class TanhGaussianActor(nn.Module):
    """SAC policy: a Gaussian in pre-tanh space, squashed into [-1, 1]."""

    def __init__(self, obs_dim: int, action_dim: int, hidden: int, layers: int) -> None:
        super().__init__()
        self.net = mlp(obs_dim, 2 * action_dim, hidden, layers)

    def forward(
        self, obs: torch.Tensor, deterministic: bool = False, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(action (B, A) in [-1, 1], log-prob (B,)) — the log-prob includes the tanh correction."""
        mean, log_std = self.net(obs).chunk(2, dim=-1)
        std = log_std.clamp(LOG_STD_MIN, LOG_STD_MAX).exp()
        if deterministic:
            return torch.tanh(mean), torch.zeros(obs.shape[0])
        u = mean + std * torch.randn(mean.shape, generator=generator)
        log_prob = torch.distributions.Normal(mean, std).log_prob(u).sum(-1)
        log_prob = log_prob - (2.0 * (math.log(2.0) - u - nn.functional.softplus(-2.0 * u))).sum(-1)  # log|d tanh/du|
        return torch.tanh(u), log_prob


def rlpd_batch(offline: OfflineTransitions, online: ReplayBuffer | None, n: int, offline_ratio: float,
               rng: np.random.Generator) -> Batch:  # fmt: skip
    """``n`` transitions, ``round(n * offline_ratio)`` offline and the rest online (all offline before any online)."""
    if online is None or online.size == 0:
        return offline.sample(n)
    n_off = int(round(n * offline_ratio))
    if n_off == 0:
        return online.sample(n, rng)
    if n_off == n:
        return offline.sample(n)
    return concat_batches(offline.sample(n_off), online.sample(n - n_off, rng))


class RLPDAgent(nn.Module):
    """Actor, critic ensemble with targets, temperature, and their optimisers."""

    def __init__(self, obs_dim: int, action_dim: int, cfg: RLPDConfig) -> None:
        super().__init__()
        torch.manual_seed(cfg.seed)
        self.cfg = cfg
        self.obs_norm = Normalizer(obs_dim)
        self.actor = TanhGaussianActor(obs_dim, action_dim, cfg.hidden, cfg.layers)
        self.critic = CriticEnsemble(cfg.num_critics, obs_dim + action_dim, cfg.hidden, cfg.layers,
                                     cfg.critic_layer_norm)  # fmt: skip
        self.target_critic = CriticEnsemble(cfg.num_critics, obs_dim + action_dim, cfg.hidden, cfg.layers,
                                            cfg.critic_layer_norm).requires_grad_(False)  # fmt: skip
        self.target_critic.load_state_dict(self.critic.state_dict())
        self.log_alpha = nn.Parameter(torch.tensor(math.log(cfg.init_temperature)))
        self.target_entropy = -action_dim / 2.0  # the RLPD code's default
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=cfg.lr)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=cfg.lr)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=cfg.lr)
        self.rng = np.random.default_rng(cfg.seed)

    def act(self, obs: torch.Tensor, deterministic: bool, generator: torch.Generator | None = None) -> torch.Tensor:
        """(B, A) actions in [-1, 1] for raw flat observations (B, D)."""
        return self.actor(self.obs_norm(obs), deterministic, generator)[0]

    def _critic_step(self, b: Batch) -> float:
        obs, next_obs, cfg = self.obs_norm(b["obs"]), self.obs_norm(b["next_obs"]), self.cfg
        with torch.no_grad():
            next_action, next_logp = self.actor(next_obs)
            subset = torch.from_numpy(self.rng.choice(cfg.num_critics, cfg.critic_subset, replace=False))
            next_q = self.target_critic(next_obs, next_action)[subset].min(0).values
            if cfg.backup_entropy:
                next_q = next_q - self.log_alpha.exp() * next_logp
            target = b["reward"] + cfg.discount * (1.0 - b["done"]) * next_q
        loss = (self.critic(obs, b["action"]) - target).pow(2).mean()  # mean over members and samples
        self.critic_opt.zero_grad()
        loss.backward()
        self.critic_opt.step()
        soft_update(self.target_critic, self.critic, cfg.tau)
        return loss.item()

    def _actor_step(self, b: Batch) -> dict[str, float]:
        obs = self.obs_norm(b["obs"])
        action, logp = self.actor(obs)
        alpha = self.log_alpha.exp().detach()
        actor_loss = (alpha * logp - self.critic(obs, action).mean(0)).mean()
        self.actor_opt.zero_grad()
        actor_loss.backward()
        self.actor_opt.step()
        alpha_loss = -(self.log_alpha.exp() * (logp.detach() + self.target_entropy)).mean()
        self.alpha_opt.zero_grad()
        alpha_loss.backward()
        self.alpha_opt.step()
        return {"actor_loss": actor_loss.item(), "alpha_loss": alpha_loss.item(), "alpha": alpha.item(),
                "entropy": -logp.mean().item()}  # fmt: skip

    def train_step(self, offline: OfflineTransitions, online: ReplayBuffer | None) -> dict[str, float]:
        """One RLPD update: ``utd_ratio`` critic minibatches of symmetric samples, then actor and temperature."""
        cfg = self.cfg
        # each minibatch carries the exact offline share (the authors interleave the two halves the same way)
        minis = [rlpd_batch(offline, online, cfg.batch_size, cfg.offline_ratio, self.rng) for _ in range(cfg.utd_ratio)]
        critic_losses = [self._critic_step(m) for m in minis]
        return {"critic_loss": float(np.mean(critic_losses)), **self._actor_step(minis[-1])}
