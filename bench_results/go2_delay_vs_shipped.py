"""Reading of ``GO2_DELAY_VS_SHIPPED.md``: the delay-randomised Go2 recipe against the shipped model on foam.

Part 1 (in-process): ``bench_results/go2_delay_randomised/eval_ship_<D>.json`` (D = 0, 1, 2) against the committed
``eval_new_<D>.json`` and ``eval_news1_<D>.json``. Part 2 (the live graph with one busy-looping job beside it):
``bench_results/go2_delay_vs_shipped/parity_<arm>.json``. Writes ``bench_results/go2_delay_vs_shipped.json``.
Run from the repository root: ``python bench_results/go2_delay_vs_shipped.py``.

``--two-jobs`` (``GO2_DELAY_VS_SHIPPED_TWO_JOBS.md``): the graph arms ``G2_*`` run beside two busy-looping jobs;
writes ``bench_results/go2_delay_vs_shipped_two_jobs.json``. ``--one-core`` (``GO2_DELAY_VS_SHIPPED_ONE_CORE.md``):
the arms ``G1_*`` with the graph pinned to one core shared with a busy job; ``..._one_core.json``. ``--starved``
(``GO2_STARVED_PLANNER.md``): ``bench_results/go2_starved_planner.json``.
"""

import json
import sys
from pathlib import Path

# The in-process reports share that protocol's folder and checks, and its readings.
from go2_delay_randomised import load, summary
from go2_delay_randomised import pooled_difference as diff
from simdist_core.eval.stats import episode_values

TASK = "go2/foam"
GRAPH = Path("bench_results/go2_delay_vs_shipped")
SEEDS = list(range(63500, 63530))
CHECKPOINTS = {"ship": "go2", "new": "go2_delay_randomised", "news1": "go2_delay_randomised_seed1"}


def graph(arm: str, out: dict) -> list[float]:
    """Per-episode progress of one graph arm, in seed order, and what the graph lived (delays, ticks, load)."""
    report = json.loads((GRAPH / f"parity_{arm}.json").read_text())
    (task,) = report["tasks"]
    g = task["graph"]
    model = arm.split("_")[1]
    compensate_off = "planner.compensate_delay=false" in report["set"]
    if (task["task"] != TASK or report["rtf"] != 1.0 or report["lockstep"] or report["seconds"] != 10.0
            or Path(report["checkpoint"]).name != CHECKPOINTS[model] or compensate_off != (model != "ship")):
        raise SystemExit(f"{arm}: not the protocol's run")
    episodes = in_seed_order(g["per_episode"], SEEDS, arm)
    values = episode_values(episodes, TASK)
    out["graph"][arm] = {**summary(values, episodes),
                         "delay_zero_fraction": g["delay_zero_fraction"], "ticks_kept": g["ticks_kept"],
                         "planner_ticks_kept": g["planner_ticks_kept"], "achieved_rtf": g["achieved_rtf"],
                         "delay_periods_histogram": g["delay_periods_histogram"],
                         "load_avg_1m": task.get("load_avg_1m_graph"),
                         "in_process_at_delay_0": task["in_process_summary"]["metric_mean"]}
    return values


def in_seed_order(per_episode: list[dict], seeds: list[int], arm: str) -> list[dict]:
    """A graph arm's episodes in ``seeds`` order; exits if they are not exactly those seeds."""
    by_seed = {e["seed"]: e for e in per_episode}
    if sorted(by_seed) != seeds:
        raise SystemExit(f"{arm}: episodes {sorted(by_seed)[:3]}… are not seeds {seeds[0]}–{seeds[-1]}")
    return [by_seed[s] for s in seeds]


def main() -> None:
    """Every reading of the protocol, and its verdict."""
    out: dict = {"protocol": "bench_results/GO2_DELAY_VS_SHIPPED.md", "task": TASK, "seeds": [SEEDS[0], SEEDS[-1]],
                 "arms": {}, "graph": {}}
    v = {f"{m}@{d}": load(f"{m}@{d}", out) for m in ("ship", "new") for d in (0, 1, 2)}
    v |= {f"news1@{d}": load(f"news1@{d}", out) for d in (0, 1)}
    for d in (0, 1):
        pooled = [(x + y) / 2 for x, y in zip(v[f"new@{d}"], v[f"news1@{d}"], strict=True)]
        out["arms"][f"recipe_pooled@{d}"] = {"progress_m": round(sum(pooled) / len(pooled), 3)}
        out[f"P{d}_recipe_minus_shipped"] = diff([v[f"new@{d}"], v[f"news1@{d}"]], [v[f"ship@{d}"]] * 2)
    out["P2_recipe_run1_minus_shipped"] = diff([v["new@2"]], [v["ship@2"]])
    out["verdict"] = {"costs_on_time": out["P0_recipe_minus_shipped"]["ci95"][1] < 0}
    graph_readings("G", out)
    Path("bench_results/go2_delay_vs_shipped.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


def graph_readings(prefix: str, out: dict) -> None:
    """The graph arms ``<prefix>_ship_a``, ``_new``, ``_news1``, ``_ship_b``: recipe − shipped, drift, verdict."""
    g = {arm: graph(f"{prefix}_{arm}", out) for arm in ("ship_a", "new", "news1", "ship_b")}
    shipped = [(x + y) / 2 for x, y in zip(g["ship_a"], g["ship_b"], strict=True)]
    out[f"{prefix}_recipe_minus_shipped"] = diff([g["new"], g["news1"]], [shipped] * 2)
    out[f"drift_{prefix}_ship_b_minus_a"] = diff([g["ship_b"]], [g["ship_a"]])
    late = max(out["graph"][f"{prefix}_ship_{r}"]["delay_zero_fraction"] for r in "ab") <= 0.9
    out["verdict"] |= {"graph_was_late": late,
                       "walks_further_through_a_late_graph": late
                       and out[f"{prefix}_recipe_minus_shipped"]["ci95"][0] > 0}


def graph_only(prefix: str, name: str) -> None:
    """A protocol of graph arms only (``<prefix>_*``): ``GO2_DELAY_VS_SHIPPED_<NAME>.md``."""
    out: dict = {"protocol": f"bench_results/GO2_DELAY_VS_SHIPPED_{name.upper()}.md", "task": TASK,
                 "seeds": [SEEDS[0], SEEDS[-1]], "graph": {}, "verdict": {}}
    graph_readings(prefix, out)
    out["verdict"]["behind_through_a_late_graph"] = out[f"{prefix}_recipe_minus_shipped"]["ci95"][1] < 0
    for reading in out["graph"].values():
        reading["graph_over_in_process"] = round(reading["progress_m"] / reading["in_process_at_delay_0"], 3)
    Path(f"bench_results/go2_delay_vs_shipped_{name}.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


def starved() -> None:
    """``GO2_STARVED_PLANNER.md``: the shipped model one period late without Gaussian samples, in-process."""
    out: dict = {"protocol": "bench_results/GO2_STARVED_PLANNER.md", "task": TASK, "seeds": [SEEDS[0], SEEDS[-1]],
                 "arms": {}}
    none, full = load("ship0s@1", out), load("ship@1", out)
    out["no_samples_minus_32"] = diff([none], [full])
    one_core = json.loads(Path("bench_results/go2_delay_vs_shipped_one_core.json").read_text())["graph"]
    graph_mean = (one_core["G1_ship_a"]["progress_m"] + one_core["G1_ship_b"]["progress_m"]) / 2
    loss = out["arms"]["ship@1"]["progress_m"] - graph_mean
    out["share_of_the_graph_loss"] = round((out["arms"]["ship@1"]["progress_m"] - out["arms"]["ship0s@1"]["progress_m"])
                                           / loss, 3)
    ci = out["no_samples_minus_32"]["ci95"]
    out["verdict"] = {"search_explains_most": out["share_of_the_graph_loss"] > 0.5 and ci[1] < 0,
                      "not_the_search": ci[0] <= 0 <= ci[1]}
    Path("bench_results/go2_starved_planner.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    if "--two-jobs" in sys.argv[1:]:
        graph_only("G2", "two_jobs")
    elif "--starved" in sys.argv[1:]:
        starved()
    elif "--one-core" in sys.argv[1:]:
        graph_only("G1", "one_core")
    else:
        main()
