r"""``simdist generate``: experts and weak policies with contiguous perturbations -> a chunked dataset.

    simdist generate --robot go2 --task flat --steps 1000000 --out data/go2_flat --workers 2 --seed 0 \\
        [--shard I --num-shards M] [--set data.behaviour.expert_fraction=0.5] [--set terrain.friction=0.8] \\
        [--chunk-steps 4096] [--mixture expert_only]

* The task id is ``f"{robot}/{task}"`` (``sim.base.make_env``). ``--set key=value`` goes to the env,
  except keys starting with ``data.`` which set fields of ``GenerateConfig`` (e.g.
  ``data.behaviour.weak_skill_min=0.5``, ``data.value.episodes=4``).
* ``--mixture`` picks a named behaviour mixture (``MIXTURES``): ``default`` (below) or ``expert_only``:
  every episode driven by the clean expert and never perturbed, for the ablation "pretrained without
  the perturbed and weak-policy data" at the same ``--steps`` row budget. The resulting ``behaviour``
  fields are what ``dataset.json`` records.
* Episodes: expert (skill 1) with probability 0.5, else a weak variant with skill =U(0.3, 0.9)
  (``experts.make_policy``; ``--expert KEY=VALUE`` sets the expert's config for all of them); contiguous
  perturbations (``data.perturbation``); rows as documented in ``data.rollout``; values from the expert
  value function (``data.value_labels``), fitted once on clean expert rollouts and stored as
  ``value_fn.safetensors`` + ``value_fn.json`` in ``--out``.
* Shards: the run has ``--num-shards`` shards (default: ``--workers``), each written by one process to
  ``shard-<seed>-<shard:04d>/`` with ``steps / num_shards`` rows. ``--shard I`` runs only shard I, so
  the same command scales out over machines (copy ``value_fn.*`` from the first machine, or let each
  fit the same one from the same seed).
* Resume: chunks hold whole episodes, and episode ``i`` of shard ``s`` depends only on
  ``(seed, s, i)``. A rerun counts the sealed episodes of each shard and continues at the next
  episode index: a killed run ends up identical to an uninterrupted one (no duplicates, no gaps).
  The rerun must use the same configuration (checked against ``dataset.json``).
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing as mp
import os
import queue
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from simdist_core.cliargs import ArgumentParser, UsageError, check_choice, check_positive, cli_main
from simdist_core.config import apply_overrides, parse_overrides, to_dict
from simdist_core.data.chunks import ChunkWriter, list_chunks, read_meta
from simdist_core.data.rollout import BehaviourConfig, branch_expert_episodes, run_episode
from simdist_core.data.value_labels import (
    VALUE_FN_META,
    ValueFitConfig,
    ValueFunction,
    fit_value_function,
    rollout_expert_episodes,
)

log = logging.getLogger(__name__)

DATASET_FORMAT = "simdist-dataset/1"
VALUE_ROLLOUT_OVERRIDES: dict[str, dict[str, str]] = {"ur5e": {"render": "false"}}
"""Env overrides for the value-fit rollouts (only privileged state is used, so no camera)."""
MIXTURES: dict[str, dict[str, str]] = {
    "default": {},
    "expert_only": {"behaviour.expert_fraction": "1.0", "behaviour.perturbation.never_noised_fraction": "1.0"},
}
"""Named behaviour mixtures of ``--mixture``: ``GenerateConfig`` overrides applied before ``--set data.*``."""


@dataclass(frozen=True, kw_only=True)
class GenerateConfig:
    """Everything that determines the generated data (stored in ``dataset.json``)."""

    robot: str
    """Robot name (``--robot``)."""
    task: str
    """Task name without the robot (``--task``); the task id is ``<robot>/<task>``."""
    steps: int
    """Total rows over all shards (each shard stops at the first episode end past its share)."""
    seed: int = 0
    """Seed of the run (``--seed``); episode ``i`` of shard ``s`` depends only on (seed, s, i)."""
    num_shards: int = 1
    """Shards of the run (``--num-shards``, default ``--workers``)."""
    chunk_steps: int = 4096
    """Minimum rows per chunk (chunks are sealed at episode ends)."""
    env_overrides: tuple[tuple[str, str], ...] = ()
    """Task ``--set`` overrides, sorted ``(key, value)`` pairs."""
    behaviour: BehaviourConfig = field(default_factory=BehaviourConfig)
    """Who drives each episode and how it is perturbed."""
    value: ValueFitConfig = field(default_factory=ValueFitConfig)
    """Fit of the expert value function that labels the rows."""

    def __post_init__(self) -> None:
        if self.steps < 1 or self.num_shards < 1 or self.chunk_steps < 1:
            raise ValueError(f"steps, num_shards, chunk_steps must be >= 1, got {self.steps=}, {self.num_shards=}, "
                             f"{self.chunk_steps=}")

    @property
    def task_id(self) -> str:
        """``"<robot>/<task>"``."""
        return f"{self.robot}/{self.task}"

    def shard_steps(self, shard: int) -> int:
        """Row budget of one shard."""
        return self.steps // self.num_shards + (1 if shard < self.steps % self.num_shards else 0)


def shard_dir(out: Path, seed: int, shard: int) -> Path:
    """Folder of shard ``shard`` of a run with ``seed``."""
    return out / f"shard-{seed}-{shard:04d}"


def shard_progress(folder: Path) -> tuple[int, int]:
    """(sealed episodes, sealed rows) of a shard, checking episodes are 0..n-1 with no gap or duplicate.

    Raises:
        RuntimeError: chunk numbering or episode ids are not contiguous (the shard was edited or mixed).
    """
    ids: list[int] = []
    rows = 0
    for expected, (index, chunk) in enumerate(list_chunks(folder)):
        if index != expected:
            raise RuntimeError(f"{folder}: chunk {expected:06d} is missing (found {chunk.name}); cannot resume")
        meta = read_meta(chunk)
        ids += meta["episode_ids"]
        rows += meta["n_steps"]
    if ids != list(range(len(ids))):
        raise RuntimeError(f"{folder}: sealed episode ids are not 0..{len(ids) - 1} in order; cannot resume")
    return len(ids), rows


def _make_env(cfg: GenerateConfig, extra: dict[str, str] | None = None) -> object:
    from simdist_core.sim.base import make_env

    return make_env(cfg.task_id, {**dict(cfg.env_overrides), **(extra or {})})


def ensure_value_function(cfg: GenerateConfig, out: Path) -> ValueFunction:
    """Load the dataset's value function, or fit it from clean expert rollouts and save it."""
    if (out / VALUE_FN_META).is_file():
        return ValueFunction.load(out)
    from simdist_core.experts import make_policy

    t0 = time.perf_counter()
    episodes = rollout_expert_episodes(
        lambda: _make_env(cfg, VALUE_ROLLOUT_OVERRIDES.get(cfg.robot)),
        lambda env, rng: make_policy(env, 1.0, rng, dict(cfg.behaviour.expert_overrides)),
        cfg.value.episodes, cfg.seed,
    )
    n_branches = cfg.value.branch_states_for(cfg.robot)
    if n_branches:
        env = _make_env(cfg, VALUE_ROLLOUT_OVERRIDES.get(cfg.robot))
        episodes += branch_expert_episodes(env, cfg.behaviour, n_branches, cfg.seed, cfg.value.branch_steps)
    meta = {"task_id": cfg.task_id, "clean_episodes": cfg.value.episodes, "branch_episodes": n_branches}
    vf = fit_value_function(episodes, cfg.value, seed=cfg.seed, meta=meta)
    vf.meta["weights_sha256"] = vf.save(out)  # as a resumed run reads it back, so both record the same hash
    log.info("fitted the value function in %.1f s (R^2 %.3f)", time.perf_counter() - t0, vf.meta["fit_r2"])
    return vf


def generate_shard(cfg: GenerateConfig, out: Path, shard: int, progress: Callable[[int], None] | None = None,
                   fsync: bool = True) -> int:
    """Generate (or finish) one shard; returns the rows added by this call."""
    folder = shard_dir(out, cfg.seed, shard)
    writer = ChunkWriter(folder, chunk_steps=cfg.chunk_steps, align_episodes=True, fsync=fsync)
    index, total = shard_progress(folder)
    target, added = cfg.shard_steps(shard), 0
    if total >= target:
        return 0
    value_fn = ValueFunction.load(out)
    env = _make_env(cfg)
    while total < target:
        rows = run_episode(env, cfg.behaviour, value_fn, cfg.seed, shard, index)
        writer.extend({key: np.stack([row[key] for row in rows]) for key in rows[0]})  # (L+1, ...) per field
        writer.end_episode()
        index, total, added = index + 1, total + len(rows), added + len(rows)
        if progress is not None:
            progress(len(rows))
    writer.close()
    if hasattr(env, "close"):
        env.close()
    return added


def write_or_check_manifest(cfg: GenerateConfig, out: Path, value_fn: ValueFunction) -> None:
    """Write ``dataset.json`` (provenance) or check a resumed run uses the same configuration.

    Raises:
        ValueError: ``out`` holds a dataset generated with a different configuration.
    """
    path = out / "dataset.json"
    manifest = {"format": DATASET_FORMAT, "config": to_dict(cfg),
                "value_fn_sha256": value_fn.meta.get("weights_sha256")}
    if path.is_file():
        old = json.loads(path.read_text())
        filled = {**old, "value_fn_sha256": manifest["value_fn_sha256"]}
        if old.get("value_fn_sha256") is None and {k: filled.get(k) for k in manifest} == manifest:
            # Written before 2026-12-08 by a run that fitted the value function: the hash was not recorded, but the
            # function in ``out`` is the one that run saved before it wrote a row. Record it now.
            log.warning("%s: recording the value function's sha256, which its first run left out", path)
            old = filled
            _write_json(path, old)
        if {k: old.get(k) for k in manifest} != manifest:
            raise ValueError(f"{out} was generated with a different configuration (see {path}); use a new --out or "
                             f"the same flags to resume. Old: {old.get('config')}")
        return
    manifest["created_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    _write_json(path, manifest)


def _write_json(path: Path, content: dict) -> None:
    """Write ``content`` to ``path`` atomically (a crash leaves the old file or the new one)."""
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(content, indent=1))
    os.replace(tmp, path)


_QUEUE: mp.Queue | None = None


def _init_worker(progress_queue: mp.Queue) -> None:
    global _QUEUE
    import torch

    torch.set_num_threads(1)  # one core per worker
    _QUEUE = progress_queue


def _worker(args: tuple[GenerateConfig, str, int, bool]) -> int:
    cfg, out, shard, fsync = args
    return generate_shard(cfg, Path(out), shard, lambda n: _QUEUE.put(n) if _QUEUE is not None else None, fsync)


def run(cfg: GenerateConfig, out: Path, shards: list[int], workers: int, fsync: bool = True) -> int:
    """Generate ``shards`` of ``cfg`` into ``out`` with ``workers`` processes; returns rows added."""
    from tqdm import tqdm

    out.mkdir(parents=True, exist_ok=True)
    value_fn = ensure_value_function(cfg, out)
    write_or_check_manifest(cfg, out, value_fn)
    done = sum(min(shard_progress(shard_dir(out, cfg.seed, s))[1], cfg.shard_steps(s)) for s in shards)
    total = sum(cfg.shard_steps(s) for s in shards)
    bar = tqdm(total=total, initial=done, unit="step", desc=cfg.task_id, file=sys.stderr, dynamic_ncols=True)
    if workers <= 1 or len(shards) == 1:
        added = sum(generate_shard(cfg, out, s, bar.update, fsync) for s in shards)
    else:
        ctx = mp.get_context("spawn")
        progress_queue = ctx.Queue()
        with ctx.Pool(min(workers, len(shards)), initializer=_init_worker, initargs=(progress_queue,)) as pool:
            pending = pool.map_async(_worker, [(cfg, str(out), s, fsync) for s in shards])
            while not pending.ready():
                try:
                    bar.update(progress_queue.get(timeout=0.5))
                except queue.Empty:
                    pass
            added = sum(pending.get())
    bar.close()
    return added


def build_config(args: argparse.Namespace) -> GenerateConfig:
    """GenerateConfig from parsed CLI flags (``--set data.*`` -> config, other keys -> env)."""
    overrides = parse_overrides(args.set or [])
    data_keys = {k[len("data."):]: v for k, v in overrides.items() if k.startswith("data.")}
    env_overrides = tuple(sorted((k, v) for k, v in overrides.items() if not k.startswith("data.")))
    cfg = GenerateConfig(robot=args.robot, task=args.task, steps=args.steps, seed=args.seed,
                         num_shards=args.num_shards or max(args.workers, 1), env_overrides=env_overrides)
    if args.chunk_steps is not None:
        data_keys["chunk_steps"] = str(args.chunk_steps)
    mixture = MIXTURES[args.mixture]
    clash = sorted(set(mixture) & set(data_keys))
    if clash:
        raise ValueError(f"--mixture {args.mixture} sets {', '.join('data.' + k for k in clash)}; do not also --set it")
    cfg = apply_overrides(cfg, {**mixture, **data_keys}, key_prefix="data.")
    expert = tuple(sorted(parse_overrides(args.expert or []).items()))
    return replace(cfg, behaviour=replace(cfg.behaviour, expert_overrides=expert)) if expert else cfg


def validate(args: argparse.Namespace) -> GenerateConfig:
    """The run's config, every flag checked before anything is written (``--out`` is not created here).

    Raises:
        UsageError: a bad flag, task, ``--set`` key or value, shard, or a ``--out`` that holds another run.
    """
    from simdist_core.experts import check_overrides
    from simdist_core.sim.base import task_config, task_ids

    tasks = [t.split("/", 1)[1] for t in task_ids() if t.startswith(args.robot + "/")]
    check_choice("--task", args.task, tasks, f"a {args.robot} task")
    check_positive("--steps", args.steps)
    check_positive("--workers", args.workers)
    try:
        cfg = build_config(args)
        task_config(cfg.task_id, dict(cfg.env_overrides))  # the env's own keys and values, without building it
        if cfg.behaviour.expert_overrides:
            check_overrides(args.robot, dict(cfg.behaviour.expert_overrides))
    except (KeyError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    if args.shard is not None and not 0 <= args.shard < cfg.num_shards:
        raise UsageError(f"--shard {args.shard} is outside [0, {cfg.num_shards}) (--num-shards {cfg.num_shards})")
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {str(args.out)!r} is a file, not a dataset folder")
    manifest = args.out / "dataset.json"
    if manifest.is_file() and json.loads(manifest.read_text()).get("config") != to_dict(cfg):
        raise UsageError(f"--out {str(args.out)!r} was generated with a different configuration (see {manifest}); "
                         "use a new --out, or the same flags to resume")
    return cfg


def _data_keys_help(_ns: argparse.Namespace) -> str:
    from simdist_core.config_show import describe, task_keys_text

    task = f"{_ns.robot}/{_ns.task}" if _ns.robot and _ns.task else None
    return task_keys_text(task) + "\n\n" + describe("generate")


def _parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="simdist generate", description=__doc__.split("\n")[0],
                       key_help={"--set": _data_keys_help})
    p.add_argument("--robot", required=True, choices=["go2", "ur5e"], help="robot to simulate")
    p.add_argument("--task", required=True, help="task name; the task id is <robot>/<task>")
    p.add_argument("--steps", required=True, type=int, help="total rows over all shards")
    p.add_argument("--out", required=True, type=Path, help="dataset folder (created; rerun the same command to resume)")
    p.add_argument("--workers", type=int, default=1, help="worker processes, one core each")
    p.add_argument("--seed", type=int, default=0, help="seed of the run")
    p.add_argument("--shard", type=int, default=None, help="run only this shard (for multi-machine runs)")
    p.add_argument("--num-shards", type=int, default=None, help="total shards of the run (default: --workers)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="task override, or data.<field>=... for the generator (`--set help` lists the keys)")
    p.add_argument("--chunk-steps", type=int, default=None, help="minimum rows per chunk (default 4096)")
    p.add_argument("--mixture", default="default", choices=sorted(MIXTURES),
                   help="behaviour mixture: default (expert + weak policies, perturbed) or expert_only "
                        "(clean expert episodes only)")
    p.add_argument("--expert", action="append", metavar="KEY=VALUE",
                   help="the expert's config field (Go2ExpertConfig / UR5e ExpertConfig), e.g. "
                        "accel_friction_cap=0.25; applies to the expert, its weaker variants and the value rollouts")
    p.add_argument("--no-fsync", action="store_true", help="skip fsync (faster on slow disks; not crash-safe)")
    return p


@cli_main("simdist generate")
def main(argv: list[str]) -> int:
    """Entry point of ``simdist generate``."""
    args = _parser().parse_args(argv)
    cfg = validate(args)
    import torch

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    torch.set_num_threads(1)  # the value fit is small; workers use one core each
    print(json.dumps(to_dict(cfg), indent=1))
    shards = [args.shard] if args.shard is not None else list(range(cfg.num_shards))
    t0 = time.perf_counter()
    try:
        added = run(cfg, args.out, shards, args.workers, fsync=not args.no_fsync)
    except (ValueError, KeyError, RuntimeError) as exc:  # config mismatch found late, unresumable shard
        print(f"simdist generate: {exc}", file=sys.stderr)
        return 2
    elapsed = time.perf_counter() - t0
    from simdist_core.data.dataset import Dataset

    ds = Dataset(args.out, verify="none")
    print(f"added {added} rows in {elapsed:.1f} s ({added / max(elapsed, 1e-9):.0f} rows/s); dataset: {ds.n_steps} "
          f"rows, {ds.num_episodes} episodes, {len(ds.chunks)} chunks, checksum {ds.checksum()}")
    return 0
