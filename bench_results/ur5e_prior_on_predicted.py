"""``UR5E_LATENCY_PRIOR_AFTER.md``, after its results: the UR5e policy prior on the latents the model predicts.

Along episodes driven by the prior's first action (``ur5e/peg``, no latency), at each step t and for d = 1, 2 it
compares two guesses of what the prior will propose once the robot is at t + d (``pi(obs_{t+d})[0]``, from the
encoder's latent then): the prior's own step d from t (``pi(obs_t)[d]``, what the tied planner sends when it
compensates) and the prior's step 0 from the latent the model predicts after the actions really taken
(``pi(z_pred_{t+d})[0]`` with t's context, what ``prior_after_committed`` sends). Mean absolute error per action
dimension, over all steps, for the whole episode and for the steps after the peg first reached the hole (the search).

Run: ``python bench_results/ur5e_prior_on_predicted.py`` → ``bench_results/ur5e_prior_on_predicted.json``
"""

import json
from pathlib import Path

import numpy as np
import torch
from simdist_core.checkpoint import load_checkpoint
from simdist_core.data.history import ObservationHistory
from simdist_core.models.world_model import Latent
from simdist_core.sim.base import make_env

HERE = Path(__file__).parent
SEEDS, STEPS, DS = range(50001, 50006), 300, (1, 2)


def main() -> None:
    """Run the episodes and write the errors."""
    torch.set_num_threads(1)
    model = load_checkpoint(HERE.parent / "checkpoints" / "ur5e")[0].eval()
    env = make_env("ur5e/peg")
    errors: dict = {f"d{d}_{kind}_{part}": [] for d in DS for kind in ("chunk", "predicted")
                    for part in ("all", "search")}
    with torch.no_grad():
        for seed in SEEDS:
            history, obs = ObservationHistory(env.spec), env.reset(seed=seed)
            history.reset(obs)
            latents, plans, actions, search = [], [], [], []
            for _ in range(STEPS):
                latent = model.encode(history.model_input("cpu"))
                plan = model.pi(latent)[0]
                latents.append(latent), plans.append(plan), actions.append(plan[0])
                result = env.step(plan[0].numpy())
                search.append(bool(env.metrics().get("reached_hole", 0.0)))
                history.record_action(plan[0].numpy())
                history.push(result.obs)
                if result.terminated or result.truncated:
                    break
            for t in range(len(plans) - max(DS)):
                for d in DS:
                    target = plans[t + d][0]
                    z_pred = model.predict(latents[t], torch.stack(actions[t:t + d])[None])[:, -1]
                    guesses = {"chunk": plans[t][d], "predicted": model.pi(Latent(z_pred, latents[t].context))[0, 0]}
                    for kind, guess in guesses.items():
                        err = float((guess - target).abs().mean())
                        errors[f"d{d}_{kind}_all"].append(err)
                        if search[t]:
                            errors[f"d{d}_{kind}_search"].append(err)
    out = {"task": "ur5e/peg", "checkpoint": "checkpoints/ur5e", "seeds": list(SEEDS),
           "mean_abs_error": {k: round(float(np.mean(v)), 4) for k, v in errors.items()},
           "steps": {k: len(v) for k, v in errors.items()}}
    (HERE / "ur5e_prior_on_predicted.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
