"""Is a lockstep run of the live graph reproducible? Identical `simdist bench parity --lockstep` runs, compared.

Each pair in ``lockstep_repeat_ur5e/`` is the same command run twice (``--task ur5e/peg --episodes 10 --seconds 15
--lockstep``, the later run with ``--in-process-from`` the first): "before" at c40d66c (sample count fixed in
lockstep, planner noise continuing across episodes), "after" at f8dc27f (the planner node restarts its noise from
its seed at each episode start), and "watchdog" at ab520fb (the planner's watchdog counts from the latent's stamp, so
it no longer plans a second time on a latent whose step's ``/clock`` came late), three later runs against its first:
on an idle VM, with two busy processes during the graph's start, and beside three adaptation benchmarks (that run
at b429b93, whose ``src/`` is that of ab520fb). Per pair: graph episodes identical in outcome, length and final
insertion depth; episodes whose outcome differs; watchdog ticks that planned (not held). "episode_noise" at 397bcf9:
each episode's noise from a seed of its own (a checksum of its first latent), two runs. Writes
``lockstep_repeat_ur5e.json``.

Run: ``python bench_results/lockstep_repeat_ur5e.py`` (from the repository: it checks the commits' ``src/`` with git)
"""

import json
import subprocess
from pathlib import Path

HERE = Path(__file__).parent
RUNS = HERE / "lockstep_repeat_ur5e"
PAIRS = {  # name: (first report, second report, condition of the second)
    "before": ("before_run1", "before_run2", "VM with two other benchmarks running"),
    "after": ("after_run1", "after_run2", "VM with two other benchmarks running"),
    "watchdog_idle": ("watchdog_run1", "watchdog_run2", "idle VM"),
    "watchdog_busy_start": ("watchdog_run1", "watchdog_run3", "two busy processes for the graph's first 20 s"),
    "watchdog_loaded": ("watchdog_run1", "watchdog_run4", "three adaptation benchmarks running (load ~4 on 2 vCPUs)"),
    "episode_noise": ("episode_noise_run1", "episode_noise_run2", "three adaptation benchmarks running"),
}


def graph_side(path: Path) -> tuple[str, list[dict], dict]:
    """(commit, per-episode results, planner diagnostics at the end) of the graph side of one parity report."""
    report = json.loads(path.read_text())
    (task,) = report["tasks"]
    return report["git_commit"], task["graph"]["per_episode"], task["graph"]["diagnostics_end"]["planner"]


def same_source(commit1: str, commit2: str) -> bool:
    """Whether the two commits have the same ``src/`` (the code the runs executed)."""
    if commit1 == commit2:
        return True
    diff = subprocess.run(["git", "diff", "--quiet", commit1, commit2, "--", "src"], cwd=HERE, check=False)
    return diff.returncode == 0


def watchdog_plans(planner: dict) -> int:
    """Watchdog ticks that planned on the latest latent instead of holding."""
    return int(planner["watchdog_ticks"]) - int(planner["holds_no_latent"]) - int(planner["holds_stale"])


def main() -> None:
    """Compare each pair and write the JSON."""
    out = {}
    for name, (file1, file2, condition) in PAIRS.items():
        (commit1, first, diag1), (commit2, second, diag2) = (graph_side(RUNS / f"{f}.json") for f in (file1, file2))
        if not same_source(commit1, commit2) or [e["seed"] for e in first] != [e["seed"] for e in second]:
            raise ValueError(f"{name}: the two runs are not the same command on the same code")
        keys = ("success", "duration_s", "insertion_depth_m")
        same = [all(a[k] == b[k] for k in keys) for a, b in zip(first, second, strict=True)]
        out[name] = {"commits": sorted({commit1, commit2}), "second_run": condition, "episodes": len(same),
                     "identical": sum(same),
                     "outcome_differs": sum(a["success"] != b["success"] for a, b in zip(first, second, strict=True)),
                     "identical_seeds": [e["seed"] for e, s in zip(first, same, strict=True) if s],
                     "successes": [sum(e["success"] for e in first), sum(e["success"] for e in second)],
                     "watchdog_plans": [watchdog_plans(diag1), watchdog_plans(diag2)]}
        print(name, out[name])
    (HERE / "lockstep_repeat_ur5e.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
