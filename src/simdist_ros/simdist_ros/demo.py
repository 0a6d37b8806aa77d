"""``simdist demo``: the simulated robot adapting live, with progress in the terminal and a plot at the end.

Starts the robot's whole node graph (``simdist_ros.graph`` + the pip launcher): the MuJoCo robot on the
graph's default task (Go2: memory foam; UR5e: peg insertion), the shipped checkpoint
(``checkpoints/<robot>``), encoder, planner, replay buffer and finetuner, free-running at a real-time factor
of 1 (the simulator does not wait for the planner: a late command is a lost tick, as on a robot). It listens
to ``/diagnostics`` only (1 Hz per node; a 50 Hz subscription would cost the 2-core loop ~2 % of a core
per topic) and prints every ``--print-every-s`` wall seconds:
simulated time, model version, progress in the last simulated minute, deadline misses and missed ticks of the
planner, finetune rounds. At the end (``--minutes`` of simulated time, or Ctrl-C) it stops the graph cleanly
and writes ``progress.png`` (progress over simulated time, model swaps marked) and ``summary.json`` into the
run folder. Both state the adaptation as a user sees it: progress and falls per simulated minute of the
shipped model (before the first hot swap) and of the adapted models (the last minute, or since the last
swap if longer).

``--video`` also renders the first of the fixed evaluation episodes of the shipped and the adapted model
side by side (``shipped_vs_adapted.mp4``), each plan's predicted path drawn next to the path really taken.

Progress: Go2 = forward distance over all episodes, the simulated robot's ``progress_m`` (a reset after a fall
is not progress), against ``commanded_m``, the distance its commands asked for; UR5e = successful insertions
(episodes whose ``metric/success`` reached 1).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simdist_core.cliargs import ArgumentParser, UsageError, check_positive, cli_main

DEMOS = {
    "go2": {"unit": "m forward", "progress": "distance", "eval_seconds": 10.0},
    "ur5e": {"unit": "insertions", "progress": "success", "eval_seconds": 15.0},
}
"""Robot -> progress measure (the task is the graph's default, ``graph.default_task``)."""


@dataclass
class Progress:
    """Progress bookkeeping in simulated time from the sim robot's diagnostics (one sample per message kept)."""

    kind: str
    samples: list[tuple[float, float]] = field(default_factory=list)
    """(sim time s, cumulative progress)."""
    falls: list[tuple[float, float]] = field(default_factory=list)
    """(sim time s, cumulative falls) from the sim robot's diagnostics."""
    commanded: list[tuple[float, float]] = field(default_factory=list)
    """Go2: (sim time s, cumulative distance the commands asked for, ``commanded_m``)."""
    commanded_total: float = 0.0
    swaps: list[tuple[float, str]] = field(default_factory=list)
    """(sim time s, model version) of each hot swap seen in the planner's diagnostics."""
    total: float = 0.0
    sim_time_s: float = 0.0
    _episode: int = -1
    _episode_success: bool = False
    planner: dict[str, str] = field(default_factory=dict)
    finetuner: dict[str, str] = field(default_factory=dict)
    robot: dict[str, str] = field(default_factory=dict)

    def on_robot(self, values: dict[str, str]) -> None:
        """Sim robot diagnostics: sim time, and (UR5e) success per episode."""
        self.robot = values
        t_s = float(values.get("sim_time_s", self.sim_time_s))
        self.sim_time_s = max(self.sim_time_s, t_s)
        if "falls" in values:
            self.falls.append((t_s, float(values["falls"])))
        if self.kind == "distance" and "progress_m" in values:
            # The command is drawn per episode and sways progress per minute more than adaptation does,
            # so the distance asked for is kept beside the distance walked.
            self.total = float(values["progress_m"])
            self.commanded_total = float(values.get("commanded_m", self.commanded_total))
            self.samples.append((t_s, self.total))
            self.commanded.append((t_s, self.commanded_total))
        if self.kind == "success" and "successes" in values:  # a cumulative counter, if the sim robot has one
            self.total = float(values["successes"])
            self.samples.append((t_s, self.total))
        elif self.kind == "success":
            # Sampled at the diagnostics rate: a success whose episode resets between two samples is missed.
            episode = int(float(values.get("episodes", 0)))
            if episode != self._episode:
                self._episode, self._episode_success = episode, False
            if not self._episode_success and float(values.get("metric/success", 0.0)) >= 1.0:
                self._episode_success = True
                self.total += 1
            self.samples.append((t_s, self.total))

    def on_planner(self, values: dict[str, str]) -> None:
        """Planner diagnostics: record a swap whenever the model version changes."""
        version = values.get("model_version", "?")
        if self.planner and version != self.planner.get("model_version"):
            self.swaps.append((self.sim_time_s, version))
        self.planner = values

    def phases(self, after_s: float = 60.0) -> dict[str, dict[str, float | None]]:
        """Progress and falls per simulated minute of the shipped model and of the adapted ones.

        ``shipped``: from the first sample to the first hot swap (the whole run if there was none).
        ``adapted``: from the last swap to the end, but at least the last ``after_s`` seconds after the
        first swap (rounds land every half minute or so, so the time after the very last swap alone can be
        a few seconds); ``models`` says which versions ran in it. ``ratio``: adapted / shipped progress.
        """
        end = self.sim_time_s
        start = self.samples[0][0] if self.samples else 0.0
        first = self.swaps[0][0] if self.swaps else end
        adapted_from = max(first, min(self.swaps[-1][0], end - after_s)) if self.swaps else end

        def rate(series: list[tuple[float, float]], t0: float, t1: float) -> float | None:
            inside = [v for t, v in series if t0 <= t <= t1]
            if t1 - t0 < 1.0 or len(inside) < 2:
                return None
            return round((inside[-1] - inside[0]) / ((t1 - t0) / 60.0), 3)

        out: dict[str, dict[str, float | None]] = {}
        for name, (t0, t1) in {"shipped": (start, first), "adapted": (adapted_from, end)}.items():
            out[name] = {"from_s": round(t0, 1), "to_s": round(t1, 1), "progress_per_min": rate(self.samples, t0, t1),
                         "falls_per_min": rate(self.falls, t0, t1),
                         "commanded_per_min": rate(self.commanded, t0, t1)}
            done, asked = out[name]["progress_per_min"], out[name]["commanded_per_min"]
            out[name]["progress_over_commanded"] = round(done / asked, 3) if done is not None and asked else None
        live = [v for t, v in self.swaps if t <= adapted_from][-1:] + [v for t, v in self.swaps if t > adapted_from]
        out["adapted"]["models"] = ",".join(live) if self.swaps else ""  # type: ignore[assignment]
        before, after = out["shipped"]["progress_per_min"], out["adapted"]["progress_per_min"]
        shipped, adapted = out["shipped"]["progress_over_commanded"], out["adapted"]["progress_over_commanded"]
        out["ratio"] = {"progress_adapted_over_shipped": round(after / before, 3) if before and after is not None
                        else None,
                        "tracking_adapted_over_shipped": round(adapted / shipped, 3) if shipped and adapted is not None
                        else None}
        return out

    def last_minute(self) -> float:
        """Progress over the last simulated minute."""
        recent = [p for t, p in self.samples if t >= self.sim_time_s - 60.0]
        return self.total - recent[0] if recent else 0.0


def _parse(argv: list[str]) -> argparse.Namespace:
    p = ArgumentParser(prog="simdist demo", description=__doc__.split("\n\n")[0])
    p.add_argument("--robot", choices=sorted(DEMOS), default="go2", help="robot to simulate")
    p.add_argument("--minutes", type=float, default=5.0, help="simulated minutes to run")
    p.add_argument("--task", help="override the demo task (default: the graph's default task)")
    p.add_argument("--checkpoint", type=Path, help="default: checkpoints/<robot> at the repo root")
    p.add_argument("--rtf", type=float, default=1.0,
                   help="sim real-time factor (1 = real time; the planner and finetuner keep up on 2 cores, "
                        "see `simdist bench graph`)")
    p.add_argument("--rtf-floor", type=float, default=0.25,
                   help="while fewer than 95 %% of the robot's steps get a fresh command, the simulated clock slows "
                        "down (to this factor at most) and speeds up again when the loop keeps up: a slow or busy "
                        "machine then still adapts, in more wall time; 0 = always run at --rtf")
    p.add_argument("--lockstep", action="store_true",
                   help="step the sim only after each planner command: a late CPU tick slows sim time instead of "
                        "leaving the robot unplanned, but the run is ~5x slower in wall time")
    p.add_argument("--output-dir", type=Path, help="default: runs/demo-<robot>-<UTC time>")
    p.add_argument("--no-adapt", action="store_true", help="zero-shot baseline: no replay buffer / finetuner")
    p.add_argument("--print-every-s", type=float, default=10.0, help="wall seconds between progress lines")
    p.add_argument("--eval-episodes", type=int, default=10,
                   help="after the run: the shipped and the last adapted model on this many fixed episodes "
                        "(seeds 1001..), in-process, adapted / shipped with a 95 %% interval; 0 = skip")
    p.add_argument("--set", action="append", default=[], metavar="NODE.NAME=VALUE",
                   help="a node parameter over the robot's parameter file, checked against what the node declares "
                        "(repeatable; e.g. planner.adapted_prior_weight=500.0, encoder.command_ramp_s=4.0); the "
                        "fixed-episode evaluation runs the planner and command ramp these give the graph")
    p.add_argument("--video", nargs="?", const=Path(), type=Path, metavar="PATH.mp4",
                   help="also render the first fixed episode (seed 1001) of the shipped and the adapted model side by "
                        "side, with each plan's predicted path (.mp4 H.264 or .gif; default: shipped_vs_adapted.mp4 "
                        "in the run folder). Rendered after the evaluation: its figures are unchanged")
    return p.parse_args(argv)


def launch_arguments(args: argparse.Namespace, task: str, checkpoint: Path, out: Path) -> dict[str, str]:
    """The graph's launch arguments for this run."""
    return {"sim": "true", "task": task, "checkpoint": str(checkpoint), "output_dir": str(out),
            "adapt": "false" if args.no_adapt else "true"}


DEMO_OPTIONS = {"real_time_factor": "--rtf", "lockstep": "--lockstep", "real_time_factor_floor": "--rtf-floor"}
"""Sim robot parameters the demo sets from its own options (``--set`` may not set them a second way)."""


def node_parameters(args: argparse.Namespace, launch: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Per-node parameters of the run: the sim robot's clock options, then ``--set`` pairs, checked and typed.

    Raises:
        UsageError: a pair that is not ``NODE.NAME=VALUE``, a node this run does not start (``--no-adapt``
            starts no finetuner), a parameter the node does not declare, a value of the wrong type or range,
            or a sim robot clock parameter that has a demo option of its own.
    """
    from simdist_ros.cli_checks import check_node_parameters
    from simdist_ros.graph import load_graph
    from simdist_ros.soak import node_overrides

    for pair in args.set:
        node, _, name = pair.partition("=")[0].partition(".")
        if node == "sim_robot" and name in DEMO_OPTIONS:
            raise UsageError(f"--set {pair!r}: use the demo's {DEMO_OPTIONS[name]} option")
    parameters = node_overrides(args.set, args.rtf)
    parameters["sim_robot"].update(lockstep=args.lockstep, real_time_factor_floor=args.rtf_floor)
    return check_node_parameters(load_graph(args.robot), launch, parameters)


def validate(args: argparse.Namespace) -> tuple[str, Path]:
    """The task and checkpoint of the run, with every number checked, before anything starts.

    Raises:
        UsageError: a bad number, task or checkpoint.
    """
    from simdist_ros.cli_checks import check_sim_task, checkpoint_or_default
    from simdist_ros.graph import default_task

    for option, value in (("--minutes", args.minutes), ("--rtf", args.rtf), ("--print-every-s", args.print_every_s)):
        check_positive(option, value)
    check_positive("--eval-episodes", args.eval_episodes, allow_zero=True)
    check_positive("--rtf-floor", args.rtf_floor, allow_zero=True)
    if args.rtf_floor > args.rtf:
        raise UsageError(f"--rtf-floor {args.rtf_floor:g} is above --rtf {args.rtf:g}")
    if args.video is not None and not args.eval_episodes:
        raise UsageError("--video renders the fixed-episode evaluation, which --eval-episodes 0 skips")
    if args.video is not None and args.video != Path() and args.video.suffix.lower() not in (".mp4", ".gif"):
        raise UsageError(f"--video {str(args.video)!r}: the file must end in .mp4 or .gif")
    return (check_sim_task(args.robot, args.task or default_task(args.robot)),
            checkpoint_or_default(args.checkpoint, args.robot))


def _line(prog: Progress, unit: str) -> str:
    pl = prog.planner
    pace = prog.robot.get("real_time_factor_now")
    pace = "" if pace is None else f" (rtf {float(pace):.2f})"
    return (f"t_sim {prog.sim_time_s:7.1f} s{pace} | model v{pl.get('model_version', '?'):>3} | "
            f"last min {prog.last_minute():6.2f} {unit} | total {prog.total:7.2f} | "
            f"deadline misses {pl.get('deadline_misses', '?')} | missed ticks {pl.get('missed_ticks', '?')} | "
            f"finetune rounds {prog.finetuner.get('rounds', '0')} (accepted {prog.finetuner.get('accepted', '0')}) | "
            f"falls/episodes {prog.robot.get('falls', '?')}/{prog.robot.get('episodes', '?')}")


def _phase_lines(phases: dict[str, dict[str, float | None]], unit: str, swaps: int) -> str:
    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}"

    lines = [f"adaptation as lived ({swaps} hot swap(s)), per simulated minute:"]
    for name, label in (("shipped", "shipped model"), ("adapted", f"adapted (v{phases['adapted']['models']})")):
        ph = phases[name]
        tracking = "" if ph.get("progress_over_commanded") is None else \
            f", {fmt(ph['progress_over_commanded'])} of the commanded distance"
        lines.append(f"  {label:<28} t {ph['from_s']:6.1f}-{ph['to_s']:6.1f} s: "
                     f"{fmt(ph['progress_per_min'])} {unit}/min, {fmt(ph['falls_per_min'])} falls/min{tracking}")
    ratio = phases["ratio"]
    lines.append(f"  adapted / shipped: progress {fmt(ratio['progress_adapted_over_shipped'])}"
                 + (f", share of the commanded distance {fmt(ratio['tracking_adapted_over_shipped'])}"
                    if ratio.get("tracking_adapted_over_shipped") is not None else ""))
    return "\n".join(lines)


EVAL_FIRST_SEED = 1001
"""First seed of the fixed evaluation episodes (the parity benchmark's seeds, so the figures compare)."""


LOOP_KEPT = 0.95
"""Share of the robot's steps that must get a fresh command for a run to count as the loop keeping up."""


STEAL_NOTABLE = 0.05
"""Share of CPU time stolen by the hypervisor above which the demo names it as a cause of a slow loop."""
IDLE_SCARCE = 0.05
"""Idle share of the machine's CPU time below which the demo says the CPUs were saturated."""


def loop_health(robot: dict[str, str], planner: dict[str, str], rtf: float, rtf_floor: float = 0.0,
                cpu: dict[str, float] | None = None) -> dict[str, Any]:
    """Did the control loop keep up? From the last diagnostics of the simulated robot and the planner.

    A machine too slow for the graph still runs it, but its robot acts on late or repeated commands and falls
    for reasons the model has nothing to do with (a 2-core VM whose planner needs ~20 ms gave 64 % of planner
    ticks with the adaptation nodes running); the demo then says so instead of letting the figures speak.
    ``cpu`` (:func:`simdist_ros.procmem.cpu_shares` over the run) adds the machine's side of a slowed clock:
    CPU time the hypervisor took (``steal``), or CPUs with no idle time left (something else running). Neither
    shows a VM that is slower per core in some hours, which has slowed this demo with 1 % steal and 37 % idle
    (``docs/results/demo.md``); then the advice stays as it was.
    """
    def num(values: dict[str, str], key: str) -> float | None:
        try:
            return float(values[key])
        except (KeyError, TypeError, ValueError):
            return None

    steps, fresh = num(robot, "steps"), num(robot, "fresh_command_steps")
    ticks, missed = num(planner, "ticks"), num(planner, "missed_ticks")
    fresh_share = fresh / steps if steps and fresh is not None else None
    kept = ticks / (ticks + missed) if ticks is not None and missed is not None and ticks + missed > 0 else None
    verdict = "unknown" if fresh_share is None else "kept" if fresh_share >= LOOP_KEPT else "not kept"
    advice = "" if verdict != "not kept" else (
        f"the control loop did not keep up on this machine: {100 * fresh_share:.1f} % of the robot's steps got a "
        f"fresh command (planner ticks kept: {'?' if kept is None else f'{100 * kept:.1f} %'}); the figures above "
        f"measure the machine as much as the model; "
        + (f"try --rtf {max(0.1, round(rtf / 2, 2)):g}" if not rtf_floor else
           f"the clock slowed down to {num(robot, 'real_time_factor_now') or rtf:.2f} of real time; "
           f"try --rtf-floor {max(0.05, round(rtf_floor / 2, 3)):g}"))
    steal = None if cpu is None else cpu.get("steal")
    reductions = num(robot, "real_time_factor_reductions")
    slowed = verdict == "not kept" or bool(reductions)
    if slowed and steal is not None and steal >= STEAL_NOTABLE:
        advice = (advice + "; " if advice else "") + (
            f"the hypervisor took {100 * steal:.0f} % of this VM's CPU time during the run (steal): the loop was "
            f"short of CPU the machine did not have")
    if slowed and cpu is not None and cpu.get("idle", 1.0) < IDLE_SCARCE:
        advice = (advice + "; " if advice else "") + (
            f"the CPUs were {100 * (1 - cpu['idle']):.0f} % busy or stolen during the run (every process on the "
            f"machine counts: is something else running?)")
    return {"fresh_command_share": fresh_share, "planner_ticks_kept": kept,
            "achieved_rtf": num(robot, "achieved_real_time_factor"), "rtf_now": num(robot, "real_time_factor_now"),
            "rtf_reductions": reductions, "cpu_steal_share": steal, "verdict": verdict, "advice": advice}


def fixed_seed_evaluation(task: str, shipped: Path, adapted: Path, episodes: int, seconds: float,
                          video: Path | None = None, video_cfg: Any = None,  # noqa: ANN401
                          sets: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """The shipped and the adapted checkpoint on the same fixed episodes, in-process; adapted / shipped [95 % CI].

    The demo's before/after windows are a minute of randomly drawn commands each; this is the same
    comparison on fixed seeds, as ``simdist bench adaptation`` and ``simdist bench parity`` measure, with
    the planner and command ramp the graph ran (its parameter file, then the run's ``--set`` pairs ``sets``).
    With ``video``, the first episode (seed ``EVAL_FIRST_SEED``) of both models is rendered side by side
    into that file (``video_cfg``: a core ``VideoConfig``, default 480x270 per side); the figures are
    those of the same evaluation without it.
    """
    from simdist_core.eval.stats import EPISODE_METRIC, episode_summary, episode_values, paired_ratio_ci
    from simdist_core.eval.video import EpisodeRecorder, VideoConfig, write_side_by_side

    from simdist_ros.parity import in_process

    video_cfg = video_cfg or VideoConfig(width=480, height=270)
    recorders = {name: EpisodeRecorder(video_cfg, label=f"{task}  {label}") if video else None
                 for name, label in (("shipped", "shipped model"), ("adapted", f"adapted ({adapted.name})"))}
    results = {name: in_process(task, path, episodes, seconds, EVAL_FIRST_SEED, recorders[name], sets)
               for name, path in (("shipped", shipped), ("adapted", adapted))}
    runs = {name: result["per_episode"] for name, result in results.items()}
    values = {name: episode_values(eps, task) for name, eps in runs.items()}
    out: dict[str, Any] = {"task": task, "episodes": episodes, "seconds": seconds, "first_seed": EVAL_FIRST_SEED,
                           "metric": EPISODE_METRIC[task.split("/")[0]], "adapted_checkpoint": str(adapted),
                           "torch_threads": results["shipped"]["torch_threads"],
                           "command_ramp_s": results["shipped"]["command_ramp_s"], "set": list(sets)}
    for name, eps in runs.items():
        summary = episode_summary(eps, task)
        out[name] = {"metric_mean": summary["metric_mean"], "metric_ci95": summary["metric_ci95"],
                     "falls": summary["falls"], "planner_overrides": results[name]["planner_overrides"],
                     "per_episode": eps}
    try:
        ratio, low, high = paired_ratio_ci(values["adapted"], values["shipped"])
        out["adapted_over_shipped"] = [round(ratio, 3), round(low, 3), round(high, 3)]
    except ValueError as exc:  # e.g. the shipped UR5e model inserted nothing: no ratio
        out["adapted_over_shipped_error"] = str(exc)
    if video is not None:
        write_side_by_side(video, recorders["shipped"].recordings[0], recorders["adapted"].recordings[0], video_cfg)
        out["video"] = str(video)
    return out


def _evaluation_lines(ev: dict[str, Any], unit: str) -> str:
    s, a = ev["shipped"], ev["adapted"]
    ratio = ev.get("adapted_over_shipped")
    tail = (f"{ratio[0]:.2f}x [95 % CI {ratio[1]:.2f}, {ratio[2]:.2f}]" if ratio
            else ev.get("adapted_over_shipped_error", "-"))
    return (f"fixed-seed evaluation, in-process ({ev['episodes']} episodes, seeds {ev['first_seed']}.., "
            f"<= {ev['seconds']:g} s):\n"
            f"  shipped  {s['metric_mean']:.2f} {unit} per episode, falls {s['falls']}\n"
            f"  adapted  {a['metric_mean']:.2f} {unit} per episode, falls {a['falls']}\n"
            f"  adapted / shipped: {tail}")


def _last_adapted(out: Path, prog: Progress) -> Path | None:
    """The checkpoint the planner ran last, if it is a finetuned one (``<output_dir>/checkpoints/v<N>``)."""
    if not prog.swaps:
        return None
    version = str(prog.swaps[-1][1])
    path = out / "checkpoints" / f"v{int(version):04d}" if version.isdigit() else None
    return path if path is not None and (path / "manifest.json").is_file() else None


def plot_progress(prog: Progress, unit: str, title: str, path: Path) -> Path:
    """Cumulative progress over simulated time with model swaps marked; written as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    if prog.samples:
        t, p = zip(*prog.samples, strict=True)
        ax.plot([x / 60.0 for x in t], p, label="progress")
    for t_s, version in prog.swaps:
        ax.axvline(t_s / 60.0, color="tab:orange", alpha=0.5, linestyle="--")
        ax.text(t_s / 60.0, ax.get_ylim()[1], f"v{version}", rotation=90, va="top", fontsize=7)
    ax.set_xlabel("simulated time (min)")
    ax.set_ylabel(f"cumulative progress ({unit})")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _listen(prog: Progress) -> Any:  # noqa: ANN401  (simdist_ros.listener.Listener)
    from diagnostic_msgs.msg import DiagnosticArray

    from simdist_ros import msgs, qos, topics
    from simdist_ros.listener import Listener

    listener = Listener("demo_monitor")

    def on_diag(msg: DiagnosticArray) -> None:
        for status in msg.status:
            values = msgs.status_values(status)
            if status.name.endswith("sim robot"):
                prog.on_robot(values)
            elif status.name.endswith("planner"):
                prog.on_planner(values)
            elif status.name.endswith("finetuner"):
                prog.finetuner = values

    listener.subscribe(DiagnosticArray, topics.DIAGNOSTICS, on_diag, qos.RELIABLE)
    return listener


@cli_main("simdist demo")
def main(argv: list[str]) -> int:
    """Entry point of ``simdist demo``; 0 on a clean run, 1 if a node failed, 2 on bad arguments."""
    args = _parse(argv)
    task, checkpoint = validate(args)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("MUJOCO_GL", "egl")
    from simdist_ros import procmem
    from simdist_ros.graph import load_graph
    from simdist_ros.launcher import GraphProcess
    from simdist_ros.parity import deployed_command_ramp_s, deployed_planner

    demo = DEMOS[args.robot]
    out = (args.output_dir or Path("runs") / time.strftime(f"demo-{args.robot}-%Y%m%d-%H%M%S", time.gmtime())).resolve()
    launch = launch_arguments(args, task, checkpoint, out)
    graph = GraphProcess(load_graph(args.robot), launch, log_dir=out / "logs", parameters=node_parameters(args, launch))
    governed_floor = 0.0 if args.lockstep else args.rtf_floor  # lockstep already slows sim time to the loop's
    prog = Progress(kind=demo["progress"])
    listener = _listen(prog)
    print(f"simdist demo: {args.robot} on {task}, checkpoint {checkpoint}, {args.minutes:g} simulated minutes at "
          f"real-time factor {args.rtf:g}" + (f" (slowing to {governed_floor:g} if the loop falls behind)"
                                            if governed_floor else "")
          + f"; node logs in {out / 'logs'} (Ctrl-C stops early)", flush=True)
    failed: list[str] = []

    def _terminate(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt  # SIGTERM (timeout, systemd, a launcher) stops the graph like Ctrl-C does

    previous_term = signal.signal(signal.SIGTERM, _terminate)
    machine_cpu = procmem.MachineCpu()
    try:
        machine_cpu.start()
        graph.start()
        next_print = time.monotonic() + args.print_every_s
        while prog.sim_time_s < args.minutes * 60.0 and not failed:
            listener.spin(0.1)
            failed = graph.poll()
            if time.monotonic() >= next_print:
                print(_line(prog, demo["unit"]), flush=True)
                next_print += args.print_every_s
    except KeyboardInterrupt:
        print("simdist demo: interrupted (SIGINT/SIGTERM), stopping the graph", flush=True)
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        cpu = machine_cpu.shares()  # before the graph stops: its shutdown is not the run
        codes = graph.stop()
        listener.close()
    phases = prog.phases()
    ratio = phases["ratio"]["progress_adapted_over_shipped"]
    title = (f"SimDist demo: {args.robot} on {task}, real-time factor {args.rtf:g}\n"
             f"{'live adaptation' if not args.no_adapt else 'zero-shot'}"
             + (f"; progress adapted / shipped {ratio:.2f}x" if ratio is not None else ""))
    png = plot_progress(prog, demo["unit"], title, out / "progress.png")
    summary = {"robot": args.robot, "task": task, "checkpoint": str(checkpoint), "rtf": args.rtf,
               "rtf_floor": args.rtf_floor,
               "lockstep": args.lockstep, "adapt": not args.no_adapt, "sim_time_s": prog.sim_time_s,
               "progress_total": prog.total, "unit": demo["unit"], "adaptation": phases, "swaps": prog.swaps,
               "planner": prog.planner, "finetuner": prog.finetuner, "robot_diagnostics": prog.robot,
               "set": list(args.set),
               "planner_deployed": dict(zip(("preset", "overrides"), deployed_planner(args.robot, args.set),
                                            strict=True)),
               "command_ramp_s": deployed_command_ramp_s(args.robot, args.set),
               "exit_codes": codes, "machine": {**procmem.machine_info(), "cpu_during_run": cpu},
               "loop": loop_health(prog.robot, prog.planner, args.rtf, governed_floor, cpu)}
    print(_line(prog, demo["unit"]))
    print(_phase_lines(phases, demo["unit"], len(prog.swaps)))
    if cpu is not None:
        print(f"machine: {summary['machine']['cores']} cores, during the run {100 * cpu['busy']:.0f} % busy, "
              f"{100 * cpu['steal']:.0f} % stolen by the hypervisor, {100 * cpu['idle']:.0f} % idle", flush=True)
    if summary["loop"]["advice"]:
        print(f"simdist demo: WARNING: {summary['loop']['advice']}", flush=True)
    adapted = _last_adapted(out, prog)
    if args.eval_episodes and adapted is not None and not failed:
        print(f"simdist demo: evaluating the shipped and the adapted model ({adapted.name}) on "
              f"{args.eval_episodes} fixed episodes each, in-process", flush=True)
        video = None if args.video is None else args.video if args.video != Path() else out / "shipped_vs_adapted.mp4"
        summary["fixed_seed_evaluation"] = fixed_seed_evaluation(task, checkpoint, adapted, args.eval_episodes,
                                                                 demo["eval_seconds"], video, sets=args.set)
        print(_evaluation_lines(summary["fixed_seed_evaluation"], demo["unit"]))
        if video is not None:
            print(f"simdist demo: wrote {video} (seed {EVAL_FIRST_SEED}: shipped left, adapted right)")
    elif args.video is not None:
        print("simdist demo: no video: no adapted model to compare with (no hot swap, or a node failed)")
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(f"simdist demo: wrote {png} and {out / 'summary.json'}; exit codes {codes}")
    return 1 if failed or any(codes.values()) else 0
