"""How far could adaptation take the deployed Go2 planner on foam? The commanded distance of the same episodes.

The foam adaptation benchmark with the deployed planner (``adaptation_go2_foam_pw100_s2.json``: 3 independent seeds
x 20 evaluation episodes of 10 s) measures forward progress. The velocity command of each episode is drawn at reset
(0.3-1.0 m/s), so an episode's commanded distance is |v_xy| x 10 s; a gait that tracks its command cannot walk
much beyond it. This rebuilds the same evaluation episodes (the benchmark's seed scheme 2), reads each command and
sets the zero-shot and adapted progress beside it. Writes ``foam_commanded_ceiling.json``.

Run: ``python bench_results/foam_commanded_ceiling.py`` (seconds; no model is run). Intervals: the benchmark's
two-level bootstrap over seeds and episodes.
"""

import json
from pathlib import Path

import numpy as np
from simdist_core.eval.adaptation import EVAL_STREAM, SEED_SCHEME, episode_seed
from simdist_core.eval.stats import paired_cluster_ratio_ci
from simdist_core.sim.base import make_env

HERE = Path(__file__).parent
REPORT = HERE / "adaptation_go2_foam_pw100_s2.json"


def main() -> None:
    """Commanded distance per evaluation episode beside the report's progress."""
    report = json.loads(REPORT.read_text())
    if report["seed_scheme"] != SEED_SCHEME:
        raise ValueError(f"{REPORT.name} uses seed scheme {report['seed_scheme']}, this code {SEED_SCHEME}")
    cfg, seeds = report["config"], report["seeds"]
    env = make_env(cfg["task"], report.get("env_overrides") or {})
    per_seed = []  # commanded metres per evaluation episode, per seed
    for seed in seeds:
        first = episode_seed(EVAL_STREAM, seed)
        row = []
        for i in range(cfg["eval_episodes"]):
            env.reset(seed=first + i)
            row.append(float(np.hypot(*env.command[:2])) * cfg["eval_s"])
        per_seed.append(row)
    commanded = np.array(per_seed).reshape(-1)
    out = {"report": REPORT.name, "seeds": seeds, "episodes": len(commanded),
           "commanded_m_mean": float(commanded.mean()), "commanded_m_range": [float(commanded.min()),
                                                                             float(commanded.max())]}
    for method in ("zero_shot", "dynamics_only"):
        res = report["results"][method]
        clusters = res["episode_metric_per_seed"][-1]  # the last minute mark: per seed, per episode
        per_episode = np.array(clusters).reshape(-1)
        share = paired_cluster_ratio_ci(clusters, per_seed)  # pooled progress / pooled commanded distance
        out[method] = {"minutes": res["minutes"][-1], "progress_m_mean": float(per_episode.mean()),
                       "share_of_commanded": share[0], "share_of_commanded_ci95": list(share[1:]),
                       "episodes_at_90pct_of_command": int((per_episode >= 0.9 * commanded).sum())}
    out["goal_1p5x_needs_m"] = 1.5 * out["zero_shot"]["progress_m_mean"]
    out["goal_1p5x_over_commanded_mean"] = out["goal_1p5x_needs_m"] / out["commanded_m_mean"]
    print(json.dumps(out, indent=1))
    (HERE / "foam_commanded_ceiling.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
