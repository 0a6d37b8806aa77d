"""Offline phase, then online phase of an RL baseline in a simulated task.

Online, the agent drives ``simdist_core.eval.rollout.run_episode`` (the same env wrapper, control
rate and observation history as the MPPI planner), sampling from its policy; after every
``update_every`` environment steps it runs one update round (``train_step``) on offline data plus
its replay buffer. The buffer gets the simulator's reward with each transition: these agents need a
reward signal online, which the world model's dynamics-only finetuning does not.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from torch import nn

from simdist_core.baselines.common import (
    AgentPlanner,
    OfflineTransitions,
    OnlineRecorder,
    ReplayBuffer,
    observation_for,
)
from simdist_core.baselines.iql import IQLAgent, IQLConfig
from simdist_core.baselines.rlpd import RLPDAgent, RLPDConfig
from simdist_core.data.dataset import Dataset
from simdist_core.eval.rollout import run_episode
from simdist_core.robots import RobotSpec

log = logging.getLogger(__name__)

PROGRESS_EVERY_ROUNDS = 500
"""Offline update rounds between progress lines in the log."""
PROGRESS_EVERY_EPISODES = 10
"""Online episodes between progress lines in the log."""

AGENTS = {"rlpd": RLPDAgent, "iql": IQLAgent}
"""Method name -> agent class (its config is ``RLPDConfig`` / ``IQLConfig``)."""

NORMALIZER_SAMPLES = 8192
"""Offline transitions the observation normaliser is fitted on."""


class RLBaseline:
    """One RL agent with its offline data and online buffer, trained offline then online.

    Args:
        method: ``"rlpd"`` or ``"iql"``.
        spec: robot layout.
        offline: the pretraining dataset.
        cfg: the method's config.
        buffer_capacity: online transitions kept (the benchmark keeps all of them).
        encoder_model: the pretrained world model, whose frozen encoder stands in for the camera image on
            robots that have one (``common.EncodedObservation``); unused without a camera.
    """

    def __init__(self, method: str, spec: RobotSpec, offline: Dataset, cfg: RLPDConfig | IQLConfig,
                 buffer_capacity: int = 1_000_000, encoder_model: nn.Module | None = None) -> None:  # fmt: skip
        if cfg.history > spec.history:
            raise ValueError(f"history={cfg.history} is longer than {spec.name}'s observation window ({spec.history})")
        self.spec, self.cfg = spec, cfg
        self.observe = observation_for(spec, cfg.history, encoder_model)
        self.offline = OfflineTransitions(offline, spec, self.observe, seed=cfg.seed)
        self.agent = AGENTS[method](self.observe.dim, spec.action_dim, cfg)
        self.agent.obs_norm.fit(self.offline.sample(NORMALIZER_SAMPLES)["obs"])
        self.buffer = ReplayBuffer(self.observe.dim, spec.action_dim, buffer_capacity)
        self.updates = 0
        self.last_log: dict[str, float] = {}
        self._since_update = 0

    def train_offline(self, rounds: int | None = None) -> dict[str, float]:
        """``rounds`` (default ``cfg.offline_steps``) update rounds on offline data only; returns the last losses."""
        total = self.cfg.offline_steps if rounds is None else rounds
        began = time.perf_counter()
        for i in range(total):
            self.last_log = self.agent.train_step(self.offline, None)
            self.updates += 1
            if (i + 1) % PROGRESS_EVERY_ROUNDS == 0 and i + 1 < total:  # a CPU run of this phase can take many minutes
                log.info("%s offline: %d/%d update rounds, %.0f s", type(self.agent).__name__, i + 1, total,
                         time.perf_counter() - began)  # fmt: skip
        return self.last_log

    def _after_step(self) -> None:
        self._since_update += 1
        if self._since_update >= self.cfg.update_every:
            self._since_update = 0
            self.last_log = self.agent.train_step(self.offline, self.buffer)
            self.updates += 1

    def collect(self, env: Any, steps: int, episode_steps: int, seed: int, command_ramp_s: float = 0.0,  # noqa: ANN401
                heading_hold: bool = False) -> int:
        """Run the stochastic policy for ``steps`` control steps, learning as it goes; returns the episodes started.

        Episodes last at most ``episode_steps``; episode ``i`` resets with seed ``seed + i``; ``command_ramp_s``
        and ``heading_hold`` shape the command the policy sees as for the world-model methods (``run_episode``).
        """
        recorder = OnlineRecorder(self.spec, self.buffer, self.observe, self._after_step)
        planner = AgentPlanner(self.agent, self.observe, deterministic=False, seed=seed)
        episodes, began = 0, time.perf_counter()
        while recorder.steps < steps:
            run_episode(env, planner, seed=seed + episodes, max_steps=min(episode_steps, steps - recorder.steps),
                        on_step=recorder.on_step, on_reset=recorder.on_reset,
                        command_ramp_s=command_ramp_s, heading_hold=heading_hold)  # fmt: skip
            episodes += 1
            if episodes % PROGRESS_EVERY_EPISODES == 0 and recorder.steps < steps:
                log.info("%s online: %d/%d transitions, %d update rounds, %.0f s", type(self.agent).__name__,
                         recorder.steps, steps, self.updates, time.perf_counter() - began)  # fmt: skip
        log.info("%s: %d online transitions, %d update rounds, last %s", type(self.agent).__name__, self.buffer.size,
                 self.updates, {k: round(v, 4) for k, v in self.last_log.items()})  # fmt: skip
        return episodes

    def evaluation_planner(self, seed: int = 0) -> AgentPlanner:
        """The deterministic (mean-action) policy as a planner for closed-loop evaluation."""
        return AgentPlanner(self.agent, self.observe, deterministic=True, seed=seed)
