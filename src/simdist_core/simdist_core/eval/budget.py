"""``simdist bench budget``: what more planner samples buy in task performance (table + JSON).

For each task and each sampling budget, ``simdist eval`` of one checkpoint on the same seeds: the
planner config stored with the checkpoint (else the ``cpu`` preset) with ``num_samples`` Gaussian
candidates and ``iterations`` refits replaced by the budget (``64x2``: 64 candidates, 2 iterations), or a
named preset (``reference``). Everything else (horizon, elites, std, temperature) stays, so the budget is
the only change. A point can also set other planner fields (``32x2:prior_weight=10``, ``:`` between
``KEY=VALUE`` pairs), and ``--planner KEY=VALUE`` sets them at every point (a point's own pairs win), so a
sweep of one planner setting across budgets is one run and one JSON. Reported per point: the task metric
per episode with a 95 % bootstrap interval, falls, rollouts per tick and plan latency p50/p99 (wall ms of this
machine at its load, recorded: the metric is what this benchmark is for; ``simdist bench planner`` measures
latency on an idle machine).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any

from simdist_core.cliargs import (
    ArgumentParser,
    UsageError,
    check_list,
    check_positive,
    checkpoint_dir,
    cli_main,
    did_you_mean,
)
from simdist_core.config import parse_overrides, to_dict


@dataclasses.dataclass(frozen=True)
class Budget:
    """One point: a label, the planner fields its budget sets, and other planner fields it sets."""

    label: str
    overrides: dict[str, str]
    """``num_samples`` and ``iterations`` of an ``SxI`` budget; empty for a preset."""
    planner: dict[str, str] = dataclasses.field(default_factory=dict)
    """Further planner fields of this point (``32x2:prior_weight=10``), applied after the budget."""


def parse_budget(text: str) -> Budget:
    """``SxI`` (samples x iterations) or a preset name, optionally followed by ``:KEY=VALUE`` planner fields.

    Raises:
        ValueError: neither form (names the valid presets), or a pair that is not ``KEY=VALUE``.
    """
    from simdist_core.config import parse_overrides
    from simdist_core.planning.mppi import PRESETS

    head, *pairs = text.split(":")
    planner = parse_overrides(pairs)
    if head in PRESETS:
        return Budget(text, {}, planner)
    samples, sep, iterations = head.partition("x")
    if not (sep and samples.isdigit() and iterations.isdigit() and int(iterations) >= 1):
        raise ValueError(f"budget {text!r}: give SxI (e.g. 64x2) or a preset name {sorted(PRESETS)}, optionally "
                         f"followed by :KEY=VALUE planner fields (64x2:prior_weight=10)" + did_you_mean(head, PRESETS))
    return Budget(text, {"num_samples": samples, "iterations": iterations}, planner)


def planner_config(manifest: Any, budget: Budget, extra: dict[str, str] | None = None) -> Any:  # noqa: ANN401
    """The checkpoint's planner config (else ``cpu``) with the budget applied; elites capped at the candidates.

    Then ``extra`` (``--planner``, every point) and the point's own planner fields, in that order.

    Raises:
        ValueError: an unknown planner field or a value it refuses.
    """
    from simdist_core.config import apply_overrides, from_dict
    from simdist_core.planning.mppi import PlannerConfig, planner_preset

    fields = {**(extra or {}), **budget.planner}
    if not budget.overrides:
        return apply_overrides(planner_preset(budget.label.split(":")[0]), fields)
    stored = getattr(manifest, "planner_config", None)
    base = from_dict(PlannerConfig, stored) if isinstance(stored, dict) else planner_preset("cpu")
    candidates = int(budget.overrides["num_samples"]) + base.num_pi_samples
    elites = {"num_elites": str(min(base.num_elites, candidates))}
    return apply_overrides(base, {**budget.overrides, **elites, **fields})


def run_point(model: Any, manifest: Any, task: str, budget: Budget, args: argparse.Namespace) -> dict[str, Any]:  # noqa: ANN401
    """Evaluate one budget on one task; per-episode results and their summary."""
    from simdist_core.eval.closed_loop import EvalConfig, evaluate, planner_for
    from simdist_core.eval.stats import episode_summary

    planner = planner_for(model, planner_config(manifest, budget, args.planner_fields), args.seed)
    cfg = planner.cfg
    result = evaluate(model, EvalConfig(task=task, episodes=args.episodes, seconds=args.seconds, seed=args.seed),
                      planner=planner, manifest=manifest)  # fmt: skip
    summary = episode_summary(result["per_episode"], task)
    return {
        "task": task, "budget": budget.label, "planner": to_dict(cfg),
        "rollouts_per_tick": cfg.num_samples * cfg.iterations + cfg.num_pi_samples + 1,
        "metric": summary["metric"], "metric_mean": summary["metric_mean"], "metric_ci95": summary["metric_ci95"],
        "falls": summary["falls"],
        "plan_ms_p50": round(result["plan_ms_p50"], 2), "plan_ms_p99": round(result["plan_ms_p99"], 2),
        "wall_s": round(result["wall_s"], 1), "per_episode": result["per_episode"],
    }  # fmt: skip


def format_table(points: list[dict[str, Any]]) -> str:
    """One line per (task, budget)."""
    width = max([11] + [len(p["budget"]) + 2 for p in points])
    head = (f"{'task':<12}{'budget':<{width}}{'rollouts/tick':>14}{'metric / episode [95 % CI]':>30}{'falls':>7}"
            f"{'plan p50/p99 ms':>18}")
    lines = [head, "-" * len(head)]
    for p in points:
        ci = f"{p['metric_mean']:.2f} [{p['metric_ci95'][0]:.2f}, {p['metric_ci95'][1]:.2f}]"
        lines.append(f"{p['task']:<12}{p['budget']:<{width}}{p['rollouts_per_tick']:>14}{ci:>30}{p['falls']:>7}"
                     f"{p['plan_ms_p50']:>10.1f} / {p['plan_ms_p99']:<6.1f}")
    return "\n".join(lines)


def _parse(argv: list[str]) -> argparse.Namespace:
    from simdist_core.sim.base import task_ids

    p = ArgumentParser(prog="simdist bench budget", description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", type=Path, required=True, help="checkpoint directory")
    p.add_argument("--task", default="go2/flat,go2/foam", help="comma list of task ids")
    p.add_argument("--budgets", default="32x1,64x1,128x1,128x2,256x2", help="comma list of SxI or preset names")
    p.add_argument("--planner", dest="planner_set", action="append", default=[], metavar="KEY=VALUE",
                   help="planner field at every point, e.g. --planner prior_weight=10, repeatable "
                        "(a point's own :KEY=VALUE wins)")  # fmt: skip
    p.add_argument("--episodes", type=int, default=10, help="episodes per point (the same seeds at every point)")
    p.add_argument("--seconds", type=float, default=10.0, help="simulated seconds per episode at most")
    p.add_argument("--seed", type=int, default=1000, help="first episode seed (and the planner's seed)")
    p.add_argument("--json", type=Path, help="write the report here")
    args = p.parse_args(argv)
    args.tasks = check_list("--task", args.task, task_ids())
    try:
        args.budget_list = [parse_budget(b.strip()) for b in args.budgets.split(",") if b.strip()]
    except ValueError as exc:
        raise UsageError(f"--budgets: {exc}") from None
    if not args.budget_list:
        raise UsageError("--budgets: give at least one budget, e.g. 32x1,128x2")
    args.planner_fields = parse_overrides(args.planner_set)
    for budget in args.budget_list:  # bad fields are usage errors now, not after the first points have run
        try:
            planner_config(None, budget, args.planner_fields)
        except ValueError as exc:
            raise UsageError(f"{'--budgets ' + budget.label if budget.planner else '--planner'}: {exc}") from None
    check_positive("--episodes", args.episodes)
    check_positive("--seconds", args.seconds)
    checkpoint_dir("--checkpoint", args.checkpoint)
    return args


@cli_main("simdist bench budget")
def main(argv: list[str]) -> int:
    """Entry point of ``simdist bench budget``."""
    import torch

    from simdist_core.checkpoint import load_checkpoint
    from simdist_core.planning.bench import cpu_model

    args = _parse(argv)
    torch.set_num_threads(1)  # as the planner node
    model, manifest = load_checkpoint(args.checkpoint)
    model.eval().requires_grad_(False)
    points: list[dict[str, Any]] = []
    total = len(args.tasks) * len(args.budget_list)
    for task in args.tasks:
        for budget in args.budget_list:
            print(f"[budget] {task} {budget.label}: {args.episodes} episodes", flush=True)
            points.append(run_point(model, manifest, task, budget, args))
            if args.json:  # after every point, so a run stopped early keeps what it measured
                _write_report(args, points, complete=len(points) == total, machine_cpu=cpu_model())
    print(format_table(points))
    if args.json:
        print(f"simdist bench budget: wrote {args.json}")
    return 0


def _write_report(args: argparse.Namespace, points: list[dict[str, Any]], *, complete: bool, machine_cpu: str) -> None:
    """The JSON report of the points so far; ``complete`` is false until the last point is in."""
    report = {"checkpoint": str(args.checkpoint), "episodes": args.episodes, "seconds": args.seconds,
              "seed": args.seed, "planner_overrides": args.planner_fields, "complete": complete,
              "machine": {"cpu": machine_cpu, "cores": os.cpu_count(), "load_avg_end": os.getloadavg()},
              "torch_threads": 1, "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "points": points}  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1))
