"""``simdist bench planner``: planner tick latency and dynamics rollout cost (table + JSON).

Uses a RANDOMLY INITIALISED world model of the real (reference) size unless ``--checkpoint`` names a
trained one: latency depends on sizes, not on weights. Not a test: numbers depend on the machine and
its load, which are recorded.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from simdist_core.checkpoint import load_for_cli
from simdist_core.cliargs import ArgumentParser, check_positive, checkpoint_dir, cli_main
from simdist_core.config import to_dict
from simdist_core.models.world_model import Latent, WorldModel, WorldModelConfig
from simdist_core.planning.mppi import PRESETS, MPPIPlanner
from simdist_core.robots import ROBOTS, RobotSpec
from simdist_core.training.common import check_device


def cpu_model() -> str:
    """The CPU model name (/proc/cpuinfo), for benchmark reports."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def random_model_input(spec: RobotSpec, batch: int = 1, seed: int = 0) -> dict[str, torch.Tensor]:
    """A random model-input batch in the layout of ``simdist_core.robots`` (for benchmarks and tests)."""
    g = torch.Generator().manual_seed(seed)
    obs = {
        "proprio": torch.randn(batch, spec.history, spec.proprio_dim, generator=g),
        "prev_actions": torch.rand(batch, spec.history, spec.action_dim, generator=g) * 2 - 1,
    }
    if spec.command_dim:
        obs["command"] = torch.randn(batch, spec.command_dim, generator=g)
    if spec.height_map_shape:
        obs["height_map"] = torch.randn(batch, *spec.height_map_shape, generator=g) * 0.05
    if spec.image_shape:
        obs["image"] = torch.randint(0, 256, (batch, 3, *spec.image_shape), generator=g, dtype=torch.uint8)
    return obs


def _time_ms(fn: Callable[[], object], device: torch.device, repeats: int) -> list[float]:
    """Wall-clock milliseconds of ``repeats`` calls (CUDA-synchronised)."""
    return _time_wall_and_cpu_ms(fn, device, repeats)[0]


def _time_wall_and_cpu_ms(
    fn: Callable[[], object], device: torch.device, repeats: int
) -> tuple[list[float], list[float]]:
    """Wall-clock and process-CPU milliseconds of ``repeats`` calls.

    On a shared machine wall time includes waiting for a core; with one torch thread the process CPU
    time is close to what the same call takes on an idle core, so both are reported.
    """
    wall, cpu = [], []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        wall.append((time.perf_counter() - start) * 1e3)
        cpu.append((time.process_time() - start_cpu) * 1e3)
    return wall, cpu


def run_bench(
    preset: str, device: str, ticks: int, robot: str, warmup: int = 3, model: WorldModel | None = None
) -> dict[str, object]:
    """Measure planner ticks and one H-step rollout with both dynamics kinds; returns the JSON record.

    ``model`` (e.g. a loaded checkpoint) replaces the default randomly initialised reference-size model.
    """
    spec, dev, cfg = ROBOTS[robot], torch.device(device), PRESETS[preset]
    load_at_start = os.getloadavg()[0]
    torch.manual_seed(0)
    weights = "random init (latency depends on sizes, not weights)" if model is None else "loaded checkpoint"
    model = (model or WorldModel(spec, WorldModelConfig())).to(dev).eval()
    spec = model.spec
    planner = MPPIPlanner(model, cfg, device=dev, seed=0)
    obs = {k: v.to(dev) for k, v in random_model_input(spec).items()}
    with torch.inference_mode():
        latent = model.encode(obs)
        encode_ms = _time_ms(lambda: model.encode(obs), dev, 20)
    for _ in range(warmup):
        planner.plan_latent(latent)
    wall, cpu = _time_wall_and_cpu_ms(lambda: planner.plan_latent(latent), dev, ticks)
    tick_ms, tick_cpu_ms = np.array(wall), np.array(cpu)
    # The planner node's tick: the mean's own rollout is predicted after the command, only to be drawn.
    node_ms = np.array(_time_wall_and_cpu_ms(lambda: planner.plan_latent(latent, predict_mean=False), dev, ticks)[0])

    # One H-step rollout of the same candidate batch, multi-step transformer vs autoregressive MLP.
    n = cfg.num_samples + cfg.num_pi_samples
    actions = torch.rand(n, cfg.horizon, spec.action_dim, device=dev) * 2 - 1
    mlp_model = WorldModel(spec, dataclasses.replace(model.cfg, dynamics="mlp")).to(dev).eval()
    expanded = Latent(latent.z.expand(n, -1), latent.context.expand(n, -1, -1))
    rollout: dict[str, float] = {}
    with torch.inference_mode():
        for name, fn in (
            ("multistep_ms", lambda: model.predict(latent, actions)),
            ("multistep_expanded_context_ms", lambda: model.predict(expanded, actions)),
            ("autoregressive_ms", lambda: mlp_model.predict(latent, actions)),
        ):
            fn()
            rollout[name] = float(np.median(_time_ms(fn, dev, 20)))
    return {
        "preset": preset,
        "robot": spec.name,
        "device": str(dev),
        "horizon": cfg.horizon,
        "samples": cfg.num_samples,
        "pi_samples": cfg.num_pi_samples,
        "iterations": cfg.iterations,
        "rollouts_per_tick": cfg.num_pi_samples + 1 + cfg.num_samples * cfg.iterations + 1,  # + warm start, final
        "ticks": ticks,
        "warmup_ticks": warmup,
        "p50_ms": float(np.percentile(tick_ms, 50)),
        "p99_ms": float(np.percentile(tick_ms, 99)),
        "max_ms": float(tick_ms.max()),
        "node_tick_p50_ms": float(np.percentile(node_ms, 50)),
        "node_tick_p99_ms": float(np.percentile(node_ms, 99)),
        "cpu_time_p50_ms": float(np.percentile(tick_cpu_ms, 50)),
        "cpu_time_p99_ms": float(np.percentile(tick_cpu_ms, 99)),
        "encode_ms": float(np.median(encode_ms)),
        **rollout,
        "rollout_batch": n,
        "torch_threads": torch.get_num_threads(),
        "model_parameters": model.num_parameters()["total"],
        "model_weights": weights,
        "model_config": to_dict(model.cfg),
        "machine": {
            "cpu": cpu_model(),
            "cores": os.cpu_count(),
            "load_avg_1m_at_start": load_at_start,
            "load_avg_1m_at_end": os.getloadavg()[0],
            "cuda": torch.cuda.get_device_name(dev) if dev.type == "cuda" else None,
            "torch": torch.__version__,
        },
    }


@cli_main("simdist bench planner")
def main(argv: list[str]) -> int:
    """``simdist bench planner --preset cpu --device cpu --json out.json [--ticks N] [--robot go2]``."""
    parser = ArgumentParser(prog="simdist bench planner", description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu", help="planner preset")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    parser.add_argument("--json", type=Path, default=None, help="write the record here")
    parser.add_argument("--ticks", type=int, default=200, help="timed planner ticks")
    parser.add_argument("--warmup", type=int, default=3, help="untimed ticks first (allocations, kernel choice)")
    parser.add_argument("--robot", choices=sorted(ROBOTS), default="go2", help="ignored with --checkpoint")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (the planner node uses 1)")
    parser.add_argument("--checkpoint", type=Path, default=None, help="bench this checkpoint's model instead")
    args = parser.parse_args(argv)
    check_device("--device", args.device)
    check_positive("--ticks", args.ticks)
    check_positive("--warmup", args.warmup, allow_zero=True)
    check_positive("--threads", args.threads)
    if args.checkpoint is not None:
        checkpoint_dir("--checkpoint", args.checkpoint)
    torch.set_num_threads(args.threads)
    model = None
    if args.checkpoint is not None:
        model = load_for_cli("--checkpoint", args.checkpoint)[0]
    record = run_bench(args.preset, args.device, args.ticks, args.robot, warmup=args.warmup, model=model)
    print(f"planner benchmark ({record['model_weights']}, {record['model_parameters']:,} parameters, "
          f"config {record['model_config']})")
    for key, value in record.items():
        if not isinstance(value, dict) and key not in ("model_weights", "model_parameters", "model_config"):
            print(f"  {key:<30} {value:.2f}" if isinstance(value, float) else f"  {key:<30} {value}")
    for key, value in record["machine"].items():  # type: ignore[union-attr]
        print(f"  machine.{key:<22} {value}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(record, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0
