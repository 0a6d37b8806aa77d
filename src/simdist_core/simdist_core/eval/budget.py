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

``--plot`` draws the task metric against rollouts per tick (one panel per checkpoint and task, one line per
number of MPPI iterations and planner setting); ``--from`` draws it from reports already written, without
running anything.
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
    p.add_argument("--checkpoint", type=Path, help="checkpoint directory")
    p.add_argument("--task", default="go2/flat,go2/foam", help="comma list of task ids")
    p.add_argument("--budgets", default="32x1,64x1,128x1,128x2,256x2", help="comma list of SxI or preset names")
    p.add_argument("--planner", dest="planner_set", action="append", default=[], metavar="KEY=VALUE",
                   help="planner field at every point, e.g. --planner prior_weight=10, repeatable "
                        "(a point's own :KEY=VALUE wins)")  # fmt: skip
    p.add_argument("--episodes", type=int, default=10, help="episodes per point (the same seeds at every point)")
    p.add_argument("--seconds", type=float, default=10.0, help="simulated seconds per episode at most")
    p.add_argument("--seed", type=int, default=1000, help="first episode seed (and the planner's seed)")
    p.add_argument("--json", type=Path, help="write the report here")
    p.add_argument("--plot", type=Path, help="draw the task metric against rollouts per tick into this PNG")
    p.add_argument("--from", dest="from_json", type=Path, nargs="+", metavar="JSON",
                   help="run nothing: draw --plot from these reports of earlier runs")
    args = p.parse_args(argv)
    if args.from_json:
        if not args.plot:
            raise UsageError("--from draws a figure: give --plot PNG")
        for path in args.from_json:
            if not path.is_file():
                raise UsageError(f"--from: no report at {path}")
        return args
    if args.checkpoint is None:
        raise UsageError("--checkpoint is required (or --from JSON... --plot PNG to draw earlier reports)")
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
    if args.from_json:
        plot(load_reports(args.from_json), args.plot)
        print(f"simdist bench budget: drew {args.plot} from {len(args.from_json)} report(s)")
        return 0
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
    if args.plot:
        plot([{"checkpoint": str(args.checkpoint), "planner_overrides": args.planner_fields, "points": points}],
             args.plot)
        print(f"simdist bench budget: drew {args.plot}")
    return 0


def load_reports(paths: list[Path]) -> list[dict[str, Any]]:
    """Budget reports read back for drawing.

    Raises:
        UsageError: a file that is not JSON or not a ``simdist bench budget`` report.
    """
    reports = []
    for path in paths:
        try:
            report = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise UsageError(f"--from {path}: not readable as JSON ({exc})") from None
        points = report.get("points") if isinstance(report, dict) else None
        needed = ("task", "budget", "rollouts_per_tick", "metric", "metric_mean", "metric_ci95", "planner")
        if not isinstance(points, list) or not points or not all(isinstance(q, dict) and all(k in q for k in needed)
                                                                 for q in points):  # fmt: skip
            raise UsageError(f"--from {path}: not a `simdist bench budget` report (points with {', '.join(needed)})")
        reports.append(report)
    return reports


def series_label(point: dict[str, Any], every_point: dict[str, str]) -> str:
    """What a line holds fixed: the number of MPPI iterations and the planner fields set beyond the budget."""
    budget, *pairs = point["budget"].split(":")
    fields = {**every_point, **dict(pair.split("=", 1) for pair in pairs)}
    iterations = point["planner"]["iterations"]
    head = f"{iterations} iteration{'s' if iterations != 1 else ''}" if "x" in budget else f"preset {budget}"
    return ", ".join([head, *(f"{k}={v}" for k, v in sorted(fields.items()))])


def plot(reports: list[dict[str, Any]], path: Path) -> None:
    """Task metric (mean, 95 % CI) against rollouts per tick; falls of the episodes written beside each point.

    One panel per (checkpoint, task); within it one line per ``series_label``, points in order of rollouts.
    A point measured twice (the same checkpoint, task, budget and fields in two reports) is drawn once, from
    the first report that holds it.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels: dict[tuple[str, str], dict[str, dict[int, dict[str, Any]]]] = {}
    for report in reports:
        every_point = {str(k): str(v) for k, v in (report.get("planner_overrides") or {}).items()}
        for point in report["points"]:
            lines = panels.setdefault((str(report.get("checkpoint")), point["task"]), {})
            line = lines.setdefault(series_label(point, every_point), {})
            line.setdefault(int(point["rollouts_per_tick"]), point)
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    for ax, ((checkpoint, task), lines) in zip(axes[0], panels.items(), strict=True):
        for label, by_rollouts in lines.items():
            xs = sorted(by_rollouts)
            ys = [by_rollouts[x]["metric_mean"] for x in xs]
            lows = [y - by_rollouts[x]["metric_ci95"][0] for x, y in zip(xs, ys, strict=True)]
            highs = [by_rollouts[x]["metric_ci95"][1] - y for x, y in zip(xs, ys, strict=True)]
            ax.errorbar(xs, ys, yerr=[lows, highs], fmt="-o", capsize=3, label=label)
            for x, y in zip(xs, ys, strict=True):
                falls, episodes = by_rollouts[x].get("falls"), len(by_rollouts[x].get("per_episode") or [])
                if falls is not None and by_rollouts[x]["metric"] != "success" and episodes:
                    ax.annotate(f"{falls}/{episodes}", (x, y), textcoords="offset points", xytext=(4, 4),
                                fontsize=7)  # fmt: skip
        ax.set_xscale("log", base=2)
        ax.set_xlabel("rollouts per planner tick (samples x iterations + prior + warm start)")
        metric = next(iter(next(iter(lines.values())).values()))["metric"]
        labels = "" if metric == "success" else " (labels: episodes that fell)"
        ax.set_ylabel(f"{metric} per episode\nmean, 95 % CI{labels}")
        ax.set_title(f"{task}\n{checkpoint}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("what planner samples buy")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _write_report(args: argparse.Namespace, points: list[dict[str, Any]], *, complete: bool, machine_cpu: str) -> None:
    """The JSON report of the points so far; ``complete`` is false until the last point is in."""
    report = {"checkpoint": str(args.checkpoint), "episodes": args.episodes, "seconds": args.seconds,
              "seed": args.seed, "planner_overrides": args.planner_fields, "complete": complete,
              "machine": {"cpu": machine_cpu, "cores": os.cpu_count(), "load_avg_end": os.getloadavg()},
              "torch_threads": 1, "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "points": points}  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1))
