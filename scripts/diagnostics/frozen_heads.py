#!/usr/bin/env python3
r"""How much of a model's reward error could better dynamics remove? The frozen reward head on encoded latents.

Dynamics-only finetuning changes the latents the planner predicts; the reward head that scores them stays frozen.
Its error on the encoder's latents of the states the robot really reached (``reward_encoded``) is therefore the
floor that no dynamics-only finetune can go below: with perfect dynamics the predicted latents would be those.
For each dataset with true rewards (``--data NAME=DIR``: a pretraining dataset from ``simdist generate``, or a
held-out set of ``simdist bench adaptation``, ``<workdir>/heldout``) and each model (``--checkpoint``, then any
``--finetuned``), on the same fixed windows, it reports:

* ``reward_predicted``: Huber error of the reward head along the model's predicted latents (normalised, as the
  benchmark's ``reward_error`` and pretraining's ``eval/reward``);
* ``reward_encoded``: the same along the encoder's latents (the floor; identical for every dynamics-only model);
* ``reward_encoded_r`` and ``reward_encoded_mae``: correlation and mean absolute error, in task units, of the
  head's reward on the encoder's latents against the simulator's reward;
* ``latent_error``: the latent-consistency error of the predicted latents.

    python scripts/diagnostics/frozen_heads.py --checkpoint bench_results/go2_v6_low_friction \\
        --finetuned <workdir>/dynamics_only/final --data sim=<pretraining data> --data ptfe=<workdir>/heldout \\
        --windows 512 --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch
from simdist_core.checkpoint import load_checkpoint
from simdist_core.data.dataset import Dataset
from simdist_core.data.sampler import WindowSampler
from simdist_core.models.world_model import LossWeights
from simdist_core.training.adapt import fixed_batches
from simdist_core.training.trainer import evaluate_loss

HEADS = LossWeights(consistency=1.0, reward=1.0, reward_encoded=1.0, value=0.0, value_encoded=0.0, bc=0.0, probe=0.0)


@torch.inference_mode()
def encoded_heads(model: torch.nn.Module, batches: list) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``reward`` and ``value``: (head on the encoder's latents, label), task units, over the valid steps."""
    out: dict[str, tuple[list, list]] = {"reward": ([], []), "value": ([], [])}
    for batch in batches:
        obs, actions, valid = batch["obs"], batch["actions"], batch["valid"].bool()
        b, h = actions.shape[:2]
        first = {k: v[:, 0] for k, v in obs.items()}
        later = {k: v[:, 1 : h + 1].reshape(b * h, *v.shape[2:]) for k, v in obs.items()}
        latent = model.encode(first)
        zs = model.encode(later).z.reshape(b, h, -1)
        for name, pred, label in (("reward", model.reward(latent, zs, actions), batch["rewards"]),
                                  ("value", model.value(latent, zs), batch["values"])):
            out[name][0].append(pred[valid].numpy())
            out[name][1].append(label[valid].numpy())
    return {name: (np.concatenate(p), np.concatenate(t)) for name, (p, t) in out.items()}


def agreement(pred: np.ndarray, label: np.ndarray) -> dict[str, float]:
    """Correlation and mean absolute error (task units) of a head's predictions against their labels."""
    return {"r": float(np.corrcoef(pred, label)[0, 1]), "mae": float(np.abs(pred - label).mean()),
            "pred_mean": float(pred.mean()), "label_mean": float(label.mean()), "label_std": float(label.std()),
            "n": int(label.size)}


@torch.inference_mode()
def expert_value_pairs(model: torch.nn.Module, planner: object, task: str, *, episodes: int, seed: int,
                       seconds: float, ramp_s: float, start_s: float, stride: int, branch_steps: int,
                       gamma: float) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(frozen value head on the encoder's latent, the expert's discounted return from there), planner-visited states.

    The planner drives ``episodes`` episodes of ``task`` (command ramp ``ramp_s``); every ``stride`` steps from
    ``start_s`` on, the simulator is copied, its command set to the one the model saw (the ramped one), and the clean
    expert runs from that state for up to ``branch_steps`` steps: the return it earns is what the value head was
    trained to predict (the expert's value of the state under that command, ``simdist_core.data.value_labels``),
    measured instead of fitted.
    """
    import copy

    from simdist_core.data.history import ObservationHistory
    from simdist_core.data.rollout import _expert_continuation as expert_continuation
    from simdist_core.eval.rollout import run_episode
    from simdist_core.sim.base import make_env

    env = make_env(task, {"episode_length_s": str(seconds + branch_steps / 50 + 1)})
    history = ObservationHistory(env.spec)
    preds, labels = [], []
    rng = np.random.default_rng(seed)

    def on_step(_obs: dict, action: np.ndarray, result: object) -> None:
        history.record_action(action)
        history.push(result.obs)
        if result.terminated or env.time_s < start_s or round(env.time_s * 50) % stride:
            return
        latent = model.encode(history.model_input())
        preds.append(float(model.value(latent, latent.z[:, None])[0, 0]))
        asked = copy.deepcopy(env)  # the state now, with the command the model saw
        asked.set_command(result.obs["command"])
        rewards = expert_continuation(asked, branch_steps, rng).rewards  # as the value labels were made
        labels.append(float(np.sum(gamma ** np.arange(rewards.size) * rewards)))

    for i in range(episodes):
        run_episode(env, planner, seed=seed + i, max_steps=int(seconds * 50), command_ramp_s=ramp_s,
                    on_reset=history.reset, on_step=on_step)
    return np.array(preds), np.array(labels)


def main() -> None:
    """Parse the command line, score every model on every dataset, print a table, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, required=True, help="pretrained checkpoint")
    parser.add_argument("--finetuned", type=Path, action="append", default=[], help="a finetuned checkpoint")
    parser.add_argument("--data", action="append", required=True, metavar="NAME=DIR",
                        help="dataset with true rewards (repeatable)")
    parser.add_argument("--windows", type=int, default=512, help="fixed windows scored per dataset")
    parser.add_argument("--expert-values", type=int, default=0, metavar="EPISODES",
                        help="also drive EPISODES episodes of --task with each model's deployed planner (prior_weight "
                             "100, 4-s command ramp) and score its value head against the clean expert's measured "
                             "return from the states visited")  # fmt: skip
    parser.add_argument("--task", default="go2/ptfe_slope", help="task of --expert-values")
    parser.add_argument("--seed", type=int, default=9000, help="first episode seed of --expert-values")
    parser.add_argument("--json", type=Path, help="write the report here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    models = {"pretrained": load_checkpoint(args.checkpoint)[0].eval()}
    for path in args.finetuned:
        models[str(path)] = load_checkpoint(path)[0].eval()
    spec = models["pretrained"].spec
    report: dict = {"command": " ".join(["python", *sys.argv]), "checkpoint": str(args.checkpoint),
                    "windows": args.windows, "datasets": {}}
    print(f"{'dataset':<10} {'model':<60} {'reward_pred':>11} {'reward_enc':>11} {'r_enc':>6} {'mae_enc':>8} "
          f"{'latent':>9}")
    for item in args.data:
        name, _, root = item.partition("=")
        sampler = WindowSampler(Dataset(root), spec, batch_size=64, seed=0)
        batches = fixed_batches(sampler, args.windows, 64, seed=0)
        rows = {}
        for label, model in models.items():
            terms = evaluate_loss(model, batches, HEADS)
            heads = encoded_heads(model, batches)
            reward = agreement(*heads["reward"])
            rows[label] = {"reward_predicted": terms["reward"], "reward_encoded": terms["reward_encoded"],
                           "reward_encoded_r": reward["r"], "reward_encoded_mae": reward["mae"],
                           "latent_error": terms["consistency"], "true_reward_mean": reward["label_mean"],
                           "steps": reward["n"]}
            if np.any(heads["value"][1]):  # a dataset from `simdist generate` has expert value labels
                v = rows[label]["value_encoded"] = agreement(*heads["value"])
                print(f"{name:<10} value head on the encoder's latents vs the expert value labels: r {v['r']:.3f}, "
                      f"mae {v['mae']:.2f} (labels {v['label_mean']:.1f} +- {v['label_std']:.1f})")
            r = rows[label]
            print(f"{name:<10} {label[-60:]:<60} {r['reward_predicted']:>11.4f} {r['reward_encoded']:>11.4f} "
                  f"{r['reward_encoded_r']:>6.3f} {r['reward_encoded_mae']:>8.3f} {r['latent_error']:>9.5f}")
        report["datasets"][name] = {"path": root, "models": rows}
    if args.expert_values:
        from simdist_core.eval.closed_loop import make_planner

        report["expert_values"] = {}
        for label, model in models.items():
            planner = make_planner(model, None, "cpu", {"prior_weight": "100"}, args.seed)
            pred, true = expert_value_pairs(model, planner, args.task, episodes=args.expert_values, seed=args.seed,
                                            seconds=10.0, ramp_s=4.0, start_s=0.5, stride=10, branch_steps=500,
                                            gamma=0.99)  # fmt: skip
            if pred.size < 3:
                print(f"{label}: fewer than 3 states visited; no value comparison")
                continue
            report["expert_values"][label] = agreement(pred, true)
            v = report["expert_values"][label]
            print(f"value head vs the expert's return from states {label}'s planner visits on {args.task}: "
                  f"r {v['r']:.3f}, mae {v['mae']:.2f}, predicted {v['pred_mean']:.1f} (returns {v['label_mean']:.1f} "
                  f"+- {v['label_std']:.1f}, "
                  f"{v['n']} states)")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
