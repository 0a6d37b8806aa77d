"""Recording closed-loop experience into the step store, the way the robot's replay buffer does.

Records are built by ``simdist_core.data.transitions.make_record`` (the same function the ROS replay
buffer and the bag converter use), so benchmark experience carries exactly what a robot can log:
observations and executed actions, no reward/value/probe labels (``labelled=False``). Only the
benchmark's held-out evaluation set may add the simulator's privileged probe (``probe_fn``) and true
reward (``record_reward``): yardsticks for comparing methods, and training labels only for the benchmark's
``dynamics_reward`` method, which departs from the method on purpose (``FinetuneConfig.reward_weight``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from simdist_core.data.chunks import ChunkWriter
from simdist_core.data.transitions import make_record
from simdist_core.eval.rollout import EpisodeStats, run_episode
from simdist_core.robots import RobotSpec
from simdist_core.sim.base import RobotEnv, StepResult


class ExperienceRecorder:
    """An ``on_step`` callback for :func:`simdist_core.eval.rollout.run_episode` that appends to a shard.

    Each episode's final observation is stored as an extra row (action zeros) so the last
    transition has a target, as ``simdist generate`` does.

    Args:
        spec: robot layout.
        shard_dir: shard folder (created; numbering continues after existing chunks).
        chunk_steps: rows per sealed chunk.
        first_episode_id: id of the first recorded episode (continue after existing ones).
        probe_fn: if given, returns the simulator's privileged probe of the CURRENT state; every row
            then also stores ``priv/probe`` of its observation (evaluation sets only). ``start_episode``
            must be called right after each reset (``run_episode(on_reset=...)``).
        record_reward: also store the simulator's reward of each transition (``reward``; 0 on the
            final-observation row, as ``simdist generate`` does). Evaluation sets only.
    """

    def __init__(
        self,
        spec: RobotSpec,
        shard_dir: Path,
        *,
        chunk_steps: int = 1024,
        first_episode_id: int = 0,
        probe_fn: Callable[[], np.ndarray] | None = None,
        record_reward: bool = False,
    ) -> None:
        self.spec = spec
        self.probe_fn = probe_fn
        self.record_reward = record_reward
        self._probe: np.ndarray | None = None  # probe of the observation the next row stores
        self.writer = ChunkWriter(shard_dir, chunk_steps=chunk_steps, align_episodes=False, fsync=False)
        self.episode_id = first_episode_id
        self.steps = 0
        """Control steps recorded (not counting the final-observation rows)."""
        self._t_ns = 0
        self._last_obs: dict[str, np.ndarray] | None = None

    def start_episode(self, obs: dict[str, np.ndarray]) -> None:  # noqa: ARG002 (the run_episode on_reset signature)
        """Note the state right after a reset (needed only with ``probe_fn``)."""
        if self.probe_fn is not None:
            self._probe = np.asarray(self.probe_fn(), np.float32).copy()

    def _record(self, obs: dict[str, np.ndarray], action: np.ndarray, reward: float) -> dict[str, np.ndarray]:
        record = make_record(self.spec, obs, action, self._t_ns, self.episode_id)
        if self.record_reward:
            record["reward"] = np.float32(reward)
        if self.probe_fn is not None:
            if self._probe is None:
                raise RuntimeError("ExperienceRecorder: probe_fn set but start_episode was not called after reset")
            record["priv/probe"] = self._probe
        return record

    def __call__(self, obs: dict[str, np.ndarray], action: np.ndarray, result: StepResult) -> None:
        """Append the transition (obs, action) -> result.obs."""
        self.writer.append(self._record(obs, action, float(result.reward)))
        if self.probe_fn is not None:  # the env has stepped: this is the probe of result.obs
            self._probe = np.asarray(self.probe_fn(), np.float32).copy()
        self._t_ns += int(round(1e9 * self.spec.control_dt))
        self._last_obs = result.obs
        self.steps += 1

    def end_episode(self) -> None:
        """Store the episode's final observation and advance the episode id."""
        if self._last_obs is not None:
            zero = np.zeros(self.spec.action_dim, np.float32)
            self.writer.append(self._record(self._last_obs, zero, 0.0))
        self._last_obs = None
        self._probe = None
        self.episode_id += 1
        self._t_ns += 10**9  # a gap, so time-based episode logic also sees a new episode

    def close(self) -> None:
        """Seal what is buffered."""
        self.writer.close()


def collect_experience(
    env: RobotEnv,
    planner: Any,  # noqa: ANN401
    shard_dir: Path,
    *,
    episodes: int,
    max_steps: int,
    seed: int,
    exploration_std: float = 0.0,
    first_episode_id: int = 0,
    chunk_steps: int = 1024,
    eval_labels: bool = False,
    record_reward: bool = False,
    command_ramp_s: float = 0.0,
    heading_hold: bool = False,
) -> list[EpisodeStats]:
    """Run ``episodes`` planner episodes in ``env`` and append them to ``shard_dir``.

    Args:
        env: the (possibly shifted) task.
        planner: ``reset()`` + ``plan(model_input)``, e.g. ``MPPIPlanner``.
        shard_dir: shard folder; chunks are sealed at the end of the call.
        episodes: number of episodes (seeds ``seed + i``).
        max_steps: control-step cap per episode.
        seed: first episode seed; also seeds the exploration noise.
        exploration_std: Gaussian noise on the executed action (recorded as executed).
        first_episode_id: id of the first episode (continue after the ids already in the shard).
        chunk_steps: rows per sealed chunk.
        eval_labels: also store the privileged probe (``priv/probe``) and the true ``reward`` of every row
            (evaluation sets only: a robot has neither).
        record_reward: store the simulator's ``reward`` of every row (implied by ``eval_labels``): training
            labels only for a finetune that departs from the method (``FinetuneConfig.reward_weight``).
        command_ramp_s: ramp the velocity command from rest over this long (``run_episode``); the recorded
            observations carry the ramped command, as the live graph's replay buffer records them.
        heading_hold: the command holds the episode's starting heading (``run_episode``); recorded as seen.

    Returns:
        Per-episode stats (metrics, planner timings).
    """
    probe_fn = (lambda: env.privileged_state()["probe"]) if eval_labels else None
    recorder = ExperienceRecorder(env.spec, shard_dir, chunk_steps=chunk_steps, first_episode_id=first_episode_id,
                                  probe_fn=probe_fn, record_reward=eval_labels or record_reward)  # fmt: skip
    rng = np.random.default_rng(seed)
    stats = []
    try:
        for i in range(episodes):
            stats.append(run_episode(env, planner, seed=seed + i, max_steps=max_steps, exploration_std=exploration_std,
                                     rng=rng, on_step=recorder, on_reset=recorder.start_episode,
                                     command_ramp_s=command_ramp_s, heading_hold=heading_hold))  # fmt: skip
            recorder.end_episode()
    finally:
        recorder.close()
    return stats
