"""Reading of ``GO2_DELAY_RANDOMISED.md``: the delay-randomised Go2 model against ``go2_v6`` on foam, late and on time.

Reads ``bench_results/go2_delay_randomised/eval_<arm>.json`` (arms ``v6@D``, ``new@D`` for D = 0, 1, 2 and
``newc@D`` for D = 1, 2; the same 30 episode seeds) and writes ``bench_results/go2_delay_randomised.json``.
Run from the repository root: ``python bench_results/go2_delay_randomised.py``.

``--spread`` (``GO2_DELAY_RANDOMISED_SPREAD.md``): also arms ``v6s1@D`` and ``news1@D`` (D = 0, 1), the second
pretraining run of each recipe; writes ``bench_results/go2_delay_randomised_spread.json``.
"""

import json
import sys
from pathlib import Path

from simdist_core.eval.stats import episode_values, mean_ci, paired_cluster_difference_ci

TASK = "go2/foam"
DIR = Path("bench_results/go2_delay_randomised")
ARMS = ("v6@0", "v6@1", "v6@2", "new@0", "new@1", "new@2", "newc@1", "newc@2")
SEEDS = 63500, 30


def load(arm: str, out: dict) -> list[float]:
    """Per-episode progress of one arm after checking it is the protocol's run; its summary into ``out``."""
    report = json.loads((DIR / f"eval_{arm.replace('@', '_')}.json").read_text())
    model, delay = arm.split("@")
    delay = int(delay)
    # The planner is told the delay as the planner node is, except the delay recipe's own untold arms.
    compensate = model == "newc" or (model in ("v6", "v6s1", "ship", "ship0s") and delay > 0)
    checkpoint = {"v6": "go2_v6_low_friction", "v6s1": "go2_v6_seed1", "ship": "go2", "ship0s": "go2",
                  # ship: GO2_DELAY_VS_SHIPPED; ship0s: GO2_STARVED_PLANNER (no Gaussian samples)
                  "news1": "go2_delay_randomised_seed1"}.get(model, "go2_delay_randomised")
    if (report["task"] != TASK or report["episodes"] != SEEDS[1] or report["action_delay"] != delay
            or report["compensate_delay"] != compensate or report["planner"]["prior_weight"] != 100.0
            or Path(report["checkpoint"]).name != checkpoint or report["torch_threads"] != 1
            or (report["planner"]["num_samples"] == 0) != (model == "ship0s")):
        raise SystemExit(f"{arm}: not the protocol's run")
    values = episode_values(report["per_episode"], TASK)
    out["arms"][arm] = summary(values, report["per_episode"])
    return values


def summary(values: list[float], episodes: list[dict]) -> dict:
    """Mean progress, its 95 % interval and the number of ``episodes`` that fell."""
    mean, low, high = mean_ci(values)
    return {"progress_m": round(mean, 3), "ci95": [round(low, 3), round(high, 3)],
            "fell": sum(int(e.get("fell", 0.0) > 0) for e in episodes)}


def pooled_difference(a: list[list[float]], b: list[list[float]]) -> dict:
    """Pooled ``mean(a) - mean(b)``, paired by episode, runs as clusters (two-level bootstrap)."""
    d, low, high = paired_cluster_difference_ci(a, b)
    return {"difference_m": round(d, 3), "ci95": [round(low, 3), round(high, 3)]}


def main() -> None:
    """Every reading of the protocol, and its verdict."""
    out: dict = {"protocol": "bench_results/GO2_DELAY_RANDOMISED.md", "task": TASK,
                 "seeds": [SEEDS[0], SEEDS[0] + SEEDS[1] - 1], "arms": {}}
    v = {arm: load(arm, out) for arm in ARMS}

    def diff(a: str, b: str) -> dict:
        d, low, high = paired_cluster_difference_ci([v[a]], [v[b]])
        wins = sum(x > y for x, y in zip(v[a], v[b], strict=True))
        return {"difference_m": round(d, 3), "ci95": [round(low, 3), round(high, 3)], "wins": wins,
                "losses": sum(x < y for x, y in zip(v[a], v[b], strict=True))}

    out["D0_new_minus_v6"] = diff("new@0", "v6@0")
    out["D1_new_minus_v6"] = diff("new@1", "v6@1")
    out["D2_new_minus_v6"] = diff("new@2", "v6@2")
    out["C1_compensated_minus_not"] = diff("newc@1", "new@1")
    out["C2_compensated_minus_not"] = diff("newc@2", "new@2")
    late = [out["D1_new_minus_v6"]["ci95"], out["D2_new_minus_v6"]["ci95"]]
    helps = any(lo > 0 for lo, _ in late) and not any(hi < 0 for _, hi in late)
    out["verdict"] = {"helps_when_late": helps, "costs_on_time": out["D0_new_minus_v6"]["ci95"][1] < 0}
    Path("bench_results/go2_delay_randomised.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


def spread() -> None:
    """``GO2_DELAY_RANDOMISED_SPREAD.md``: run-to-run spread, and each recipe pooled over its two runs."""
    out: dict = {"protocol": "bench_results/GO2_DELAY_RANDOMISED_SPREAD.md", "task": TASK,
                 "seeds": [SEEDS[0], SEEDS[0] + SEEDS[1] - 1], "arms": {}}
    v = {arm: load(arm, out) for arm in ("v6@0", "v6@1", "new@0", "new@1", "v6s1@0", "v6s1@1", "news1@0", "news1@1")}
    diff = pooled_difference
    for delay in (0, 1):
        out[f"spread_v6@{delay}_run2_minus_run1"] = diff([v[f"v6s1@{delay}"]], [v[f"v6@{delay}"]])
        out[f"spread_new@{delay}_run2_minus_run1"] = diff([v[f"news1@{delay}"]], [v[f"new@{delay}"]])
        out[f"S{delay}_new_minus_v6_pooled"] = diff([v[f"new@{delay}"], v[f"news1@{delay}"]],
                                                    [v[f"v6@{delay}"], v[f"v6s1@{delay}"]])
    out["verdict"] = {"leads_on_time": out["S0_new_minus_v6_pooled"]["ci95"][0] > 0,
                      "leads_one_period_late": out["S1_new_minus_v6_pooled"]["ci95"][0] > 0}
    Path("bench_results/go2_delay_randomised_spread.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    spread() if "--spread" in sys.argv[1:] else main()
