"""Reading of ``GO2_PLAY_PLAN_GRAPH.md``: the robot playing the plan or repeating the command, graph on one core.

Reads ``bench_results/go2_play_plan_graph/parity_<arm>.json`` (arms ``P_hold_a``, ``P_play_a``, ``P_play_b``,
``P_hold_b``) and writes ``bench_results/go2_play_plan_graph.json``.
Run from the repository root: ``python bench_results/go2_play_plan_graph.py``.

``--replication`` (``GO2_PLAY_PLAN_GRAPH_REPLICATION.md``): the arms ``R_*`` on seeds 64500–64529, and both
protocols pooled; writes ``bench_results/go2_play_plan_graph_replication.json``.
"""

import json
import sys
from pathlib import Path

from go2_delay_randomised import pooled_difference as diff
from go2_delay_randomised import summary
from go2_delay_vs_shipped import in_seed_order
from simdist_core.eval.stats import episode_values

TASK = "go2/foam"
DIR = Path("bench_results/go2_play_plan_graph")
SEEDS = list(range(63500, 63530))
REPLICATION_SEEDS = list(range(64500, 64530))
ON_TIME_IN_PROCESS = "bench_results/go2_delay_randomised/eval_ship_0.json"


def arm(name: str, out: dict, seeds: list[int] = SEEDS) -> list[float]:
    """Per-episode progress of one graph arm, in seed order, after checking it is the protocol's run."""
    report = json.loads((DIR / f"parity_{name}.json").read_text())
    (task,) = report["tasks"]
    g = task["graph"]
    hold = "planner.send_plan=false" in report["set"]
    if (task["task"] != TASK or report["rtf"] != 1.0 or report["lockstep"] or report["seconds"] != 10.0
            or Path(report["checkpoint"]).name != "go2" or hold != ("hold" in name)):
        raise SystemExit(f"{name}: not the protocol's run")
    episodes = in_seed_order(g["per_episode"], seeds, name)
    values = episode_values(episodes, TASK)
    robot = g["diagnostics_end"]["sim_robot"]
    steps = int(robot["steps"])
    out["graph"][name] = {**summary(values, episodes), "delay_zero_fraction": g["delay_zero_fraction"],
                          "ticks_kept": g["ticks_kept"], "planner_ticks_kept": g["planner_ticks_kept"],
                          "achieved_rtf": g["achieved_rtf"], "delay_periods_histogram": g["delay_periods_histogram"],
                          "plan_row_step_fraction": round(int(robot.get("plan_row_steps", 0)) / steps, 4),
                          "load_avg_1m": task.get("load_avg_1m_graph"),
                          "parity_in_process_m": task["in_process_summary"]["metric_mean"]}
    return values


def abba(prefix: str, out: dict, seeds: list[int]) -> dict[str, list[float]]:
    """The arms ``<prefix>_hold_a``, ``_play_a``, ``_play_b``, ``_hold_b``: play − hold, drift, verdict into ``out``."""
    v = {name: arm(name, out, seeds) for name in (f"{prefix}_hold_a", f"{prefix}_play_a", f"{prefix}_play_b",
                                                   f"{prefix}_hold_b")}
    out["play_minus_hold"] = diff([v[f"{prefix}_play_a"], v[f"{prefix}_play_b"]],
                                  [v[f"{prefix}_hold_a"], v[f"{prefix}_hold_b"]])
    out["drift_hold_b_minus_a"] = diff([v[f"{prefix}_hold_b"]], [v[f"{prefix}_hold_a"]])
    late = max(out["graph"][f"{prefix}_hold_{r}"]["delay_zero_fraction"] for r in "ab") <= 0.9
    ci = out["play_minus_hold"]["ci95"]
    out["verdict"] = {"graph_was_late": late, "playing_the_plan_wins": late and ci[0] > 0,
                      "playing_the_plan_loses": ci[1] < 0}
    return v


def main() -> None:
    """Every reading of the protocol, and its verdict."""
    out: dict = {"protocol": "bench_results/GO2_PLAY_PLAN_GRAPH.md", "task": TASK, "seeds": [SEEDS[0], SEEDS[-1]],
                 "graph": {}}
    abba("P", out, SEEDS)
    on_time = json.loads(Path(ON_TIME_IN_PROCESS).read_text())["forward_progress_m"]
    for reading in out["graph"].values():
        reading["graph_over_in_process_on_time"] = round(reading["progress_m"] / on_time, 3)
    out["in_process_on_time_m"] = round(on_time, 3)
    Path("bench_results/go2_play_plan_graph.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


def replication() -> None:
    """``GO2_PLAY_PLAN_GRAPH_REPLICATION.md``: the same arms on new seeds, and both protocols pooled."""
    out: dict = {"protocol": "bench_results/GO2_PLAY_PLAN_GRAPH_REPLICATION.md", "task": TASK,
                 "seeds": [REPLICATION_SEEDS[0], REPLICATION_SEEDS[-1]], "graph": {}}
    v = abba("R", out, REPLICATION_SEEDS)
    for reading in out["graph"].values():
        reading["graph_over_in_process_on_time"] = round(reading["progress_m"] / reading["parity_in_process_m"], 3)
    first: dict = {"graph": {}}
    p = {name: arm(name, first) for name in ("P_hold_a", "P_play_a", "P_play_b", "P_hold_b")}
    # Both protocols pooled: each protocol's runs are clusters over its own 30 episodes, concatenated.
    play = [p["P_play_a"] + v["R_play_a"], p["P_play_b"] + v["R_play_b"]]
    hold = [p["P_hold_a"] + v["R_hold_a"], p["P_hold_b"] + v["R_hold_b"]]
    out["pooled_both_protocols_play_minus_hold"] = diff(play, hold)
    Path("bench_results/go2_play_plan_graph_replication.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    if "--replication" in sys.argv[1:]:
        replication()
    else:
        main()
