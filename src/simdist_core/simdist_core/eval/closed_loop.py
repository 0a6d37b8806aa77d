"""``simdist eval``: closed-loop evaluation of a checkpoint with the MPPI planner in MuJoCo.

Runs N episodes of a task, the planner acting on ``ObservationHistory`` windows exactly as the
ROS planner node does, and reports the task metric (Go2: mean ``forward_progress_m`` and falls;
UR5e: ``success_rate``), planner latency (p50/p99 ms), fallbacks and wall time. On a CPU the
planner may run slower than real time; the report says how long it took (``real_time_factor``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from simdist_core.cliargs import ArgumentParser, UsageError, check_positive, checkpoint_dir, cli_main
from simdist_core.config import apply_cli_overrides, parse_overrides, to_dict
from simdist_core.eval.late_link import LINK_TIMINGS, LateLink
from simdist_core.eval.rollout import EpisodeStats, run_episode, summarise
from simdist_core.eval.video import EpisodeRecorder, VideoConfig
from simdist_core.planning.mppi import PRESETS, planner_preset

log = logging.getLogger(__name__)

LINK_SEED_SALT = 0x11A7
"""Mixed into each episode's seed for its late link's draws (kept apart from the env's and the planner's)."""


@dataclass(frozen=True, kw_only=True)
class EvalConfig:
    """One closed-loop evaluation."""

    task: str
    """Task id, e.g. ``go2/flat`` or ``ur5e/peg``."""
    episodes: int = 5
    """Episodes to run (seeds ``seed .. seed + episodes - 1``)."""
    seconds: float = 0.0
    """Cap on each episode's simulated seconds (0 = the task's own episode length)."""
    seed: int = 1000
    """First episode seed (far from the seeds data generation uses by default)."""
    preset: str = "cpu"
    """Planner preset (``simdist_core.planning.mppi.PRESETS``) or ``checkpoint`` (config stored beside the weights)."""
    action_delay: int = 0
    """Control periods from an observation to the step its action acts on (0 = none; what one late command
    in the live graph costs is measured with 1)."""
    compensate_delay: bool = False
    """Plan for the state the action will act on: the planner starts every candidate with the actions already in
    flight (``MPPIPlanner.plan_latent``'s ``committed``), as the planner node does with its measured delay."""
    robot_latency_steps: int = 0
    """Control periods the robot takes to apply a command (a UR5e task's ``shift.latency_steps``); with
    ``compensate_delay`` the actions sent in those periods count as in flight too (told here, measured on a robot)."""
    command_ramp_s: float = 0.0
    """Ramp the velocity command the planner sees from rest to the task's over this long (Go2 only; 0: at once),
    as the encoder node's ``command_ramp_s`` does in the live graph (``simdist_core.planning.command_ramp``)."""
    heading_hold: bool = False
    """Give the command the planner sees a yaw rate that holds the episode's starting heading (Go2 only;
    ``simdist_core.planning.heading_hold``), applied after the command ramp."""
    late_link: str = ""
    """A named late command link (``simdist_core.eval.late_link.LINK_TIMINGS``) instead of ``action_delay``: each
    command's delay changes from step to step and some steps get no fresh command, as in a starved live graph
    ("": none). Its draws come from each episode's seed, so runs that differ only in planner or checkpoint meet the
    same lateness."""
    play_plan: bool = False
    """With ``late_link``: the command carries the plan and the robot applies the step its delay points at."""
    incremental_commands: bool = False
    """With ``late_link``: each command is a move applied once on arrival (the UR5e hardware driver), so a step
    without a fresh command moves nothing while the robot reports the last command as executed."""

    def __post_init__(self) -> None:
        if self.episodes < 1:
            raise ValueError(f"episodes must be >= 1, got {self.episodes=}")
        if self.seconds < 0:
            raise ValueError(f"seconds must be >= 0, got {self.seconds=}")
        if self.action_delay < 0:
            raise ValueError(f"action_delay must be >= 0, got {self.action_delay=}")
        if self.robot_latency_steps < 0:
            raise ValueError(f"robot_latency_steps must be >= 0, got {self.robot_latency_steps=}")
        if not self.command_ramp_s >= 0:  # also catches NaN
            raise ValueError(f"command_ramp_s must be >= 0, got {self.command_ramp_s=}")
        if self.late_link and self.late_link not in LINK_TIMINGS:
            raise ValueError(f"unknown late_link {self.late_link!r}; valid: {sorted(LINK_TIMINGS)}")
        if self.late_link and (self.action_delay or self.robot_latency_steps):
            raise ValueError("late_link brings its own delay: action_delay and robot_latency_steps must be 0")
        if (self.play_plan or self.incremental_commands) and not self.late_link:
            raise ValueError("play_plan and incremental_commands need a late_link")
        if self.heading_hold and not self.task.startswith("go2/"):
            raise ValueError("heading_hold needs a velocity command (a go2/ task)")
        if self.play_plan and self.incremental_commands:
            raise ValueError("incremental_commands applies each command once: it cannot play a plan")


def task_metric_name(task: str) -> str:
    """The headline metric of a task: ``forward_progress_m`` (Go2) or ``success_rate`` (UR5e)."""
    return "success_rate" if task.startswith("ur5e") else "forward_progress_m"


def headline(summary: dict[str, float], task: str) -> dict[str, float]:
    """The task metric(s) under their report names (``success`` becomes ``success_rate``)."""
    if task.startswith("ur5e"):
        return {"success_rate": summary.get("success", float("nan"))}
    return {"forward_progress_m": summary.get("forward_progress_m", float("nan")),
            "falls": summary.get("falls", summary.get("fell", float("nan")))}  # fmt: skip


def make_planner(model: torch.nn.Module, manifest: Any, preset: str, overrides: dict[str, str], seed: int,  # noqa: ANN401
                 reference: torch.nn.Module | None = None) -> Any:  # noqa: ANN401
    """MPPIPlanner from a preset name (or ``checkpoint``: the manifest's stored config) plus overrides.

    ``reference``: the model ``reference_returns`` also scores plans with (default ``model`` itself).
    """
    return planner_for(model, planner_config(manifest, preset, overrides), seed, reference)


def planner_config(manifest: Any, preset: str, overrides: dict[str, str]) -> Any:  # noqa: ANN401  (-> PlannerConfig)
    """The PlannerConfig of a preset name (or ``checkpoint``: the manifest's stored config) plus overrides."""
    from simdist_core.planning.mppi import planner_config_from

    return planner_config_from(getattr(manifest, "planner_config", None), preset, overrides)


def planner_for(model: torch.nn.Module, cfg: Any, seed: int,  # noqa: ANN401  (PlannerConfig -> MPPIPlanner)
                reference: torch.nn.Module | None = None) -> Any:  # noqa: ANN401
    """MPPIPlanner of ``cfg`` on ``model``, its horizon capped at what the model was trained to predict."""
    import dataclasses

    from simdist_core.planning.mppi import MPPIPlanner

    if cfg.horizon > model.spec.horizon:
        cfg = dataclasses.replace(cfg, horizon=model.spec.horizon)
    return MPPIPlanner(model, cfg, seed=seed, reference=reference)


def evaluate(
    model: torch.nn.Module,
    cfg: EvalConfig,
    *,
    env_overrides: dict[str, str] | None = None,
    planner: Any = None,  # noqa: ANN401
    manifest: Any = None,  # noqa: ANN401
    planner_overrides: dict[str, str] | None = None,
    recorder: EpisodeRecorder | None = None,
) -> dict[str, Any]:
    """Run ``cfg.episodes`` closed-loop episodes and summarise them.

    With a ``recorder`` (``eval/video.py``), the episodes it wants are recorded for a video as they run;
    recording only reads the simulator, so the results are those of the same call without it.

    Returns:
        JSON-ready dict: task, episodes, seed (of the first episode), the task metric(s), per-episode metrics,
        planner stats, timing.
    """
    from simdist_core.sim.base import make_env

    env = make_env(cfg.task, env_overrides or {})
    if env.spec.name != model.spec.name:
        raise ValueError(f"task {cfg.task} is a {env.spec.name} task but the checkpoint is for {model.spec.name}")
    planner = planner or make_planner(model, manifest, cfg.preset, planner_overrides or {}, cfg.seed)
    max_steps = int(round(cfg.seconds * env.spec.control_hz)) if cfg.seconds > 0 else 10**9
    start = time.perf_counter()
    episodes: list[EpisodeStats] = []
    link_counts: Counter[str] = Counter()
    for i in range(cfg.episodes):
        hooks = recorder.hooks(env, cfg.seed + i) if recorder is not None and recorder.wants(i) else {}
        link = None
        if cfg.late_link:
            link = LateLink(LINK_TIMINGS[cfg.late_link], env.spec.action_dim,
                            np.random.default_rng([cfg.seed + i, LINK_SEED_SALT]), play_plan=cfg.play_plan,
                            incremental=cfg.incremental_commands)
        episodes.append(run_episode(env, planner, seed=cfg.seed + i, max_steps=max_steps,
                                    action_delay=cfg.action_delay, compensate_delay=cfg.compensate_delay,
                                    command_ramp_s=cfg.command_ramp_s, robot_latency_steps=cfg.robot_latency_steps,
                                    link=link, heading_hold=cfg.heading_hold, **hooks))
        if link is not None:
            link_counts.update({**link.counts, **{f"delay_{d}_steps": n for d, n in enumerate(link.delay_counts)}})
        log.info("episode %d/%d: %s", i + 1, cfg.episodes, episodes[-1].metrics)
    wall_s = time.perf_counter() - start
    summary = summarise(episodes)
    sim_s = summary["steps"] * env.spec.control_dt
    return {
        "task": cfg.task, "episodes": cfg.episodes, "seed": cfg.seed,  # episode i runs on seed + i
        "metric": task_metric_name(cfg.task), **headline(summary, cfg.task), "summary": summary,
        "per_episode": [ep.metrics for ep in episodes],
        "planner": to_dict(planner.cfg), "preset": cfg.preset, "env_overrides": dict(env_overrides or {}),
        "action_delay": cfg.action_delay,
        "compensate_delay": cfg.compensate_delay, "robot_latency_steps": cfg.robot_latency_steps,
        "command_ramp_s": cfg.command_ramp_s, "heading_hold": cfg.heading_hold,
        "late_link": cfg.late_link, "play_plan": cfg.play_plan,
        "incremental_commands": cfg.incremental_commands, "link_counts": dict(link_counts),
        "plan_ms_p50": summary["plan_ms_p50"], "plan_ms_p99": summary["plan_ms_p99"],
        "fallbacks": int(summary["fallbacks"]), "wall_s": wall_s, "sim_s": sim_s,
        "real_time_factor": sim_s / wall_s if wall_s > 0 else float("nan"), "torch_threads": torch.get_num_threads(),
    }  # fmt: skip


def planner_keys_help(ns: argparse.Namespace) -> str:
    """``--planner help`` of a command with ``--preset``: the keys of the preset named (``cpu`` for ``checkpoint``)."""
    from simdist_core.config_show import describe

    return describe(f"planner/{ns.preset if ns.preset in PRESETS else 'cpu'}")


def task_keys_help(ns: argparse.Namespace) -> str:
    """``--set help`` of a command with ``--task``: that task's config keys."""
    from simdist_core.config_show import task_keys_text

    return task_keys_text(ns.task)


def check_task_and_planner(
    task: str, env_overrides: dict[str, str], preset: str, planner_overrides: dict[str, str]
) -> None:
    """Check a command's task and planner arguments before any checkpoint or simulator is loaded.

    The task id and its ``--set`` keys and values without building the simulator; the ``--planner`` keys against
    a named preset (a planner config stored in a checkpoint is checked once the checkpoint is read).

    Raises:
        UsageError: an unknown task, key or preset, or a bad value.
    """
    from simdist_core.sim.base import task_config

    try:
        task_config(task, env_overrides)
    except (KeyError, ValueError) as exc:
        raise UsageError(str(exc).strip("'\"")) from None
    if preset != "checkpoint":
        apply_cli_overrides(planner_preset(preset), planner_overrides)


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = ArgumentParser(prog="simdist eval", description=__doc__.splitlines()[0],
                            key_help={"--set": task_keys_help, "--planner": planner_keys_help})
    parser.add_argument("--checkpoint", type=Path, required=True, help="checkpoint directory")
    parser.add_argument("--task", required=True, help="task id, e.g. go2/flat, go2/ptfe_slope, ur5e/peg")
    parser.add_argument("--set", dest="env_set", action="append", default=[], metavar="KEY=VALUE",
                        help="task config override, repeatable (`--set help` lists the task's keys)")  # fmt: skip
    parser.add_argument("--planner", dest="planner_set", action="append", default=[], metavar="KEY=VALUE",
                        help="planner config override, e.g. --planner num_samples=64, repeatable "
                             "(`--planner help` lists the keys)")  # fmt: skip
    parser.add_argument("--episodes", type=int, default=5, help="episodes (seeds seed .. seed + episodes - 1)")
    parser.add_argument("--seconds", type=float, default=0.0, help="cap per episode in simulated seconds (0 = task)")
    parser.add_argument("--preset", default="cpu", choices=["checkpoint", *sorted(PRESETS)],
                        help="planner preset; checkpoint = the planner config stored beside the weights")
    parser.add_argument("--seed", type=int, default=1000, help="first episode seed")
    parser.add_argument("--action-delay", type=int, default=0,
                        help="control periods from observation to the step its action acts on")
    parser.add_argument("--compensate-delay", action="store_true",
                        help="plan for the state the action will act on: every candidate starts with the actions "
                             "already in flight (what the planner node does with the delay it measures)")
    parser.add_argument("--robot-latency-steps", type=int, default=0, metavar="N",
                        help="with --compensate-delay: the robot's own command latency in control periods (a UR5e "
                             "task's shift.latency_steps); the actions sent in them count as in flight too")
    parser.add_argument("--command-ramp-s", type=float, default=0.0, metavar="SECONDS",
                        help="ramp the velocity command the planner sees from rest to the task's over this long "
                             "(Go2; what the encoder node's command_ramp_s does in the live graph)")
    parser.add_argument("--heading-hold", action="store_true",
                        help="Go2: give the command the planner sees a yaw rate that holds the episode's starting "
                             "heading (IMU yaw, gain 1/s, at most 0.5 rad/s), as the expert holds its heading")
    parser.add_argument("--late-link", default="", choices=["", *sorted(LINK_TIMINGS)],
                        help="emulate a starved live graph's command link: each command's delay changes from step "
                             "to step and some steps get no fresh command (the robot repeats the newest it has); "
                             "one_core: fitted to the Go2 graph on one busy core")
    parser.add_argument("--play-plan", action="store_true",
                        help="with --late-link: the command carries the plan and the robot applies the step its "
                             "delay points at instead of repeating the command")
    parser.add_argument("--incremental-commands", action="store_true",
                        help="with --late-link: each command is a move applied once on arrival (the UR5e hardware "
                             "driver); a step without a fresh command moves nothing")
    parser.add_argument("--reference", type=Path, metavar="CHECKPOINT",
                        help="with --planner reference_returns=min or mean: the checkpoint whose dynamics also "
                             "score each plan (default: the one --checkpoint was finetuned from, its manifest's "
                             "parent_checkpoint)")  # fmt: skip
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--json", type=Path, help="write the report here")
    parser.add_argument("--video", type=Path, metavar="PATH.mp4",
                        help="also write a video (.mp4 H.264, or .gif) of the first --video-episodes episodes: the "
                             "robot, its planned (predicted) path and the path it took; states are copied while it "
                             "runs and rendered at the end, so the results are the same as without it")  # fmt: skip
    parser.add_argument("--video-episodes", type=int, default=1, help="episodes in the video (the first ones)")
    parser.add_argument("--video-size", default="640x360", metavar="WxH", help="frame size in pixels (even numbers)")
    parser.add_argument("--video-fps", type=float, default=25.0, help="frames per second of simulated time")
    parser.add_argument("--video-beside", type=Path, metavar="CHECKPOINT",
                        help="also run this checkpoint (e.g. an adapted one) on the video's episodes, same seeds and "
                             "planner settings, and show it to the right of --checkpoint")  # fmt: skip
    return parser.parse_args(argv)


def video_config(args: argparse.Namespace) -> VideoConfig | None:
    """The ``--video-*`` options as a ``VideoConfig`` (None without ``--video``).

    Raises:
        UsageError: a bad size, rate, episode count or file extension.
    """
    if args.video is None:
        if args.video_beside is not None:
            raise UsageError("--video-beside needs --video")
        return None
    if args.video_beside is not None:
        checkpoint_dir("--video-beside", args.video_beside)
    if args.video.suffix.lower() not in (".mp4", ".gif"):
        raise UsageError(f"--video {str(args.video)!r}: the file must end in .mp4 or .gif")
    try:
        width, height = (int(v) for v in args.video_size.lower().split("x"))
        return VideoConfig(width=width, height=height, fps=args.video_fps, episodes=args.video_episodes)
    except ValueError as exc:
        raise UsageError(f"--video-size {args.video_size!r} / --video-fps / --video-episodes: {exc}") from None


def validate(args: argparse.Namespace) -> tuple[EvalConfig, dict[str, str], dict[str, str]]:
    """The eval config and the task and planner overrides, checked before the checkpoint is loaded.

    Raises:
        UsageError: a bad task, ``--set`` or ``--planner`` key or value, preset, count or checkpoint path.
    """
    from simdist_core.planning.command_ramp import ramp_for
    from simdist_core.robots import get_robot

    check_positive("--threads", args.threads)
    check_positive("--episodes", args.episodes)
    check_positive("--seconds", args.seconds, allow_zero=True)
    check_positive("--action-delay", args.action_delay, allow_zero=True)
    check_positive("--robot-latency-steps", args.robot_latency_steps, allow_zero=True)
    if args.robot_latency_steps and not args.compensate_delay:
        raise UsageError("--robot-latency-steps only counts with --compensate-delay")
    check_positive("--command-ramp-s", args.command_ramp_s, allow_zero=True)
    env_overrides, planner_overrides = parse_overrides(args.env_set), parse_overrides(args.planner_set)
    try:
        cfg = EvalConfig(task=args.task, episodes=args.episodes, seconds=args.seconds, seed=args.seed,
                         preset=args.preset, action_delay=args.action_delay,
                         compensate_delay=args.compensate_delay, command_ramp_s=args.command_ramp_s,
                         robot_latency_steps=args.robot_latency_steps, late_link=args.late_link,
                         play_plan=args.play_plan, incremental_commands=args.incremental_commands,
                         heading_hold=args.heading_hold)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    check_task_and_planner(args.task, env_overrides, args.preset, planner_overrides)
    try:
        ramp_for(get_robot(args.task.split("/")[0]), args.command_ramp_s)  # only a velocity command ramps
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    checkpoint_dir("--checkpoint", args.checkpoint)
    return cfg, env_overrides, planner_overrides


@cli_main("simdist eval")
def main(argv: list[str]) -> int:
    """Entry point of ``simdist eval``; returns the process exit code."""
    args = _parse(argv)
    cfg, env_overrides, planner_overrides = validate(args)
    video = video_config(args)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    torch.set_num_threads(args.threads)
    from simdist_core.checkpoint import load_for_cli

    model, manifest = load_for_cli("--checkpoint", args.checkpoint)
    model.eval().requires_grad_(False)
    robot = cfg.task.split("/")[0]
    if robot != model.spec.name:
        raise UsageError(f"--task {cfg.task!r} is a {robot} task but --checkpoint {str(args.checkpoint)!r} is for "
                         f"{model.spec.name}")
    try:
        planner_cfg = planner_config(manifest, cfg.preset, planner_overrides)
        reference_path, reference = _reference(args, manifest, bool(planner_cfg.reference_returns))
        planner = planner_for(model, planner_cfg, cfg.seed, reference)
    except (KeyError, ValueError) as exc:  # no stored config, a bad --planner key, a reference that does not fit
        raise UsageError(str(exc).strip("'\"")) from None
    if planner.cfg.reference_returns:
        print(f"{cfg.task}: plans ranked by the {planner.cfg.reference_returns} of the returns under --checkpoint's "
              f"and {reference_path}'s dynamics")
    recorder = EpisodeRecorder(video, label=f"{cfg.task}  {args.checkpoint.name}") if video else None
    report = evaluate(model, cfg, env_overrides=env_overrides, planner=planner, manifest=manifest, recorder=recorder)
    report["checkpoint"] = str(args.checkpoint)
    report["reference"] = str(reference_path) if planner.cfg.reference_returns else None
    metric = report["metric"]
    print(f"{cfg.task}: {metric} = {report[metric]:.3f} over {cfg.episodes} episodes"
          + (f", falls {report['falls']:.2f}" if "falls" in report else "")
          + f"; plan p50 {report['plan_ms_p50']:.1f} ms p99 {report['plan_ms_p99']:.1f} ms, "
          f"fallbacks {report['fallbacks']}; {report['sim_s']:.1f} sim s in {report['wall_s']:.1f} s wall "
          f"(x{report['real_time_factor']:.2f} real time)")  # fmt: skip
    funnel = report["summary"]
    if funnel.get("commanded_m", 0.0) > 0:  # Go2: progress read as command tracking (faster than asked counts too)
        print(f"{cfg.task}: {funnel['forward_progress_m'] / funnel['commanded_m']:.2f} of the commanded distance "
              f"({funnel['commanded_m']:.2f} m per episode)")
    if "reached_hole" in funnel:  # UR5e: where the failed episodes stopped
        print(f"{cfg.task}: of the episodes, {funnel['reached_hole']:.0%} reached the hole, "
              f"{funnel['centred_at_hole']:.0%} were centred there, {funnel['aligned_at_hole']:.0%} centred and "
              f"at a yaw that fits, {funnel['entered_hole']:.0%} entered it, {funnel['success']:.0%} succeeded")
    if recorder is not None:
        beside = (_record_beside(args.video_beside, cfg, video, env_overrides, planner_overrides)
                  if args.video_beside else None)
        _write_episode_video(args.video, recorder, beside)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1, default=json_default))
    return 0


def _reference(args: argparse.Namespace, manifest: Any,  # noqa: ANN401
               on: bool) -> tuple[Path | None, torch.nn.Module | None]:  # fmt: skip
    """The reference checkpoint's path and model when the planner's ``reference_returns`` is ``on``.

    Raises:
        UsageError: ``--reference`` without ``reference_returns``, or with it no reference given or recorded.
    """
    from simdist_core.checkpoint import load_for_cli

    if not on:
        if args.reference is not None:
            raise UsageError("--reference only counts with --planner reference_returns=min or mean")
        return None, None
    path = args.reference
    if path is None:
        parent = (getattr(manifest, "extra", None) or {}).get("parent_checkpoint")
        if not isinstance(parent, str) or not parent:
            raise UsageError("--planner reference_returns: give --reference (the checkpoint records no "
                             "parent_checkpoint)")
        path = Path(parent)
    checkpoint_dir("--reference", path)
    model, _ = load_for_cli("--reference", path)
    return path, model.eval().requires_grad_(False)


def _record_beside(checkpoint: Path, cfg: EvalConfig, video_cfg: VideoConfig, env_overrides: dict[str, str],
                   planner_overrides: dict[str, str]) -> EpisodeRecorder:  # fmt: skip
    """Run ``checkpoint`` on the first episodes of ``cfg`` that the video shows, recording them."""
    from simdist_core.checkpoint import load_for_cli

    model, manifest = load_for_cli("--video-beside", checkpoint)
    model.eval().requires_grad_(False)
    if model.spec.name != cfg.task.split("/")[0]:
        raise UsageError(f"--video-beside {str(checkpoint)!r} is for {model.spec.name}, the task is {cfg.task}")
    recorder = EpisodeRecorder(video_cfg, label=f"{cfg.task}  {checkpoint.name}")
    beside_cfg = dataclasses.replace(cfg, episodes=min(cfg.episodes, video_cfg.episodes))
    report = evaluate(model, beside_cfg, env_overrides=env_overrides, manifest=manifest, recorder=recorder,
                      planner=make_planner(model, manifest, cfg.preset, planner_overrides, cfg.seed))
    falls = f", falls {report['falls']:.2f}" if "falls" in report else ""
    print(f"{cfg.task}: {report['metric']} = {report[report['metric']]:.3f} over the {beside_cfg.episodes} video "
          f"episode(s) of --video-beside {checkpoint}{falls}")
    return recorder


def _write_episode_video(path: Path, recorder: EpisodeRecorder, beside: EpisodeRecorder | None = None) -> None:
    """Render the recorded episodes one after the other into ``path`` (each next to ``beside``'s, if given)."""
    from simdist_core.eval.video import render_recording, side_by_side, write_video

    frames = []
    for i, rec in enumerate(recorder.recordings):
        own = render_recording(rec, recorder.cfg)
        frames += own if beside is None else side_by_side(own, render_recording(beside.recordings[i], beside.cfg))
    stride = recorder.cfg.stride(1.0 / recorder.recordings[0].control_dt_s)
    fps = 1.0 / (stride * recorder.recordings[0].control_dt_s)  # real time: one frame per `stride` control steps
    write_video(path, frames, fps)
    print(f"wrote {path}: {len(frames)} frames at {fps:g} fps, {path.stat().st_size / 1e6:.1f} MB")


def json_default(value: object) -> object:
    """``json.dumps`` fallback of the evaluation reports: numpy scalars as Python numbers, anything else as text."""
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
