"""One recorded episode of data generation: policy + contiguous perturbations -> stored rows.

An episode's randomness comes only from ``episode_seed(seed, shard, index)``: the env reset seed,
the expert-or-weak choice and skill, the policy's and the perturbation schedule's generators. So an
episode is reproducible on its own, which is what makes resumed generation identical to an
uninterrupted one.

Rows (fields of the store, per step; see ``simdist_core.data.sampler`` for how they are read):

    obs/proprio, obs/command | obs/height_map | obs/image   what the robot's sensors gave at the state
    action          (A,) float32  executed action = clip(policy action + noise, -1, 1)
    policy_action   (A,) float32  the policy's action before noise
    reward          float32       reward received for ``action``
    value           float32       expert value V(s) of this row's state (``value_labels``)
    clean_expert    bool          expert episode and no perturbation at this step
    perturbed       bool          noise burst at this step
    expert_episode  bool          the episode's policy is the expert (skill 1)
    skill           float32       the episode's policy skill
    episode_id      int64         episode index within the shard
    step            int32         step within the episode
    terminated, truncated  bool   set on the episode's final row only
    priv/probe      (3,) float32  probe target (robots.py)
    priv/value_features (F,) float32

The final row of an episode is the observation *after* the last action: its action/reward are zero
and ``clean_expert`` is False, so every executed transition has a next-state target.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simdist_core.data.perturbation import PerturbationConfig, PerturbationSchedule, apply_noise
from simdist_core.data.value_labels import ExpertEpisode, ValueFunction
from simdist_core.experts import Policy, make_policy


@dataclass(frozen=True, kw_only=True)
class BehaviourConfig:
    """Who drives an episode and how it is perturbed."""

    expert_fraction: float = 0.5
    """Probability that an episode is driven by the expert (skill 1)."""
    weak_skill_min: float = 0.3
    """Weak policies draw skill =U(weak_skill_min, weak_skill_max) per episode."""
    weak_skill_max: float = 0.9
    """Upper end of the weak policies' skill draw (below 1, the expert)."""
    max_episode_steps: int = 100_000
    """Safety cap (envs truncate at their own time limit long before)."""
    perturbation: PerturbationConfig = field(default_factory=PerturbationConfig)
    expert_overrides: tuple[tuple[str, str], ...] = ()
    """The expert's config fields as sorted ``(key, value)`` strings (``simdist generate --expert``), for the expert,
    its weaker variants and the value rollouts alike."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.expert_fraction <= 1.0:
            raise ValueError(f"expert_fraction must be in [0, 1], got {self.expert_fraction=}")
        if not 0.0 < self.weak_skill_min <= self.weak_skill_max < 1.0:
            raise ValueError(
                f"need 0 < weak_skill_min <= weak_skill_max < 1, got {self.weak_skill_min=}, {self.weak_skill_max=}"
            )
        if self.max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be >= 1, got {self.max_episode_steps=}")


def episode_seed(seed: int, shard: int, index: int) -> np.random.SeedSequence:
    """The seed sequence of episode ``index`` of shard ``shard`` under the run seed ``seed``."""
    return np.random.SeedSequence([seed, shard, index])


def _obs_fields(obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {f"obs/{key}": value for key, value in obs.items()}


def _start_episode(
    env: Any, cfg: BehaviourConfig, seed_seq: np.random.SeedSequence  # noqa: ANN401  (any RobotEnv)
) -> tuple[bool, float, dict[str, np.ndarray], Policy, PerturbationSchedule]:
    """Reset ``env`` and draw who drives and how it is perturbed: (is_expert, skill, obs, policy, schedule)."""
    env_ss, choice_ss, policy_ss, noise_ss = seed_seq.spawn(4)
    choice = np.random.default_rng(choice_ss)
    is_expert = bool(choice.random() < cfg.expert_fraction)
    skill = 1.0 if is_expert else float(choice.uniform(cfg.weak_skill_min, cfg.weak_skill_max))
    obs = env.reset(seed=int(env_ss.generate_state(1)[0]))
    policy = make_policy(env, skill, np.random.default_rng(policy_ss), dict(cfg.expert_overrides))
    schedule = PerturbationSchedule(cfg.perturbation, action_dim=env.spec.action_dim)
    schedule.reset(np.random.default_rng(noise_ss))
    return is_expert, skill, obs, policy, schedule


def run_episode(
    env: object, cfg: BehaviourConfig, value_fn: ValueFunction, seed: int, shard: int, index: int
) -> list[dict[str, np.ndarray]]:
    """Roll out one episode and return its rows (final observation row included).

    Args:
        env: a ``RobotEnv`` (``sim.base``) whose robot has an expert in ``experts.POLICIES``.
        cfg: behaviour settings.
        value_fn: expert value function for the ``value`` labels.
        seed: run seed (``episode_seed``).
        shard: shard number.
        index: episode index within the shard.
    """
    is_expert, skill, obs, policy, schedule = _start_episode(env, cfg, episode_seed(seed, shard, index))
    rows: list[dict[str, np.ndarray]] = []
    base = {"expert_episode": np.bool_(is_expert), "skill": np.float32(skill), "episode_id": np.int64(index)}
    terminated = truncated = False
    for step in range(cfg.max_episode_steps + 1):
        priv = env.privileged_state()
        row = {
            **_obs_fields(obs), **base, "step": np.int32(step),
            "priv/probe": np.asarray(priv["probe"], np.float32),
            "priv/value_features": np.asarray(priv["value_features"], np.float32),
        }
        if terminated or truncated or step == cfg.max_episode_steps:
            zeros = np.zeros(env.spec.action_dim, np.float32)
            row |= {"action": zeros, "policy_action": zeros, "reward": np.float32(0.0), "clean_expert": np.False_,
                    "perturbed": np.False_, "terminated": np.bool_(terminated),
                    "truncated": np.bool_(truncated or not terminated)}
            rows.append(row)
            break
        action = np.asarray(policy.act(env), np.float32)
        noise, perturbed = schedule.step()
        executed = apply_noise(action, noise)
        result = env.step(executed)
        row |= {"action": executed, "policy_action": action, "reward": np.float32(result.reward),
                "clean_expert": np.bool_(is_expert and not perturbed), "perturbed": np.bool_(perturbed),
                "terminated": np.False_, "truncated": np.False_}
        rows.append(row)
        obs, terminated, truncated = result.obs, bool(result.terminated), bool(result.truncated)
    values = value_fn(np.stack([r["priv/value_features"] for r in rows]))  # (L+1,)
    if terminated:
        values[-1] = 0.0  # nothing follows a terminal state (value_labels docstring)
    for row, value in zip(rows, values, strict=True):
        row["value"] = np.float32(value)
    return rows


def _expert_continuation(env: Any, steps: int, rng: np.random.Generator,  # noqa: ANN401
                         overrides: Mapping[str, str] | None = None) -> ExpertEpisode:
    """The clean expert taking over from ``env``'s current state, on a deep copy (``env`` is untouched)."""
    clone = copy.deepcopy(env)
    expert = make_policy(clone, 1.0, rng, overrides)
    resume = getattr(expert, "resume", None)  # an expert with phases picks up where the state is (UR5e)
    if resume is not None:
        resume(clone, rng)
    feats, rewards, terminated = [clone.privileged_state()["value_features"]], [], False
    for _ in range(steps):
        result = clone.step(expert.act(clone))
        rewards.append(result.reward)
        feats.append(clone.privileged_state()["value_features"])
        if result.terminated or result.truncated:
            terminated = bool(result.terminated)
            break
    return ExpertEpisode(np.stack(feats).astype(np.float32), np.array(rewards, np.float64), terminated)


def branch_expert_episodes(
    env: Any, cfg: BehaviourConfig, n_states: int, seed: int, branch_steps: int, branch_prob: float = 0.02  # noqa: ANN401
) -> list[ExpertEpisode]:
    """Clean expert continuations from states the generation behaviour visits (value_labels docstring).

    Behaviour episodes (expert or weak policy with perturbations, as in ``run_episode`` but seeded
    apart from the dataset's) run on ``env``; at each step, with probability ``branch_prob``, the
    env is copied and the clean expert runs from there for up to ``branch_steps`` steps. A
    continuation that hits the time limit or ``branch_steps`` counts as truncated (bootstrapped).
    """
    out: list[ExpertEpisode] = []
    episode = 0
    while len(out) < n_states:
        seed_seq = np.random.SeedSequence([seed, 0xB4A, episode])
        _, _, _, policy, schedule = _start_episode(env, cfg, seed_seq)
        branch_rng = np.random.default_rng(seed_seq.spawn(1)[0])
        for step in range(cfg.max_episode_steps):
            if step > 0 and branch_rng.random() < branch_prob:
                out.append(_expert_continuation(env, branch_steps, branch_rng, dict(cfg.expert_overrides)))
                if len(out) == n_states:
                    break
            result = env.step(apply_noise(policy.act(env), schedule.step()[0]))
            if result.terminated or result.truncated:
                break
        episode += 1
    return out
