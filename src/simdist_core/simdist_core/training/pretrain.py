"""``simdist pretrain``: train the whole world model on a generated dataset (runner, rsl_rl ``runners/`` role).

The runner owns data, progress bar, CSV log, periodic held-out evaluation (episode-level split),
resume state and the final checkpoint; the update math is ``WorldModelTrainer``. Resume state lives
in ``<out>.run/`` (model + optimizer as safetensors; step, batch-sampler state, training time and config
as JSON; never pickle): run the same command again and it continues from the saved step with the batches
the run would have drawn. SIGTERM or SIGINT stops a run after its current update: it saves that state and
exits with 75 (``EXIT_STOPPED``), so a long CPU run can be spread over several sittings. Multi-process: launch with
``torchrun --nproc-per-node N -m simdist_core.training.pretrain ...`` (gloo on CPU, nccl on GPU);
each rank samples its own batches and gradients are averaged, so the effective batch is N x B.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import load_file

from simdist_core.cliargs import ArgumentParser, check_new_path, cli_main
from simdist_core.config import apply_cli_overrides, parse_overrides, to_dict
from simdist_core.data.dataset import Dataset, check_dataset
from simdist_core.data.sampler import WindowSampler
from simdist_core.models.world_model import WorldModel, WorldModelConfig
from simdist_core.planning.mppi import PRESETS
from simdist_core.robots import get_robot
from simdist_core.training import distributed as ddp
from simdist_core.training.adapt import fixed_batches
from simdist_core.training.common import (
    CsvLog,
    OptimConfig,
    check_device,
    git_describe,
    load_optimizer_state,
    save_file_atomic,
    save_optimizer_state,
    seed_everything,
)
from simdist_core.training.trainer import WorldModelTrainer

log = logging.getLogger(__name__)

EXIT_STOPPED = 75
"""Exit code of a run stopped by SIGTERM/SIGINT after saving its resume state (BSD ``EX_TEMPFAIL``: run again)."""


@dataclass(frozen=True, kw_only=True)
class PretrainConfig:
    """Settings of one pretraining run (``--set key=value`` overrides any field, e.g. ``model.latent_dim=32``)."""

    steps: int = 20_000
    """Optimizer updates in total (a resumed run stops here too)."""
    batch_size: int = 256
    """Windows per update and process (reference: 512)."""
    eval_every: int = 500
    """Held-out evaluation period in updates."""
    eval_windows: int = 512
    """Fixed held-out windows scored at each evaluation."""
    holdout_fraction: float = 0.05
    """Fraction of episodes held out (episode-level split)."""
    log_every: int = 50
    """CSV log period in updates."""
    save_every: int = 1000
    """Resume-state period in updates."""
    normalizer_rows: int = 200_000
    """Rows used to fit the proprio/reward/value normalisers."""
    seed: int = 0
    """Seed of initialisation and sampling."""
    device: str = "cpu"
    """Torch device (``cuda`` uses ``cuda:LOCAL_RANK`` under torchrun)."""
    threads: int = 1
    """torch intra-op threads per process (the machine is shared)."""
    resident_data: bool = False
    """Copy the dataset's fields onto ``device`` once and gather windows there (``WindowSampler(resident=True)``):
    on a GPU the CPU gather, not the model, bounds image training (~12 KB of device memory per UR5e row)."""
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(warmup_steps=500))
    """Optimizer and LR schedule."""
    model: WorldModelConfig = field(default_factory=WorldModelConfig)
    """World-model sizes and loss weights."""

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "eval_every", "eval_windows", "log_every", "save_every", "threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {name}={getattr(self, name)}")
        if not 0.0 < self.holdout_fraction < 1.0:
            raise ValueError(f"holdout_fraction must be in (0, 1), got {self.holdout_fraction=}")


def build_model(robot: str, cfg: PretrainConfig, dataset: Dataset) -> WorldModel:
    """A fresh world model with normalisers fitted on ``dataset``."""
    model = WorldModel(get_robot(robot), cfg.model)
    rng = np.random.default_rng(cfg.seed)
    n = dataset.n_steps
    rows = np.arange(n) if n <= cfg.normalizer_rows else np.sort(rng.choice(n, cfg.normalizer_rows, replace=False))
    fields = dataset.fields
    model.fit_normalizer(
        proprio=dataset.gather("obs/proprio", rows),
        rewards=dataset.gather("reward", rows) if "reward" in fields else None,
        values=dataset.gather("value", rows) if "value" in fields else None,
    )
    return model


class PretrainRunner:
    """Data, loop, logging and files around ``WorldModelTrainer``."""

    def __init__(self, data_dir: Path, robot: str, out: Path, cfg: PretrainConfig, info: ddp.DistInfo) -> None:
        self.cfg, self.info, self.out, self.robot = cfg, info, out, robot
        self.run_dir = out.with_name(out.name + ".run")
        self.device = f"cuda:{info.local_rank}" if cfg.device.startswith("cuda") else cfg.device
        seed_everything(cfg.seed)
        self.dataset = Dataset(data_dir, verify="open" if info.is_main else "none")
        spec = get_robot(robot)
        sampler = WindowSampler(self.dataset, spec, batch_size=cfg.batch_size, seed=cfg.seed, device=self.device,
                                resident=cfg.resident_data)  # fmt: skip
        train, hold = sampler.split(cfg.holdout_fraction, seed=cfg.seed)
        self.train = sampler.view(train.starts, seed=cfg.seed + 1000 * info.rank)
        self.holdout = fixed_batches(hold, cfg.eval_windows, min(cfg.batch_size, 256), cfg.seed)
        self.n_hold_episodes = int(np.unique(self.dataset.row_episode[hold.starts]).size)
        self.model = build_model(robot, cfg, self.dataset).to(self.device)
        ddp.broadcast_parameters(self.model, info)
        self.trainer = WorldModelTrainer(self.model, weights=cfg.model.loss, optim=cfg.optim, total_steps=cfg.steps,
                                         dist_info=info)  # fmt: skip
        self.csv = CsvLog(self.run_dir / "train.csv") if info.is_main else None
        self.eval_csv = CsvLog(self.run_dir / "eval.csv") if info.is_main else None
        self.last_eval: dict[str, float] = {}
        self.train_seconds = 0.0
        """Wall time spent in ``learn`` over every sitting of this run (resumed runs add theirs)."""
        self.stop_requested = False
        """Set (by a signal handler) to end ``learn`` after the current update, with the state saved."""

    # ---- resume state ---------------------------------------------------------------------------
    def save_state(self) -> None:
        """Write model + optimizer + step to ``<out>.run/`` (rank 0; atomic per file)."""
        if not self.info.is_main:
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        weights = {k: v.detach().cpu().contiguous() for k, v in self.model.state_dict().items()}
        save_file_atomic(weights, self.run_dir / "model.safetensors", metadata={"step": str(self.trainer.step)})
        extra = {"step": self.trainer.step, "robot": self.robot, "config": to_dict(self.cfg),
                 "dataset_sha256": self.dataset.checksum(), "last_eval": self.last_eval,
                 "sampler": self.train.rng_state(), "train_seconds": round(self.train_seconds, 3)}  # fmt: skip
        save_optimizer_state(self.trainer.optimizer, self.run_dir / "optimizer.safetensors", extra)

    def try_resume(self) -> bool:
        """Load ``<out>.run/`` if present; returns True when resumed.

        Raises:
            ValueError: the saved run used another robot or dataset (start a new ``--out`` instead).
        """
        state = self.run_dir / "optimizer.safetensors"
        if not state.is_file():
            return False
        meta = json.loads(state.with_suffix(".json").read_text())["extra"]
        if meta["robot"] != self.robot or meta["dataset_sha256"] != self.dataset.checksum():
            raise ValueError(f"{self.run_dir} belongs to another run (robot {meta['robot']}, dataset "
                             f"{meta['dataset_sha256'][:12]}): use a new --out or delete that folder")  # fmt: skip
        model_file = self.run_dir / "model.safetensors"
        weights = load_file(str(model_file), device=str(self.device))
        self.model.load_state_dict(weights)
        extra = load_optimizer_state(self.trainer.optimizer, state)
        self.trainer.step = int(extra["step"])
        self.last_eval = dict(extra.get("last_eval", {}))
        self.train_seconds = float(extra.get("train_seconds", 0.0))
        with safe_open(str(model_file), framework="pt") as f:
            model_step = (f.metadata() or {}).get("step")
        if model_step is not None and int(model_step) != self.trainer.step:
            # A run killed between the two files: the weights are one save period ahead of the optimizer.
            # Adam moments that old are harmless; the step (and so the LR schedule) follows the optimizer.
            log.warning("resume state torn: weights at step %s, optimizer at step %d; continuing from %d",
                        model_step, self.trainer.step, self.trainer.step)  # fmt: skip
        if "sampler" in extra:
            self.train.set_rng_state(extra["sampler"])
        else:
            log.warning("resume state from an older version has no sampler state: the batch stream restarts")
        return True

    # ---- loop -----------------------------------------------------------------------------------
    def evaluate(self) -> dict[str, float]:
        """Held-out loss terms (episodes never trained on), averaged over ranks."""
        metrics = self.trainer.evaluate(self.holdout)
        return ddp.average_scalars({f"eval/{k}": v for k, v in metrics.items()}, self.info)

    def learn(self, progress: bool = True) -> dict[str, float]:
        """Train up to ``cfg.steps`` updates; returns the final held-out metrics."""
        from tqdm import tqdm

        cfg, start_step, seconds_before = self.cfg, self.trainer.step, self.train_seconds
        bar = tqdm(total=cfg.steps, initial=start_step, desc="pretrain", unit="step", disable=not (progress and
                   self.info.is_main))  # fmt: skip
        t0, sums, n = time.perf_counter(), {}, 0
        while self.trainer.step < cfg.steps:
            metrics = self.trainer.update(self.train.sample())
            for k, v in metrics.items():
                sums[k] = sums.get(k, 0.0) + v
            n += 1
            step = self.trainer.step
            bar.update(1)
            if step % cfg.log_every == 0 or step == cfg.steps:
                row = {"step": step, **{f"train/{k}": v / n for k, v in sums.items()},
                       "steps_per_s": (step - start_step) / (time.perf_counter() - t0)}  # fmt: skip
                bar.set_postfix(loss=f"{row['train/loss']:.4f}")
                if step % cfg.eval_every == 0 or step == cfg.steps:
                    self.last_eval = self.evaluate()
                    if self.eval_csv:
                        self.eval_csv.write({"step": step, **{k: round(v, 6) for k, v in self.last_eval.items()}})
                if self.csv:
                    self.csv.write({k: (round(v, 6) if isinstance(v, float) else v) for k, v in row.items()})
                sums, n = {}, 0
            stop = self._agreed_stop()
            self.train_seconds = seconds_before + time.perf_counter() - t0
            if step % cfg.save_every == 0 or step == cfg.steps or stop:
                self.save_state()
            if stop:
                break
        bar.close()
        if not self.finished:  # stopped: no final evaluation, the caller writes no checkpoint
            return self.last_eval
        if not self.last_eval:
            self.last_eval = self.evaluate()
        self.steps_per_s = (self.trainer.step - start_step) / max(1e-9, time.perf_counter() - t0)
        return self.last_eval

    def _agreed_stop(self) -> bool:
        """Whether to stop now; under torchrun every rank stops at the same update (one rank's signal suffices)."""
        if not self.info.enabled:
            return self.stop_requested
        return ddp.average_scalars({"stop": float(self.stop_requested)}, self.info)["stop"] > 0.0

    @property
    def finished(self) -> bool:
        """Whether the run reached ``cfg.steps`` (a stopped run has not)."""
        return self.trainer.step >= self.cfg.steps

    def provenance(self, argv: list[str]) -> dict:
        """What produced the final checkpoint (stored in its manifest)."""
        return {
            "command": "simdist pretrain " + " ".join(argv), "robot": self.robot,
            "dataset": str(self.dataset.path), "dataset_sha256": self.dataset.checksum(),
            "dataset_steps": int(self.dataset.n_steps), "dataset_episodes": int(self.dataset.num_episodes),
            "dataset_info": self.dataset.info,
            "holdout_episodes": self.n_hold_episodes, "config": to_dict(self.cfg), "code_version": git_describe(),
            "world_size": self.info.world_size, "steps": self.trainer.step,
            "steps_per_s": round(getattr(self, "steps_per_s", float("nan")), 3),
            "train_seconds": round(self.train_seconds, 1),
        }  # fmt: skip


def _parse(argv: list[str]) -> argparse.Namespace:
    from simdist_core.config_show import describe

    parser = ArgumentParser(prog="simdist pretrain", description=__doc__.splitlines()[0],
                            key_help={"--set": lambda _ns: describe("pretrain")})
    parser.add_argument("--data", type=Path, required=True, help="dataset folder from `simdist generate`")
    parser.add_argument("--robot", required=True, choices=["go2", "ur5e"], help="robot the dataset is of")
    parser.add_argument("--out", type=Path, required=True, help="final checkpoint path (must not exist)")
    parser.add_argument("--steps", type=int, help="total updates (same as --set steps=N)")
    parser.add_argument("--batch", type=int, help="batch size per process (same as --set batch_size=B)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="PretrainConfig override, e.g. model.latent_dim=32 (`--set help` lists the keys)")
    parser.add_argument("--fresh", action="store_true", help="ignore an existing <out>.run/ resume state")
    parser.add_argument("--planner-preset", default="cpu", choices=sorted(PRESETS),
                        help="planner config stored in the checkpoint")
    parser.add_argument("--no-progress", action="store_true", help="no tqdm bar")
    return parser.parse_args(argv)


def validate(args: argparse.Namespace) -> PretrainConfig:
    """The run's config, with every flag checked before anything is read or written.

    Raises:
        UsageError: a bad ``--set`` key or value, an existing ``--out``, or a ``--data`` that is not a
            dataset of ``--robot``.
    """
    overrides = parse_overrides(args.overrides)
    if args.steps is not None:
        overrides["steps"] = str(args.steps)
    if args.batch is not None:
        overrides["batch_size"] = str(args.batch)
    cfg = apply_cli_overrides(PretrainConfig(), overrides)
    check_device("--set device", cfg.device)
    check_new_path("--out", args.out)
    check_dataset("--data", args.data, args.robot)
    return cfg


@contextlib.contextmanager
def stop_on_signals(runner: PretrainRunner) -> Iterator[None]:
    """SIGTERM and SIGINT ask ``runner`` to stop after its current update (a second SIGINT still interrupts)."""

    def request_stop(signum: int, _frame: object) -> None:
        if runner.stop_requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        log.warning("%s: stopping after this update and saving the resume state", signal.Signals(signum).name)
        runner.stop_requested = True

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@cli_main("simdist pretrain")
def main(argv: list[str]) -> int:
    """Entry point of ``simdist pretrain``; returns the process exit code."""
    args = _parse(argv)
    cfg = validate(args)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    torch.set_num_threads(cfg.threads)
    info = ddp.init_from_env(cfg.device)
    try:
        runner = PretrainRunner(args.data, args.robot, args.out, cfg, info)
        if info.is_main:
            print(json.dumps({"config": to_dict(cfg)}, indent=1))
        if not args.fresh and runner.try_resume():
            log.info("resumed from %s at step %d", runner.run_dir, runner.trainer.step)
        with stop_on_signals(runner):
            final = runner.learn(progress=not args.no_progress)
        if not runner.finished:
            log.warning("stopped at step %d of %d; state saved in %s: run the same command to resume",
                        runner.trainer.step, cfg.steps, runner.run_dir)  # fmt: skip
            return EXIT_STOPPED
        if info.is_main:
            from simdist_core.planning.mppi import planner_preset
            from simdist_core.training.export import write_pretrained

            planner = planner_preset(args.planner_preset)  # stored beside the weights for `--preset checkpoint`
            write_pretrained(runner.model, args.out, final, runner.provenance(argv), planner_config=planner)
            print(json.dumps({"checkpoint": str(args.out), "steps": runner.trainer.step,
                              "steps_per_s": round(runner.steps_per_s, 2), **final}, indent=1))  # fmt: skip
        ddp.barrier(info)
    finally:
        ddp.shutdown(info)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
