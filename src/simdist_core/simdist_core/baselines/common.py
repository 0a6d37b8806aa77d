"""What both RL baselines share: the flat observation, networks, replay data and the planner adapter.

Observation: the agents see what the world model's encoder sees, flattened into one vector
(``FlatObservation``, ``flat_obs``): the last ``history`` rows of the proprio window and of the previous
actions, the command and, on Go2, the height map. A flat vector of pixels is no fair input for an MLP
agent, so on a robot with a camera (UR5e) the agents see the pretrained world model's frozen encoder
output z_t instead of the image, beside the same flat vector inputs (``EncodedObservation``): they get the
representation the world model was distilled into, and none of its dynamics, reward or value.

Transitions: ``(obs, action, reward, next_obs, done)`` float32 tensors, ``done`` = 1 only where the
episode ended by termination (a fall); a time-limit truncation bootstraps as usual.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from simdist_core.data.dataset import Dataset
from simdist_core.data.history import ObservationHistory
from simdist_core.data.sampler import WindowSampler
from simdist_core.robots import RobotSpec
from simdist_core.sim.base import StepResult

log = logging.getLogger(__name__)

Batch = dict[str, torch.Tensor]
"""``obs`` (B, D), ``action`` (B, A), ``reward`` (B,), ``next_obs`` (B, D), ``done`` (B,)."""


def obs_dim(spec: RobotSpec, history: int) -> int:
    """Width D of ``flat_obs`` for ``spec`` with the last ``history`` rows of the window."""
    if spec.image_shape:
        raise ValueError(f"{spec.name}: a flat vector has no room for the camera; use EncodedObservation")
    return vector_dim(spec, history)


def vector_dim(spec: RobotSpec, history: int) -> int:
    """Width of the non-image encoder inputs flattened with the last ``history`` rows of the window."""
    hm = math.prod(spec.height_map_shape) if spec.height_map_shape else 0
    return history * (spec.proprio_dim + spec.action_dim) + spec.command_dim + hm


def flat_obs(model_input: dict[str, torch.Tensor], history: int) -> torch.Tensor:
    """(B, D) float32: the encoder's inputs (``simdist_core.robots`` layout) as one vector per sample.

    Args:
        model_input: ``proprio`` (B, T, P), ``prev_actions`` (B, T, A), optional ``command`` (B, C) and
            ``height_map`` (B, Hm, Wm).
        history: how many of the newest window rows to keep (1..T).
    """
    if "image" in model_input:
        raise ValueError("flat_obs takes vector inputs only; a camera image goes through EncodedObservation")
    parts = [model_input["proprio"][:, -history:].flatten(1), model_input["prev_actions"][:, -history:].flatten(1)]
    if "command" in model_input:
        parts.append(model_input["command"])
    if "height_map" in model_input:
        parts.append(model_input["height_map"].flatten(1))
    return torch.cat(parts, dim=1).float()


class Normalizer(nn.Module):
    """Fixed per-feature standardisation of observations, fitted once on offline data."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("std", torch.ones(dim))

    def fit(self, x: torch.Tensor, min_std: float = 1e-2) -> None:
        """Set mean and std from samples ``x`` (N, D); std is floored so constant features stay finite."""
        self.mean.copy_(x.mean(0))
        self.std.copy_(x.std(0).clamp_min(min_std))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Standardised ``x``, clipped to +-10 so one odd reading cannot saturate the networks."""
        return ((x - self.mean) / self.std).clamp(-10.0, 10.0)


def mlp(in_dim: int, out_dim: int, hidden: int, layers: int, layer_norm: bool = False) -> nn.Sequential:
    """``layers`` hidden layers of ``hidden`` ReLU units (each optionally followed by LayerNorm), then a linear out."""
    mods: list[nn.Module] = []
    width = in_dim
    for _ in range(layers):
        mods += [nn.Linear(width, hidden), *([nn.LayerNorm(hidden)] if layer_norm else []), nn.ReLU()]
        width = hidden
    mods.append(nn.Linear(width, out_dim))
    return nn.Sequential(*mods)


def soft_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    """Polyak averaging ``target <- (1 - tau) target + tau source``."""
    with torch.no_grad():
        for t, s in zip(target.parameters(), source.parameters(), strict=True):
            t.lerp_(s, tau)


class ReplayBuffer:
    """In-memory ring buffer of flat transitions (the online experience of one method).

    Storage grows by doubling up to ``capacity`` (a full-window Go2 observation is ~6 KB, so a
    preallocated million-row buffer would take 12 GB).
    """

    def __init__(self, obs_dim: int, action_dim: int, capacity: int, initial: int = 1024) -> None:
        self.capacity, self.size, self._next = capacity, 0, 0
        n = min(initial, capacity)
        self.data = {"obs": torch.zeros(n, obs_dim), "action": torch.zeros(n, action_dim), "reward": torch.zeros(n),
                     "next_obs": torch.zeros(n, obs_dim), "done": torch.zeros(n)}  # fmt: skip

    def _grow(self) -> None:
        n = min(2 * len(self.data["reward"]), self.capacity)
        self.data = {k: torch.cat([v, v.new_zeros(n - len(v), *v.shape[1:])]) for k, v in self.data.items()}

    def add(self, obs: torch.Tensor, action: torch.Tensor, reward: float, next_obs: torch.Tensor, done: bool) -> None:
        """Append one transition (overwrites the oldest when full)."""
        i = self._next
        if i == len(self.data["reward"]) < self.capacity:
            self._grow()
        for key, value in (("obs", obs), ("action", action), ("next_obs", next_obs)):
            self.data[key][i] = value.reshape(-1)
        self.data["reward"][i], self.data["done"][i] = float(reward), float(done)
        self._next, self.size = (i + 1) % self.capacity, min(self.size + 1, self.capacity)

    def sample(self, n: int, rng: np.random.Generator) -> Batch:
        """``n`` transitions drawn uniformly with replacement."""
        if self.size == 0:
            raise ValueError("ReplayBuffer.sample on an empty buffer")
        idx = torch.from_numpy(rng.integers(0, self.size, n))
        return {key: value[idx] for key, value in self.data.items()}


class FlatObservation:
    """The agents' input on robots without a camera: ``flat_obs`` with the last ``history`` window rows."""

    def __init__(self, spec: RobotSpec, history: int) -> None:
        self.history, self.dim = history, obs_dim(spec, history)

    def __call__(self, model_input: dict[str, torch.Tensor]) -> torch.Tensor:
        """(B, dim) float32 from a batched model input."""
        return flat_obs(model_input, self.history)


class EncodedObservation:
    """The agents' input on robots with a camera: the frozen encoder's z_t, then the flat vector inputs.

    Args:
        model: the pretrained world model (only its encoder is used, in eval mode and without gradients;
            it is never updated here).
        history: window rows of the vector inputs kept, as in ``flat_obs``.
    """

    def __init__(self, model: nn.Module, history: int) -> None:
        self.model, self.history = model.eval(), history
        self.dim = int(model.cfg.latent_dim) + vector_dim(model.spec, history)

    def __call__(self, model_input: dict[str, torch.Tensor]) -> torch.Tensor:
        """(B, dim) float32: z_t of the whole input (image included), then the flattened vector parts."""
        with torch.no_grad():  # not inference_mode: the agents' networks take these as ordinary inputs
            z = self.model.encode(model_input).z
        vectors = flat_obs({k: v for k, v in model_input.items() if k != "image"}, self.history)
        return torch.cat([z.float(), vectors], dim=1)


Observation = FlatObservation | EncodedObservation
"""What turns a batched model input into the agents' (B, dim) observation vectors."""


def observation_for(spec: RobotSpec, history: int, model: nn.Module | None) -> Observation:
    """``FlatObservation`` without a camera; with one, ``EncodedObservation`` of ``model`` (required then)."""
    if not spec.image_shape:
        return FlatObservation(spec, history)
    if model is None:
        raise ValueError(f"{spec.name} has a camera: the RL baselines need the pretrained model's encoder")
    return EncodedObservation(model, history)


class OfflineTransitions:
    """Flat transitions drawn from a step store (the pretraining dataset) with the sampler's window rules.

    A window of horizon 1 from ``WindowSampler`` gives the model input at row t and at t + 1 and the
    action and reward of row t, built exactly as for the world model; ``done`` is the store's
    ``terminated`` flag of row t + 1 (absent in stores without it: never done).

    ``cache``: observe every row once, here, and draw batches from those vectors (default: on with
    ``EncodedObservation``). Why: the encoder is frozen, so a row's observation never changes, and encoding the
    images of every batch again made an IQL update cost ~0.4 s on a 2-core CPU (UR5e, 64 px camera): over 2 hours
    of updates for one update per step over 15 minutes of experience at 20 Hz. The cache holds one float32 vector per
    row (476 MB for 160k UR5e rows). A row's observation is the same whether it is a window's first step
    or the step after the row before (the sampler builds both from the same rows), so each row is encoded once.
    """

    def __init__(self, dataset: Dataset, spec: RobotSpec, observe: Observation, seed: int = 0,
                 cache: bool | None = None) -> None:  # fmt: skip
        self.dataset, self.observe = dataset, observe
        self.sampler = WindowSampler(dataset, spec, horizon=1, batch_size=1, seed=seed)
        if "reward" in self.sampler.missing:
            raise KeyError(f"dataset {dataset.path} has no reward field: offline RL needs rewarded transitions")
        self.has_terminal = "terminated" in dataset.fields
        self._rng = np.random.default_rng(seed)
        self._cache: dict[str, Any] | None = None
        if cache if cache is not None else isinstance(observe, EncodedObservation):
            self._cache = self._observe_every_row()

    def __len__(self) -> int:
        return len(self.sampler.starts)

    def sample(self, n: int) -> Batch:
        """``n`` transitions drawn uniformly over the store's transitions."""
        return self.transitions(self._rng.choice(self.sampler.starts, n))

    def transitions(self, rows: np.ndarray) -> Batch:
        """The transitions that start at global ``rows`` (each must have a next row in its episode)."""
        rows = np.asarray(rows, np.int64)
        if self._cache is not None:
            c = self._cache
            at = np.searchsorted(self.sampler.starts, rows)
            if np.any(self.sampler.starts[np.minimum(at, len(self.sampler.starts) - 1)] != rows):
                raise ValueError("rows must be transition starts of the store (OfflineTransitions.sampler.starts)")
            return {"obs": c["obs"][np.searchsorted(c["rows"], rows)], "action": c["action"][at],
                    "reward": c["reward"][at], "next_obs": c["obs"][np.searchsorted(c["rows"], rows + 1)],
                    "done": c["done"][at]}  # fmt: skip
        return self._read(rows)

    def _read(self, rows: np.ndarray) -> Batch:
        """``transitions`` read from the store and observed now."""
        w = self.sampler.sample(starts=rows)
        obs = {key: value[:, 0] for key, value in w["obs"].items()}
        nxt = {key: value[:, 1] for key, value in w["obs"].items()}
        return {"obs": self.observe(obs), "action": w["actions"][:, 0], "reward": w["rewards"][:, 0],
                "next_obs": self.observe(nxt), "done": self._done(rows)}  # fmt: skip

    def _done(self, rows: np.ndarray) -> torch.Tensor:
        """(B,) float32: the ``terminated`` flag of the row after each of ``rows`` (zeros in stores without it)."""
        if not self.has_terminal:
            return torch.zeros(len(rows))
        return torch.from_numpy(np.asarray(self.dataset.gather("terminated", rows + 1), np.float32).reshape(-1))

    def _observe_every_row(self, chunk: int = 2048) -> dict[str, Any]:
        """Every transition's observation, action, reward and done, and the episodes' last rows' observations.

        ``rows`` (sorted) are the starts and the rows after them; ``obs[i]`` is the observation of ``rows[i]``:
        of a start from its window's first step, of an episode's last row from the second step of the window
        that starts one row before. The rest is per start, in the order of ``sampler.starts``.
        """
        began = time.perf_counter()
        starts = self.sampler.starts
        rows = np.union1d(starts, starts + 1)
        next_is_start = np.isin(starts + 1, starts)  # else the row after this start ends its episode
        obs: torch.Tensor | None = None
        parts: dict[str, list[torch.Tensor]] = {"action": [], "reward": [], "done": []}
        for i in range(0, len(starts), chunk):
            rows_i = starts[i : i + chunk]
            w = self.sampler.sample(starts=rows_i)
            first = self.observe({key: value[:, 0] for key, value in w["obs"].items()})
            if obs is None:
                obs = torch.empty(len(rows), first.shape[1], dtype=first.dtype)
            obs[np.searchsorted(rows, rows_i)] = first
            last = ~next_is_start[i : i + chunk]
            if last.any():
                obs[np.searchsorted(rows, rows_i[last] + 1)] = self.observe(
                    {key: value[torch.from_numpy(last), 1] for key, value in w["obs"].items()}
                )
            parts["action"].append(w["actions"][:, 0])
            parts["reward"].append(w["rewards"][:, 0])
            parts["done"].append(self._done(rows_i))
        cache = {"rows": rows, "obs": obs, **{k: torch.cat(v) for k, v in parts.items()}}
        log.info("observed the %d offline rows once (%.0f MB) in %.0f s", len(rows),
                 obs.numel() * obs.element_size() / 1e6, time.perf_counter() - began)  # fmt: skip
        return cache


@dataclass(frozen=True)
class AgentPlannerConfig:
    """What the adapter reports as its "planner config" in evaluation reports."""

    agent: str
    """Agent class name."""
    deterministic: bool
    """Mean action (evaluation) or a sample of the policy (online collection)."""


class AgentPlanner:
    """Lets an RL agent drive ``simdist_core.eval.rollout.run_episode`` like the MPPI planner does.

    ``plan`` receives the same ``ObservationHistory`` model input the planner gets and returns the
    agent's action for the newest step, in [-1, 1].
    """

    def __init__(self, agent: Any, observe: Observation, deterministic: bool, seed: int = 0) -> None:  # noqa: ANN401
        self.agent, self.observe = agent, observe
        self.cfg = AgentPlannerConfig(type(agent).__name__, deterministic)
        self.generator = torch.Generator().manual_seed(seed)

    def reset(self) -> None:
        """Nothing carries over between episodes (the observation window holds all the state)."""

    def plan(self, model_input: dict[str, torch.Tensor]) -> torch.Tensor:
        """(A,) action for the newest observation of ``model_input``."""
        with torch.no_grad():
            obs = self.observe(model_input)
            return self.agent.act(obs, deterministic=self.cfg.deterministic, generator=self.generator)[0]


class OnlineRecorder:
    """``run_episode`` callbacks that store each live transition as observation vectors and run updates after it.

    It keeps its own ``ObservationHistory`` fed exactly as ``run_episode`` feeds the planner's, so the
    stored ``obs`` is what the agent acted on and ``next_obs`` what it sees next.

    Args:
        spec: robot layout.
        buffer: where transitions go.
        observe: the agents' observation of a model input.
        after_step: called after each stored transition (the agent's updates).
    """

    def __init__(self, spec: RobotSpec, buffer: ReplayBuffer, observe: Observation, after_step: Any) -> None:  # noqa: ANN401
        self.buffer, self.observe, self.after_step = buffer, observe, after_step
        self._history = ObservationHistory(spec)
        self._next_obs: torch.Tensor | None = None
        """The last stored ``next_obs``: the next step's ``obs`` (observed once; an encoder pass on camera robots)."""
        self.steps = 0

    def on_reset(self, obs: dict[str, np.ndarray]) -> None:
        """Start of an episode."""
        self._history.reset(obs)
        self._next_obs = None

    def on_step(self, obs: dict[str, np.ndarray], action: np.ndarray, result: StepResult) -> None:  # noqa: ARG002
        """Store ``(obs, action, reward, next_obs, terminated)`` and run the post-step hook."""
        before = self._next_obs if self._next_obs is not None else self.observe(self._history.model_input())
        self._history.record_action(action)
        self._history.push(result.obs)
        after = self._next_obs = self.observe(self._history.model_input())
        self.buffer.add(before, torch.from_numpy(np.asarray(action, np.float32)), float(result.reward), after,
                        bool(result.terminated))  # fmt: skip
        self.steps += 1
        self.after_step()
