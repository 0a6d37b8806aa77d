"""IQL (Kostrikov, Nair, Levine 2021, "Offline Reinforcement Learning with Implicit Q-Learning").

Never queries Q at actions outside the data: V(s) is fitted by **expectile regression** (tau = 0.7)
towards min of two target Q(s, a) on dataset actions, Q(s, a) towards r + gamma V(s'), and the policy
by **advantage-weighted regression**, weights exp(beta (Q - V)) clipped at 100 (beta = 3, the paper's
locomotion temperature). The policy is a Gaussian with tanh-squashed mean and a state-independent
log std (the authors' code). Online fine-tuning (paper, section 5.3) keeps the same updates and adds
live transitions to a buffer that starts with the offline data; batches are uniform over the union.
Rewards are used as the simulator gives them (the paper also rescales locomotion rewards by
1000 / (max - min episode return) of the dataset; the task rewards here are already O(1) per step).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from simdist_core.baselines.common import Batch, Normalizer, OfflineTransitions, ReplayBuffer, mlp, soft_update
from simdist_core.data.sampler import concat_batches

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0
"""Range of the policy's log std (the IQL authors' policy)."""
MAX_WEIGHT = 100.0
"""Clip of the advantage weights exp(beta A) (paper)."""


@dataclass(frozen=True, kw_only=True)
class IQLConfig:
    """IQL hyperparameters; defaults are the paper's MuJoCo locomotion settings unless a field says otherwise."""

    hidden: int = 256
    """Width of all MLPs (paper: 256)."""
    layers: int = 2
    """Hidden layers of each MLP (paper: 2)."""
    expectile: float = 0.7
    """Expectile tau of the value regression (paper, locomotion: 0.7)."""
    temperature: float = 3.0
    """Inverse temperature beta of the advantage weights (paper, locomotion: 3.0)."""
    batch_size: int = 256
    """Minibatch (paper: 256)."""
    lr: float = 3e-4
    """Adam learning rate of all networks (paper: 3e-4)."""
    discount: float = 0.99
    """Discount (paper: 0.99)."""
    tau: float = 0.005
    """Polyak rate of the target Q (paper: 0.005)."""
    offline_steps: int = 2000
    """Offline updates before going online (paper: 1e6; a CPU budget here, raise it where compute allows)."""
    updates_per_step: int = 1
    """Updates per online environment step (paper's fine-tuning: 1)."""
    update_every: int = 1
    """Environment steps per update round online (1 = every step); CPU runs may raise it."""
    history: int = 25
    """Newest rows of the proprio/action window in the flat observation (25 = the world model's whole window)."""
    seed: int = 0
    """Seed of network init and batch sampling."""

    def __post_init__(self) -> None:
        if not 0.0 < self.expectile < 1.0:
            raise ValueError(f"expectile must be in (0, 1), got {self.expectile=}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature=}")
        for name in ("hidden", "layers", "batch_size", "updates_per_step", "update_every", "history"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {name}={getattr(self, name)}")
        if self.offline_steps < 0:
            raise ValueError(f"offline_steps must be >= 0, got {self.offline_steps=}")


def expectile_loss(diff: torch.Tensor, expectile: float) -> torch.Tensor:
    """Asymmetric squared loss |tau - 1(diff < 0)| diff^2, averaged (diff = target - prediction)."""
    weight = torch.where(diff > 0, expectile, 1.0 - expectile)
    return (weight * diff.pow(2)).mean()


def iql_batch(offline: OfflineTransitions, online: ReplayBuffer | None, n: int, rng: np.random.Generator) -> Batch:
    """``n`` transitions uniform over the union of the offline data and the online buffer."""
    if online is None or online.size == 0:
        return offline.sample(n)
    n_online = int(rng.binomial(n, online.size / (online.size + len(offline))))
    if n_online == 0:
        return offline.sample(n)
    if n_online == n:
        return online.sample(n, rng)
    return concat_batches(offline.sample(n - n_online), online.sample(n_online, rng))


class GaussianPolicy(nn.Module):
    """N(tanh(mlp(s)), exp(log_std)^2) with a learned state-independent log std."""

    def __init__(self, obs_dim: int, action_dim: int, hidden: int, layers: int) -> None:
        super().__init__()
        self.net = mlp(obs_dim, action_dim, hidden, layers)
        self.log_std = nn.Parameter(torch.zeros(action_dim))

    def dist(self, obs: torch.Tensor) -> torch.distributions.Normal:
        """The action distribution at ``obs`` (B, D)."""
        return torch.distributions.Normal(torch.tanh(self.net(obs)), self.log_std.clamp(LOG_STD_MIN, LOG_STD_MAX).exp())


class IQLAgent(nn.Module):
    """Twin Q with target, V, policy and their optimisers."""

    def __init__(self, obs_dim: int, action_dim: int, cfg: IQLConfig) -> None:
        super().__init__()
        torch.manual_seed(cfg.seed)
        self.cfg = cfg
        self.obs_norm = Normalizer(obs_dim)
        self.q1, self.q2 = (mlp(obs_dim + action_dim, 1, cfg.hidden, cfg.layers) for _ in range(2))
        self.target_q1, self.target_q2 = copy.deepcopy(self.q1), copy.deepcopy(self.q2)
        self.target_q1.requires_grad_(False)
        self.target_q2.requires_grad_(False)
        self.value = mlp(obs_dim, 1, cfg.hidden, cfg.layers)
        self.policy = GaussianPolicy(obs_dim, action_dim, cfg.hidden, cfg.layers)
        self.q_opt = torch.optim.Adam([*self.q1.parameters(), *self.q2.parameters()], lr=cfg.lr)
        self.v_opt = torch.optim.Adam(self.value.parameters(), lr=cfg.lr)
        self.pi_opt = torch.optim.Adam(self.policy.parameters(), lr=cfg.lr)
        self.rng = np.random.default_rng(cfg.seed)

    def act(self, obs: torch.Tensor, deterministic: bool, generator: torch.Generator | None = None) -> torch.Tensor:
        """(B, A) actions in [-1, 1] for raw flat observations (B, D): the mean, or a clipped sample."""
        dist = self.policy.dist(self.obs_norm(obs))
        if deterministic:
            return dist.mean
        return (dist.mean + dist.stddev * torch.randn(dist.mean.shape, generator=generator)).clamp(-1.0, 1.0)

    def update(self, b: Batch) -> dict[str, float]:
        """One IQL step on batch ``b``: value (expectile), policy (AWR), then Q (TD to V(s'))."""
        cfg = self.cfg
        obs, next_obs = self.obs_norm(b["obs"]), self.obs_norm(b["next_obs"])
        sa = torch.cat([obs, b["action"]], dim=-1)
        with torch.no_grad():
            target_q = torch.minimum(self.target_q1(sa), self.target_q2(sa)).squeeze(-1)
        v = self.value(obs).squeeze(-1)
        v_loss = expectile_loss(target_q - v, cfg.expectile)
        self.v_opt.zero_grad()
        v_loss.backward()
        self.v_opt.step()

        with torch.no_grad():  # the authors' order: the policy and Q steps read the value just updated
            v = self.value(obs).squeeze(-1)
        weight = torch.exp(cfg.temperature * (target_q - v)).clamp(max=MAX_WEIGHT)
        # actions stored at exactly +-1 are fine: the policy is an unsquashed Gaussian
        pi_loss = -(weight * self.policy.dist(obs).log_prob(b["action"]).sum(-1)).mean()
        self.pi_opt.zero_grad()
        pi_loss.backward()
        self.pi_opt.step()

        with torch.no_grad():
            target = b["reward"] + cfg.discount * (1.0 - b["done"]) * self.value(next_obs).squeeze(-1)
        q_loss = (self.q1(sa).squeeze(-1) - target).pow(2).mean() + (self.q2(sa).squeeze(-1) - target).pow(2).mean()
        self.q_opt.zero_grad()
        q_loss.backward()
        self.q_opt.step()
        soft_update(self.target_q1, self.q1, cfg.tau)
        soft_update(self.target_q2, self.q2, cfg.tau)
        return {"value_loss": v_loss.item(), "policy_loss": pi_loss.item(), "q_loss": q_loss.item(),
                "mean_weight": weight.mean().item(), "policy_std": math.exp(self.policy.log_std.mean().item())}

    def train_step(self, offline: OfflineTransitions, online: ReplayBuffer | None) -> dict[str, float]:
        """``updates_per_step`` IQL updates on batches uniform over offline data + online buffer."""
        logs = [self.update(iql_batch(offline, online, self.cfg.batch_size, self.rng))
                for _ in range(self.cfg.updates_per_step)]  # fmt: skip
        return logs[-1]
