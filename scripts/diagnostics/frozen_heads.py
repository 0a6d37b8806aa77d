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
def encoded_reward(model: torch.nn.Module, batches: list) -> tuple[np.ndarray, np.ndarray]:
    """(head's reward on the encoder's latents, simulator's reward), task units, over the valid steps of ``batches``."""
    pred, true = [], []
    for batch in batches:
        obs, actions, valid = batch["obs"], batch["actions"], batch["valid"].bool()
        b, h = actions.shape[:2]
        first = {k: v[:, 0] for k, v in obs.items()}
        later = {k: v[:, 1 : h + 1].reshape(b * h, *v.shape[2:]) for k, v in obs.items()}
        latent = model.encode(first)
        zs = model.encode(later).z.reshape(b, h, -1)
        pred.append(model.reward(latent, zs, actions)[valid].numpy())
        true.append(batch["rewards"][valid].numpy())
    return np.concatenate(pred), np.concatenate(true)


def main() -> None:
    """Parse the command line, score every model on every dataset, print a table, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, required=True, help="pretrained checkpoint")
    parser.add_argument("--finetuned", type=Path, action="append", default=[], help="a finetuned checkpoint")
    parser.add_argument("--data", action="append", required=True, metavar="NAME=DIR",
                        help="dataset with true rewards (repeatable)")
    parser.add_argument("--windows", type=int, default=512, help="fixed windows scored per dataset")
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
            pred, true = encoded_reward(model, batches)
            rows[label] = {"reward_predicted": terms["reward"], "reward_encoded": terms["reward_encoded"],
                           "reward_encoded_r": float(np.corrcoef(pred, true)[0, 1]),
                           "reward_encoded_mae": float(np.abs(pred - true).mean()),
                           "latent_error": terms["consistency"], "true_reward_mean": float(true.mean()),
                           "steps": int(true.size)}
            r = rows[label]
            print(f"{name:<10} {label[-60:]:<60} {r['reward_predicted']:>11.4f} {r['reward_encoded']:>11.4f} "
                  f"{r['reward_encoded_r']:>6.3f} {r['reward_encoded_mae']:>8.3f} {r['latent_error']:>9.5f}")
        report["datasets"][name] = {"path": root, "models": rows}
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
