"""``simdist figure value``: the frozen value head along successful and failed episodes (paper's value figure).

Runs seeded episodes of a task with the deployed planner (or the privileged expert) and records, per
control step, what the frozen heads say about the observation the robot just saw: V(z_t) from the
value head on the encoder latent of the observation-history window, and the reward head on
(z_t, a_{t-1}), beside the simulator's reward, success flag and insertion state. Episodes are run
until there are enough successes and failures (or the episode cap is reached), then plotted: V over
time per outcome, mean +- one standard deviation over the episodes still running, the moment the
peg enters the hole marked. If the transferred value is meaningful it rises on success and stays
low on failure.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from simdist_core.cliargs import ArgumentParser, UsageError, check_positive, checkpoint_dir, cli_main
from simdist_core.config import parse_overrides, to_dict
from simdist_core.eval.closed_loop import check_task_and_planner, planner_keys_help, task_keys_help
from simdist_core.planning.mppi import PRESETS

log = logging.getLogger(__name__)

ACTORS = ("planner", "expert")
"""Who acts: the MPPI planner over the checkpoint, or the privileged scripted expert (the model only watches)."""
INFO_KEYS = ("depth_m", "lateral_m", "rel_z_m", "yaw_err_rad", "contact_force_n")
"""Simulator state recorded per step beside the heads' outputs (UR5e insertion tasks)."""
INSERT_DEPTH_M = 0.003
"""Depth that counts as "in the hole" for the figure's marker: the expert's own switch to its insert phase.
Any depth > 0 is not: a tip resting on the hole's lip already reads 0.01-0.1 mm (failed episodes did at 1.2 s)."""


@dataclass(frozen=True, kw_only=True)
class ValueTraceConfig:
    """Which episodes to trace and how many of each outcome to keep."""

    task: str
    """Task id, e.g. ``ur5e/peg`` or ``ur5e/peg_shifted``."""
    actor: str = "planner"
    """``planner`` (MPPI, ``preset``) or ``expert`` (privileged scripted controller)."""
    preset: str = "prior"
    """Planner preset, or ``checkpoint`` (the config stored beside the weights). ``prior`` follows the policy prior
    (what the UR5e deployed with ``checkpoints/ur5e_v1``); the deployed UR5e planner is ``cpu`` with the planner
    override ``prior_weight=1000`` (``ur5e_bringup/config/ur5e.yaml``)."""
    seed: int = 1000
    """First episode seed; episode i uses ``seed + i``."""
    successes: int = 3
    """Stop once this many successful and ``failures`` failed episodes are recorded."""
    failures: int = 3
    """See ``successes``."""
    max_episodes: int = 20
    """Cap on episodes run while looking for both outcomes."""
    seconds: float = 0.0
    """Cap on each episode's simulated seconds (0 = the task's own length); a capped episode without success fails."""

    def __post_init__(self) -> None:
        if self.actor not in ACTORS:
            raise ValueError(f"actor must be one of {ACTORS}, got {self.actor=}")
        if self.successes < 0 or self.failures < 0 or self.successes + self.failures < 1:
            raise ValueError(f"successes and failures must be >= 0 and not both 0, got {self.successes=} "
                             f"{self.failures=}")  # fmt: skip
        if self.max_episodes < 1:
            raise ValueError(f"max_episodes must be >= 1, got {self.max_episodes=}")
        if self.seconds < 0:
            raise ValueError(f"seconds must be >= 0, got {self.seconds=}")


def _sig(x: float) -> float:
    """``x`` to 5 significant digits: the JSON stays small and nothing plotted or summarised changes."""
    return float(f"{float(x):.5g}")


def _heads(model: torch.nn.Module, model_input: dict[str, torch.Tensor],
           prev: Any, action: np.ndarray | None) -> tuple[Any, float, float]:  # noqa: ANN401
    """(latent, V(z), reward head on (z, action) with ``prev``'s context) for one window; nan reward at t = 0.

    The reward head is read as it was trained (``training/losses.py``, ``reward_encoded``): the latent after
    the action, the context of the window the action was taken from.
    """
    latent = model.encode(model_input)
    value = float(model.value(latent, latent.z[:, None])[0, 0])
    reward = float("nan")
    if prev is not None and action is not None:
        a = torch.as_tensor(action, dtype=latent.z.dtype)[None, None]  # (1, 1, A)
        reward = float(model.reward(prev, latent.z[:, None], a)[0, 0])
    return latent, value, reward


def trace_episode(env: Any, model: torch.nn.Module, planner: Any, *, seed: int, max_steps: int,  # noqa: ANN401
                  expert: Any = None) -> dict[str, Any]:  # noqa: ANN401
    """One episode; every per-step list has one entry per control step (the state after that step).

    Args:
        env: a UR5e insertion task (``make_env``).
        model: the frozen world model whose heads are read.
        planner: acts when ``expert`` is None (``reset()``, ``plan(model_input)``).
        seed: env reset seed (the expert's noise is seeded from it too).
        max_steps: control-step cap (the env ends earlier on success or its own time limit).
        expert: the privileged expert (``reset(env, rng)``, ``act(env)``), or None.

    Returns:
        seed, steps, success, ``insert_step`` (first step at depth >= INSERT_DEPTH_M; None if never),
        ``value_start`` (V of the first observation) and the series ``t_s``, ``value``, ``reward_head``,
        ``reward``, ``sim_success`` (the env's flag), INFO_KEYS and, with the expert, ``expert_phase``.
    """
    from simdist_core.data.history import ObservationHistory

    history = ObservationHistory(env.spec)
    history.reset(env.reset(seed=seed))
    if expert is not None:
        expert.reset(env, np.random.default_rng(seed))
    else:
        planner.reset()
    keys = ("t_s", "value", "reward_head", "reward", "sim_success", *INFO_KEYS)
    keys += ("expert_phase",) if expert is not None else ()
    series: dict[str, list[Any]] = {k: [] for k in keys}
    with torch.no_grad():
        latent, value_start, _ = _heads(model, history.model_input("cpu"), None, None)
        for step in range(max_steps):
            if expert is not None:
                action = np.asarray(expert.act(env), dtype=np.float32)
            else:
                action = np.asarray(planner.plan(history.model_input("cpu")).action, dtype=np.float32)
            action = np.clip(action, -1.0, 1.0).astype(np.float32)
            result = env.step(action)
            history.record_action(action)
            history.push(result.obs)
            latent, value, reward_head = _heads(model, history.model_input("cpu"), latent, action)
            series["t_s"].append((step + 1) * env.spec.control_dt)
            series["value"].append(_sig(value))
            series["reward_head"].append(_sig(reward_head))
            series["reward"].append(_sig(result.reward))
            series["sim_success"].append(bool(result.info.get("success", False)))
            for key in INFO_KEYS:
                series[key].append(_sig(result.info.get(key, float("nan"))))
            if expert is not None:
                series["expert_phase"].append(expert.phase)
            if result.terminated or result.truncated:
                break
    inserted = next((i for i, d in enumerate(series["depth_m"]) if d >= INSERT_DEPTH_M), None)
    return {"seed": seed, "steps": len(series["t_s"]), "success": bool(env.metrics().get("success", False)),
            "insert_step": inserted, "value_start": value_start, **series}  # fmt: skip


def collect(model: torch.nn.Module, cfg: ValueTraceConfig, *, planner: Any = None,  # noqa: ANN401
            env_overrides: dict[str, str] | None = None) -> dict[str, Any]:
    """Trace episodes (seeds ``cfg.seed``, ``cfg.seed + 1``, ...) until both outcome quotas are met or the cap.

    Episodes of an outcome whose quota is already full are still run (the next seed's outcome is unknown
    in advance) but not kept, so the kept set is the first ``successes`` / ``failures`` of each.

    Returns:
        JSON-ready dict: task, actor, the kept ``episodes`` (in seed order), ``tried`` (seed -> success of
        every episode run), and ``found`` (counts kept per outcome), ``complete`` (both quotas met).
    """
    from simdist_core.experts.ur5e_expert import make_ur5e_expert
    from simdist_core.sim.base import make_env

    env = make_env(cfg.task, env_overrides or {})
    if env.spec.name != model.spec.name:
        raise ValueError(f"task {cfg.task} is a {env.spec.name} task but the model is for {model.spec.name}")
    if env.spec.name != "ur5e":
        raise ValueError(f"the value figure needs an insertion task (ur5e/...), got {cfg.task}")
    expert = make_ur5e_expert(env) if cfg.actor == "expert" else None
    max_steps = int(round(cfg.seconds * env.spec.control_hz)) if cfg.seconds > 0 else 10**9
    kept: list[dict[str, Any]] = []
    tried: dict[int, bool] = {}
    want = {True: cfg.successes, False: cfg.failures}
    try:
        for i in range(cfg.max_episodes):
            episode = trace_episode(env, model, planner, seed=cfg.seed + i, max_steps=max_steps, expert=expert)
            tried[episode["seed"]] = episode["success"]
            log.info("seed %d: success %s, %d steps, V %.2f -> %.2f", episode["seed"], episode["success"],
                     episode["steps"], episode["value_start"], episode["value"][-1])
            if sum(e["success"] == episode["success"] for e in kept) < want[episode["success"]]:
                kept.append(episode)
            if all(sum(e["success"] == ok for e in kept) >= n for ok, n in want.items()):
                break
    finally:
        env.close()
    found = {"successes": sum(e["success"] for e in kept), "failures": sum(not e["success"] for e in kept)}
    return {"task": cfg.task, "actor": cfg.actor, "config": to_dict(cfg), "env_overrides": dict(env_overrides or {}),
            "control_dt_s": env.spec.control_dt, "episodes": kept, "tried": {str(k): v for k, v in tried.items()},
            "found": found, "complete": found["successes"] >= cfg.successes and found["failures"] >= cfg.failures}


def summarise(report: dict[str, Any]) -> dict[str, Any]:
    """Per outcome: mean V at the start, at the end, and at the time successes ended; seeds; lengths.

    Also the share of failure steps (from the mean success length on) whose V reaches the lowest V a
    success ended with: 0 means V alone separates the outcomes there, the larger the less it does.

    ``value_at_success_end`` compares like with like: successes end early (insertion ends the episode), so
    failures are read at the mean success length too, not only at their own (much later) end.
    """
    out: dict[str, Any] = {}
    ends = [e["steps"] for e in report["episodes"] if e["success"]]
    at = int(round(np.mean(ends))) - 1 if ends else None
    for name, ok in (("success", True), ("failure", False)):
        eps = [e for e in report["episodes"] if e["success"] == ok]
        if not eps:
            out[name] = {"episodes": 0}
            continue
        out[name] = {
            "episodes": len(eps), "seeds": [e["seed"] for e in eps], "steps": [e["steps"] for e in eps],
            "value_start": float(np.mean([e["value_start"] for e in eps])),
            "value_end": float(np.mean([e["value"][-1] for e in eps])),
            "value_min": float(np.min([np.min(e["value"]) for e in eps])),
            "value_max": float(np.max([np.max(e["value"]) for e in eps])),
            "reward_end": float(np.mean([e["reward"][-1] for e in eps])),
            "reward_head_end": float(np.mean([e["reward_head"][-1] for e in eps])),
        }
        if at is not None:
            out[name]["value_at_success_end"] = float(np.mean([e["value"][min(at, e["steps"] - 1)] for e in eps]))
    out["success_end_step"] = at
    failures = [e for e in report["episodes"] if not e["success"]]
    if ends and failures:  # does V alone tell them apart? Failure steps as high as the lowest final success V
        lowest = min(e["value"][-1] for e in report["episodes"] if e["success"])
        steps = np.concatenate([e["value"][at:] for e in failures])
        out["failure_steps_at_or_above_lowest_success_end"] = float(np.mean(steps >= lowest)) if steps.size else None
        out["lowest_success_end_value"] = float(lowest)
    return out


def _band(episodes: list[dict[str, Any]], key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t_s, mean, std) of ``key`` over the episodes still running at each step."""
    longest = max(e["steps"] for e in episodes)
    grid = np.full((len(episodes), longest), np.nan)
    for row, e in zip(grid, episodes, strict=True):
        row[: e["steps"]] = e[key]
    t = np.arange(1, longest + 1) * episodes[0]["t_s"][0]
    with warnings.catch_warnings():  # a column is all-nan only if an episode had 0 steps, which cannot happen
        warnings.simplefilter("ignore", RuntimeWarning)
        return t, np.nanmean(grid, 0), np.nanstd(grid, 0)


def plot(report: dict[str, Any], path: Path) -> None:
    """V(z_t), the reward head vs the simulator's reward, and insertion depth over time; success vs failure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = (("value", "value head V(z_t) (task units)"), ("reward_head", "reward head (dashed: simulator)"),
              ("depth_m", "insertion depth (mm)"))  # fmt: skip
    fig, axes = plt.subplots(1, len(panels), figsize=(5.0 * len(panels), 4))
    for ok, colour, label in ((True, "tab:green", "success"), (False, "tab:red", "failure")):
        eps = [e for e in report["episodes"] if e["success"] == ok]
        if not eps:
            continue
        for ax, (key, _) in zip(axes, panels, strict=True):
            scale = 1e3 if key == "depth_m" else 1.0
            for e in eps:
                ax.plot(e["t_s"], scale * np.asarray(e[key]), color=colour, alpha=0.25, lw=0.8)
            t, mean, std = _band(eps, key)
            ax.plot(t, scale * mean, color=colour, lw=2, label=f"{label} (n={len(eps)}, mean +- std)")
            ax.fill_between(t, scale * (mean - std), scale * (mean + std), color=colour, alpha=0.15)
            if key == "reward_head":
                ax.plot(t, _band(eps, "reward")[1], color=colour, lw=1.2, ls="--")
            for e in eps:  # the moment the peg is first INSERT_DEPTH_M deep
                if e["insert_step"] is not None:
                    ax.axvline(e["t_s"][e["insert_step"]], color=colour, ls=":", lw=1)
    for ax, (_, ylabel) in zip(axes, panels, strict=True):
        ax.set_xlabel(f"time (s); dotted: peg {1e3 * INSERT_DEPTH_M:g} mm into the hole")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"frozen value head along {report['actor']} episodes of {report['task']}"
                 + (f" ({report['checkpoint']})" if report.get("checkpoint") else ""))  # fmt: skip
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = ArgumentParser(prog="simdist figure value", description=__doc__.splitlines()[0],
                            key_help={"--set": task_keys_help, "--planner": planner_keys_help})
    parser.add_argument("--checkpoint", type=Path, required=True, help="checkpoint directory (a UR5e model)")
    parser.add_argument("--task", default="ur5e/peg", help="insertion task, e.g. ur5e/peg or ur5e/peg_shifted")
    parser.add_argument("--actor", default="planner", choices=ACTORS,
                        help="who acts: the MPPI planner over the checkpoint, or the privileged expert")
    parser.add_argument("--preset", default="prior", choices=["checkpoint", *sorted(PRESETS)],
                        help="planner preset; checkpoint = the stored config (the deployed UR5e planner: "
                             "--preset cpu --planner prior_weight=1000)")
    parser.add_argument("--planner", dest="planner_set", action="append", default=[], metavar="KEY=VALUE",
                        help="planner config override, repeatable")
    parser.add_argument("--set", dest="env_set", action="append", default=[], metavar="KEY=VALUE",
                        help="task config override, repeatable")
    parser.add_argument("--seed", type=int, default=1000, help="first episode seed (episode i: seed + i)")
    parser.add_argument("--successes", type=int, default=3, help="successful episodes to keep")
    parser.add_argument("--failures", type=int, default=3, help="failed episodes to keep")
    parser.add_argument("--max-episodes", type=int, default=20, help="cap on episodes run to find both outcomes")
    parser.add_argument("--seconds", type=float, default=0.0, help="cap per episode in simulated seconds (0 = task)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--out", type=Path, required=True, help="figure (PNG)")
    parser.add_argument("--json", type=Path, help="per-step series, seeds, task, checkpoint and git commit")
    return parser.parse_args(argv)


def validate(args: argparse.Namespace) -> tuple[ValueTraceConfig, dict[str, str], dict[str, str]]:
    """The trace config and the task and planner overrides, checked before the checkpoint is loaded.

    Raises:
        UsageError: a bad task, override, count, output suffix or checkpoint path.
    """
    check_positive("--threads", args.threads)
    check_positive("--max-episodes", args.max_episodes)
    check_positive("--successes", args.successes, allow_zero=True)
    check_positive("--failures", args.failures, allow_zero=True)
    check_positive("--seconds", args.seconds, allow_zero=True)
    if not args.task.startswith("ur5e/"):
        raise UsageError(f"--task {args.task!r}: the value figure needs an insertion task, e.g. ur5e/peg")
    if args.out.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise UsageError(f"--out {str(args.out)!r} must end in .png, .pdf or .svg")
    env_overrides, planner_overrides = parse_overrides(args.env_set), parse_overrides(args.planner_set)
    try:
        cfg = ValueTraceConfig(task=args.task, actor=args.actor, preset=args.preset, seed=args.seed,
                               successes=args.successes, failures=args.failures, max_episodes=args.max_episodes,
                               seconds=args.seconds)  # fmt: skip
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    check_task_and_planner(args.task, env_overrides, args.preset, planner_overrides)
    checkpoint_dir("--checkpoint", args.checkpoint)
    return cfg, env_overrides, planner_overrides


@cli_main("simdist figure value")
def main(argv: list[str]) -> int:
    """Entry point of ``simdist figure value``; returns the process exit code."""
    args = _parse(argv)
    cfg, env_overrides, planner_overrides = validate(args)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    torch.set_num_threads(args.threads)
    from simdist_core.checkpoint import load_for_cli
    from simdist_core.eval.closed_loop import make_planner

    model, manifest = load_for_cli("--checkpoint", args.checkpoint)
    model.eval().requires_grad_(False)
    if model.spec.name != "ur5e":
        raise UsageError(f"--checkpoint {str(args.checkpoint)!r} is a {model.spec.name} model; the value figure "
                         "needs a UR5e checkpoint")  # fmt: skip
    try:
        planner = make_planner(model, manifest, cfg.preset, planner_overrides, cfg.seed)
    except (KeyError, ValueError) as exc:
        raise UsageError(str(exc).strip("'\"")) from None
    from simdist_core.training.common import git_describe

    commit = git_describe()  # before the run: files edited while it runs must not mark it dirty
    report = collect(model, cfg, planner=planner, env_overrides=env_overrides)
    report.update(checkpoint=str(args.checkpoint), git_commit=commit, planner=to_dict(planner.cfg),
                  summary=summarise(report))  # fmt: skip
    plot(report, args.out)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))
    s = report["summary"]
    parts = [f"{k} n={s[k]['episodes']}" + (f" V {s[k]['value_start']:.2f} -> {s[k]['value_end']:.2f}"
                                            if s[k]["episodes"] else "") for k in ("success", "failure")]  # fmt: skip
    print(f"{cfg.task} ({cfg.actor}): {len(report['tried'])} episodes run; " + "; ".join(parts)
          + ("" if report["complete"] else f" (wanted {cfg.successes} successes and {cfg.failures} failures "
                                            f"within {cfg.max_episodes} episodes: not found)")
          + f"; figure {args.out}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
