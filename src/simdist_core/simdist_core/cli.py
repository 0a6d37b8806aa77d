"""The `simdist` command line: one entry point, subcommands dispatched lazily.

Each subcommand lives in the module that owns its logic and exposes ``main(argv) -> int``;
this file is only the table, so importing the CLI never pulls torch, MuJoCo or ROS.
"""

from __future__ import annotations

import importlib
import sys

# (words, "module:function", one-line help). Longest match wins ("bench planner" before "bench").
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("generate", "simdist_core.data.generate:main", "roll out experts with perturbations into a dataset"),
    ("pretrain", "simdist_core.training.pretrain:main", "train the full world model on generated data"),
    ("finetune", "simdist_core.training.finetune:main", "finetune named parts (default: dynamics) on data or a bag"),
    ("eval", "simdist_core.eval.closed_loop:main", "closed-loop evaluation of a checkpoint in MuJoCo"),
    ("bench planner", "simdist_core.planning.bench:main", "planner latency benchmark (table + JSON)"),
    ("bench generate", "simdist_core.data.bench:main", "data generation speed and expert quality (table + JSON)"),
    ("bench adaptation", "simdist_core.eval.adaptation:main", "zero-shot vs dynamics-only vs full finetune"),
    ("bench budget", "simdist_core.eval.budget:main", "task metric per planner sampling budget (table + JSON)"),
    ("bench soak", "simdist_ros.soak:main", "run the node graph for a while; memory per node (table + JSON)"),
    ("bench parity", "simdist_ros.parity:main", "in-process eval vs the live ROS graph, same checkpoint and tasks"),
    ("bench graph", "simdist_ros.graph_bench:main", "live graph per executor: ticks kept, delay, CPU"),
    ("checkpoint", "simdist_core.checkpoint:main", "inspect / verify a checkpoint"),
    ("launch", "simdist_ros.launcher:main", "start the ROS 2 node graph without ros2launch (pip installs)"),
    ("security init", "simdist_ros.keystore:main", "DDS security keystore (SROS2 layout) for a robot's graph"),
    ("demo", "simdist_ros.demo:main", "the main job: simulated robot adapting live, with a progress plot"),
)


def _usage() -> str:
    lines = ["usage: simdist <command> [options]", "", "commands:"]
    lines += [f"  {words:<18} {help_text}" for words, _, help_text in COMMANDS]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``simdist <command> ...`` to the owning module's ``main``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    for words, target, _ in sorted(COMMANDS, key=lambda c: -len(c[0].split())):
        n = len(words.split())
        if argv[:n] == words.split():
            module_name, func_name = target.split(":")
            module = importlib.import_module(module_name)
            return int(getattr(module, func_name)(argv[n:]) or 0)
    print(f"simdist: unknown command {' '.join(argv[:2])!r}\n\n{_usage()}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
