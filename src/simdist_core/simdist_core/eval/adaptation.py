"""``simdist bench adaptation``: zero-shot vs dynamics-only (SimDist) vs full finetuning in a shifted task.

From one pretrained checkpoint, each finetuning method repeatedly (1) collects experience in the
shifted task with its CURRENT planner plus small exploration noise, recorded as the robot's replay
buffer would (observations + executed actions, no labels), (2) finetunes on everything collected so
far, continuing from its latest accepted model, keeping the new model only if the validation gate
on the newest data passes, and (3) evaluates: the task metric in closed loop (fixed seeds) and the
held-out latent prediction error on a FIXED set of shifted transitions collected once with the
pretrained planner (seeds disjoint from every other episode). ``zero_shot`` is the pretrained model,
measured once (minute 0) and drawn as a flat line.

Latent error is the latent-consistency MSE in each model's own latent space. For ``dynamics_only``
the encoder is frozen, so errors are directly comparable with zero-shot; ``full_finetune`` also
moves its encoder (and thus its targets), so its number is reported but is not the same yardstick.
Probe error is the yardstick all methods share: the held-out set also stores the simulator's
privileged probe (Go2: base velocity in the heading frame, m/s; UR5e: TCP position, m), and the
error is the MSE of the probe head read from the open-loop predicted latents (H steps from one
encoded observation and the executed actions) against it. Reward error is the frozen-in-SimDist
reward head read along the same predicted latents against the simulator's true reward (normalised
units): it shows whether the heads still judge the predicted states right. Neither is a training label.

Offline-to-online RL baselines (``rlpd``, ``iql``; ``simdist_core.baselines``): each agent is trained
on the pretraining dataset (``--data``; default: the dataset recorded in the checkpoint's provenance),
then online on the same minutes of live experience, acting at the same control rate through the same
environment wrapper from a flat vector of the encoder's inputs, and evaluated on the same seeds. Its
minute 0 is the offline-trained agent. Unlike SimDist it is given the simulator's reward online, and
its latent, probe and reward errors are not defined (``null``).

``--compare LABEL=PATH`` runs the world-model methods again from another pretrained checkpoint (e.g.
one pretrained on ``simdist generate --mixture expert_only`` data), reported as ``METHOD@LABEL`` with
its own ``zero_shot@LABEL``; the held-out set stays the one collected with the main checkpoint.

Statistics: every evaluation point records the task metric of each episode (``episode_metric``, with
``episode_fell`` and ``episode_duration_s``), its 95 % bootstrap interval (``metric_ci95``) and the falls per
simulated minute of evaluation (``falls_per_min``); ``summary`` adds, per method and minute mark
(``by_minute``), paired intervals of the ratio and difference vs zero-shot (and ``dynamics_only`` vs
``full_finetune``): both ran the same evaluation episodes.

Several seeds (``seed`` seeds collection, held-out set, evaluation episodes and finetuning): run one
process per seed, then merge the reports (they must differ only in ``seed``; anything else is refused,
exit status 2, naming what differs)::

    simdist bench adaptation --task go2/ptfe_slope --minutes 0,5,10,20,30 --set eval_episodes=10 \
        --set seed=0 --json s0.json &    # ... and the same with seed=1 -> s1.json, seed=2 -> s2.json
    simdist bench adaptation --merge s0.json s1.json s2.json --json merged.json --plot merged.png

or ``--seeds 0,1,2`` to run them one after the other in one process (``<workdir>/seed-S``) and merge. A
merged report pools the episodes of all seeds: mean, 95 % interval from a two-level bootstrap (seeds,
then episodes within each; ``stats.cluster_mean_ci``), per-seed means and errors (``*_per_seed``); the
plot draws the intervals as error bars, and the errors as the mean over seeds with their min-max.

Final models: each world-model method's last accepted model is saved as a checkpoint,
``<workdir>/<method>/final`` (its manifest: task, seed, minutes of experience, parent checkpoint), listed in
the report's ``final_checkpoints``; ``simdist eval --checkpoint`` runs it.

CPU note: closed-loop planning on 2 shared cores is slow, so ``--minutes`` can be scaled down (e.g.
``0,1,2,4``); the report stores the planner preset, wall time and exactly what was run.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from simdist_core.baselines.iql import IQLConfig
from simdist_core.baselines.rlpd import RLPDConfig
from simdist_core.cliargs import (
    ArgumentParser,
    UsageError,
    check_choice,
    check_existing_path,
    check_list,
    check_positive,
    checkpoint_dir,
    cli_main,
)
from simdist_core.config import apply_cli_overrides, apply_overrides, parse_overrides, to_dict
from simdist_core.data.dataset import Dataset, check_dataset
from simdist_core.data.sampler import WindowSampler
from simdist_core.eval import stats
from simdist_core.eval.closed_loop import EvalConfig, evaluate, make_planner, task_metric_name
from simdist_core.eval.experience import collect_experience
from simdist_core.models.world_model import LossWeights
from simdist_core.planning.command_ramp import ramp_for
from simdist_core.training.adapt import FinetuneConfig, finetune_dynamics, fixed_batches
from simdist_core.training.common import OptimConfig
from simdist_core.training.trainer import Batch, evaluate_loss, finetune_loss_weights

log = logging.getLogger(__name__)

REWARD_ONLY = LossWeights(
    consistency=0.0, reward=1.0, value=0.0, reward_encoded=0.0, value_encoded=0.0, bc=0.0, probe=0.0
)
"""Scores only the reward head along predicted latents (``reward_error``)."""

METHODS: dict[str, dict[str, str]] = {
    "dynamics_only": {"parts": "dynamics"},
    "full_finetune": {"parts": "all"},
    "dynamics_reward": {"parts": "dynamics,reward", "reward_weight": "1.0"},
}
"""Finetuning method -> the ``FinetuneConfig`` settings it changes (``zero_shot`` trains nothing).
``dynamics_reward`` departs from the method: it also fits the reward head, at its pretraining weight, to the
simulator's reward of each transition it lived, which its collection then records (a robot would have to
compute that reward from its own state estimate); it asks whether the frozen reward head is what limits
adaptation on a task."""
RL_METHODS = ("rlpd", "iql")
"""Offline-to-online RL baselines (``simdist_core.baselines``)."""
METHOD_CHOICES = ("zero_shot", *METHODS, *RL_METHODS)
"""What ``--methods`` accepts (``zero_shot`` is always measured; naming it is allowed)."""


SEED_SCHEME = 2
"""How a run numbers its episodes' environment seeds (recorded in every report; ``--merge`` refuses to mix schemes).
1 (reports without the key, before 2026-12-03): ``seed + 50000 + i`` for evaluation, ``seed + 90000 + i`` for the
held-out set, ``seed + 10000 * (k + 1) + i`` for collection round k, so seeds 0, 1 and 2 shared 8 of 10 evaluation
start conditions. 2: :func:`episode_seed`, disjoint between seeds."""
MAX_SEEDS = 100
"""Benchmark seeds 0 .. MAX_SEEDS - 1 have disjoint episode ranges."""
EPISODES_PER_STREAM = 10_000
"""Episodes one seed can draw from one stream (evaluation, held-out set, one collection round)."""
EVAL_STREAM, HELDOUT_STREAM = 50, 90
"""Streams of the evaluation and held-out episodes; collection round k (1, 2, ...) is stream k + 1."""


def episode_seed(stream: int, seed: int) -> int:
    """Environment seed of episode 0 of ``stream`` for benchmark ``seed``; episode i is this + i.

    Disjoint for every (stream, seed) pair with fewer than ``EPISODES_PER_STREAM`` episodes: seeds 0, 1, 2 of a
    benchmark evaluate, hold out and collect on different start conditions, so they are independent repetitions.
    """
    return stream * MAX_SEEDS * EPISODES_PER_STREAM + seed * EPISODES_PER_STREAM


@dataclass(frozen=True, kw_only=True)
class AdaptationConfig:
    """One adaptation benchmark run (defaults sized for a 2-core CPU)."""

    task: str = "go2/ptfe_slope"
    """The shifted task (stands in for the real world)."""
    minutes: tuple[float, ...] = (0.0, 1.0, 2.0, 4.0)
    """Cumulative simulated minutes of experience at which to evaluate (first must be 0)."""
    episode_s: float = 10.0
    """Length cap of each experience episode (falls end episodes earlier)."""
    exploration_std: float = 0.1
    """Gaussian noise on executed actions while collecting."""
    eval_episodes: int = 3
    """Closed-loop evaluation episodes per point (fixed seeds)."""
    eval_s: float = 10.0
    """Length cap of each evaluation episode."""
    heldout_episodes: int = 4
    """Episodes of the fixed held-out set of shifted transitions."""
    heldout_windows: int = 512
    """Windows of the held-out set scored for the latent error."""
    preset: str = "cpu"
    """Planner preset for collection and evaluation."""
    command_ramp_s: float = 0.0
    """Ramp the velocity command the controller sees from rest to the task's over this long in every episode
    (collection, held-out set, evaluation; every method alike; Go2 only; 0: at once): the encoder node's
    ``command_ramp_s`` in the live graph (``simdist_core.planning.command_ramp``)."""
    finetune: FinetuneConfig = field(default_factory=lambda: FinetuneConfig(
        steps=300, batch_size=32, optim=OptimConfig(lr=2e-4, warmup_steps=30, cosine=False)))  # fmt: skip
    """Finetuning per round (continues from the method's latest accepted model)."""
    rlpd: RLPDConfig = field(default_factory=RLPDConfig)
    """The RLPD baseline (Ball et al. 2023)."""
    iql: IQLConfig = field(default_factory=IQLConfig)
    """The IQL baseline (Kostrikov et al. 2021)."""
    seed: int = 0
    """Seed of everything (collection, held-out set, evaluation, finetuning); several seeds: run one process per
    seed and ``--merge`` their reports, or ``--seeds``. Each seed draws its episodes' start conditions from its own
    range (:func:`episode_seed`), so two seeds share none."""

    def __post_init__(self) -> None:
        if not self.minutes or self.minutes[0] != 0 or list(self.minutes) != sorted(set(self.minutes)):
            raise ValueError(f"minutes must start at 0 and strictly increase, got {self.minutes=}")
        for name in ("episode_s", "eval_s"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {name}={getattr(self, name)}")
        if self.eval_episodes < 1 or self.heldout_episodes < 2:
            raise ValueError(f"need eval_episodes >= 1 and heldout_episodes >= 2, got {self.eval_episodes=}, "
                             f"{self.heldout_episodes=}")  # fmt: skip
        if not self.command_ramp_s >= 0:  # also catches NaN
            raise ValueError(f"command_ramp_s must be >= 0, got {self.command_ramp_s=}")
        if not 0 <= self.seed < MAX_SEEDS:
            raise ValueError(f"seed must be in [0, {MAX_SEEDS}), got {self.seed=}")


class Benchmark:
    """Runs the methods of one ``AdaptationConfig`` from one pretrained model, in ``workdir``."""

    def __init__(
        self,
        pretrained: torch.nn.Module,
        cfg: AdaptationConfig,
        workdir: Path,
        env_overrides: dict[str, str] | None = None,
        planner_overrides: dict[str, str] | None = None,
        offline_data: Path | None = None,
        parents: dict[str, Path] | None = None,
        replay_data: Path | None = None,
    ) -> None:
        from simdist_core.sim.base import make_env

        self.parents = dict(parents or {})
        """Checkpoint folder each pretrained model was loaded from: ``""`` the main one, else the ``--compare``
        label; recorded in the manifests of the final models (unknown ones are recorded as ``None``)."""
        self.final_models: dict[str, torch.nn.Module] = {}
        """Results key -> the final model of each world-model method (what ``<workdir>/<key>/final`` holds)."""
        self.offline_data = offline_data
        """Pretraining dataset of the RL baselines (needed only when one runs)."""
        self.replay = Dataset(replay_data) if replay_data is not None else None
        """Simulation data replayed into the world-model methods' finetuning batches (``finetune.replay_fraction``)."""
        if cfg.finetune.replay_fraction and self.replay is None:
            raise ValueError(f"finetune.replay_fraction={cfg.finetune.replay_fraction} needs replay_data")
        self.pretrained, self.cfg, self.workdir = pretrained.eval(), cfg, workdir
        self.env_overrides, self.planner_overrides = dict(env_overrides or {}), dict(planner_overrides or {})
        self.env = make_env(cfg.task, self.env_overrides)
        self.control_hz = self.env.spec.control_hz
        ramp_for(self.env.spec, cfg.command_ramp_s)  # a ramp this robot cannot have fails here, not an hour in
        self.eval_cfg = EvalConfig(task=cfg.task, episodes=cfg.eval_episodes, seconds=cfg.eval_s,
                                   seed=episode_seed(EVAL_STREAM, cfg.seed), preset=cfg.preset,
                                   command_ramp_s=cfg.command_ramp_s)  # fmt: skip
        self.holdout: list[Batch] = []
        self.log: list[dict[str, Any]] = []

    def _planner(self, model: torch.nn.Module) -> Any:  # noqa: ANN401
        return make_planner(model, None, self.cfg.preset, self.planner_overrides, self.cfg.seed)

    def _collect(
        self, model: torch.nn.Module, shard: Path, steps: int, seed: int, first_episode: int, eval_labels: bool = False,
        record_reward: bool = False,
    ) -> int:
        """Collect ``steps`` control steps with ``model``'s planner; returns the episodes recorded.

        ``eval_labels``: the held-out set's privileged probe and reward; ``record_reward``: the reward alone
        (experience for a method that trains the reward head).
        """
        planner, episode_steps = self._planner(model), int(round(self.cfg.episode_s * self.control_hz))
        done, episodes = 0, 0
        while done < steps:
            recorded = collect_experience(self.env, planner, shard, episodes=1,
                                          max_steps=min(episode_steps, steps - done),
                                          seed=seed + episodes, exploration_std=self.cfg.exploration_std,
                                          first_episode_id=first_episode + episodes,
                                          eval_labels=eval_labels, record_reward=record_reward,
                                          command_ramp_s=self.cfg.command_ramp_s)  # fmt: skip
            done += recorded[0].steps
            episodes += 1
        return episodes

    def build_holdout(self) -> None:
        """Collect the fixed held-out set with the pretrained planner (seeds disjoint from everything else)."""
        shard = self.workdir / "heldout" / "shard-0"
        steps = int(round(self.cfg.heldout_episodes * self.cfg.episode_s * self.control_hz))
        self._collect(self.pretrained, shard, steps, episode_seed(HELDOUT_STREAM, self.cfg.seed), 0, eval_labels=True)
        sampler = WindowSampler(Dataset(shard.parent), self.pretrained.spec, batch_size=64, seed=self.cfg.seed)
        self.holdout = fixed_batches(sampler, self.cfg.heldout_windows, 64, self.cfg.seed)

    def measure(self, model: torch.nn.Module) -> dict[str, Any]:
        """Closed-loop task metric and held-out latent error of ``model``."""
        report = evaluate(model, self.eval_cfg, env_overrides=self.env_overrides,
                          planner_overrides=self.planner_overrides)  # fmt: skip
        report["latent_error"] = evaluate_loss(model, self.holdout, finetune_loss_weights())["consistency"]
        report["probe_error"] = probe_rollout_error(model, self.holdout)
        report["reward_error"] = evaluate_loss(model, self.holdout, REWARD_ONLY)["reward"]
        return report

    def run_method(
        self, method: str, zero: dict[str, Any], pretrained: torch.nn.Module | None = None, name: str | None = None
    ) -> dict[str, Any]:
        """Collect -> finetune -> evaluate at each minute mark, continuing from the latest accepted model.

        ``pretrained`` (default: the benchmark's) is where the method starts; ``name`` its results key. The
        final model (the latest one that passed the gate) is saved as the checkpoint ``<workdir>/<name>/final``
        after the last measurement (``final_checkpoint`` in the results).
        """
        cfg, metric = self.cfg, task_metric_name(self.cfg.task)
        ft_cfg = apply_overrides(cfg.finetune, {**METHODS[method], "seed": str(cfg.seed)})
        start = self.pretrained if pretrained is None else pretrained
        model, shard = copy.deepcopy(start), self.workdir / (name or method) / "shard-0"
        out = {"minutes": [0.0], **{k: [v] for k, v in point_fields(zero, metric).items()}, "gate": [None],
               "collect_wall_s": [0.0], "finetune_wall_s": [0.0]}  # fmt: skip
        episodes, accepted = 0, {"minutes": 0.0, "rounds": 0}
        for before, minutes in zip(cfg.minutes[:-1], cfg.minutes[1:], strict=True):
            t0 = time.perf_counter()
            steps = int(round((minutes - before) * 60 * self.control_hz))
            episodes += self._collect(model, shard, steps, episode_seed(1 + len(out["minutes"]), cfg.seed), episodes,
                                      record_reward=ft_cfg.reward_weight > 0)  # fmt: skip
            t1 = time.perf_counter()
            new, report = finetune_dynamics(model, Dataset(shard.parent), ft_cfg, replay=self.replay)
            if report.gate.passed:
                model = new
                accepted = {"minutes": minutes, "rounds": accepted["rounds"] + 1}
            t2 = time.perf_counter()
            point = self.measure(model)
            log.info("%s @ %.2f min: %s=%.3f latent_error=%.5f gate=%s", method, minutes, metric, point[metric],
                     point["latent_error"], report.gate.reason)  # fmt: skip
            fields = {"minutes": minutes, **point_fields(point, metric), "gate": report.gate.__dict__,
                      "collect_wall_s": t1 - t0, "finetune_wall_s": t2 - t1}  # fmt: skip
            for key, value in fields.items():
                out[key].append(value)
        key = name or method
        self.final_models[key] = model
        try:
            out["final_checkpoint"] = str(self.save_final(model, start, key, method, accepted))
        except (OSError, ValueError) as exc:  # the measurements are kept; only the model file is missing
            log.warning("%s: the final model was not saved (%s)", key, exc)
            out["final_checkpoint"] = None
        return out

    def save_final(
        self, model: torch.nn.Module, start: torch.nn.Module, key: str, method: str, accepted: dict[str, Any]
    ) -> Path:
        """Save ``model`` (finetuned from ``start``) as the checkpoint ``<workdir>/<key>/final``; returns its path.

        A normal checkpoint (``simdist eval --checkpoint``, ``simdist checkpoint show``); its manifest says
        what it is: task, seed, method, minutes of experience the model was trained on, accepted rounds,
        parent checkpoint. ``parts_changed`` are the parts whose weights differ from ``start``. Saving reads
        the weights only (no random draws), after the method's last measurement: it changes no number.
        """
        from simdist_core.checkpoint import part_hashes, read_manifest, save_checkpoint
        from simdist_core.models.world_model import PART_NAMES

        parent = self.parents.get(key.split("@", 1)[1] if "@" in key else "")
        parent_version = read_manifest(parent).version if parent is not None else None
        new, old = part_hashes(model.state_dict()), part_hashes(start.state_dict())
        path = self.workdir / key / "final"
        save_checkpoint(
            path, model, version=(parent_version or 0) + 1, parent_version=parent_version,
            parts_changed=tuple(p for p in PART_NAMES if new[p] != old[p]), planner_config=self._planner_cfg(model),
            extra={"what": f"final model of `simdist bench adaptation` method {method}: the latest model that "
                           f"passed the validation gate", "task": self.cfg.task, "seed": self.cfg.seed,
                   "method": key, "minutes_of_experience": accepted["minutes"], "accepted_rounds": accepted["rounds"],
                   "parent_checkpoint": None if parent is None else str(parent), "env_overrides": self.env_overrides},
        )  # fmt: skip
        return path

    def _planner_cfg(self, model: torch.nn.Module) -> Any:  # noqa: ANN401
        """The planner config evaluation ran with (preset + overrides, horizon capped), built without a planner."""
        from simdist_core.planning.mppi import planner_preset

        cfg = apply_overrides(planner_preset(self.cfg.preset), self.planner_overrides)
        return dataclasses.replace(cfg, horizon=min(cfg.horizon, model.spec.horizon))

    def measure_agent(self, baseline: Any) -> dict[str, Any]:  # noqa: ANN401
        """Closed-loop task metric of an RL baseline's mean-action policy (no latent yardsticks: ``None``)."""
        report = evaluate(self.pretrained, self.eval_cfg, env_overrides=self.env_overrides,
                          planner=baseline.evaluation_planner(self.cfg.seed))  # fmt: skip
        return {**report, "latent_error": None, "probe_error": None, "reward_error": None}

    def run_rl_method(self, method: str) -> dict[str, Any]:
        """An RL baseline: offline phase, evaluate (minute 0), then per minute mark collect while learning, evaluate.

        The offline phase trains on the pretraining dataset only.
        """
        from simdist_core.baselines.runner import RLBaseline

        if self.offline_data is None:
            raise ValueError(f"method {method!r} needs the pretraining dataset (offline_data)")
        cfg, metric = self.cfg, task_metric_name(self.cfg.task)
        t0 = time.perf_counter()
        agent_cfg = apply_overrides(getattr(cfg, method), {"seed": str(cfg.seed)})  # one seed for the whole run
        baseline = RLBaseline(method, self.env.spec, Dataset(self.offline_data), agent_cfg,
                              encoder_model=self.pretrained)  # its frozen encoder stands in for a camera image
        offline_log = baseline.train_offline()
        t1 = time.perf_counter()
        point = self.measure_agent(baseline)
        log.info("%s offline (%d rounds, %.0f s): %s=%.3f losses %s", method, baseline.updates, t1 - t0, metric,
                 point[metric], offline_log)  # fmt: skip
        out = {"minutes": [0.0], **{k: [v] for k, v in point_fields(point, metric).items()},
               "collect_wall_s": [0.0], "finetune_wall_s": [t1 - t0], "update_rounds": [baseline.updates],
               "losses": [offline_log]}  # fmt: skip
        episode_steps, episodes = int(round(cfg.episode_s * self.control_hz)), 0
        for before, minutes in zip(cfg.minutes[:-1], cfg.minutes[1:], strict=True):
            t0 = time.perf_counter()
            steps = int(round((minutes - before) * 60 * self.control_hz))
            # same collection seeds as the world-model methods at this mark
            first_seed = episode_seed(1 + len(out["minutes"]), cfg.seed)
            episodes += baseline.collect(self.env, steps, episode_steps, first_seed, command_ramp_s=cfg.command_ramp_s)
            t1 = time.perf_counter()
            point = self.measure_agent(baseline)
            log.info("%s @ %.2f min: %s=%.3f (%d online transitions)", method, minutes, metric, point[metric],
                     baseline.buffer.size)  # fmt: skip
            # learning happens during collection, so its wall time is in collect_wall_s
            fields = {"minutes": minutes, **point_fields(point, metric), "collect_wall_s": t1 - t0,
                      "finetune_wall_s": 0.0, "update_rounds": baseline.updates, "losses": baseline.last_log}
            for key, value in fields.items():
                out[key].append(value)
        out["online_episodes"] = episodes
        return out

    def run(
        self, methods: tuple[str, ...] = ("dynamics_only", "full_finetune"),
        compare: dict[str, torch.nn.Module] | None = None,
    ) -> dict[str, Any]:
        """The whole benchmark; returns the JSON report.

        ``compare``: label -> another pretrained model whose ``zero_shot`` and world-model methods are also run.
        """
        start = time.perf_counter()
        self.build_holdout()
        zero = self.measure(self.pretrained)
        metric = task_metric_name(self.cfg.task)
        zero_shot = {"minutes": [0.0], **{k: [v] for k, v in point_fields(zero, metric).items()}}
        results: dict[str, Any] = {"zero_shot": zero_shot}
        for method in methods:
            if method in RL_METHODS:
                results[method] = self.run_rl_method(method)
            elif method in METHODS:
                results[method] = self.run_method(method, zero)
        for label, other in (compare or {}).items():
            other_zero = self.measure(other.eval())
            results[f"zero_shot@{label}"] = {"minutes": [0.0],
                                             **{k: [v] for k, v in point_fields(other_zero, metric).items()}}
            for method in (m for m in methods if m in METHODS):
                results[f"{method}@{label}"] = self.run_method(method, other_zero, other, f"{method}@{label}")
        return {"task": self.cfg.task, "metric": metric, "results": results, "summary": summarise(results),
                "config": to_dict(self.cfg), "seed_scheme": SEED_SCHEME,
                "planner": to_dict(self._planner(self.pretrained).cfg),
                "env_overrides": self.env_overrides, "heldout_windows": sum(int(b["actions"].shape[0])
                                                                            for b in self.holdout),
                "wall_s": time.perf_counter() - start, "torch_threads": torch.get_num_threads(),
                "final_checkpoints": {k: v["final_checkpoint"] for k, v in results.items()
                                      if v.get("final_checkpoint") is not None}}  # fmt: skip


def point_fields(report: dict[str, Any], metric: str) -> dict[str, Any]:
    """What one evaluation point records: the task metric, the shared yardsticks and episode facts.

    ``reward_per_step`` is the simulator's true reward per control step in the evaluation episodes:
    the objective the planner maximises, measured, not predicted (it can rise while the task metric
    falls when the reward ranks another behaviour above the task, e.g. stepping in place over walking).

    From ``evaluate``'s ``per_episode`` (when the report has it): ``episode_metric`` (the task metric of
    each evaluation episode, ``stats.episode_values``), ``episode_fell`` (Go2; ``None`` for a task without
    falls), ``episode_duration_s``, ``metric_ci95`` (95 % bootstrap interval of the mean, ``stats.mean_ci``)
    and ``falls_per_min`` (episodes that fell per simulated minute of evaluation).
    """
    summary = report["summary"]
    steps, episodes = summary.get("steps", 0.0), report.get("episodes", 0)
    fields = {
        "metric": report[metric], "latent_error": report["latent_error"], "probe_error": report["probe_error"],
        "reward_error": report["reward_error"], "falls": report.get("falls"),
        "mean_duration_s": summary.get("duration_s"),
        "reward_per_step": summary["mean_return"] * episodes / steps if steps and "mean_return" in summary else None,
    }  # fmt: skip
    per_episode = report.get("per_episode")
    if per_episode:
        values = stats.episode_values(per_episode, report["task"])
        fell = [float(e["fell"]) for e in per_episode] if all("fell" in e for e in per_episode) else None
        durations = [float(e.get("duration_s", 0.0)) for e in per_episode]
        fields.update(episode_metric=values, episode_fell=fell, episode_duration_s=durations,
                      metric_ci95=list(stats.mean_ci(values)[1:]), falls_per_min=falls_per_minute(fell, durations))
    return fields


def falls_per_minute(fell: list[float] | None, durations: list[float]) -> float | None:
    """Episodes that fell per simulated minute of evaluation (``None`` without fall flags or time)."""
    total_s = sum(durations)
    return None if fell is None or total_s <= 0 else sum(fell) / (total_s / 60.0)


def probe_rollout_error(model: torch.nn.Module, batches: list[Batch]) -> float:
    """MSE of the probe decoded from open-loop predicted latents vs the privileged probe (valid steps).

    Each window: encode o_0, predict z_1..z_H from the executed actions, decode the probe, compare
    with the recorded ``probe`` at steps 1..H. Comparable across methods whatever their encoder.
    """
    total, count = 0.0, 0.0
    with torch.no_grad():
        for batch in batches:
            latent = model.encode({key: value[:, 0] for key, value in batch["obs"].items()})
            zs = model.predict(latent, batch["actions"])  # (B, H, D)
            err = (model.decode_probe(zs) - batch["probe"][:, 1:]).pow(2).mean(-1)  # (B, H)
            mask = batch["valid"].to(err.dtype)
            total += float((err * mask).sum())
            count += float(mask.sum())
    return total / max(count, 1.0)


def summarise(results: dict[str, Any]) -> dict[str, Any]:
    """Ratios the targets talk about, from the last minute mark of each method.

    The metric ratio is only defined for a positive zero-shot metric (a ratio of two negative
    progress values would read "better" when it is worse); the difference is always given. A method
    ``M@LABEL`` is compared with ``zero_shot@LABEL``, every other one with ``zero_shot``. Error ratios
    are ``None`` where the method has no such error (the RL baselines have no latent).

    With per-episode values (reports written since they are recorded; one seed or merged seeds) each
    method also gets ``metric_ratio_vs_zero_shot_ci95`` / ``metric_minus_zero_shot_ci95`` (last mark) and
    ``by_minute`` (see :func:`minute_summary`).
    """
    out: dict[str, Any] = {}
    for method, res in results.items():
        if method.split("@")[0] == "zero_shot":
            continue
        zero = results["zero_shot@" + method.split("@", 1)[1]] if "@" in method else results["zero_shot"]
        zero_metric, zero_err = zero["metric"][0], zero["latent_error"][0]
        last_metric, last_err = res["metric"][-1], res["latent_error"][-1]
        out[method] = {
            "minutes": res["minutes"][-1],
            "metric_minus_zero_shot": last_metric - zero_metric,
            "metric_ratio_vs_zero_shot": last_metric / zero_metric if zero_metric > 0 else None,
            "latent_error_ratio_zero_shot_over_method": zero_err / last_err if last_err else None,
        }
        for key in ("probe_error", "reward_error"):  # absent in reports written before they existed
            if key in res and key in zero:
                last = res[key][-1]
                out[method][f"{key}_ratio_zero_shot_over_method"] = zero[key][0] / last if last else None
        if res.get("reward_per_step", [None])[-1] is not None and zero.get("reward_per_step", [None])[0] is not None:
            out[method]["reward_per_step_minus_zero_shot"] = res["reward_per_step"][-1] - zero["reward_per_step"][0]
        if episode_clusters(res, 0) is not None and episode_clusters(zero, 0) is not None:
            rows = minute_summary(res, zero, rivals_of(method, results))
            out[method]["by_minute"] = rows
            for key in ("metric_ratio_vs_zero_shot_ci95", "metric_minus_zero_shot_ci95"):
                out[method][key] = rows[-1][key]
    return out


def rivals_of(method: str, results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What ``method`` is compared with, paired, besides zero-shot: name in the report's keys -> results.

    Only dynamics-only finetuning (SimDist) has rivals: the other methods from the same checkpoint (full
    finetuning, RLPD, IQL), named without the checkpoint's label, and, from the main checkpoint, dynamics-only
    finetuning of every ``--compare`` checkpoint (``dynamics_only@LABEL``: the expert-only ablation). Reports
    name a comparison ``metric_minus_<rival>`` and ``metric_ratio_vs_<rival>``.
    """
    base, _, label = method.partition("@")
    if base != "dynamics_only":
        return {}
    rivals = {}
    for other, res in results.items():
        other_base, _, other_label = other.partition("@")
        if other_label == label and other_base not in ("zero_shot", "dynamics_only"):
            rivals[other_base] = res
        elif not label and other_label and other_base == "dynamics_only":
            rivals[other] = res
    return rivals


def episode_clusters(res: dict[str, Any], i: int) -> list[list[float]] | None:
    """Per-seed lists of the per-episode task metric at minute mark ``i`` (one list for a one-seed report).

    ``None`` for reports written before per-episode values were recorded.
    """
    if "episode_metric_per_seed" in res:
        return res["episode_metric_per_seed"][i]
    values = res.get("episode_metric", [None] * (i + 1))[i]
    return None if values is None else [values]


def _ci(fn: Any, *args: Any) -> tuple[float | None, list[float] | None]:  # noqa: ANN401
    """``fn(*args)`` as (value, [low, high]); (None, None) where the statistic is undefined."""
    try:
        value, low, high = fn(*args)
    except ValueError:
        return None, None
    return value, [low, high]


def minute_summary(res: dict[str, Any], zero: dict[str, Any],
                   rivals: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """Per minute mark of ``res``: its metric and falls, and paired comparisons with zero-shot and ``rivals``.

    Falls per simulated minute of evaluation are given for the method and for zero-shot. Every comparison is
    paired: within a seed both series ran the same evaluation episodes (same seeds), so the two-level bootstrap
    (``stats.paired_cluster_*``) resamples seeds, then episode indices, and applies the draw to both. The ratio
    is ``None`` where the denominator's mean is not positive (e.g. a negative zero-shot progress); the
    difference is always given. Each of ``rivals`` (name -> results, :func:`rivals_of`) that has the same
    minute mark gives ``metric_ratio_vs_<name>`` / ``metric_minus_<name>`` with their intervals (RL baselines
    evaluate on the same episode seeds). The latent-error ratio is zero-shot over
    method of the (seed-mean) errors, with the per-seed ratios.
    """
    rows = []
    zero_eps = episode_clusters(zero, 0)
    for i, minutes in enumerate(res["minutes"]):
        eps = episode_clusters(res, i)
        mean, ci = _ci(stats.cluster_mean_ci, eps)
        row: dict[str, Any] = {"minutes": minutes, "metric": mean, "metric_ci95": ci,
                               "falls_per_min": res.get("falls_per_min", [None] * len(res["minutes"]))[i],
                               "zero_shot_falls_per_min": zero.get("falls_per_min", [None])[0]}
        row["metric_ratio_vs_zero_shot"], row["metric_ratio_vs_zero_shot_ci95"] = _ci(
            stats.paired_cluster_ratio_ci, eps, zero_eps)
        row["metric_minus_zero_shot"], row["metric_minus_zero_shot_ci95"] = _ci(
            stats.paired_cluster_difference_ci, eps, zero_eps)
        for name, rival in (rivals or {}).items():
            other = episode_clusters(rival, rival["minutes"].index(minutes)) if minutes in rival["minutes"] else None
            if other is None:
                continue
            row[f"metric_ratio_vs_{name}"], row[f"metric_ratio_vs_{name}_ci95"] = _ci(
                stats.paired_cluster_ratio_ci, eps, other)
            row[f"metric_minus_{name}"], row[f"metric_minus_{name}_ci95"] = _ci(
                stats.paired_cluster_difference_ci, eps, other)
        err, zero_err = res["latent_error"][i], zero["latent_error"][0]
        row["latent_error_ratio_zero_shot_over_method"] = zero_err / err if err else None
        if "latent_error_per_seed" in res and err:
            row["latent_error_ratio_per_seed"] = [z / e if e else None for z, e in
                                                  zip(zero["latent_error_per_seed"][0], res["latent_error_per_seed"][i],
                                                      strict=True)]  # fmt: skip
        rows.append(row)
    return rows


MERGE_SAME = ("task", "metric", "config", "seed_scheme", "planner", "env_overrides", "checkpoint", "compare",
              "rl_dataset", "replay_dataset")
"""Report keys that reports merged by ``--merge`` must share (``config`` except its ``seed``)."""
PER_SEED_MEAN = ("latent_error", "probe_error", "reward_error", "reward_per_step", "falls")
"""Per-point values a merged report gives as the mean over seeds (each seed's in ``<key>_per_seed``)."""


def _flatten(value: Any, prefix: str) -> dict[str, Any]:  # noqa: ANN401
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, sub in value.items():
            out.update(_flatten(sub, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def _identity(report: dict[str, Any]) -> dict[str, Any]:
    """What must be equal across merged reports, as dotted key -> value."""
    same = {key: report.get(key) for key in MERGE_SAME}
    same["config"] = {k: v for k, v in (same["config"] or {}).items() if k != "seed"}
    same["methods"] = sorted(report.get("results", {}))
    same["minutes"] = {m: res.get("minutes") for m, res in report.get("results", {}).items()}
    return _flatten(same, "")


def join_seed_reports(reports: list[dict[str, Any]], names: list[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """Reports of one seed that ran different methods (``--methods`` split over processes), joined into one each.

    Why: on a 2-core machine both world-model methods of three seeds take longer than the seeds of one method
    run side by side; a method can run later, in its own process, with the same seed. Reports of a seed must be
    the same run in all but their methods, and their zero-shot measurements identical: the same seed measures
    the same zero-shot episodes, so a difference means they are not the same run. Names of joined reports
    become ``"a.json + b.json"``; reports of seeds that appear once pass through unchanged.

    Raises:
        ValueError: a method that two reports of one seed both ran, or reports of one seed that differ in more
            than their methods.
    """
    groups: dict[Any, list[int]] = {}
    for i, report in enumerate(reports):
        groups.setdefault((report.get("config") or {}).get("seed"), []).append(i)
    out, out_names = [], []
    for seed, members in groups.items():
        first = reports[members[0]]
        if len(members) == 1:
            out.append(first)
            out_names.append(names[members[0]])
            continue
        results = dict(first.get("results") or {})
        for j in members[1:]:
            report, name = reports[j], names[j]
            twice = sorted((set(report.get("results") or {}) & set(results)) - {"zero_shot"})
            if twice:
                raise ValueError(f"seed {seed} appears twice ({names[members[0]]} and {name}, both with {twice}); "
                                 f"each report must be another seed, or other methods of the same seed")
            differ = [k for k in (*MERGE_SAME, "heldout_windows") if report.get(k) != first.get(k)]
            if (report.get("results") or {}).get("zero_shot") != results.get("zero_shot"):
                differ.append("results.zero_shot")
            if differ:
                raise ValueError(f"{names[members[0]]} and {name} are both seed {seed} but differ in {differ}: "
                                 f"not methods of the same run")
            results.update(report["results"])
        order = {m: k for k, m in enumerate(METHOD_CHOICES)}
        results = dict(sorted(results.items(), key=lambda item: order.get(item[0], len(order))))
        joined = {**first, "results": results, "summary": summarise(results),
                  "wall_s": float(sum(reports[j].get("wall_s", 0.0) for j in members)),
                  "final_checkpoints": {k: v for j in members for k, v in (reports[j].get("final_checkpoints")
                                                                            or {}).items()},
                  "joined_from": [names[j] for j in members]}  # fmt: skip
        out.append(joined)
        out_names.append(" + ".join(names[j] for j in members))
    return out, out_names


def check_mergeable(reports: list[dict[str, Any]], names: list[str]) -> None:
    """Refuse reports that differ in anything but ``seed``, repeat a seed, or lack per-episode values.

    Raises:
        ValueError: naming every key that differs (with each file's value), the repeated seed, or the file.
    """
    if not reports:
        raise ValueError("nothing to merge")
    for report, name in zip(reports, names, strict=True):
        if "seeds" in report:
            raise ValueError(f"{name} is already a merged report (seeds {report['seeds']}); merge the per-seed ones")
        if not isinstance(report.get("results"), dict) or not isinstance(report.get("config"), dict):
            raise ValueError(f"{name} is not a `simdist bench adaptation` report (no results/config)")
        missing = [m for m, res in report["results"].items()
                   if any(v is None for v in res.get("episode_metric", [None]))]
        if missing:
            raise ValueError(f"{name} has no per-episode values for {missing} (written before they were recorded); "
                             f"rerun it to merge")
    seen: dict[Any, str] = {}
    for report, name in zip(reports, names, strict=True):
        seed = report["config"].get("seed")
        if seed in seen:
            raise ValueError(f"seed {seed} appears twice ({seen[seed]} and {name}); each report must be another seed")
        seen[seed] = name
    ids = [_identity(r) for r in reports]
    keys = sorted({k for i in ids for k in i})
    differ = [k for k in keys if any(i.get(k, "<absent>") != ids[0].get(k, "<absent>") for i in ids[1:])]
    if differ:
        detail = "; ".join(f"{k}: " + ", ".join(f"{n}={i.get(k, '<absent>')!r}"
                                                for n, i in zip(names, ids, strict=True))
                           for k in differ[:8])  # fmt: skip
        more = f" (and {len(differ) - 8} more)" if len(differ) > 8 else ""
        raise ValueError(f"the reports differ in more than seed: {detail}{more}")


def merge_reports(reports: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    """One report from per-seed reports of the same run (see :func:`check_mergeable`), seeds in ascending order.

    Reports of one seed that ran different methods are joined first (:func:`join_seed_reports`).

    Per method and minute mark: ``metric`` is the mean over all episodes of all seeds, ``metric_ci95`` its
    two-level (cluster) bootstrap interval (``stats.cluster_mean_ci``: seeds, then episodes within each),
    ``metric_per_seed`` each seed's mean, ``falls_per_min`` episodes that fell per simulated minute of
    evaluation (all seeds), ``mean_duration_s`` the pooled mean; the latent, probe, reward errors,
    ``reward_per_step`` and ``falls`` (fall events per episode) are the mean over seeds.
    ``<key>_per_seed[i]`` lists the seeds' values at mark ``i`` (in the order of ``seeds``), for every
    per-point key (``episode_metric_per_seed`` holds the per-episode values); per-method scalars
    (``final_checkpoint``, ``online_episodes``) become a list over seeds. ``summary`` keeps the single-seed
    keys (from these pooled values) and adds the paired CIs.

    Raises:
        ValueError: see :func:`join_seed_reports` and :func:`check_mergeable`.
    """
    reports, names = join_seed_reports(reports, names)
    check_mergeable(reports, names)
    order = sorted(range(len(reports)), key=lambda j: reports[j]["config"]["seed"])
    reports, names = [reports[j] for j in order], [names[j] for j in order]
    first = reports[0]
    results: dict[str, Any] = {}
    for method, res0 in first["results"].items():
        runs = [r["results"][method] for r in reports]
        n = len(res0["minutes"])
        out: dict[str, Any] = {"minutes": list(res0["minutes"])}
        for key in res0:
            if key == "minutes":
                continue
            values = [run.get(key) for run in runs]
            if all(isinstance(v, list) and len(v) == n for v in values):
                out[f"{key}_per_seed"] = [[v[i] for v in values] for i in range(n)]
            else:
                out[f"{key}_per_seed"] = values
        out["metric"], out["metric_ci95"], out["falls_per_min"] = [], [], []
        for key in ("mean_duration_s", *PER_SEED_MEAN):
            out[key] = []
        for i in range(n):
            clusters = out["episode_metric_per_seed"][i]
            mean, low, high = stats.cluster_mean_ci(clusters)
            out["metric"].append(mean)
            out["metric_ci95"].append([low, high])
            fell = out["episode_fell_per_seed"][i]
            durations = [d for seed_d in out["episode_duration_s_per_seed"][i] for d in seed_d]
            out["falls_per_min"].append(falls_per_minute(None if any(f is None for f in fell) else
                                                         [f for seed_f in fell for f in seed_f], durations))
            out["mean_duration_s"].append(float(np.mean(durations)) if durations else None)
            for key in PER_SEED_MEAN:
                per_seed = out.get(f"{key}_per_seed", [[None]] * n)[i]
                out[key].append(None if any(v is None for v in per_seed) else float(np.mean(per_seed)))
        results[method] = out
    config = {k: v for k, v in first["config"].items() if k != "seed"}
    merged = {"task": first["task"], "metric": first["metric"], "seeds": [r["config"]["seed"] for r in reports],
              "results": results, "summary": summarise(results), "config": config,
              **{k: first[k] for k in MERGE_SAME[3:] if k in first},
              "heldout_windows_per_seed": [r.get("heldout_windows") for r in reports],
              "wall_s": float(sum(r.get("wall_s", 0.0) for r in reports)),
              "wall_s_per_seed": [r.get("wall_s") for r in reports],
              "final_checkpoints_per_seed": [r.get("final_checkpoints", {}) for r in reports],
              "merged_from": names}  # fmt: skip
    return merged


def plot(report: dict[str, Any], path: Path) -> None:
    """Task metric and held-out latent error vs minutes of experience, one line per method.

    Error bars on the metric panel: the 95 % interval of each point (``metric_ci95``; reports written before
    it was recorded have none). A merged report draws the latent, probe and reward errors as the mean over
    seeds with bars from the smallest to the largest seed's value.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    zero = report["results"]["zero_shot"]
    keys = [k for k in ("metric", "latent_error", "probe_error", "reward_error", "reward_per_step")
            if zero.get(k, [None])[0] is not None]  # fmt: skip
    fig, axes = plt.subplots(1, len(keys), figsize=(4.5 * len(keys), 4))
    last = max(max(r["minutes"]) for r in report["results"].values())
    for j, (method, res) in enumerate(report["results"].items()):
        dodge = (j - (len(report["results"]) - 1) / 2) * 0.006 * last  # bars of methods side by side, not on top
        flat = method.split("@")[0] == "zero_shot"
        xs = [0.0, last] if flat else res["minutes"]
        for ax, key in zip(axes, keys, strict=True):
            ys = [float("nan") if v is None else v for v in ([res[key][0]] * 2 if flat else res[key])]
            line = ax.plot(xs, ys, "--" if flat else "-o", label=method)[0]
            bars = _error_bars(res, key)
            if bars is not None:
                n = 1 if flat else len(res["minutes"])
                ax.errorbar([x + dodge for x in xs[:n]], ys[:n], yerr=bars[:, :n], fmt="none", ecolor=line.get_color(),
                            capsize=3, alpha=0.8)
    seeds = report.get("seeds")
    has_ci = any(res.get("metric_ci95") for res in report["results"].values())
    axes[0].set_ylabel(report["metric"] + (f"\nmean, 95 % CI ({len(seeds)} seeds x episodes)" if seeds
                                           else "\nmean, 95 % CI over episodes" if has_ci else ""))
    axes[1].set_ylabel("held-out latent error (MSE)" + (f"\nmean, min-max of {len(seeds)} seeds" if seeds else ""))
    labels = {"probe_error": "held-out probe error (MSE, physical units)",
              "reward_error": "held-out reward-head error (MSE, normalised)",
              "reward_per_step": "true reward per step in evaluation (sim)"}  # fmt: skip
    for ax, key in zip(axes[2:], keys[2:], strict=True):
        ax.set_ylabel(labels[key])
    for ax in axes:
        ax.set_xlabel("minutes of experience in the shifted task")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(f"adaptation on {report['task']}")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _error_bars(res: dict[str, Any], key: str) -> np.ndarray | None:
    """(2, points) distances below/above each point: the metric's CI, or the min/max over seeds of an error."""
    if key == "metric" and res.get("metric_ci95"):
        lows_highs = res["metric_ci95"]
    elif key != "metric" and f"{key}_per_seed" in res:
        lows_highs = [None if any(v is None for v in seeds) else [min(seeds), max(seeds)]
                      for seeds in res[f"{key}_per_seed"]]  # fmt: skip
    else:
        return None
    out = np.zeros((2, len(lows_highs)))
    for i, (value, bounds) in enumerate(zip(res[key], lows_highs, strict=True)):
        if value is not None and bounds is not None:
            out[:, i] = [max(value - bounds[0], 0.0), max(bounds[1] - value, 0.0)]
    return out


def _task_keys_help(ns: argparse.Namespace) -> str:
    from simdist_core.config_show import task_keys_text

    return task_keys_text(ns.task, "--env")


def _planner_keys_help(_ns: argparse.Namespace) -> str:
    from simdist_core.config_show import describe

    return describe(f"planner/{AdaptationConfig().preset}") + "\n(the preset is --set preset=NAME)"


def _config_keys_help(_ns: argparse.Namespace) -> str:
    from simdist_core.config_show import describe

    return describe("adaptation")


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = ArgumentParser(prog="simdist bench adaptation", description=__doc__.splitlines()[0],
                            key_help={"--set": _config_keys_help, "--env": _task_keys_help,
                                      "--planner": _planner_keys_help})
    parser.add_argument("--task", default="go2/ptfe_slope", help="the shifted task")
    parser.add_argument("--checkpoint", type=Path, help="pretrained checkpoint (default: checkpoints/<robot>)")
    parser.add_argument("--minutes", default="0,1,2,4", help="cumulative minutes of experience, e.g. 0,5,10,20,30")
    parser.add_argument("--methods", default="dynamics_only,full_finetune",
                        help=f"comma list of: {', '.join(METHOD_CHOICES)} (zero_shot is always measured; "
                             "dynamics_reward also fits the reward head to the simulator's reward: an experiment, "
                             "not the method)")  # fmt: skip
    parser.add_argument("--data", type=Path,
                        help="pretraining dataset of the RL baselines, and the simulation data replayed into "
                             "finetuning with --set finetune.replay_fraction=F (default: the checkpoint's provenance)")
    parser.add_argument("--compare", action="append", default=[], metavar="LABEL=PATH",
                        help="also run the world-model methods from this checkpoint, reported as METHOD@LABEL "
                             "(e.g. expert_only=checkpoints/go2_expert_only)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="AdaptationConfig override, e.g. eval_episodes=2, finetune.steps=200 "
                             "(`--set help` lists the keys)")  # fmt: skip
    parser.add_argument("--env", dest="env_set", action="append", default=[], metavar="KEY=VALUE",
                        help="task override (`--env help` lists the task's keys)")
    parser.add_argument("--planner", dest="planner_set", action="append", default=[], metavar="KEY=VALUE",
                        help="planner override (`--planner help` lists the keys)")
    parser.add_argument("--workdir", type=Path, help="where experience is stored (default: next to --json)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--seeds", metavar="S1,S2,...",
                        help="run the whole benchmark once per seed, one after the other in this process (experience "
                             "in <workdir>/seed-S, each report in <workdir>/seed-S/report.json), then merge them "
                             "into --json; on a few cores, run the seeds as separate processes and --merge instead")
    parser.add_argument("--merge", nargs="+", type=Path, metavar="REPORT.json",
                        help="merge finished reports of the same run that differ only in seed (--set seed=S) into "
                             "--json (pooled means, 95 %% CIs over seeds and episodes, per-seed values); reports of "
                             "one seed that ran other --methods are joined first; runs nothing and takes only --json "
                             "and --plot")
    parser.add_argument("--json", type=Path, required=True, help="write the report here")
    parser.add_argument("--plot", type=Path, help="also draw the curves into this PNG")
    return parser.parse_args(argv)


RUN_OPTIONS = {"task": "--task", "checkpoint": "--checkpoint", "minutes": "--minutes", "methods": "--methods",
               "data": "--data", "compare": "--compare", "overrides": "--set", "env_set": "--env",
               "planner_set": "--planner", "workdir": "--workdir", "seeds": "--seeds"}  # fmt: skip
"""Options that configure a run (``--merge`` refuses them: it runs nothing)."""


def parse_seeds(text: str | None, overrides: list[str]) -> tuple[int, ...] | None:
    """``--seeds`` as distinct non-negative ints (None without it).

    Raises:
        UsageError: not a comma list of distinct integers >= 0, or given together with ``--set seed=``.
    """
    if text is None:
        return None
    try:
        seeds = tuple(int(item) for item in text.split(",") if item.strip())
    except ValueError:
        raise UsageError(f"--seeds {text!r}: expected a comma list of integers, e.g. 0,1,2") from None
    if not seeds or min(seeds) < 0 or len(set(seeds)) != len(seeds):
        raise UsageError(f"--seeds {text!r}: expected distinct integers >= 0, e.g. 0,1,2")
    if any(o.split("=", 1)[0].strip() == "seed" for o in overrides):
        raise UsageError("--seeds and --set seed=... both set the seed; give one of them")
    return seeds


def load_merge_inputs(args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[str]]:
    """The reports ``--merge`` names, checked (``check_mergeable``) before anything is written.

    Raises:
        UsageError: a run option given with ``--merge``, a missing or unreadable file, ``--json`` naming an
            input, or reports that cannot be merged (what differs is named).
    """
    defaults = vars(_parse(["--json", "x"]))
    given = [flag for key, flag in RUN_OPTIONS.items() if getattr(args, key) != defaults[key]]
    if given:
        raise UsageError(f"--merge combines finished reports and takes only --json and --plot; drop {', '.join(given)}")
    reports, names = [], []
    for path in args.merge:
        check_existing_path("--merge", path)
        if path.resolve() == args.json.resolve():
            raise UsageError(f"--json {str(args.json)!r} is also a --merge input; write the merged report elsewhere")
        try:
            reports.append(json.loads(path.read_text()))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise UsageError(f"--merge {str(path)!r} is not a readable JSON report ({exc})") from None
        names.append(str(path))
    if len(reports) < 2:
        raise UsageError("--merge needs at least 2 reports (one per seed, or per method of a seed)")
    try:
        check_mergeable(*join_seed_reports(reports, names))
    except ValueError as exc:
        raise UsageError(f"--merge: {exc}") from None
    return reports, names


def validate(args: argparse.Namespace) -> tuple[AdaptationConfig, tuple[str, ...], Path, Path]:
    """Config, methods, checkpoint and workdir, checked before anything is loaded or written.

    Raises:
        UsageError: a bad task, method, ``--minutes``, ``--set``/``--env``/``--planner`` key or value,
            a missing checkpoint, ``--compare`` checkpoint or RL dataset, or a workdir that holds something.
    """
    from simdist_core.planning.mppi import PRESETS, planner_preset
    from simdist_core.sim.base import task_config

    check_positive("--threads", args.threads)
    parse_seeds(args.seeds, args.overrides)
    methods = tuple(check_list("--methods", args.methods, METHOD_CHOICES))
    overrides = parse_overrides(args.overrides)
    overrides["task"], overrides["minutes"] = args.task, args.minutes
    cfg = apply_cli_overrides(AdaptationConfig(), overrides)
    try:
        task_config(cfg.task, parse_overrides(args.env_set))
    except (KeyError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    check_choice("--set preset", cfg.preset, sorted(PRESETS))
    apply_cli_overrides(planner_preset(cfg.preset), args.planner_set)
    checkpoint = args.checkpoint or Path(__file__).resolve().parents[4] / "checkpoints" / cfg.task.split("/")[0]
    checkpoint_dir("--checkpoint", checkpoint)
    for label, path in compare_checkpoints(args.compare).items():
        checkpoint_dir(f"--compare {label}", path)
    if any(m in RL_METHODS for m in methods) or cfg.finetune.replay_fraction:
        args.data = check_dataset("--data", rl_dataset(args.data, checkpoint), cfg.task.split("/")[0])
    workdir = args.workdir or args.json.with_name(args.json.stem + "_work")
    if workdir.exists() and any(workdir.iterdir()):
        raise UsageError(f"--workdir {str(workdir)!r} is not empty; pass a fresh --workdir")
    return cfg, methods, checkpoint, workdir


def compare_checkpoints(pairs: list[str]) -> dict[str, Path]:
    """``--compare LABEL=PATH`` flags as label -> checkpoint folder.

    Raises:
        UsageError: a malformed pair or a repeated label.
    """
    out: dict[str, Path] = {}
    for pair in pairs:
        label, sep, path = pair.partition("=")
        if not sep or not label or not path or "@" in label or label in out:
            raise UsageError(f"--compare {pair!r}: expected LABEL=PATH with a new label without '@'")
        out[label] = Path(path)
    return out


def rl_dataset(data: Path | None, checkpoint: Path) -> Path:
    """``--data``, else the pretraining dataset the checkpoint's manifest records.

    Raises:
        UsageError: neither is given / the recorded one is not on this machine.
    """
    if data is not None:
        return data
    manifest = checkpoint / "manifest.json"
    recorded = json.loads(manifest.read_text()).get("extra", {}).get("provenance", {}).get("dataset") \
        if manifest.is_file() else None
    if not recorded or not Path(recorded).is_dir():
        raise UsageError(f"rlpd/iql and finetune.replay_fraction need the pretraining dataset: pass --data (the "
                         f"checkpoint records {recorded!r}, which is not here; `simdist generate` with its "
                         "dataset_info rebuilds it)")
    return Path(recorded)


@cli_main("simdist bench adaptation")
def main(argv: list[str]) -> int:
    """Entry point of ``simdist bench adaptation``."""
    args = _parse(argv)
    if args.merge:
        reports, names = load_merge_inputs(args)
        return _write(args, merge_reports(reports, names))
    cfg, methods, checkpoint, workdir = validate(args)
    seeds = parse_seeds(args.seeds, args.overrides)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    torch.set_num_threads(args.threads)
    from simdist_core.checkpoint import load_for_cli

    model, _ = load_for_cli("--checkpoint", checkpoint)
    if model.spec.name != cfg.task.split("/")[0]:
        raise UsageError(f"--task {cfg.task!r} is not a task of --checkpoint {str(checkpoint)!r} ({model.spec.name})")
    compare = {}
    for label, path in compare_checkpoints(args.compare).items():
        compare[label], _ = load_for_cli(f"--compare {label}", path)
        if compare[label].spec.name != model.spec.name:
            raise UsageError(f"--compare {label}: a {compare[label].spec.name} checkpoint, not {model.spec.name}")
    if seeds is None:
        return _write(args, _run(args, cfg, methods, checkpoint, workdir, model, compare))
    reports, names = [], []
    for seed in seeds:
        log.info("--seeds: seed %d (%d/%d)", seed, len(reports) + 1, len(seeds))
        seed_dir = workdir / f"seed-{seed}"
        report = _run(args, dataclasses.replace(cfg, seed=seed), methods, checkpoint, seed_dir, model, compare)
        names.append(str(seed_dir / "report.json"))
        Path(names[-1]).write_text(json.dumps(report, indent=1, default=_json_default))
        reports.append(json.loads(Path(names[-1]).read_text()))  # as --merge reads it
    return _write(args, merge_reports(reports, names))


def _run(args: argparse.Namespace, cfg: AdaptationConfig, methods: tuple[str, ...], checkpoint: Path, workdir: Path,
         model: torch.nn.Module, compare: dict[str, torch.nn.Module]) -> dict[str, Any]:  # fmt: skip
    """One benchmark run (one seed) as its report."""
    compare_paths = compare_checkpoints(args.compare)
    bench = Benchmark(model, cfg, workdir, parse_overrides(args.env_set), parse_overrides(args.planner_set),
                      offline_data=args.data if any(m in RL_METHODS for m in methods) else None,
                      parents={"": checkpoint, **compare_paths},
                      replay_data=args.data if cfg.finetune.replay_fraction else None)  # fmt: skip
    report = bench.run(methods, compare)
    report["checkpoint"] = str(checkpoint)
    report["compare"] = {label: str(path) for label, path in compare_paths.items()}
    if bench.offline_data is not None:
        report["rl_dataset"] = str(bench.offline_data)
    if cfg.finetune.replay_fraction:
        report["replay_dataset"] = str(args.data)
    return report


def _write(args: argparse.Namespace, report: dict[str, Any]) -> int:
    """Write the report (and plot), print its table; the exit status."""
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1, default=_json_default))
    if args.plot:
        plot(report, args.plot)
    _print_table(report)
    return 0


def _print_table(report: dict[str, Any]) -> None:
    seeds = report.get("seeds")
    if seeds:
        print(f"seeds {', '.join(map(str, seeds))}: metric = mean over all their episodes, 95 % CI over seeds and "
              f"episodes; errors = mean over seeds")
    print(f"{'method':<24} {'minutes':>8} {report['metric']:>20} {'95% CI':>18} {'latent_error':>14} "
          f"{'probe_error':>12} {'reward_error':>13} {'reward/step':>12}")  # fmt: skip
    for method, res in report["results"].items():
        nan = [float("nan")] * len(res["minutes"])
        cols = [[float("nan") if v is None else v for v in res.get(key, nan)]
                for key in ("latent_error", "probe_error", "reward_error", "reward_per_step")]  # fmt: skip
        cis = [f"[{c[0]:.3f}, {c[1]:.3f}]" if c else "" for c in res.get("metric_ci95", [None] * len(res["minutes"]))]
        rows = zip(res["minutes"], res["metric"], cis, *cols, strict=True)
        for m, v, c, e, p, r, g in rows:
            print(f"{method:<24} {m:>8.2f} {v:>20.3f} {c:>18} {e:>14.5f} {p:>12.5f} {r:>13.5f} {g:>12.3f}")
    print(f"wall time {report['wall_s']:.0f} s" + (" (all seeds together)" if seeds else ""))


def _json_default(value: object) -> object:
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
