"""``simdist bench parity``: the same checkpoint in-process and through the live ROS graph, episode by episode.

Per task, the same ``--episodes`` episodes on both sides: seeds ``seed + 1 .. seed + N``, each at most
``--seconds`` simulated seconds, ended early by a fall (Go2) or an insertion (UR5e), as ``simdist eval``
ends them.

* In-process: ``simdist eval`` (sense, plan and act in one loop, no delay) of those seeds.
* Graph: sim robot, encoder and planner as separate processes over DDS, free-running at ``--rtf`` (with
  ``--lockstep`` the robot waits for each command and the planner's sample count is fixed, so the pipeline's
  logic is compared without its timing),
  zero-shot (no replay buffer or finetuner). The simulated robot resets episode k with ``seed + k`` and
  reports each finished episode on ``episode_result`` with the task's own metrics. Episode 0 is the
  warm-up (the nodes start while the robot already stands), episodes 1..N are compared.

Both sides start every episode the same way: ``simdist eval`` resets the planner's warm start, and the
planner node does so on the encoder's ``episode_start`` latent. (When the graph carried the last episode's
plan over, ``go2/foam`` fell in the first 3 s of 12/60 episodes through the graph against 30/60 in-process
(``bench_results/parity_go2_foam_60x3s_lockstep_carry_over.json``);
``--set planner.reset_on_episode_start=false`` shows it again.)

Comparing the same episodes matters: seeds differ in difficulty (some fall in every run of either side),
and a window of equal simulated time covers more episodes on the side that falls more.

Per task: the task metric per episode (Go2 forward progress in m; UR5e success) with a 95 % bootstrap
interval, falls, the metric per simulated minute, and the ratio graph / in-process of the mean per-episode
metric with a paired (same-seed) bootstrap interval. The goal is a ratio within 10 % of 1. The planner
config is the one the graph deploys (the checkpoint's stored config, else ``cpu``); sampling noise
differs between the sides. Prints a table, writes JSON.

``--before A.json --after B.json`` runs nothing: it reads two parity reports of the same tasks and seeds
(e.g. the shipped checkpoint, then one adapted through the live graph) and reports the adaptation as
each side measures it, after / before, and how the graph's ratio compares with the in-process one
(the way the adaptation benchmark measures), with paired bootstrap intervals over the seeds.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path
from typing import Any

from simdist_core.cliargs import ArgumentParser, UsageError, check_list, check_positive, cli_main

from simdist_ros import procmem

EPISODE_LENGTH_KEY = {"go2": "episode_length_s", "ur5e": "episode_s"}
"""Env config key of the episode length: the graph's episodes end where the evaluation's do."""


def deployed_planner(robot: str, sets: list[str] | tuple[str, ...] = ()) -> tuple[str, dict[str, str]]:
    """The planner config the graph's planner node runs: preset name and ``key=value`` overrides.

    ``planner_preset`` and ``planner_overrides`` of the robot's parameter file, then ``--set planner.NAME=VALUE``
    pairs; ``auto`` is left for the caller to resolve with the checkpoint, as the node does.

    Why: the UR5e graph deploys the ``prior`` preset (its YAML says why) while the checkpoint stores an MPPI
    budget; an in-process side that took the checkpoint's config compared two different planners.

    Raises:
        UsageError: a ``planner_overrides`` entry that is not ``key=value``.
    """
    from simdist_core.config import parse_overrides

    values = deployed_parameters(robot, "planner", sets)
    overrides = parse_overrides(str(pair) for pair in values.get("planner_overrides") or ())
    return str(values.get("planner_preset", "auto")), overrides


def deployed_adapted_tie(robot: str, sets: list[str] | tuple[str, ...] = ()) -> Any:  # noqa: ANN401  (AdaptedTie)
    """The planner node's tie for adapted models (``adapted_prior_weight``, ``adapted_after_data_steps``)."""
    from simdist_core.planning.adapted_tie import AdaptedTie

    values = deployed_parameters(robot, "planner", sets)
    return AdaptedTie(float(values.get("adapted_prior_weight", -1.0)), int(values.get("adapted_after_data_steps", 0)))


def deployed_command_ramp_s(robot: str, sets: list[str] | tuple[str, ...] = ()) -> float:
    """The encoder node's ``command_ramp_s`` in the graph (robot YAML, then ``--set encoder.command_ramp_s=S``)."""
    return float(deployed_parameters(robot, "encoder", sets).get("command_ramp_s", 0.0))


def deployed_heading_hold(robot: str, sets: list[str] | tuple[str, ...] = ()) -> bool:
    """The encoder node's ``heading_hold`` in the graph (robot YAML, then ``--set encoder.heading_hold=true``)."""
    return bool(deployed_parameters(robot, "encoder", sets).get("heading_hold", False))


def deployed_parameters(robot: str, node: str, sets: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """Parameters the graph gives ``node``: its robot's parameter file, then ``--set NODE.NAME=VALUE`` pairs.

    The file's ``/**`` section, then the node's; a parameter neither sets is the node's default (not in the dict).
    """
    import yaml

    from simdist_ros.graph import load_graph
    from simdist_ros.soak import node_overrides

    data = yaml.safe_load(load_graph(robot).params_file_path().read_text()) or {}
    values = {**((data.get("/**") or {}).get("ros__parameters") or {}),
              **((data.get(node) or {}).get("ros__parameters") or {})}  # fmt: skip
    values.update(node_overrides(list(sets), 1.0).get(node, {}))
    return values


def in_process(task: str, checkpoint: Path, episodes: int, seconds: float, first_seed: int,
               recorder: Any = None, sets: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:  # noqa: ANN401
    """``simdist eval`` of the deployed planner config, command ramp and heading hold on seeds ``first_seed ..``.

    :func:`deployed_planner`, :func:`deployed_command_ramp_s` and :func:`deployed_heading_hold`, as the graph's
    nodes run them, with the tie of
    :func:`deployed_adapted_tie` for a checkpoint the finetuner node made from enough robot data.

    ``recorder`` (``simdist_core.eval.video.EpisodeRecorder``) records episodes for a video, results unchanged.
    Runs on one torch thread, as the planner node does, whatever the caller's count (restored after): a
    different count sums the same products in another order, and over a 15 s UR5e episode those last-bit
    differences flip insertions (the shipped UR5e model inserted 10 of the same 20 episodes on two threads, 13 on
    one), so the count is part of what makes an evaluation reproducible.
    Returns the per-episode results and the planner config used.
    """
    import torch
    from simdist_core.eval.closed_loop import EvalConfig, evaluate, make_planner
    from simdist_core.planning.adapted_tie import finetuned_data_steps

    from simdist_ros.model_swap import load_model

    # Frozen, as the nodes and `simdist eval` load it: with parameters that require grad, attention takes another
    # kernel, and the last-bit differences made 49 of 60 PTFE episodes differ from `simdist eval`'s.
    model, manifest = load_model(checkpoint, "cpu")
    preset, overrides = deployed_planner(model.spec.name, sets)
    tie = deployed_adapted_tie(model.spec.name, sets)
    if tie.applies(finetuned_data_steps(manifest)):  # as the planner node sets it for a model finetuned here
        overrides = {**overrides, "prior_weight": repr(tie.prior_weight)}
    ramp_s = deployed_command_ramp_s(model.spec.name, sets)
    hold = deployed_heading_hold(model.spec.name, sets)
    if preset == "auto":  # as the planner node resolves it
        preset = "checkpoint" if isinstance(getattr(manifest, "planner_config", None), dict) else "cpu"
    reference_path = deployed_parameters(model.spec.name, "planner", sets).get("reference_checkpoint") or ""
    reference = load_model(reference_path, "cpu")[0] if reference_path else None  # as the planner node loads it
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        result = evaluate(model, EvalConfig(task=task, episodes=episodes, seconds=seconds, seed=first_seed,
                                            preset=preset, command_ramp_s=ramp_s, heading_hold=hold),
                          manifest=manifest, recorder=recorder,
                          planner=make_planner(model, manifest, preset, overrides, first_seed, reference))  # fmt: skip
    finally:
        torch.set_num_threads(threads)
    per_episode = [{"seed": first_seed + i, **m} for i, m in enumerate(result["per_episode"])]
    return {"preset": preset, "planner_overrides": overrides, "command_ramp_s": ramp_s, "heading_hold": hold,
            "reference_checkpoint": reference_path,
            "sim_s": result["sim_s"],
            "wall_s": round(result["wall_s"], 1), "torch_threads": 1, "plan_ms_p50": result["plan_ms_p50"],
            "plan_ms_p99": result["plan_ms_p99"], "per_episode": per_episode}  # fmt: skip


def through_graph(args: argparse.Namespace, task: str, checkpoint: Path, out: Path) -> dict[str, Any]:
    """Episodes 1..N of the live graph (``simdist bench graph`` by episodes); per-episode results."""
    from simdist_ros.graph_bench import run_one, run_parameters

    robot = task.split("/")[0]
    bench_args = argparse.Namespace(robot=robot, task=task, rtf=args.rtf, lockstep=args.lockstep, no_adapt=True,
                                    warmup_s=0.0, seconds=(args.episodes + 1) * args.seconds, set=args.set,
                                    episodes=args.episodes)  # fmt: skip
    extra = {"sim_robot": {"seed": args.seed, "episode_seeds": True,
                           "overrides": [f"{EPISODE_LENGTH_KEY[robot]}={args.seconds}"]}}  # fmt: skip
    parameters = run_parameters(bench_args, extra)  # the real-time factor and lockstep, as `simdist bench graph`
    report = run_one(bench_args, "single", out, checkpoint, task.replace("/", "_"), parameters)
    if "episodes" in report:
        report["per_episode"] = [{"seed": e["seed"], "cause": e["cause"], **e["metrics"],
                                  "sim_s": round(e["end_s"] - e["start_s"], 3)} for e in report.pop("episodes")]
    return report


def side_summary(per_episode: list[dict[str, Any]], task: str) -> dict[str, Any]:
    """Mean metric per episode with its interval, falls (Go2), metric per simulated minute."""
    from simdist_core.eval.stats import episode_summary, episode_values

    out = episode_summary(per_episode, task)
    del out["metric"]
    if not task.startswith("go2"):  # only the Go2 falls
        del out["falls"]
    sim_s = sum(float(e.get("duration_s", e.get("sim_s", 0.0))) for e in per_episode)
    out["sim_s"] = round(sim_s, 2)
    out["metric_per_min"] = round(sum(episode_values(per_episode, task)) / (sim_s / 60.0), 3) if sim_s else None
    return out


def compare(task: str, local: dict[str, Any], graph: dict[str, Any]) -> dict[str, Any]:
    """One task's row: both sides summarised on the same seeds, and the paired ratio."""
    from simdist_core.eval.stats import episode_values, paired_ratio_ci

    row: dict[str, Any] = {"task": task, "in_process": local, "graph": graph,
                           "in_process_summary": side_summary(local["per_episode"], task)}
    if "per_episode" not in graph:
        return row
    row["graph_summary"] = side_summary(graph["per_episode"], task)
    seeds_local = [e["seed"] for e in local["per_episode"]]
    seeds_graph = [e["seed"] for e in graph["per_episode"]]
    if seeds_local != seeds_graph:
        row["error"] = f"the sides ran different seeds: {seeds_local} vs {seeds_graph}"
        return row
    g, i = episode_values(graph["per_episode"], task), episode_values(local["per_episode"], task)
    try:
        ratio, low, high = paired_ratio_ci(g, i)
        row.update(ratio=round(ratio, 3), ratio_ci95=[round(low, 3), round(high, 3)],
                   within_10_percent=bool(0.9 <= low and high <= 1.1), ci_contains_1=bool(low <= 1.0 <= high))
    except ValueError as exc:  # e.g. no in-process progress at all: no ratio
        row["ratio_error"] = str(exc)
    return row


def adaptation(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """Per task in both reports: after / before on each side and graph ratio / in-process ratio, with intervals.

    Raises:
        UsageError: a task without per-episode results on both sides, or different seeds.
    """
    from simdist_core.eval.stats import episode_values, paired_ratio_ci, ratio_of_ratios_ci

    rows = []
    before_tasks = {r["task"]: r for r in before["tasks"]}
    for row in after["tasks"]:
        task = row["task"]
        if task not in before_tasks:
            continue
        series = {}
        for when, report in (("before", before_tasks[task]), ("after", row)):
            for side in ("in_process", "graph"):
                episodes = report[side].get("per_episode")
                if not episodes:
                    raise UsageError(f"{task}: the {when} report has no {side} episodes")
                series[when, side] = ([e["seed"] for e in episodes], episode_values(episodes, task))
        seeds = {tuple(v[0]) for v in series.values()}
        if len(seeds) != 1:
            raise UsageError(f"{task}: the reports ran different seeds; compare runs of the same --seed and --episodes")
        x = {k: v[1] for k, v in series.items()}
        out: dict[str, Any] = {"task": task, "episodes": len(x["after", "graph"])}
        for side in ("in_process", "graph"):
            r, lo, hi = paired_ratio_ci(x["after", side], x["before", side])
            out[f"{side}_after_over_before"] = [round(r, 3), round(lo, 3), round(hi, 3)]
        r, lo, hi = ratio_of_ratios_ci(x["after", "graph"], x["before", "graph"], x["after", "in_process"],
                                       x["before", "in_process"])
        out["graph_ratio_over_in_process_ratio"] = [round(r, 3), round(lo, 3), round(hi, 3)]
        rows.append(out)
    if not rows:
        raise UsageError("the two reports share no task")
    return rows


def format_adaptation(rows: list[dict[str, Any]]) -> str:
    """One line per task: after / before in-process, through the graph, and their ratio, each [95 % CI]."""
    def cell(v: list[float]) -> str:
        return f"{v[0]:.2f} [{v[1]:.2f}, {v[2]:.2f}]"

    head = f"{'task':<14}{'in-process after/before':>26}{'graph after/before':>24}{'graph / in-process':>24}"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['task']:<14}{cell(r['in_process_after_over_before']):>26}"
                     f"{cell(r['graph_after_over_before']):>24}{cell(r['graph_ratio_over_in_process_ratio']):>24}")
    return "\n".join(lines)


def _compare_reports(args: argparse.Namespace) -> int:
    """``--before A --after B``: the adaptation as each side measures it (no runs)."""
    reports = []
    for option, path in (("--before", args.before), ("--after", args.after)):
        try:
            reports.append(json.loads(path.read_text()))
        except (OSError, ValueError) as exc:
            raise UsageError(f"{option} {str(path)!r}: not a readable parity report ({exc})") from None
    rows = adaptation(*reports)
    print(format_adaptation(rows))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"before": str(args.before), "after": str(args.after),
                                         "before_checkpoint": reports[0].get("checkpoint"),
                                         "after_checkpoint": reports[1].get("checkpoint"), "tasks": rows}, indent=1))
        print(f"simdist bench parity: wrote {args.json}")
    return 0


def _parse(argv: list[str]) -> argparse.Namespace:
    p = ArgumentParser(prog="simdist bench parity", description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="go2/flat,go2/foam", help="comma list of task ids (one robot)")
    p.add_argument("--episodes", type=int, default=30, help="episodes per task and side (the same seeds on both)")
    p.add_argument("--seconds", type=float, default=10.0, help="simulated seconds per episode at most")
    p.add_argument("--seed", type=int, default=1000, help="the graph's episode k uses seed + k; 1..N are compared")
    p.add_argument("--rtf", type=float, default=1.0, help="the graph's real-time factor")
    p.add_argument("--lockstep", action="store_true",
                   help="the simulated robot waits for each command and the planner's sample count is fixed: "
                        "compares the pipeline's logic, not its speed")
    p.add_argument("--set", action="append", default=[], metavar="NODE.NAME=VALUE",
                   help="graph node parameter override, e.g. planner.reset_on_episode_start=false")
    p.add_argument("--checkpoint", type=Path, help="default: checkpoints/<robot> of the repository")
    p.add_argument("--output-dir", type=Path, help="default: runs/parity-<UTC time>")
    p.add_argument("--json", type=Path, help="write the report here")
    p.add_argument("--in-process-from", type=Path, metavar="REPORT",
                   help="take the in-process side from this earlier report of the same checkpoint, tasks, episodes, "
                        "seconds and seed instead of running it again (it does not depend on graph settings)")
    p.add_argument("--before", type=Path, help="with --after: compare two parity reports, run nothing")
    p.add_argument("--after", type=Path, help="with --before: the report of the adapted checkpoint")
    ns = p.parse_args(argv)
    if (ns.before is None) != (ns.after is None):
        p.error("--before and --after go together (two parity reports of the same tasks and seeds)")
    if ns.before is not None:
        return ns
    from simdist_core.sim.base import task_ids

    ns.tasks = check_list("--task", ns.task, task_ids())
    robots = {t.split("/")[0] for t in ns.tasks}
    if len(robots) != 1:
        p.error(f"--task {ns.task!r}: give tasks of one robot, e.g. go2/flat,go2/foam")
    for option, value in (("--episodes", ns.episodes), ("--seconds", ns.seconds), ("--rtf", ns.rtf)):
        check_positive(option, value)
    ns.robot = robots.pop()
    from simdist_ros.cli_checks import check_node_parameters
    from simdist_ros.graph import load_graph
    from simdist_ros.soak import node_overrides

    for task in ns.tasks:  # node names, parameter names and values, before anything runs
        check_node_parameters(load_graph(ns.robot), {"sim": "true", "task": task, "adapt": "false"},
                              node_overrides(ns.set, ns.rtf))
    from simdist_ros.cli_checks import checkpoint_or_default

    ns.checkpoint = checkpoint_or_default(ns.checkpoint, ns.robot)
    return ns


def reused_in_process(args: argparse.Namespace, task: str) -> dict[str, Any]:
    """The in-process side of ``task`` from ``--in-process-from``, checked to be the run this one would make.

    Raises:
        UsageError: unreadable report, or another checkpoint, episode count, length, seed, task or command ramp.
    """
    try:
        report = json.loads(args.in_process_from.read_text())
        rows = {r["task"]: r for r in report["tasks"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"--in-process-from {str(args.in_process_from)!r}: not a parity report ({exc})") from None
    mine = {"checkpoint": str(args.checkpoint), "episodes": args.episodes, "seconds": args.seconds, "seed": args.seed}
    differ = [f"{k}: {report.get(k)!r} there, {v!r} here" for k, v in mine.items() if report.get(k) != v]
    if task not in rows or "per_episode" not in rows[task].get("in_process", {}):
        differ.append(f"no in-process episodes of {task}")
    else:
        ramp_s, there = deployed_command_ramp_s(task.split("/")[0], args.set), rows[task]["in_process"]
        if float(there.get("command_ramp_s", 0.0)) != ramp_s:  # reports from before the ramp existed had none
            differ.append(f"command_ramp_s: {there.get('command_ramp_s', 0.0)!r} there, {ramp_s!r} here")
        hold = deployed_heading_hold(task.split("/")[0], args.set)
        if bool(there.get("heading_hold", False)) != hold:  # reports from before the hold existed had none
            differ.append(f"heading_hold: {there.get('heading_hold', False)!r} there, {hold!r} here")
    if differ:
        raise UsageError(f"--in-process-from {str(args.in_process_from)!r} is another run: " + "; ".join(differ))
    print(f"[parity] {task}: in-process side from {args.in_process_from}", flush=True)
    return {**rows[task]["in_process"], "reused_from": str(args.in_process_from)}


def format_table(rows: list[dict[str, Any]]) -> str:
    """One line per task and side: metric per episode [95 % interval], falls, per minute; then the ratio."""
    head = f"{'task':<14}{'side':<12}{'episodes':>9}{'metric / episode [95 % CI]':>30}{'falls':>7}{'per sim min':>13}"
    lines = [head, "-" * len(head)]
    for r in rows:
        for side in ("in_process", "graph"):
            sm = r.get(f"{side}_summary")
            if sm is None:
                lines.append(f"{r['task']:<14}{side:<12}  {r[side].get('error', 'no result')}")
                continue
            ci = f"{sm['metric_mean']:.2f} [{sm['metric_ci95'][0]:.2f}, {sm['metric_ci95'][1]:.2f}]"
            lines.append(f"{r['task']:<14}{side.replace('_', '-'):<12}{sm['episodes']:>9}{ci:>30}"
                         f"{sm.get('falls', '-')!s:>7}{sm['metric_per_min'] or float('nan'):>13.2f}")
        if "ratio" in r:
            g, load = r["graph"], r.get("load_avg_1m_graph", {})
            samples = g.get("diagnostics_end", {}).get("planner", {}).get("num_samples", "-")
            lines.append(f"{'':<14}graph / in-process {r['ratio']:.3f} [{r['ratio_ci95'][0]:.3f}, "
                         f"{r['ratio_ci95'][1]:.3f}]; within 10 %: {r['within_10_percent']}; ticks kept "
                         f"{g.get('ticks_kept')}, delay p50/p99 {g.get('delay_periods_p50')}/"
                         f"{g.get('delay_periods_p99')} periods; planner samples at the end {samples}; "
                         f"load {load.get('start', '-')} -> {load.get('end', '-')}")
        elif "error" in r or "ratio_error" in r:
            lines.append(f"{'':<14}{r.get('error') or r.get('ratio_error')}")
    return "\n".join(lines)


@cli_main("simdist bench parity")
def main(argv: list[str]) -> int:
    """Entry point of ``simdist bench parity``."""
    args = _parse(argv)
    if args.before is not None:
        return _compare_reports(args)
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.SystemRandom().randrange(1, 100)))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("MUJOCO_GL", "egl")
    import torch

    from simdist_ros.soak import git_commit

    torch.set_num_threads(1)  # as the planner node: one torch thread
    checkpoint = args.checkpoint
    out = (args.output_dir or Path("runs") / time.strftime("parity-%Y%m%d-%H%M%S", time.gmtime())).resolve()
    commit = git_commit()
    rows = []
    for task in args.tasks:
        print(f"[parity] {task}: in-process, seeds {args.seed + 1}..{args.seed + args.episodes}, "
              f"<= {args.seconds:g} s each", flush=True)
        local = (reused_in_process(args, task) if args.in_process_from
                 else in_process(task, checkpoint, args.episodes, args.seconds, args.seed + 1, sets=args.set))
        print(f"[parity] {task}: through the ROS graph at rtf {args.rtf:g}, the same seeds", flush=True)
        # Free-running, the graph's timing depends on what else runs on the machine: record it with the result.
        load_start = os.getloadavg()[0]
        row = compare(task, local, through_graph(args, task, checkpoint, out))
        row["load_avg_1m_graph"] = {"start": round(load_start, 2), "end": round(os.getloadavg()[0], 2)}
        rows.append(row)
    print(format_table(rows))
    report = {"robot": args.robot, "episodes": args.episodes, "seconds": args.seconds, "seed": args.seed,
              "rtf": args.rtf, "lockstep": args.lockstep, "set": args.set,
              "checkpoint": str(checkpoint), "machine": procmem.machine_info(), "git_commit": commit,
              "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "tasks": rows}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))
        print(f"simdist bench parity: wrote {args.json}")
    return 1 if any("error" in r["graph"] or "error" in r for r in rows) else 0
