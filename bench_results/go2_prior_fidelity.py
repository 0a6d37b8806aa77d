"""Diagnostic: how closely the shipped Go2 policy prior reproduces the expert on the expert's own states, per terrain.

The expert (skill 1, no perturbation) walks 3 episodes of 6 s per terrain (seeds 100-102); at each step after the
first 0.5 s the prior's first action from the model's encoding of the observation history is compared with the
expert's action (normalised units). Open loop: the states are the expert's, so this is the prior's fitting error,
not what it does when its own errors compound. Writes ``bench_results/go2_prior_fidelity.json``. Run from the
repository root: ``PYTHONPATH=src/simdist_core python bench_results/go2_prior_fidelity.py``.
"""

import json
from pathlib import Path

import numpy as np
import torch
from simdist_core.checkpoint import load_checkpoint
from simdist_core.data.history import ObservationHistory
from simdist_core.experts.go2_expert import Go2TrotExpert
from simdist_core.sim.base import make_env

TERRAINS = {"flat": ("go2/flat", {}), "uphill_5deg": ("go2/slope", {"terrain.slope_deg": "5"}),
            "uphill_10deg": ("go2/slope", {}), "downhill_10deg": ("go2/slope", {"terrain.slope_deg": "-10"}),
            "foam": ("go2/foam", {})}


def fidelity(model: torch.nn.Module, task: str, overrides: dict[str, str]) -> dict[str, float]:
    """Mean squared prior-minus-expert action, the expert's mean squared action, and their ratio."""
    env = make_env(task, overrides)
    errors, powers = [], []
    for episode in range(3):
        obs = env.reset(seed=100 + episode)
        expert = Go2TrotExpert()
        expert.reset(env, np.random.default_rng(episode))
        history = ObservationHistory(env.spec)
        history.reset(obs)
        for step in range(300):
            action = np.clip(expert.act(env), -1.0, 1.0)
            with torch.no_grad():
                prior = model.pi(model.encode(history.model_input()))[0, 0].numpy()
            if step >= 25:  # the first 0.5 s: the history still holds the reset observation
                errors.append(float(np.mean((prior - action) ** 2)))
                powers.append(float(np.mean(action**2)))
            result = env.step(action)
            history.record_action(action)
            history.push(result.obs)
            if result.terminated or result.truncated:
                break
    mse, power = float(np.mean(errors)), float(np.mean(powers))
    return {"prior_minus_expert_mse": round(mse, 4), "expert_action_power": round(power, 4),
            "relative_error": round(mse / power, 3), "steps": len(errors)}


def main() -> None:
    """Every terrain's fidelity, written and printed."""
    torch.set_num_threads(1)
    model, _ = load_checkpoint("checkpoints/go2")
    out = {"checkpoint": "checkpoints/go2", "seeds": [100, 102],
           "terrains": {name: fidelity(model, task, o) for name, (task, o) in TERRAINS.items()}}
    Path("bench_results/go2_prior_fidelity.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
