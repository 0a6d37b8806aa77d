"""Is a lockstep run of the live graph reproducible? Two identical `simdist bench parity --lockstep` runs, compared.

Each pair in ``lockstep_repeat_ur5e/`` is the same command run twice on the same commit (``--task ur5e/peg --episodes
10 --seconds 15 --lockstep``, the second with ``--in-process-from`` the first): "before" at c40d66c (sample count
fixed in lockstep, planner noise continuing across episodes), "after" at f8dc27f (the planner node restarts its
noise from its seed at each episode start). Per pair: graph episodes identical in outcome, length and final
insertion depth; episodes whose outcome differs. Writes ``lockstep_repeat_ur5e.json``.

Run: ``python bench_results/lockstep_repeat_ur5e.py``
"""

import json
from pathlib import Path

HERE = Path(__file__).parent
RUNS = HERE / "lockstep_repeat_ur5e"


def graph_episodes(path: Path) -> tuple[str, list[dict]]:
    """(commit, per-episode results of the graph side) of one parity report."""
    report = json.loads(path.read_text())
    (task,) = report["tasks"]
    return report["git_commit"], task["graph"]["per_episode"]


def main() -> None:
    """Compare each pair and write the JSON."""
    out = {}
    for pair in ("before", "after"):
        (commit1, first), (commit2, second) = (graph_episodes(RUNS / f"{pair}_run{i}.json") for i in (1, 2))
        if commit1 != commit2 or [e["seed"] for e in first] != [e["seed"] for e in second]:
            raise ValueError(f"{pair}: the two runs are not the same command on the same commit")
        keys = ("success", "duration_s", "insertion_depth_m")
        same = [all(a[k] == b[k] for k in keys) for a, b in zip(first, second, strict=True)]
        out[pair] = {"commit": commit1, "episodes": len(same), "identical": sum(same),
                     "outcome_differs": sum(a["success"] != b["success"] for a, b in zip(first, second, strict=True)),
                     "identical_seeds": [e["seed"] for e, s in zip(first, same, strict=True) if s],
                     "successes": [sum(e["success"] for e in first), sum(e["success"] for e in second)]}
        print(pair, out[pair])
    (HERE / "lockstep_repeat_ur5e.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
