r"""``simdist dagger``: the planner drives, the privileged expert labels every state it reaches.

    simdist dagger --checkpoint bench_results/go2_yaw_pretrained --task go2/pretrain \
        --set command.yaw_rate_range_rad_s=-0.5,0.5 --episodes 60 --seconds 10 --seed 7000 \
        --planner prior_weight=100 --heading-hold --out data/go2_dagger

Why: the policy prior is distilled from the expert's actions on the states the *expert* visits (and on its
recoveries from perturbations). In closed loop the planner's own small errors take the robot to states the expert
never reached, where the prior was never taught what to do, and the errors compound; this is imitation learning's
distribution shift, which DAgger (Ross, Gordon and Bagnell, AISTATS 2011) fixes by rolling out the learner and
asking the expert what it would have done at each state it reached. In simulation the expert can be asked: it
runs alongside, reading the privileged state, and its action is stored as a label while the planner's action is
what the robot executes. Measured use: ``bench_results/GO2_DAGGER_SLOPE.md``.

Rows are what ``simdist_core.eval.experience`` records for a robot (observations as the planner saw them, command
included, and executed actions), plus ``expert_action`` (the clean expert's action at that state) and
``clean_expert`` (True on every executed step, False on an episode's final-observation row). The window sampler
then gives the policy prior ``expert_action`` as its imitation target (``bc_actions``); the dynamics still see the
executed actions. Train the prior on them with ``simdist finetune --parts policy --set bc_weight=1`` (add
``--replay <pretraining data> --set replay_fraction=F`` to keep imitating the original data too).

Each call writes one shard, ``<out>/shard-dagger-<seed>/``, and its record ``<out>/dagger-<seed>.json``; calls
with different seeds into the same ``--out`` make one dataset (run them side by side on separate cores).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from simdist_core.cliargs import ArgumentParser, UsageError, check_positive, checkpoint_dir, cli_main
from simdist_core.config import parse_overrides
from simdist_core.data.chunks import list_chunks
from simdist_core.eval.experience import ExperienceRecorder
from simdist_core.robots import RobotSpec

log = logging.getLogger(__name__)


class ExpertLabelledRecorder(ExperienceRecorder):
    """An :class:`ExperienceRecorder` whose rows also carry the clean expert's action at each state.

    Use as ``run_episode(on_reset=recorder.start_episode, on_plan=recorder.label, on_step=recorder)``: ``label``
    asks the expert before the step (the env is then in the state the planner planned from), ``__call__`` stores
    the transition with that label.

    Args:
        spec: robot layout.
        shard_dir: shard folder.
        env: the env the episodes run in (the expert reads its privileged state).
        rng: the expert's generator.
        chunk_steps: rows per sealed chunk.
        expert_overrides: the labelling expert's config fields as strings (``experts.make_policy``).
    """

    def __init__(self, spec: RobotSpec, shard_dir: Path, env: Any, rng: np.random.Generator,  # noqa: ANN401
                 chunk_steps: int = 1024, expert_overrides: dict[str, str] | None = None) -> None:
        super().__init__(spec, shard_dir, chunk_steps=chunk_steps)
        self.env, self.rng = env, rng
        self.expert_overrides = dict(expert_overrides or {})
        self.expert: Any = None
        self._label: np.ndarray | None = None

    def start_episode(self, obs: dict[str, np.ndarray]) -> None:
        """A new episode: a fresh expert reset on the env's state (heading target = the heading now)."""
        from simdist_core.experts import make_policy

        super().start_episode(obs)
        self.expert = make_policy(self.env, 1.0, self.rng, self.expert_overrides)
        self._label = None

    def label(self, _plan: object) -> None:
        """Ask the expert for its action at the current state (``run_episode``'s ``on_plan``)."""
        if self.expert is None:
            raise RuntimeError("ExpertLabelledRecorder: label() before start_episode()")
        action = np.asarray(self.expert.act(self.env), np.float32)
        if action.shape != (self.spec.action_dim,) or not np.all(np.isfinite(action)):
            raise ValueError(f"expert label must be finite with shape ({self.spec.action_dim},), got {action!r}")
        self._label = np.clip(action, -1.0, 1.0)

    def __call__(self, obs: dict[str, np.ndarray], action: np.ndarray, result: Any) -> None:  # noqa: ANN401
        """Append the transition with the label asked for before it."""
        if self._label is None:
            raise RuntimeError("ExpertLabelledRecorder: a step without a label (pass on_plan=recorder.label)")
        super().__call__(obs, action, result)
        self._label = None

    def end_episode(self) -> None:
        """Store the final observation (no label) and advance the episode id."""
        self._label = None
        super().end_episode()
        self.expert = None

    def _record(self, obs: dict[str, np.ndarray], action: np.ndarray, reward: float) -> dict[str, np.ndarray]:
        record = super()._record(obs, action, reward)
        labelled = self._label is not None
        record["expert_action"] = self._label if labelled else np.zeros(self.spec.action_dim, np.float32)
        record["clean_expert"] = np.bool_(labelled)
        return record


def collect(env: Any, planner: Any, shard_dir: Path, *, episodes: int, max_steps: int, seed: int,  # noqa: ANN401
            heading_hold: bool = False, expert_overrides: dict[str, str] | None = None) -> list[dict[str, float]]:
    """Run ``episodes`` planner episodes (seeds ``seed + i``) with expert labels into ``shard_dir``; their metrics."""
    from simdist_core.eval.rollout import run_episode

    recorder = ExpertLabelledRecorder(env.spec, shard_dir, env, np.random.default_rng(seed),
                                      expert_overrides=expert_overrides)
    metrics = []
    try:
        for i in range(episodes):
            stats = run_episode(env, planner, seed=seed + i, max_steps=max_steps, on_reset=recorder.start_episode,
                                on_plan=recorder.label, on_step=recorder, heading_hold=heading_hold)
            recorder.end_episode()
            metrics.append({**stats.metrics, "steps": float(stats.steps)})
    finally:
        recorder.close()
    return metrics


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = ArgumentParser(prog="simdist dagger", description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, required=True, help="checkpoint whose planner drives")
    parser.add_argument("--task", required=True, help="task id, e.g. go2/pretrain")
    parser.add_argument("--set", dest="env_overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="env override, e.g. command.yaw_rate_range_rad_s=-0.5,0.5")
    parser.add_argument("--episodes", type=int, default=60, help="episodes to run")
    parser.add_argument("--seconds", type=float, default=10.0, help="episode length cap in seconds")
    parser.add_argument("--seed", type=int, default=0, help="first episode seed (episode i: seed + i); names the shard")
    parser.add_argument("--preset", default="cpu", help="planner preset (as `simdist eval`)")
    parser.add_argument("--planner", action="append", default=[], metavar="KEY=VALUE",
                        help="planner override, e.g. prior_weight=100")
    parser.add_argument("--heading-hold", action="store_true", help="the command holds the start heading (Go2)")
    parser.add_argument("--expert", action="append", default=[], metavar="KEY=VALUE",
                        help="labelling expert's config field, e.g. accel_friction_cap=0.25 (Go2ExpertConfig)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--out", type=Path, required=True, help="dataset folder (shards of several seeds may share it)")
    return parser.parse_args(argv)


@cli_main("simdist dagger")
def main(argv: list[str]) -> int:
    """Entry point of ``simdist dagger``; returns 0, or 2 on bad input."""
    args = _parse(argv)
    check_positive("--episodes", args.episodes)
    check_positive("--seconds", args.seconds)
    check_positive("--threads", args.threads)
    checkpoint_dir("--checkpoint", args.checkpoint)
    env_overrides, planner_overrides = parse_overrides(args.env_overrides), parse_overrides(args.planner)
    expert_overrides = parse_overrides(args.expert)
    shard_dir = args.out / f"shard-dagger-{args.seed}"
    if list_chunks(shard_dir):
        raise UsageError(f"--out {str(args.out)!r} already holds {shard_dir.name}; use another --seed")
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    import torch

    from simdist_core.checkpoint import load_for_cli
    from simdist_core.eval.closed_loop import make_planner
    from simdist_core.sim.base import make_env

    torch.set_num_threads(args.threads)
    model, manifest = load_for_cli("--checkpoint", args.checkpoint)
    model.eval().requires_grad_(False)
    env = make_env(args.task, env_overrides)
    if args.heading_hold and env.spec.name != "go2":
        raise UsageError("--heading-hold needs a velocity command (a go2/ task)")
    if expert_overrides:  # a bad key or value is a usage error now, not an exception at the first episode
        from simdist_core.experts import check_overrides

        try:
            check_overrides(env.spec.name, expert_overrides)
        except ValueError as exc:
            raise UsageError(f"--expert: {exc}") from None
    planner = make_planner(model, manifest, args.preset, planner_overrides, args.seed)
    start = time.perf_counter()
    metrics = collect(env, planner, shard_dir, episodes=args.episodes,
                      max_steps=int(round(args.seconds / env.spec.control_dt)), seed=args.seed,
                      heading_hold=args.heading_hold, expert_overrides=expert_overrides)
    record = {"checkpoint": str(args.checkpoint), "task": args.task, "env_overrides": env_overrides,
              "preset": args.preset, "planner_overrides": planner_overrides, "heading_hold": args.heading_hold,
              "expert_overrides": expert_overrides,
              "seed": args.seed, "episodes": args.episodes, "seconds": args.seconds,
              "steps": int(sum(m["steps"] for m in metrics)), "wall_s": round(time.perf_counter() - start, 1),
              "mean_metrics": {k: float(np.mean([m[k] for m in metrics])) for k in sorted(metrics[0])}}
    (args.out / f"dagger-{args.seed}.json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {shard_dir}: {record['steps']} labelled steps in {args.episodes} episodes, {record['wall_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
