"""Expert value labels: V(s) of the *expert* at every recorded state, not the behaviour policy's return.

Why: the planner scores candidate action sequences with ``reward + gamma^H V(s_{t+H})`` and the value
head must say how good a state is *if the expert took over from there*. The Monte-Carlo return of the
behaviour policy that happened to be running (a weak policy, or a perturbed expert) would label the
same state differently depending on who was driving, and would mix noise into the target.

How (``fit_value_function``):

1. Roll out the clean expert (skill 1, no perturbation) on the same task for ``episodes`` seeded
   episodes, recording the privileged ``value_features`` (each env's ``privileged_state()``) and the
   rewards.
2. Targets are the discounted return (gamma 0.99) to the episode end. A *terminated* episode does not
   bootstrap (nothing follows); a *truncated* one (time limit) bootstraps with the current estimate
   of V at its last state, refitted ``bootstrap_rounds`` times (fitted value iteration on the tail),
   so the label is the infinite-horizon value and does not collapse near the time limit.
   The time-to-limit feature is left out of the fit (``ValueFitConfig.time_feature_index``).
   Clean expert episodes only visit the expert's own states, but labels are needed where weak and
   perturbed policies go (tilted, slipping, about to fall). So the fit also gets ``branch_states``
   expert *continuations*: the generation behaviour runs, and at random states the env is deep-copied
   and the clean expert takes over for ``branch_steps`` steps; the return of that continuation is the
   expert's value of the off-distribution state (``rollout.branch_expert_episodes``). The Go2 does this
   by default. The UR5e does not by default (its deployed model's labels were fitted without), and
   does with ``branch_states`` set: its scripted expert then resumes the phase the state is in
   (``UR5eExpert.resume``) instead of restarting its approach, which would label a state at the hole
   with a retract-and-retry value.
3. Fit a small MLP (features -> 128 -> 128 -> 1, tanh, inputs and target standardised) by MSE.
   The features are low-dimensional privileged state, so a small network suffices; a ridge regression
   on raw features underfits the nonlinear "about to fall" / "in the hole" structure.

``simdist generate`` then labels every recorded row with ``V(value_features)``; a row that is the
final observation of a *terminated* episode gets 0 (consistent with the targets above). The fitted
function is stored in the dataset folder as ``value_fn.safetensors`` (weights, float32) and
``value_fn.json`` (config, feature statistics, fit report) - never pickle. Inference is plain numpy.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import load_file, save_file

from simdist_core.data.chunks import sha256_file

log = logging.getLogger(__name__)

VALUE_FN_WEIGHTS = "value_fn.safetensors"
VALUE_FN_META = "value_fn.json"
DEFAULT_BRANCH_STATES = {"go2": 64}
"""Expert continuations per robot when ``ValueFitConfig.branch_states`` is None (others: 0)."""


@dataclass(frozen=True, kw_only=True)
class ValueFitConfig:
    """How the expert value function is fitted."""

    episodes: int = 8
    """Clean expert episodes rolled out for the fit."""
    gamma: float = 0.99
    """Discount of the return the value estimates."""
    hidden: int = 128
    """Width of the two hidden layers."""
    train_steps: int = 1500
    """Adam steps per fit round."""
    batch_size: int = 1024
    """States per Adam step."""
    lr: float = 1e-3
    """Adam learning rate."""
    bootstrap_rounds: int = 3
    """Refits with truncated tails bootstrapped from the previous fit (0 = plain Monte Carlo)."""
    branch_states: int | None = None
    """Expert continuations from states of the generation behaviour added to the fit (module docstring);
    0 = clean expert episodes only; None = the robot's default (``DEFAULT_BRANCH_STATES``)."""
    branch_steps: int = 250
    """Length of each continuation (gamma^250 = 0.08; the rest is bootstrapped)."""
    time_feature_index: int | None = -1
    """Feature excluded from the fit: both robots put ``time_fraction`` (time / episode limit) last. With
    it the fit would learn the time-limit tail (value falling to 0 at the limit) instead of the state's
    worth, and the last state of a truncated episode could not bootstrap from similar earlier states."""

    def __post_init__(self) -> None:
        if self.episodes < 1 or self.hidden < 1 or self.train_steps < 1 or self.batch_size < 1:
            raise ValueError(f"episodes, hidden, train_steps, batch_size must be >= 1, got {self}")
        if not 0.0 < self.gamma < 1.0:
            raise ValueError(f"gamma must be in (0, 1), got {self.gamma=}")
        if (self.branch_states is not None and self.branch_states < 0) or self.branch_steps < 1:
            raise ValueError(f"need branch_states >= 0 and branch_steps >= 1, got {self.branch_states=}, "
                             f"{self.branch_steps=}")
        if not self.lr > 0 or self.bootstrap_rounds < 0:
            raise ValueError(f"need lr > 0 and bootstrap_rounds >= 0, got {self.lr=}, {self.bootstrap_rounds=}")

    def branch_states_for(self, robot: str) -> int:
        """Continuations to roll out for ``robot``: ``branch_states``, or the robot's default when None."""
        return DEFAULT_BRANCH_STATES.get(robot, 0) if self.branch_states is None else self.branch_states


@dataclass
class ExpertEpisode:
    """One clean expert rollout used for fitting."""

    features: np.ndarray
    """(L+1, F) value features at every state including the final one."""
    rewards: np.ndarray
    """(L,) reward of each step."""
    terminated: bool
    """Ended by termination (no bootstrap) rather than the time limit."""


class ValueFunction:
    """``V(features)``: a numpy MLP with standardised inputs and output."""

    def __init__(self, weights: dict[str, np.ndarray], meta: dict) -> None:
        ints = ("columns", "n_features")
        self.weights = {k: np.asarray(v, np.int64 if k in ints else np.float32) for k, v in weights.items()}
        self.meta = meta
        self.columns = self.weights["columns"]
        """Indices of the input features the MLP reads."""
        self.feature_dim = int(self.weights["n_features"][0])

    def __call__(self, features: np.ndarray) -> np.ndarray:
        """Values (N,) float32 of features (N, F) (or (F,) -> scalar array).

        Raises:
            ValueError: wrong feature width or non-finite features.
        """
        x = np.asarray(features, np.float32)
        single = x.ndim == 1
        x = x[None] if single else x
        if x.shape[-1] != self.feature_dim or not np.all(np.isfinite(x)):
            raise ValueError(f"value features must be finite with width {self.feature_dim}, got {x.shape}")
        w = self.weights
        h = np.tanh(((x[:, self.columns] - w["x_mean"]) / w["x_std"]) @ w["w0"] + w["b0"])  # (N, hidden)
        h = np.tanh(h @ w["w1"] + w["b1"])
        y = (h @ w["w2"] + w["b2"])[:, 0] * w["y_std"][0] + w["y_mean"][0]  # (N,)
        return y[0] if single else y.astype(np.float32)

    def save(self, folder: str | Path) -> str:
        """Write ``value_fn.safetensors`` + ``value_fn.json`` atomically; returns the weights' sha256."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{VALUE_FN_WEIGHTS}.tmp"
        save_file(self.weights, str(tmp))
        os.replace(tmp, folder / VALUE_FN_WEIGHTS)
        digest = sha256_file(folder / VALUE_FN_WEIGHTS)
        meta = {**self.meta, "weights_sha256": digest}
        tmp_meta = folder / f".{VALUE_FN_META}.tmp"
        tmp_meta.write_text(json.dumps(meta, indent=1))
        os.replace(tmp_meta, folder / VALUE_FN_META)
        return digest

    @classmethod
    def load(cls, folder: str | Path) -> ValueFunction:
        """Load and hash-check a saved value function.

        Raises:
            FileNotFoundError: no saved value function in ``folder``.
            ValueError: the weights do not match the hash in the JSON.
        """
        folder = Path(folder)
        meta = json.loads((folder / VALUE_FN_META).read_text())
        digest = sha256_file(folder / VALUE_FN_WEIGHTS)
        if digest != meta.get("weights_sha256"):
            raise ValueError(f"{folder / VALUE_FN_WEIGHTS}: sha256 {digest[:12]}… does not match {VALUE_FN_META}")
        return cls(load_file(str(folder / VALUE_FN_WEIGHTS)), meta)


def discounted_targets(episode: ExpertEpisode, gamma: float, tail_value: float) -> np.ndarray:
    """Return targets (L+1,) for every state: G_t = r_t + gamma G_{t+1}; G_L = 0 or ``tail_value``."""
    out = np.empty(len(episode.rewards) + 1, np.float64)
    out[-1] = 0.0 if episode.terminated else tail_value
    for i in range(len(episode.rewards) - 1, -1, -1):
        out[i] = episode.rewards[i] + gamma * out[i + 1]
    return out


def _train_mlp(x: np.ndarray, y: np.ndarray, cfg: ValueFitConfig, seed: int) -> dict[str, np.ndarray]:
    torch.manual_seed(seed)
    x_mean, x_std = x.mean(0), np.maximum(x.std(0), 1e-3)
    y_mean, y_std = np.array([y.mean()]), np.array([max(float(y.std()), 1e-3)])
    xt = torch.as_tensor((x - x_mean) / x_std, dtype=torch.float32)  # (N, F)
    yt = torch.as_tensor((y - y_mean) / y_std, dtype=torch.float32)  # (N,)
    net = torch.nn.Sequential(
        torch.nn.Linear(x.shape[1], cfg.hidden), torch.nn.Tanh(),
        torch.nn.Linear(cfg.hidden, cfg.hidden), torch.nn.Tanh(),
        torch.nn.Linear(cfg.hidden, 1),
    )
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(cfg.train_steps):
        idx = torch.randint(0, len(xt), (min(cfg.batch_size, len(xt)),), generator=gen)
        loss = torch.nn.functional.mse_loss(net(xt[idx])[:, 0], yt[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    layers = [m for m in net if isinstance(m, torch.nn.Linear)]
    weights = {f"w{i}": m.weight.detach().numpy().T.copy() for i, m in enumerate(layers)}
    weights |= {f"b{i}": m.bias.detach().numpy().copy() for i, m in enumerate(layers)}
    weights |= {"x_mean": x_mean, "x_std": x_std, "y_mean": y_mean, "y_std": y_std}
    return {k: np.asarray(v, np.float32) for k, v in weights.items()}


def fit_value_function(
    episodes: Sequence[ExpertEpisode], cfg: ValueFitConfig | None = None, seed: int = 0, meta: dict | None = None
) -> ValueFunction:
    """Fit V to the discounted returns of clean expert episodes (module docstring).

    Args:
        episodes: clean expert rollouts.
        cfg: fit settings.
        seed: torch seed (the fit is deterministic on one machine).
        meta: extra provenance stored in the JSON (task, robot, ...).

    Raises:
        ValueError: no episodes, or non-finite features/rewards.
    """
    cfg = cfg if cfg is not None else ValueFitConfig()
    if not episodes:
        raise ValueError("fit_value_function needs at least one expert episode")
    x = np.concatenate([e.features for e in episodes]).astype(np.float64)  # (N, F)
    if not np.all(np.isfinite(x)) or not all(np.all(np.isfinite(e.rewards)) for e in episodes):
        raise ValueError("expert rollouts contain non-finite value features or rewards")
    n_features = x.shape[1]
    skip = None if cfg.time_feature_index is None else cfg.time_feature_index % n_features
    columns = np.array([i for i in range(n_features) if i != skip], np.int64)
    extra = {"columns": columns, "n_features": np.array([n_features], np.int64)}
    tails = np.zeros(len(episodes))
    vf = None
    for round_ in range(cfg.bootstrap_rounds + 1):
        y = np.concatenate([discounted_targets(e, cfg.gamma, t) for e, t in zip(episodes, tails, strict=True)])
        vf = ValueFunction(_train_mlp(x[:, columns], y, cfg, seed + round_) | extra, {})
        tails = np.array([float(vf(e.features[-1])) for e in episodes])
    assert vf is not None
    pred = vf(x)
    r2 = 1.0 - float(np.mean((pred - y) ** 2) / max(np.var(y), 1e-12))
    vf.meta = {
        **(meta or {}),
        "config": asdict(cfg),
        "seed": seed,
        "n_samples": len(x),
        "n_episodes": len(episodes),
        "feature_dim": n_features,
        "columns": columns.tolist(),
        "fit_r2": r2,
        "target_mean": float(y.mean()),
        "target_std": float(y.std()),
    }
    log.info("value function: %d samples from %d expert episodes, R^2 %.3f", len(x), len(episodes), r2)
    return vf


def rollout_expert_episodes(
    make_env: Callable[[], object], make_expert: Callable[[object, np.random.Generator], object],
    n_episodes: int, seed: int, max_steps: int = 100_000,
) -> list[ExpertEpisode]:
    """Run the clean expert for ``n_episodes`` seeded episodes, recording value features and rewards."""
    env = make_env()
    out = []
    for i in range(n_episodes):
        env_seed, policy_seed = np.random.SeedSequence([seed, 0x5A1E, i]).generate_state(2)
        env.reset(seed=int(env_seed))
        expert = make_expert(env, np.random.default_rng(int(policy_seed)))
        expert.reset(env, np.random.default_rng(int(policy_seed)))
        feats, rewards, terminated = [env.privileged_state()["value_features"]], [], False
        for _ in range(max_steps):
            result = env.step(expert.act(env))
            rewards.append(result.reward)
            feats.append(env.privileged_state()["value_features"])
            if result.terminated or result.truncated:
                terminated = bool(result.terminated)
                break
        out.append(ExpertEpisode(np.stack(feats).astype(np.float32), np.array(rewards, np.float64), terminated))
    if hasattr(env, "close"):
        env.close()
    return out
