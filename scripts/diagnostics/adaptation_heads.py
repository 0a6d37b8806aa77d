#!/usr/bin/env python3
"""Why can better dynamics make the planner worse? A one-off diagnostic of a dynamics-only finetune.

Finetunes ``--checkpoint`` (dynamics only, as ``simdist bench adaptation`` does) on the experience an
adaptation run collected (``--experience``: a method folder of its workdir, e.g. ``<workdir>/dynamics_only``),
then scores the pretrained and the finetuned model on
  * the run's own held-out set (``<workdir>/heldout``: planner experience): latent and probe error;
  * a labelled dataset from ``simdist generate`` in the same shifted task (``--labelled``: expert, weak
    policies and wide action perturbations, with true rewards and expert value labels): latent and
    probe error, and the frozen reward/value heads' error along the predicted latents;
and runs the policy prior alone in closed loop (no dynamics, reward or value: identical for every
dynamics-only model) as the reference the planner should not fall below.

    python scripts/diagnostics/adaptation_heads.py --task go2/foam --checkpoint checkpoints/go2 \
        --experience /tmp/adapt/foam/dynamics_only --labelled /tmp/foam_wide --steps 1200 --json out.json
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, replace
from pathlib import Path

import torch
from simdist_core.checkpoint import load_checkpoint
from simdist_core.data.dataset import Dataset
from simdist_core.data.sampler import WindowSampler
from simdist_core.eval.adaptation import AdaptationConfig, probe_rollout_error
from simdist_core.eval.closed_loop import EvalConfig, evaluate
from simdist_core.training.adapt import finetune_dynamics, fixed_batches
from simdist_core.training.trainer import evaluate_loss, finetune_loss_weights


@dataclass(frozen=True)
class _PriorOnlyConfig:
    kind: str = "policy prior alone (no dynamics, reward or value)"


class PriorOnly:
    """A planner that executes the first action of the policy prior's plan."""

    cfg = _PriorOnlyConfig()

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model

    def reset(self) -> None:
        """Nothing to forget."""

    def plan(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """First action of pi(encode(obs))."""
        with torch.inference_mode():
            return self.model.pi(self.model.encode(obs))[0, 0].clamp(-1.0, 1.0)


def main() -> None:
    """Run the diagnostic and print/write its JSON."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--task", required=True)
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--experience", type=Path, required=True)
    p.add_argument("--labelled", type=Path, required=True)
    p.add_argument("--steps", type=int, default=1200, help="finetune updates (the benchmark's rounds summed)")
    p.add_argument("--episodes", type=int, default=5)
    p.add_argument("--json", type=Path, required=True)
    args = p.parse_args()
    torch.set_num_threads(1)
    model, _ = load_checkpoint(args.checkpoint)

    def batches(folder: Path) -> list:
        return fixed_batches(WindowSampler(Dataset(folder), model.spec, batch_size=64, seed=0), 512, 64, 0)

    heldout, labelled = batches(args.experience.parent / "heldout"), batches(args.labelled)
    cfg = replace(AdaptationConfig().finetune, steps=args.steps)  # the benchmark's settings, its rounds summed
    finetuned, report = finetune_dynamics(model, Dataset(args.experience), cfg)
    out: dict = {"gate": report.gate.reason, "command": vars(args) | {"json": str(args.json)}}
    for name, m in (("pretrained", model), ("finetuned", finetuned)):
        full = evaluate_loss(m, labelled, m.cfg.loss)
        out[name] = {
            "heldout_latent_error": evaluate_loss(m, heldout, finetune_loss_weights())["consistency"],
            "heldout_probe_error": probe_rollout_error(m, heldout),
            "labelled_latent_error": full["consistency"],
            "labelled_probe_error": probe_rollout_error(m, labelled),
            "labelled_reward_head_error": full["reward"],
            "labelled_value_head_error": full["value"],
        }
    prior = evaluate(model, EvalConfig(task=args.task, episodes=args.episodes, seconds=10.0, seed=50_000,
                                       preset="cpu"), planner=PriorOnly(model))  # fmt: skip
    out["prior_only"] = {"forward_progress_m": prior["forward_progress_m"], "falls": prior["falls"]}
    text = json.dumps(out, indent=1, default=str)
    print(text)
    args.json.write_text(text)


if __name__ == "__main__":
    main()
