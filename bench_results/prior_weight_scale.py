"""Scale of returns vs distance from the prior on a few ticks (no prior penalty; for choosing lambda).

Usage: prior_weight_scale.py TASK [PRIOR_WEIGHT]. With PRIOR_WEIGHT (added after the protocol's run, for the
exploratory probe in PRIOR_WEIGHT.md) the probe plans use that weight and 32x4 is probed too.
"""
import dataclasses, json, sys
import numpy as np, torch
from simdist_core.checkpoint import load_checkpoint
from simdist_core.eval.closed_loop import EvalConfig, evaluate, planner_for
from simdist_core.eval.budget import parse_budget, planner_config
from simdist_core.planning.mppi import MPPIPlanner

torch.set_num_threads(1)
model, manifest = load_checkpoint("checkpoints/go2"); model.eval().requires_grad_(False)
task = sys.argv[1]
weight = {"prior_weight": sys.argv[2]} if len(sys.argv) > 2 else {}
budgets = ("32x1", "32x2", "64x2") + (("32x4",) if weight else ())
probe_cfgs = {b: planner_config(manifest, parse_budget(b), weight) for b in budgets}
rows = []

class Diag(MPPIPlanner):
    def plan_latent(self, latent, committed=None, **kwargs):
        with torch.inference_mode():
            pi = self.model.pi(latent)[:, :25]
            g_pi = float(self._rollout(latent, pi)[0])
            row = {"g_prior": g_pi}
            for b, c in probe_cfgs.items():
                p = MPPIPlanner(self.model, c, seed=len(rows))
                p._prev_mean = self._prev_mean  # same warm start as the executed (shipped) planner
                r = p.plan_latent(latent)
                m = torch.from_numpy(r.mean)
                row[b] = {"gain": r.value - g_pi, "dist2": float((m - pi[0]).pow(2).sum(-1).mean())}
        rows.append(row)
        return super().plan_latent(latent, committed, **kwargs)

planner = Diag(model, planner_config(manifest, parse_budget("32x1")), seed=1000)
evaluate(model, EvalConfig(task=task, episodes=2, seconds=1.0, seed=1000), planner=planner, manifest=manifest)
out = {"task": task, "ticks": len(rows)}
for b in probe_cfgs:
    gain = np.array([r[b]["gain"] for r in rows]); d2 = np.array([r[b]["dist2"] for r in rows])
    out[b] = {"gain_median": float(np.median(gain)), "gain_p90": float(np.percentile(gain, 90)),
              "dist2_median": float(np.median(d2)), "dist2_p90": float(np.percentile(d2, 90)),
              "ratio_median": float(np.median(gain / np.maximum(d2, 1e-9)))}
out["g_prior_median"] = float(np.median([r["g_prior"] for r in rows]))
print(json.dumps(out, indent=1))
