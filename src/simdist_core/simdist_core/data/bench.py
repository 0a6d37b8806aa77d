"""``simdist bench generate``: data-generation throughput and expert quality (table + JSON).

    simdist bench generate --robot go2 --json bench_go2.json [--seconds 20] [--task pretrain]

Throughput runs the real generation path (``generate.generate_shard``: policy, perturbations, env
step with height scan or camera, privileged probe/value features, value labels, chunk writer with
fsync) in this one process with one torch thread, for about ``--seconds`` of wall time, after the
first episode (env construction and the value fit are not timed). ``transitions_per_s_per_core`` is
rows per CPU-second of this single-threaded process, i.e. what one busy core delivers, which stays
meaningful on a shared machine; ``transitions_per_s_wall`` is rows per wall second (lower when other
processes compete for the core; the JSON records the load average next to it).

Expert quality runs each robot's ``measure_expert`` on every task of that robot (Go2: forward
progress and falls per minute per terrain; UR5e: success rate per task).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from simdist_core.cliargs import ArgumentParser, check_choice, check_positive, cli_main

DEFAULT_TASK = {"go2": "pretrain", "ur5e": "peg"}
"""Task whose generation speed is measured (the pretraining data of each robot)."""
EXPERT_TASKS = {
    "go2": ("flat", "slope", "rough", "foam", "ptfe_slope"),
    "ur5e": ("peg", "table_leg", "peg_shifted", "table_leg_shifted", "peg_mild_shift", "table_leg_mild_shift"),
}
"""Tasks the expert is scored on."""


class _BenchTimeUpError(Exception):
    """Raised from the progress callback to end the timed generation."""


def measure_throughput(robot: str, task: str, seconds: float, overrides: dict[str, str] | None = None) -> dict:
    """Rows per second of ``simdist generate`` on one core for ``robot/task``."""
    import torch

    from simdist_core.data.generate import GenerateConfig, ensure_value_function, generate_shard
    from simdist_core.data.value_labels import ValueFitConfig

    torch.set_num_threads(1)
    cfg = GenerateConfig(robot=robot, task=task, steps=10**9, seed=0, env_overrides=tuple((overrides or {}).items()),
                         value=ValueFitConfig(episodes=1, train_steps=50, branch_states=0))
    marks: list[tuple[float, float, int]] = []  # (wall s, process CPU s, rows of the episode just written)

    def progress(rows: int) -> None:
        marks.append((time.perf_counter(), time.process_time(), rows))
        if len(marks) >= 2 and marks[-1][0] - marks[0][0] >= seconds:
            raise _BenchTimeUpError

    with tempfile.TemporaryDirectory(prefix="simdist-bench-") as tmp:
        ensure_value_function(cfg, Path(tmp))
        try:
            generate_shard(cfg, Path(tmp), 0, progress, fsync=True)
        except _BenchTimeUpError:
            pass
    rows = sum(n for _, _, n in marks[1:])
    elapsed, cpu = marks[-1][0] - marks[0][0], marks[-1][1] - marks[0][1]
    return {"task_id": f"{robot}/{task}", "rows": rows, "episodes": len(marks) - 1, "seconds": elapsed,
            "cpu_seconds": cpu, "transitions_per_s_per_core": rows / cpu, "transitions_per_s_wall": rows / elapsed}


def measure_experts(robot: str, episodes: int, seconds: float) -> dict[str, dict[str, float]]:
    """Expert scores per task name (Go2: forward_progress_m, falls_per_min; UR5e: success_rate)."""
    out = {}
    for task in EXPERT_TASKS[robot]:
        if robot == "go2":
            from simdist_core.experts.go2_expert import measure_expert

            out[task] = measure_expert(f"go2/{task}", seconds=seconds, episodes=episodes)
        else:
            from simdist_core.experts.ur5e_expert import measure_expert

            out[task] = measure_expert(f"ur5e/{task}", episodes)
    return out


def _table(result: dict) -> str:
    t = result["throughput"]
    load = result["load_average_1m"]
    lines = [f"generation  {t['task_id']:<16} {t['transitions_per_s_per_core']:8.0f} transitions/s/core "
             f"({t['transitions_per_s_wall']:.0f}/s wall, {t['rows']} rows, {t['episodes']} episodes, "
             f"{t['seconds']:.1f} s, load {load:.1f})"]
    keys = ("forward_progress_m", "falls_per_min") if result["robot"] == "go2" else ("success_rate",)
    lines.append(f"{'expert task':<20}" + "".join(f"{k:>22}" for k in keys))
    for task, scores in result["expert"].items():
        lines.append(f"{task:<20}" + "".join(f"{scores.get(k, float('nan')):>22.3f}" for k in keys))
    return "\n".join(lines)


@cli_main("simdist bench generate")
def main(argv: list[str]) -> int:
    """Entry point of ``simdist bench generate``."""
    p = ArgumentParser(prog="simdist bench generate", description=__doc__.split("\n")[0])
    p.add_argument("--robot", required=True, choices=sorted(DEFAULT_TASK), help="robot to measure")
    p.add_argument("--json", required=True, type=Path, help="where to write the results")
    p.add_argument("--seconds", type=float, default=20.0, help="wall time of the throughput run")
    p.add_argument("--task", default=None, help="task of the throughput run (default: go2 pretrain, ur5e peg)")
    p.add_argument("--expert-episodes", type=int, default=3, help="episodes per task of the expert scores")
    p.add_argument("--expert-seconds", type=float, default=20.0, help="Go2 episode length for expert scores")
    p.add_argument("--skip-expert", action="store_true", help="throughput only")
    args = p.parse_args(argv)
    check_positive("--seconds", args.seconds)
    check_positive("--expert-episodes", args.expert_episodes)
    check_positive("--expert-seconds", args.expert_seconds)
    if args.task is not None:
        from simdist_core.sim.base import task_ids

        tasks = [t.split("/", 1)[1] for t in task_ids() if t.startswith(args.robot + "/")]
        check_choice("--task", args.task, tasks, f"a {args.robot} task")
    throughput = measure_throughput(args.robot, args.task or DEFAULT_TASK[args.robot], args.seconds)
    expert = {} if args.skip_expert else measure_experts(args.robot, args.expert_episodes, args.expert_seconds)
    result = {
        "robot": args.robot,
        "transitions_per_s_per_core": throughput["transitions_per_s_per_core"],
        "throughput": throughput,
        "expert": expert,
        "load_average_1m": os.getloadavg()[0],
        "cpu_count": os.cpu_count(),
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    print(_table(result))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1))
    return 0
