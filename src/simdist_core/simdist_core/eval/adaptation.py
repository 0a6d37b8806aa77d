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

CPU note: closed-loop planning on 2 shared cores is slow, so ``--minutes`` can be scaled down (e.g.
``0,1,2,4``); the report stores the planner preset, wall time and exactly what was run.
"""

from __future__ import annotations

import argparse
import copy
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
    check_list,
    check_positive,
    checkpoint_dir,
    cli_main,
)
from simdist_core.config import apply_cli_overrides, apply_overrides, parse_overrides, to_dict
from simdist_core.data.dataset import Dataset, check_dataset
from simdist_core.data.sampler import WindowSampler
from simdist_core.eval.closed_loop import EvalConfig, evaluate, make_planner, task_metric_name
from simdist_core.eval.experience import collect_experience
from simdist_core.models.world_model import LossWeights
from simdist_core.training.adapt import FinetuneConfig, finetune_dynamics, fixed_batches
from simdist_core.training.common import OptimConfig
from simdist_core.training.trainer import Batch, evaluate_loss, finetune_loss_weights

log = logging.getLogger(__name__)

REWARD_ONLY = LossWeights(
    consistency=0.0, reward=1.0, value=0.0, reward_encoded=0.0, value_encoded=0.0, bc=0.0, probe=0.0
)
"""Scores only the reward head along predicted latents (``reward_error``)."""

METHODS: dict[str, tuple[str, ...] | None] = {"dynamics_only": ("dynamics",), "full_finetune": ("all",)}
"""Finetuning method -> parts it trains (``zero_shot`` trains nothing)."""
RL_METHODS = ("rlpd", "iql")
"""Offline-to-online RL baselines (``simdist_core.baselines``)."""
METHOD_CHOICES = ("zero_shot", *METHODS, *RL_METHODS)
"""What ``--methods`` accepts (``zero_shot`` is always measured; naming it is allowed)."""


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
    finetune: FinetuneConfig = field(default_factory=lambda: FinetuneConfig(
        steps=300, batch_size=32, optim=OptimConfig(lr=2e-4, warmup_steps=30, cosine=False)))  # fmt: skip
    """Finetuning per round (continues from the method's latest accepted model)."""
    rlpd: RLPDConfig = field(default_factory=RLPDConfig)
    """The RLPD baseline (Ball et al. 2023)."""
    iql: IQLConfig = field(default_factory=IQLConfig)
    """The IQL baseline (Kostrikov et al. 2021)."""
    seed: int = 0
    """Seed of everything (collection, held-out set, evaluation, finetuning)."""

    def __post_init__(self) -> None:
        if not self.minutes or self.minutes[0] != 0 or list(self.minutes) != sorted(set(self.minutes)):
            raise ValueError(f"minutes must start at 0 and strictly increase, got {self.minutes=}")
        for name in ("episode_s", "eval_s"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {name}={getattr(self, name)}")
        if self.eval_episodes < 1 or self.heldout_episodes < 2:
            raise ValueError(f"need eval_episodes >= 1 and heldout_episodes >= 2, got {self.eval_episodes=}, "
                             f"{self.heldout_episodes=}")  # fmt: skip


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
    ) -> None:
        from simdist_core.sim.base import make_env

        self.offline_data = offline_data
        """Pretraining dataset of the RL baselines (needed only when one runs)."""
        self.pretrained, self.cfg, self.workdir = pretrained.eval(), cfg, workdir
        self.env_overrides, self.planner_overrides = dict(env_overrides or {}), dict(planner_overrides or {})
        self.env = make_env(cfg.task, self.env_overrides)
        self.control_hz = self.env.spec.control_hz
        self.eval_cfg = EvalConfig(task=cfg.task, episodes=cfg.eval_episodes, seconds=cfg.eval_s,
                                   seed=cfg.seed + 50_000, preset=cfg.preset)  # fmt: skip
        self.holdout: list[Batch] = []
        self.log: list[dict[str, Any]] = []

    def _planner(self, model: torch.nn.Module) -> Any:  # noqa: ANN401
        return make_planner(model, None, self.cfg.preset, self.planner_overrides, self.cfg.seed)

    def _collect(
        self, model: torch.nn.Module, shard: Path, steps: int, seed: int, first_episode: int, eval_labels: bool = False
    ) -> int:
        """Collect ``steps`` control steps with ``model``'s planner; returns the episodes recorded."""
        planner, episode_steps = self._planner(model), int(round(self.cfg.episode_s * self.control_hz))
        done, episodes = 0, 0
        while done < steps:
            stats = collect_experience(self.env, planner, shard, episodes=1, max_steps=min(episode_steps, steps - done),
                                       seed=seed + episodes, exploration_std=self.cfg.exploration_std,
                                       first_episode_id=first_episode + episodes,
                                       eval_labels=eval_labels)  # fmt: skip
            done += stats[0].steps
            episodes += 1
        return episodes

    def build_holdout(self) -> None:
        """Collect the fixed held-out set with the pretrained planner (seeds disjoint from everything else)."""
        shard = self.workdir / "heldout" / "shard-0"
        steps = int(round(self.cfg.heldout_episodes * self.cfg.episode_s * self.control_hz))
        self._collect(self.pretrained, shard, steps, self.cfg.seed + 90_000, 0, eval_labels=True)
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

        ``pretrained`` (default: the benchmark's) is where the method starts; ``name`` its results key.
        """
        cfg, metric = self.cfg, task_metric_name(self.cfg.task)
        parts = METHODS[method]
        ft_cfg = apply_overrides(cfg.finetune, {"parts": ",".join(parts), "seed": str(cfg.seed)})
        start = self.pretrained if pretrained is None else pretrained
        model, shard = copy.deepcopy(start), self.workdir / (name or method) / "shard-0"
        out = {"minutes": [0.0], **{k: [v] for k, v in point_fields(zero, metric).items()}, "gate": [None],
               "collect_wall_s": [0.0], "finetune_wall_s": [0.0]}  # fmt: skip
        episodes = 0
        for before, minutes in zip(cfg.minutes[:-1], cfg.minutes[1:], strict=True):
            t0 = time.perf_counter()
            steps = int(round((minutes - before) * 60 * self.control_hz))
            episodes += self._collect(model, shard, steps, cfg.seed + 10_000 * (1 + len(out["minutes"])), episodes)
            t1 = time.perf_counter()
            new, report = finetune_dynamics(model, Dataset(shard.parent), ft_cfg)
            if report.gate.passed:
                model = new
            t2 = time.perf_counter()
            point = self.measure(model)
            log.info("%s @ %.2f min: %s=%.3f latent_error=%.5f gate=%s", method, minutes, metric, point[metric],
                     point["latent_error"], report.gate.reason)  # fmt: skip
            fields = {"minutes": minutes, **point_fields(point, metric), "gate": report.gate.__dict__,
                      "collect_wall_s": t1 - t0, "finetune_wall_s": t2 - t1}  # fmt: skip
            for key, value in fields.items():
                out[key].append(value)
        return out

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
        baseline = RLBaseline(method, self.env.spec, Dataset(self.offline_data), agent_cfg)
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
            episodes += baseline.collect(self.env, steps, episode_steps, cfg.seed + 10_000 * (1 + len(out["minutes"])))
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
                "config": to_dict(self.cfg), "planner": to_dict(self._planner(self.pretrained).cfg),
                "env_overrides": self.env_overrides, "heldout_windows": sum(int(b["actions"].shape[0])
                                                                            for b in self.holdout),
                "wall_s": time.perf_counter() - start, "torch_threads": torch.get_num_threads()}  # fmt: skip


def point_fields(report: dict[str, Any], metric: str) -> dict[str, Any]:
    """What one evaluation point records: the task metric, the shared yardsticks and episode facts.

    ``reward_per_step`` is the simulator's true reward per control step in the evaluation episodes:
    the objective the planner maximises, measured, not predicted (it can rise while the task metric
    falls when the reward ranks another behaviour above the task, e.g. stepping in place over walking).
    """
    summary = report["summary"]
    steps, episodes = summary.get("steps", 0.0), report.get("episodes", 0)
    return {
        "metric": report[metric], "latent_error": report["latent_error"], "probe_error": report["probe_error"],
        "reward_error": report["reward_error"], "falls": report.get("falls"),
        "mean_duration_s": summary.get("duration_s"),
        "reward_per_step": summary["mean_return"] * episodes / steps if steps and "mean_return" in summary else None,
    }  # fmt: skip


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
    return out


def plot(report: dict[str, Any], path: Path) -> None:
    """Task metric and held-out latent error vs minutes of experience, one line per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    zero = report["results"]["zero_shot"]
    keys = [k for k in ("metric", "latent_error", "probe_error", "reward_error", "reward_per_step")
            if zero.get(k, [None])[0] is not None]  # fmt: skip
    fig, axes = plt.subplots(1, len(keys), figsize=(4.5 * len(keys), 4))
    last = max(max(r["minutes"]) for r in report["results"].values())
    for method, res in report["results"].items():
        flat = method.split("@")[0] == "zero_shot"
        xs = [0.0, last] if flat else res["minutes"]
        for ax, key in zip(axes, keys, strict=True):
            ys = [float("nan") if v is None else v for v in ([res[key][0]] * 2 if flat else res[key])]
            ax.plot(xs, ys, "--" if flat else "-o", label=method)
    axes[0].set_ylabel(report["metric"])
    axes[1].set_ylabel("held-out latent error (MSE)")
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
                        help=f"comma list of: {', '.join(METHOD_CHOICES)} (zero_shot is always measured)")
    parser.add_argument("--data", type=Path,
                        help="pretraining dataset of the RL baselines (default: the checkpoint's provenance)")
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
    parser.add_argument("--json", type=Path, required=True, help="write the report here")
    parser.add_argument("--plot", type=Path, help="also draw the curves into this PNG")
    return parser.parse_args(argv)


def validate(args: argparse.Namespace) -> tuple[AdaptationConfig, tuple[str, ...], Path, Path]:
    """Config, methods, checkpoint and workdir, checked before anything is loaded or written.

    Raises:
        UsageError: a bad task, method, ``--minutes``, ``--set``/``--env``/``--planner`` key or value,
            a missing checkpoint, ``--compare`` checkpoint or RL dataset, or a workdir that holds something.
    """
    from simdist_core.planning.mppi import PRESETS, planner_preset
    from simdist_core.sim.base import task_config

    check_positive("--threads", args.threads)
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
    if any(m in RL_METHODS for m in methods):
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
        raise UsageError(f"rlpd/iql need the pretraining dataset: pass --data (the checkpoint records "
                         f"{recorded!r}, which is not here; `simdist generate` with its dataset_info rebuilds it)")
    return Path(recorded)


@cli_main("simdist bench adaptation")
def main(argv: list[str]) -> int:
    """Entry point of ``simdist bench adaptation``."""
    args = _parse(argv)
    cfg, methods, checkpoint, workdir = validate(args)
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
    bench = Benchmark(model, cfg, workdir, parse_overrides(args.env_set), parse_overrides(args.planner_set),
                      offline_data=args.data if any(m in RL_METHODS for m in methods) else None)
    report = bench.run(methods, compare)
    report["checkpoint"] = str(checkpoint)
    report["compare"] = {label: str(path) for label, path in compare_checkpoints(args.compare).items()}
    if bench.offline_data is not None:
        report["rl_dataset"] = str(bench.offline_data)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1, default=_json_default))
    if args.plot:
        plot(report, args.plot)
    _print_table(report)
    return 0


def _print_table(report: dict[str, Any]) -> None:
    print(f"{'method':<24} {'minutes':>8} {report['metric']:>20} {'latent_error':>14} {'probe_error':>12} "
          f"{'reward_error':>13} {'reward/step':>12}")  # fmt: skip
    for method, res in report["results"].items():
        nan = [float("nan")] * len(res["minutes"])
        cols = [[float("nan") if v is None else v for v in res.get(key, nan)]
                for key in ("latent_error", "probe_error", "reward_error", "reward_per_step")]  # fmt: skip
        rows = zip(res["minutes"], res["metric"], *cols, strict=True)
        for m, v, e, p, r, g in rows:
            print(f"{method:<24} {m:>8.2f} {v:>20.3f} {e:>14.5f} {p:>12.5f} {r:>13.5f} {g:>12.3f}")
    print(f"wall time {report['wall_s']:.0f} s")


def _json_default(value: object) -> object:
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
