"""Reading of ``UR5E_PLAY_PLAN_GRAPH.md``: the UR5e graph on one busy core, repeating the command or playing the plan.

Reads ``bench_results/ur5e_play_plan_graph/parity_<arm>.json`` (arms ``U_hold_a``, ``U_play_a``, ``U_play_b``,
``U_hold_b``) and writes ``bench_results/ur5e_play_plan_graph.json``.
Run from the repository root: ``python bench_results/ur5e_play_plan_graph.py``.
"""

import json
from pathlib import Path

from go2_delay_vs_shipped import in_seed_order
from simdist_core.eval.stats import episode_values, mean_ci, paired_cluster_difference_ci

TASK = "ur5e/peg"
DIR = Path("bench_results/ur5e_play_plan_graph")
SEEDS = list(range(41000, 41020))
ARMS = ("U_hold_a", "U_play_a", "U_play_b", "U_hold_b")


def arm(name: str, out: dict) -> list[float]:
    """Per-episode success of one graph arm, in seed order, after checking it is the protocol's run."""
    report = json.loads((DIR / f"parity_{name}.json").read_text())
    (task,) = report["tasks"]
    g = task["graph"]
    if (task["task"] != TASK or report["rtf"] != 1.0 or report["lockstep"] or report["seconds"] != 15.0
            or Path(report["checkpoint"]).name != "ur5e"
            or ("planner.send_plan=false" in report["set"]) != ("hold" in name)):
        raise SystemExit(f"{name}: not the protocol's run")
    values = episode_values(in_seed_order(g["per_episode"], SEEDS, name), TASK)
    mean, low, high = mean_ci(values)
    robot = g["diagnostics_end"]["sim_robot"]
    out["graph"][name] = {"success_rate": round(mean, 3), "ci95": [round(low, 3), round(high, 3)],
                          "delay_zero_fraction": g["delay_zero_fraction"], "ticks_kept": g["ticks_kept"],
                          "planner_ticks_kept": g["planner_ticks_kept"],
                          "delay_periods_histogram": g["delay_periods_histogram"],
                          "plan_row_step_fraction": round(int(robot.get("plan_row_steps", 0)) / int(robot["steps"]), 4),
                          "in_process_success_rate": task["in_process_summary"]["metric_mean"]}
    return values


def main() -> None:
    """Every reading of the protocol, and its verdict."""
    out: dict = {"protocol": "bench_results/UR5E_PLAY_PLAN_GRAPH.md", "task": TASK, "seeds": [SEEDS[0], SEEDS[-1]],
                 "graph": {}}
    v = {name: arm(name, out) for name in ARMS}
    d, low, high = paired_cluster_difference_ci([v["U_play_a"], v["U_play_b"]], [v["U_hold_a"], v["U_hold_b"]])
    out["play_minus_hold"] = {"difference": round(d, 3), "ci95": [round(low, 3), round(high, 3)]}
    late = max(out["graph"][f"U_hold_{r}"]["delay_zero_fraction"] for r in "ab") <= 0.9
    out["verdict"] = {"graph_was_late": late, "playing_the_plan_wins": late and low > 0,
                      "playing_the_plan_loses": high < 0}
    Path("bench_results/ur5e_play_plan_graph.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
