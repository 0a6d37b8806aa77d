"""Reading of ``UR5E_INCREMENTAL_LINK.md``: the UR5e hardware driver's command semantics behind the late link.

Reads ``bench_results/ur5e_incremental_link/eval_{incremental,hold_rerun}.json``, the committed arms of
``UR5E_LATE_LINK.md`` and the on-time reference; writes ``bench_results/ur5e_incremental_link.json``.
Run from the repository root:
``PYTHONPATH=src/simdist_core:bench_results python bench_results/ur5e_incremental_link.py``.
"""

import json
from pathlib import Path

from simdist_core.eval.stats import episode_values, mean_ci, paired_cluster_difference_ci
from ur5e_late_link import DIR as LATE_DIR
from ur5e_late_link import ON_TIME, TASK, load

DIR = Path("bench_results/ur5e_incremental_link")


def main() -> None:
    """Every reading of the protocol, and its verdict."""
    incremental = load(DIR / "eval_incremental.json", True, False)
    if not incremental.get("incremental_commands"):
        raise SystemExit("eval_incremental.json: not an incremental-commands run")
    reports = {"on_time": load(ON_TIME, False, False), "hold": load(LATE_DIR / "eval_hold.json", True, False),
               "play": load(LATE_DIR / "eval_play.json", True, True), "incremental": incremental,
               "hold_rerun": load(DIR / "eval_hold_rerun.json", True, False)}
    values = {k: episode_values(r["per_episode"], TASK) for k, r in reports.items()}
    out: dict = {"protocol": "bench_results/UR5E_INCREMENTAL_LINK.md", "task": TASK, "seeds": [41000, 41049],
                 "arms": {}}
    out["hold_rerun_equals_hold"] = bool(values["hold_rerun"] == values["hold"])
    hold = "hold" if out["hold_rerun_equals_hold"] else "hold_rerun"
    for k, v in values.items():
        mean, low, high = mean_ci(v)
        out["arms"][k] = {"success_rate": round(mean, 3), "ci95": [round(low, 3), round(high, 3)]}
    for a, b in (("incremental", hold), ("incremental", "play"), ("incremental", "on_time")):
        d, low, high = paired_cluster_difference_ci([values[a]], [values[b]])
        out[f"{a}_minus_{b}"] = {"difference": round(d, 3), "ci95": [round(low, 3), round(high, 3)]}
    counts = incremental["link_counts"]
    with_command = counts["steps"] - counts["default_pose_steps"]
    out["incremental_unmoved_fraction"] = round(counts["unmoved_steps"] / with_command, 4)
    out["verdict"] = {"driver_semantics_cost_insertions": out[f"incremental_minus_{hold}"]["ci95"][1] < 0}
    Path("bench_results/ur5e_incremental_link.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
