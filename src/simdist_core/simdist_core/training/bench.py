"""``simdist bench train``: world-model update time on a dataset, with and without 2 MB pages (table + JSON).

Why: on a CPU a UR5e update moves tensors of hundreds of MB (a batch of 256 windows holds 6,656 camera images,
and each convolution's output is ~0.8 GB). glibc maps every allocation that large fresh from the kernel and
returns it when freed, so each update first-touches every page of them again: a page fault per 4 KB.
PyTorch's CPU allocator asks the kernel for 2 MB pages for allocations of 2 MB and more when the environment
variable ``THP_MEM_ALLOC_ENABLE=1`` is set (``madvise(MADV_HUGEPAGE)``; Linux with transparent huge pages
``always`` or ``madvise``), so each fault maps 512 times as much. It changes where memory comes from, not the
arithmetic.

How: each variant runs in its own child process (torch reads the variable once, at its first allocation),
variants alternating over ``--rounds``. A child builds the same model from the same seed, draws the same
batches, runs ``--warmup`` untimed training steps and ``--updates`` timed ones (a step draws a batch from the
dataset and updates, as ``simdist pretrain`` does), and reports their times, the loss of its last update (the same
in every variant, which the report checks), page faults and peak RSS.

    simdist bench train --data data/ur5e --robot ur5e --mode pretrain,finetune --json train_bench.json

``simdist`` sets ``THP_MEM_ALLOC_ENABLE=1`` for its commands unless the environment already sets it
(``simdist_core.cli``); this benchmark sets it per child either way. Not a test: the numbers depend on the
machine and its load, which are recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from simdist_core.cliargs import ArgumentParser, UsageError, check_positive, cli_main

MODES = {
    "pretrain": "every part, pretraining's loss weights (as `simdist pretrain`)",
    "finetune": "dynamics only, latent consistency (as the finetuner node and `simdist finetune`)",
}
"""What a timed update trains."""
VARIANTS = {"4k_pages": "0", "2m_pages": "1"}
"""Variant -> ``THP_MEM_ALLOC_ENABLE`` of its child process."""


def run_child(spec: dict[str, Any]) -> dict[str, Any]:
    """Time updates as ``spec`` says, in this process; returns the record (see the module docstring)."""
    import torch

    from simdist_core.config import apply_cli_overrides
    from simdist_core.data.dataset import Dataset
    from simdist_core.data.sampler import WindowSampler
    from simdist_core.robots import get_robot
    from simdist_core.training.adapt import FinetuneConfig
    from simdist_core.training.common import seed_everything
    from simdist_core.training.pretrain import PretrainConfig, build_model
    from simdist_core.training.trainer import DynamicsFinetuner, WorldModelTrainer

    torch.set_num_threads(spec["threads"])
    cfg = apply_cli_overrides(PretrainConfig(), {**spec["overrides"], "seed": str(spec["seed"])})
    seed_everything(cfg.seed)
    dataset = Dataset(Path(spec["data"]), verify="none")
    model = build_model(spec["robot"], cfg, dataset)
    total = spec["warmup"] + spec["updates"]
    if spec["mode"] == "pretrain":
        trainer = WorldModelTrainer(model, weights=cfg.model.loss, optim=cfg.optim, total_steps=total)
    else:
        trainer = DynamicsFinetuner(model, optim=FinetuneConfig().optim, total_steps=total)  # the finetuner's
    sampler = WindowSampler(dataset, get_robot(spec["robot"]), batch_size=spec["batch"], seed=cfg.seed)
    loss = float("nan")
    for _ in range(spec["warmup"]):
        loss = trainer.update(sampler.sample())["loss"]
    faults_before, seconds = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, []
    for _ in range(spec["updates"]):  # a training step as `simdist pretrain` runs it: draw a batch, update
        start = time.perf_counter()
        loss = trainer.update(sampler.sample())["loss"]
        seconds.append(time.perf_counter() - start)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"update_s": seconds, "last_loss": loss,
            "minor_page_faults_per_update": (usage.ru_minflt - faults_before) / len(seconds),
            "peak_rss_mib": round(usage.ru_maxrss / 1024, 1), "torch_threads": torch.get_num_threads(),
            "thp_mem_alloc_enable": os.environ.get("THP_MEM_ALLOC_ENABLE")}  # fmt: skip


def run_variant(spec: dict[str, Any], variant: str) -> dict[str, Any]:
    """One child process for ``variant``; returns its record.

    Raises:
        RuntimeError: the child failed (its stderr tail is in the message).
    """
    env = {**os.environ, "THP_MEM_ALLOC_ENABLE": VARIANTS[variant]}
    proc = subprocess.run([sys.executable, "-m", "simdist_core.training.bench", "--child", json.dumps(spec)],
                          env=env, capture_output=True, text=True, check=False)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"{variant} child exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def summarise(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per variant: median update time over every timed update of every round, faults, RSS; the ratio to 4k pages."""
    rows = {}
    for variant, records in runs.items():
        times = [t for r in records for t in r["update_s"]]
        rows[variant] = {"median_update_s": statistics.median(times), "updates_per_s": 1.0 / statistics.median(times),
                         "timed_updates": len(times),
                         "minor_page_faults_per_update": statistics.median(r["minor_page_faults_per_update"]
                                                                           for r in records),
                         "peak_rss_mib": max(r["peak_rss_mib"] for r in records)}  # fmt: skip
    base = rows["4k_pages"]["median_update_s"]
    for row in rows.values():
        row["speedup_vs_4k_pages"] = base / row["median_update_s"]
    losses = {r["last_loss"] for records in runs.values() for r in records}
    return {"variants": rows, "same_loss_in_every_run": len(losses) == 1}


def format_table(mode: str, summary: dict[str, Any]) -> str:
    """One block per mode: a row per variant."""
    header = (f"  {'variant':<10} {'s/update':>9} {'updates/s':>10} {'x 4k':>6} {'faults/update':>14} "
              f"{'peak RSS MiB':>13}")
    lines = [f"{mode}: {MODES[mode]}", header]
    for variant, row in summary["variants"].items():
        lines.append(f"  {variant:<10} {row['median_update_s']:>9.3f} {row['updates_per_s']:>10.3f} "
                     f"{row['speedup_vs_4k_pages']:>6.2f} {row['minor_page_faults_per_update']:>14,.0f} "
                     f"{row['peak_rss_mib']:>13,.0f}")  # fmt: skip
    lines.append(f"  same loss in every run: {summary['same_loss_in_every_run']}")
    return "\n".join(lines)


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = ArgumentParser(prog="simdist bench train", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="dataset folder from `simdist generate`")
    parser.add_argument("--robot", required=True, choices=["go2", "ur5e"], help="robot the dataset is of")
    parser.add_argument("--mode", default="pretrain,finetune", help=f"comma-separated: {', '.join(MODES)}")
    parser.add_argument("--batch", type=int, help="windows per update (default: 256 pretrain, 32 finetune)")
    parser.add_argument("--updates", type=int, default=4, help="timed updates per child")
    parser.add_argument("--warmup", type=int, default=1, help="untimed updates first (allocator, kernel choice)")
    parser.add_argument("--rounds", type=int, default=2, help="children per variant, variants alternating")
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads (`simdist pretrain` default 1)")
    parser.add_argument("--seed", type=int, default=0, help="model initialisation and batches (every child alike)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="PretrainConfig override, e.g. model.command_frame=true")
    parser.add_argument("--json", type=Path, help="write the record here")
    return parser.parse_args(argv)


@cli_main("simdist bench train")
def main(argv: list[str]) -> int:
    """Entry point of ``simdist bench train``; returns the exit code."""
    from simdist_core.config import parse_overrides
    from simdist_core.data.dataset import check_dataset
    from simdist_core.planning.bench import cpu_model
    from simdist_core.training.adapt import FinetuneConfig
    from simdist_core.training.pretrain import PretrainConfig

    args = _parse(argv)
    modes = [m.strip() for m in args.mode.split(",") if m.strip()]
    if not modes or any(m not in MODES for m in modes):
        raise UsageError(f"--mode: expected a comma-separated list of {sorted(MODES)}, got {args.mode!r}")
    for name in ("updates", "rounds", "threads"):
        check_positive(f"--{name}", getattr(args, name))
    check_positive("--warmup", args.warmup, allow_zero=True)
    if args.batch is not None:
        check_positive("--batch", args.batch)
    check_dataset("--data", args.data, args.robot)
    overrides = parse_overrides(args.overrides)
    record: dict[str, Any] = {"data": str(args.data), "robot": args.robot, "modes": {},
                              "machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                                          "load_avg_1m_at_start": os.getloadavg()[0]}}  # fmt: skip
    for mode in modes:
        default_batch = PretrainConfig().batch_size if mode == "pretrain" else FinetuneConfig().batch_size
        spec = {"mode": mode, "data": str(args.data), "robot": args.robot, "overrides": overrides,
                "batch": args.batch or default_batch, "updates": args.updates,
                "warmup": args.warmup, "threads": args.threads, "seed": args.seed}  # fmt: skip
        runs: dict[str, list[dict[str, Any]]] = {v: [] for v in VARIANTS}
        for _ in range(args.rounds):
            for variant in VARIANTS:
                runs[variant].append(run_variant(spec, variant))
        summary = summarise(runs)
        record["modes"][mode] = {"spec": spec, "runs": runs, **summary}
        print(format_table(mode, summary))
    record["machine"]["load_avg_1m_at_end"] = os.getloadavg()[0]
    print(f"machine: {record['machine']['cpu']}, {record['machine']['cores']} cores, load "
          f"{record['machine']['load_avg_1m_at_start']:.2f} -> {record['machine']['load_avg_1m_at_end']:.2f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(run_child(json.loads(sys.argv[2]))))
        sys.exit(0)
    sys.exit(main(sys.argv[1:]))
