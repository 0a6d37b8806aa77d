"""The `simdist` command line: one entry point, subcommands dispatched lazily.

Each subcommand lives in the module that owns its logic and exposes ``main(argv) -> int``;
this file is only the table, so importing the CLI never pulls torch, MuJoCo or ROS.
"""

from __future__ import annotations

import importlib
import os
import sys

from simdist_core.cliargs import did_you_mean

# (words, "module:function", one-line help). Longest match wins ("bench planner" before "bench").
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("generate", "simdist_core.data.generate:main", "roll out experts with perturbations into a dataset"),
    ("dagger", "simdist_core.data.dagger:main", "the planner drives, the privileged expert labels its states"),
    ("pretrain", "simdist_core.training.pretrain:main", "train the full world model on generated data"),
    ("finetune", "simdist_core.training.finetune:main", "finetune named parts (default: dynamics) on data or a bag"),
    ("eval", "simdist_core.eval.closed_loop:main", "closed-loop evaluation of a checkpoint in MuJoCo"),
    ("bench planner", "simdist_core.planning.bench:main", "planner latency benchmark (table + JSON)"),
    ("bench generate", "simdist_core.data.bench:main", "data generation speed and expert quality (table + JSON)"),
    ("bench adaptation", "simdist_core.eval.adaptation_cli:main", "zero-shot vs dynamics-only vs full finetune"),
    ("bench budget", "simdist_core.eval.budget:main", "task metric per planner sampling budget (table + JSON)"),
    ("bench train", "simdist_core.training.bench:main", "world-model update time, 4 KB vs 2 MB pages (table + JSON)"),
    ("bench soak", "simdist_ros.soak:main", "run the node graph for a while; memory per node (table + JSON)"),
    ("bench parity", "simdist_ros.parity:main", "in-process eval vs the live ROS graph, same checkpoint and tasks"),
    ("bench graph", "simdist_ros.graph_bench:main", "live graph per executor: ticks kept, delay, CPU"),
    ("bench messages", "simdist_ros.message_bench:main", "CPU a Python node pays per received ROS message"),
    ("figure value", "simdist_core.eval.value_trace:main", "frozen value head along successful and failed episodes"),
    ("figure slip", "simdist_core.eval.slip_trace:main", "predicted vs actual displacement (slip), before/after"),
    ("checkpoint", "simdist_core.checkpoint:main", "inspect / verify a checkpoint"),
    ("checkpoint graft", "simdist_core.checkpoint:graft_main", "copy named parts of one checkpoint into another"),
    ("value relabel", "simdist_core.data.relabel:main", "same rows, value labels from another fitted value function"),
    ("config show", "simdist_core.config_show:main", "every --set key of a task or command: type, default, meaning"),
    ("launch", "simdist_ros.launcher:main", "start the ROS 2 node graph without ros2launch (pip installs)"),
    ("security init", "simdist_ros.keystore:main", "DDS security keystore (SROS2 layout) for a robot's graph"),
    ("demo", "simdist_ros.demo:main", "the main job: simulated robot adapting live, with a progress plot"),
)


def _usage(group: str = "") -> str:
    """The commands (those under ``group``, e.g. ``bench``), one per line with their help."""
    rows = [(words, help_text) for words, _, help_text in COMMANDS if words.startswith(group)]
    lines = [f"usage: simdist {group + ' ' if group else ''}<command> [options]  (<command> --help for its options)",
             "", "commands:"]
    return "\n".join(lines + [f"  {words:<18} {help_text}" for words, help_text in rows])


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``simdist <command> ...`` to the owning module's ``main``.

    ``simdist`` or ``simdist bench`` alone prints the (bench) commands and exits 2; an unknown command
    is one line on stderr naming it, the valid ones and the closest, exit 2.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    # 2 MB pages for torch's large CPU tensors: the same arithmetic, a UR5e finetuning step 1.67x and a
    # pretraining step 1.10x as fast on a 2-vCPU VM (`simdist bench train`, bench_results/train_bench_ur5e.json).
    # Read once, at torch's first allocation, so it must be set before any command imports torch; an explicit
    # THP_MEM_ALLOC_ENABLE=0 in the environment keeps it off. The node processes `simdist launch` starts inherit it.
    os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")
    for words, target, _ in sorted(COMMANDS, key=lambda c: -len(c[0].split())):
        n = len(words.split())
        if argv[:n] == words.split():
            module_name, func_name = target.split(":")
            module = importlib.import_module(module_name)
            try:
                return int(getattr(module, func_name)(argv[n:]) or 0)
            except BrokenPipeError:  # `simdist config show go2/foam | head`: the reader left early
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # as the Python docs advise
                return 1
    groups = {words.split()[0] for words, _, _ in COMMANDS if len(words.split()) > 1}
    group = argv[0] if argv and argv[0] in groups else ""
    rest = argv[1:] if group else argv
    if not rest or rest[0] in ("-h", "--help"):
        print(_usage(group))
        return 0 if rest else 2
    valid = [w for w, _, _ in COMMANDS if w.startswith(group)]
    bad = " ".join(argv[:2]) if group else argv[0]
    print(f"simdist: error: unknown command {bad!r}; valid: {', '.join(valid)}{did_you_mean(bad, valid)}",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
