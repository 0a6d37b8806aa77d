"""Scale of returns vs distance from the prior on a few ticks (no prior penalty; for choosing lambda).

Usage: prior_weight_scale.py TASK [PRIOR_WEIGHT] [--checkpoint DIR] [--seconds S]. With PRIOR_WEIGHT (added
after the protocol's run, for the exploratory probe in PRIOR_WEIGHT.md) the probe plans use that weight and 32x4
is probed too. --checkpoint (default checkpoints/go2) and --seconds (per episode, default 1) were added for the
UR5e protocol (PRIOR_WEIGHT_UR5E.md); the defaults reproduce the Go2 probe.
"""
import argparse, json
import numpy as np, torch
from simdist_core.checkpoint import load_checkpoint
from simdist_core.eval.closed_loop import EvalConfig, evaluate, planner_for
from simdist_core.eval.budget import parse_budget, planner_config
from simdist_core.planning.mppi import MPPIPlanner

torch.set_num_threads(1)
ap = argparse.ArgumentParser()
ap.add_argument("task"); ap.add_argument("prior_weight", nargs="?")
ap.add_argument("--checkpoint", default="checkpoints/go2"); ap.add_argument("--seconds", type=float, default=1.0)
args = ap.parse_args()
model, manifest = load_checkpoint(args.checkpoint); model.eval().requires_grad_(False)
task = args.task
weight = {"prior_weight": args.prior_weight} if args.prior_weight is not None else {}
budgets = ("32x1", "32x2", "64x2") + (("32x4",) if weight else ())
probe_cfgs = {b: planner_config(manifest, parse_budget(b), weight) for b in budgets}
rows = []

class Diag(MPPIPlanner):
    def plan_latent(self, latent, committed=None, **kwargs):
        with torch.inference_mode():
            pi = self.model.pi(latent)[:, : self.cfg.horizon]
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
evaluate(model, EvalConfig(task=task, episodes=2, seconds=args.seconds, seed=1000), planner=planner, manifest=manifest)
out = {"task": task, "checkpoint": args.checkpoint, "ticks": len(rows)}
for b in probe_cfgs:
    gain = np.array([r[b]["gain"] for r in rows]); d2 = np.array([r[b]["dist2"] for r in rows])
    out[b] = {"gain_median": float(np.median(gain)), "gain_p90": float(np.percentile(gain, 90)),
              "dist2_median": float(np.median(d2)), "dist2_p90": float(np.percentile(d2, 90)),
              "ratio_median": float(np.median(gain / np.maximum(d2, 1e-9)))}
out["g_prior_median"] = float(np.median([r["g_prior"] for r in rows]))
print(json.dumps(out, indent=1))
