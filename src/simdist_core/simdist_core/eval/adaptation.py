"""The adaptation benchmark: zero-shot vs dynamics-only (SimDist) vs full finetuning in a shifted task.

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
reward head read along the same predicted latents against the simulator's true reward: it shows whether the
heads still judge the predicted states right. Neither is a training label. ``reward_error`` is the head's
training loss, in its own normalised units (each head is normalised by the reward spread of the data it was
pretrained on), so it compares methods of one checkpoint only; ``reward_error_task`` is the same comparison as
a mean squared error in the task's reward units, which also compares two checkpoints (``--compare``).

Offline-to-online RL baselines (``rlpd``, ``iql``; ``simdist_core.baselines``): each agent is trained
on the pretraining dataset (``--data``; default: the dataset recorded in the checkpoint's provenance),
then online on the same minutes of live experience, acting at the same control rate through the same
environment wrapper from a flat vector of the encoder's inputs, and evaluated on the same seeds. Its
minute 0 is the offline-trained agent. Unlike SimDist it is given the simulator's reward online, and
its latent, probe and reward errors are not defined (``null``).

``--compare LABEL=PATH`` runs the world-model methods again from another pretrained checkpoint (e.g.
one pretrained on ``simdist generate --mixture expert_only`` data), reported as ``METHOD@LABEL`` with
its own ``zero_shot@LABEL``; the held-out set stays the one collected with the main checkpoint.

Reports (statistics, merging seeds, the plot): ``simdist_core.eval.adaptation_report``; the command line:
``simdist_core.eval.adaptation_cli``.

Final models: each world-model method's last accepted model is saved as a checkpoint,
``<workdir>/<method>/final`` (its manifest: task, seed, minutes of experience, parent checkpoint), listed in
the report's ``final_checkpoints``; ``simdist eval --checkpoint`` runs it.

CPU note: closed-loop planning on 2 shared cores is slow, so ``--minutes`` can be scaled down (e.g.
``0,1,2,4``); the report stores the planner preset, wall time and exactly what was run.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from simdist_core.baselines.iql import IQLConfig
from simdist_core.baselines.rlpd import RLPDConfig
from simdist_core.config import apply_overrides, to_dict
from simdist_core.data.dataset import Dataset
from simdist_core.data.sampler import WindowSampler
from simdist_core.eval import stats
from simdist_core.eval.adaptation_report import falls_per_minute, summarise
from simdist_core.eval.closed_loop import EvalConfig, evaluate, make_planner, task_metric_name
from simdist_core.eval.experience import collect_experience
from simdist_core.models.world_model import LossWeights
from simdist_core.planning.adapted_tie import AdaptedTie
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
    "dynamics_reward_encoded": {"parts": "dynamics,reward", "reward_weight": "1.0", "reward_on_predicted": "false"},
}
"""Finetuning method -> the ``FinetuneConfig`` settings it changes (``zero_shot`` trains nothing).
``dynamics_reward`` departs from the method: it also fits the reward head, at its pretraining weight, to the
simulator's reward of each transition it lived, which its collection then records (a robot would have to
compute that reward from its own state estimate); it asks whether the frozen reward head is what limits
adaptation on a task. ``dynamics_reward_encoded`` fits the head on the encoder's latents of the states the robot
reached only, so no reward gradient moves the dynamics."""
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
    """Cumulative simulated minutes of experience at which a round ends: collect up to the mark, finetune (world-model
    methods), evaluate if the mark is in ``eval_at`` (first must be 0)."""
    eval_at: tuple[float, ...] = ()
    """Marks of ``minutes`` at which to evaluate (empty: every mark). Why fewer: a round every two minutes, as
    the live finetuner runs them, without a closed-loop evaluation after each (one UR5e evaluation of 20
    episodes is ~3 CPU minutes). The last mark must be among them; minute 0 (the pretrained model) is always
    measured."""
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
    adapted_tie: AdaptedTie = field(default_factory=AdaptedTie)
    """The planner node's looser tie for models finetuned on the robot (its ``adapted_prior_weight`` and
    ``adapted_after_data_steps``), so the benchmark plans as the graph does: a world-model method's model, once
    it has passed the gate after finetuning on at least ``after_data_steps`` control steps of its experience,
    collects and is evaluated with ``prior_weight`` = ``adapted_tie.prior_weight``; the pretrained model keeps
    ``--planner``'s. Negative (the default): every model keeps ``--planner``'s tie."""
    command_ramp_s: float = 0.0
    """Ramp the velocity command the controller sees from rest to the task's over this long in every episode
    (collection, held-out set, evaluation; every method alike; Go2 only; 0: at once): the encoder node's
    ``command_ramp_s`` in the live graph (``simdist_core.planning.command_ramp``)."""
    heading_hold: bool = False
    """Give the command the controller sees a yaw rate that holds the episode's starting heading (IMU yaw) in every
    episode (collection, held-out set, evaluation; every method alike; Go2 only;
    ``simdist_core.planning.heading_hold``), applied after the command ramp: for models pretrained with yaw-rate
    commands."""
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
        if self.eval_at and (not set(self.eval_at) <= set(self.minutes) or self.minutes[-1] not in self.eval_at):
            raise ValueError(f"eval_at must be marks of minutes and include the last one, got {self.eval_at=} "
                             f"for {self.minutes=}")
        if not self.command_ramp_s >= 0:  # also catches NaN
            raise ValueError(f"command_ramp_s must be >= 0, got {self.command_ramp_s=}")
        if self.heading_hold and not self.task.startswith("go2/"):
            raise ValueError("heading_hold needs a velocity command (a go2/ task)")
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
        # Frozen as `simdist eval` and the planner node load a checkpoint: with parameters that require grad, torch
        # takes another float path and the zero-shot point would differ from theirs in the last bits (on PTFE,
        # where an episode turns on a slippery start, that is another episode). Finetuning unfreezes its copy.
        self.pretrained, self.cfg, self.workdir = pretrained.eval().requires_grad_(False), cfg, workdir
        self.env_overrides, self.planner_overrides = dict(env_overrides or {}), dict(planner_overrides or {})
        self.env = make_env(cfg.task, self.env_overrides)
        self.control_hz = self.env.spec.control_hz
        ramp_for(self.env.spec, cfg.command_ramp_s)  # a ramp this robot cannot have fails here, not an hour in
        self.eval_cfg = EvalConfig(task=cfg.task, episodes=cfg.eval_episodes, seconds=cfg.eval_s,
                                   seed=episode_seed(EVAL_STREAM, cfg.seed), preset=cfg.preset,
                                   command_ramp_s=cfg.command_ramp_s, heading_hold=cfg.heading_hold)  # fmt: skip
        self.holdout: list[Batch] = []
        self.log: list[dict[str, Any]] = []

    def _planner(self, model: torch.nn.Module, data_steps: int | None = None) -> Any:  # noqa: ANN401
        return make_planner(model, None, self.cfg.preset, self.planner_overrides_for(data_steps), self.cfg.seed)

    def planner_overrides_for(self, data_steps: int | None) -> dict[str, str]:
        """``--planner``'s overrides for a model finetuned on ``data_steps`` control steps (None: pretrained).

        With ``adapted_tie``'s ``prior_weight`` where it applies, as the planner node gives it.
        """
        if not self.cfg.adapted_tie.applies(data_steps):
            return self.planner_overrides
        return {**self.planner_overrides, "prior_weight": repr(self.cfg.adapted_tie.prior_weight)}

    def _collect(
        self, model: torch.nn.Module, shard: Path, steps: int, seed: int, first_episode: int, eval_labels: bool = False,
        record_reward: bool = False, data_steps: int | None = None,
    ) -> int:
        """Collect ``steps`` control steps with ``model``'s planner; returns the episodes recorded.

        ``eval_labels``: the held-out set's privileged probe and reward; ``record_reward``: the reward alone
        (experience for a method that trains the reward head); ``data_steps``: the experience ``model`` was
        finetuned on (None: pretrained), which picks its tie (``planner_overrides_for``).
        """
        planner = self._planner(model, data_steps)
        episode_steps = int(round(self.cfg.episode_s * self.control_hz))
        done, episodes = 0, 0
        while done < steps:
            recorded = collect_experience(self.env, planner, shard, episodes=1,
                                          max_steps=min(episode_steps, steps - done),
                                          seed=seed + episodes, exploration_std=self.cfg.exploration_std,
                                          first_episode_id=first_episode + episodes,
                                          eval_labels=eval_labels, record_reward=record_reward,
                                          command_ramp_s=self.cfg.command_ramp_s,
                                          heading_hold=self.cfg.heading_hold)  # fmt: skip
            done += recorded[0].steps
            episodes += 1
        return episodes

    def build_holdout(self) -> None:
        """Collect the fixed held-out set with the pretrained planner (seeds disjoint from everything else)."""
        shard = self.workdir / "heldout" / "shard-0"
        steps = int(round(self.cfg.heldout_episodes * self.cfg.episode_s * self.control_hz))
        self._collect(self.pretrained, shard, steps, episode_seed(HELDOUT_STREAM, self.cfg.seed), 0, eval_labels=True)
        self.holdout = heldout_batches(shard.parent, self.pretrained.spec, self.cfg.heldout_windows, self.cfg.seed)

    def measure(self, model: torch.nn.Module, data_steps: int | None = None) -> dict[str, Any]:
        """Closed-loop task metric and held-out latent error of ``model``.

        ``data_steps``: the control steps of experience it was finetuned on (None: pretrained), which pick its tie
        (``planner_overrides_for``).
        """
        report = evaluate(model, self.eval_cfg, env_overrides=self.env_overrides,
                          planner_overrides=self.planner_overrides_for(data_steps))  # fmt: skip
        report["latent_error"] = evaluate_loss(model, self.holdout, finetune_loss_weights())["consistency"]
        report["probe_error"] = probe_rollout_error(model, self.holdout)
        report["reward_error"] = evaluate_loss(model, self.holdout, REWARD_ONLY)["reward"]
        report["reward_error_task"] = reward_rollout_error(model, self.holdout)
        return report

    def run_method(
        self, method: str, zero: dict[str, Any], pretrained: torch.nn.Module | None = None, name: str | None = None
    ) -> dict[str, Any]:
        """Collect -> finetune -> evaluate at each minute mark, continuing from the latest accepted model.

        Marks not in ``eval_at`` end a round without an evaluation; every round's gate is in ``rounds``.
        ``pretrained`` (default: the benchmark's) is where the method starts; ``name`` its results key. The
        final model (the latest one that passed the gate) is saved as the checkpoint ``<workdir>/<name>/final``
        after the last measurement (``final_checkpoint`` in the results).
        """
        cfg, metric = self.cfg, task_metric_name(self.cfg.task)
        ft_cfg = apply_overrides(cfg.finetune, {**METHODS[method], "seed": str(cfg.seed)})
        start = self.pretrained if pretrained is None else pretrained
        model, shard = copy.deepcopy(start), self.workdir / (name or method) / "shard-0"
        out = {"minutes": [0.0], **{k: [v] for k, v in point_fields(zero, metric).items()}, "gate": [None],
               "collect_wall_s": [0.0], "finetune_wall_s": [0.0], "rounds": []}  # fmt: skip
        episodes, accepted = 0, {"minutes": 0.0, "rounds": 0}
        collected, trained_on = 0, None  # control steps recorded; those the current model was finetuned on
        for k, (before, minutes) in enumerate(zip(cfg.minutes[:-1], cfg.minutes[1:], strict=True), start=1):
            t0 = time.perf_counter()
            steps = int(round((minutes - before) * 60 * self.control_hz))
            episodes += self._collect(model, shard, steps, episode_seed(1 + k, cfg.seed), episodes,
                                      record_reward=ft_cfg.reward_weight > 0, data_steps=trained_on)  # fmt: skip
            collected += steps
            t1 = time.perf_counter()
            new, report = finetune_dynamics(model, Dataset(shard.parent), ft_cfg, replay=self.replay, anchor_to=start)
            if report.gate.passed:
                model, trained_on = new, collected
                accepted = {"minutes": minutes, "rounds": accepted["rounds"] + 1}
            t2 = time.perf_counter()
            out["rounds"].append({"minutes": minutes, "gate": report.gate.__dict__, "collect_wall_s": t1 - t0,
                                  "finetune_wall_s": t2 - t1})  # fmt: skip
            if not self._evaluates_at(minutes):
                log.info("%s @ %.2f min: round %d, gate=%s (no evaluation)", method, minutes, k, report.gate.reason)
                continue
            point = self.measure(model, trained_on)
            log.info("%s @ %.2f min: %s=%.3f latent_error=%.5f gate=%s", method, minutes, metric, point[metric],
                     point["latent_error"], report.gate.reason)  # fmt: skip
            fields = {"minutes": minutes, **point_fields(point, metric), "gate": report.gate.__dict__,
                      "collect_wall_s": t1 - t0, "finetune_wall_s": t2 - t1}  # fmt: skip
            for key, value in fields.items():
                out[key].append(value)
        out["accepted_rounds"] = accepted["rounds"]
        key = name or method
        self.final_models[key] = model
        try:
            out["final_checkpoint"] = str(self.save_final(model, start, key, method, accepted, trained_on))
        except (OSError, ValueError) as exc:  # the measurements are kept; only the model file is missing
            log.warning("%s: the final model was not saved (%s)", key, exc)
            out["final_checkpoint"] = None
        return out

    def _evaluates_at(self, minutes: float) -> bool:
        return not self.cfg.eval_at or minutes in self.cfg.eval_at

    def save_final(
        self, model: torch.nn.Module, start: torch.nn.Module, key: str, method: str, accepted: dict[str, Any],
        data_steps: int | None = None,
    ) -> Path:
        """Save ``model`` (finetuned from ``start``) as the checkpoint ``<workdir>/<key>/final``; returns its path.

        A normal checkpoint (``simdist eval --checkpoint``, ``simdist checkpoint show``); its manifest says
        what it is: task, seed, method, minutes of experience the model was trained on, accepted rounds,
        parent checkpoint and, for a finetuned model, ``data_steps`` (the control steps of experience it was
        finetuned on; the planner node gives it ``adapted_prior_weight`` by that count). ``parts_changed`` are the
        parts whose weights differ from ``start``. Saving reads the weights only (no random draws), after the
        method's last measurement: it changes no number.
        """
        from simdist_core.checkpoint import part_hashes, read_manifest, save_checkpoint
        from simdist_core.models.world_model import PART_NAMES

        parent = self.parents.get(key.split("@", 1)[1] if "@" in key else "")
        parent_version = read_manifest(parent).version if parent is not None else None
        new, old = part_hashes(model.state_dict()), part_hashes(start.state_dict())
        path = self.workdir / key / "final"
        extra = {"what": f"final model of `simdist bench adaptation` method {method}: the latest model that passed "
                         f"the validation gate", "task": self.cfg.task, "seed": self.cfg.seed, "method": key,
                 "minutes_of_experience": accepted["minutes"], "accepted_rounds": accepted["rounds"],
                 "parent_checkpoint": None if parent is None else str(parent), "env_overrides": self.env_overrides}
        if data_steps is not None:  # as the finetuner node writes it: the planner node's tie reads it
            extra["data_steps"] = data_steps
        save_checkpoint(
            path, model, version=(parent_version or 0) + 1, parent_version=parent_version,
            parts_changed=tuple(p for p in PART_NAMES if new[p] != old[p]),
            planner_config=self._planner_cfg(model, data_steps), extra=extra,
        )  # fmt: skip
        return path

    def _planner_cfg(self, model: torch.nn.Module, data_steps: int | None = None) -> Any:  # noqa: ANN401
        """The planner config evaluation ran with (preset + overrides, horizon capped), built without a planner."""
        from simdist_core.planning.mppi import planner_preset

        cfg = apply_overrides(planner_preset(self.cfg.preset), self.planner_overrides_for(data_steps))
        return dataclasses.replace(cfg, horizon=min(cfg.horizon, model.spec.horizon))

    def measure_agent(self, baseline: Any) -> dict[str, Any]:  # noqa: ANN401
        """Closed-loop task metric of an RL baseline's mean-action policy (no latent yardsticks: ``None``)."""
        report = evaluate(self.pretrained, self.eval_cfg, env_overrides=self.env_overrides,
                          planner=baseline.evaluation_planner(self.cfg.seed))  # fmt: skip
        return {**report, "latent_error": None, "probe_error": None, "reward_error": None, "reward_error_task": None}

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
        t0 = time.perf_counter()
        for k, (before, minutes) in enumerate(zip(cfg.minutes[:-1], cfg.minutes[1:], strict=True), start=1):
            steps = int(round((minutes - before) * 60 * self.control_hz))
            # same collection seeds as the world-model methods at this mark
            first_seed = episode_seed(1 + k, cfg.seed)
            episodes += baseline.collect(self.env, steps, episode_steps, first_seed, command_ramp_s=cfg.command_ramp_s,
                                         heading_hold=cfg.heading_hold)
            if not self._evaluates_at(minutes):
                continue
            t1 = time.perf_counter()
            point = self.measure_agent(baseline)
            log.info("%s @ %.2f min: %s=%.3f (%d online transitions)", method, minutes, metric, point[metric],
                     baseline.buffer.size)  # fmt: skip
            # learning happens during collection, so its wall time (since the last evaluation) is in collect_wall_s
            fields = {"minutes": minutes, **point_fields(point, metric), "collect_wall_s": t1 - t0,
                      "finetune_wall_s": 0.0, "update_rounds": baseline.updates, "losses": baseline.last_log}
            for key, value in fields.items():
                out[key].append(value)
            t0 = time.perf_counter()  # the next point's collection starts after this evaluation
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
            other_zero = self.measure(other.eval().requires_grad_(False))
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
        "reward_error": report["reward_error"], "reward_error_task": report.get("reward_error_task"),
        "falls": report.get("falls"),
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


def heldout_batches(folder: Path, spec: Any, windows: int, seed: int) -> list[Batch]:  # noqa: ANN401
    """The fixed held-out windows a benchmark seed scores every model on, from its recorded ``<workdir>/heldout``.

    Also how a finished run's held-out set is read again (``scripts/diagnostics/rescore_heldout.py``).
    """
    sampler = WindowSampler(Dataset(folder), spec, batch_size=64, seed=seed)
    return fixed_batches(sampler, windows, 64, seed)


def _rollout_error(model: torch.nn.Module, batches: list[Batch], step_error: Any) -> float:  # noqa: ANN401
    """Mean over valid steps of ``step_error(latent, zs, batch)`` (B, H) along open-loop predicted latents.

    Each window: encode o_0, predict z_1..z_H from the executed actions; ``step_error`` compares what a head reads
    off them with what was recorded at steps 1..H.
    """
    total, count = 0.0, 0.0
    with torch.no_grad():
        for batch in batches:
            latent = model.encode({key: value[:, 0] for key, value in batch["obs"].items()})
            err = step_error(latent, model.predict(latent, batch["actions"]), batch)  # (B, H)
            mask = batch["valid"].to(err.dtype)
            total += float((err * mask).sum())
            count += float(mask.sum())
    return total / max(count, 1.0)


def reward_rollout_error(model: torch.nn.Module, batches: list[Batch]) -> float:
    """MSE, in the task's reward units, of the reward head read along open-loop predicted latents (valid steps).

    The head's prediction is mapped to task units with its own normaliser. Unlike the training loss
    (``reward_error``), comparable across checkpoints pretrained on different data.
    """
    head = model.reward_head

    def squared_error(latent: Any, zs: torch.Tensor, batch: Batch) -> torch.Tensor:  # noqa: ANN401
        pred = head.denormalize(head(torch.cat([zs, batch["actions"]], dim=-1), latent.context))
        return (pred - batch["rewards"]).pow(2)

    return _rollout_error(model, batches, squared_error)


def probe_rollout_error(model: torch.nn.Module, batches: list[Batch]) -> float:
    """MSE of the probe decoded from open-loop predicted latents vs the privileged probe (valid steps).

    Compared with the recorded ``probe`` at steps 1..H. Comparable across methods whatever their encoder.
    """
    return _rollout_error(model, batches,
                          lambda _, zs, batch: (model.decode_probe(zs) - batch["probe"][:, 1:]).pow(2).mean(-1))
