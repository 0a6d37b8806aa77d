#!/usr/bin/env python3
"""How fast can this CPU score planner candidates, and what do torch.compile and ONNX Runtime add?

Times what one MPPI iteration costs per tick: rolling N candidates out through the dynamics and scoring
them with the reward and terminal value (``MPPIPlanner._rollout``, the planner's own code), for several N,
with three backends side by side in one process, interleaved round by round so that a shared machine's
slow minutes hit all of them alike:

    eager        the planner as it runs (PyTorch, inference mode)
    compile      ``torch.compile`` of the same computation (inductor; needs a C++ compiler at run time)
    onnxruntime  the same computation exported to ONNX, run by ONNX Runtime's CPU provider

Each backend's returns and latents are compared with eager's (max absolute difference), so a faster
backend that computes something else shows. Also reported, to say *why* a budget is missed: the FLOPs of
one rollout (``torch.utils.flop_counter``, matrix products and attention) and the rate this core reaches
on a plain matrix product of the model's largest layer shape, i.e. the time the arithmetic alone needs.

Not a project dependency: ``pip install onnxruntime onnx`` to include ONNX Runtime (skipped otherwise).

    python scripts/diagnostics/planner_backends.py --samples 42,73,137 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from simdist_core.checkpoint import load_checkpoint
from simdist_core.models.world_model import Latent, WorldModel, WorldModelConfig
from simdist_core.planning.bench import cpu_model, random_model_input
from simdist_core.planning.mppi import PRESETS, MPPIPlanner
from simdist_core.robots import ROBOTS
from torch import nn
from torch.utils.flop_counter import FlopCounterMode


class Rollout(nn.Module):
    """The planner's ``_rollout`` as a module of tensors only (what compile and export need)."""

    def __init__(self, planner: MPPIPlanner) -> None:
        super().__init__()
        self.planner = planner
        self.model = planner.model

    def forward(
        self, z: torch.Tensor, context: torch.Tensor, actions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Discounted returns (N,) and predicted latents (N, H, D) of ``actions`` (N, H, A) from (z, context)."""
        returns, zs = self.planner._rollout(Latent(z, context), actions)
        return returns, zs


def onnx_backend(
    rollout: Rollout, z: torch.Tensor, context: torch.Tensor, actions: torch.Tensor
) -> tuple[Callable[..., tuple[torch.Tensor, torch.Tensor]], dict[str, str]] | None:
    """An ONNX Runtime session of ``rollout`` with a dynamic candidate count, or None if not installed."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    path = Path(tempfile.mkdtemp()) / "rollout.onnx"
    torch.onnx.export(rollout, (z, context, actions), path, input_names=["z", "context", "actions"],
                      output_names=["returns", "zs"], opset_version=17, dynamo=False,
                      dynamic_axes={"actions": {0: "n"}, "returns": {0: "n"}, "zs": {0: "n"}})  # fmt: skip
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = torch.get_num_threads()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}  # the transformer ignores z: the exporter drops it

    def run(z: torch.Tensor, context: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        feed = {k: v.numpy() for k, v in (("z", z), ("context", context), ("actions", actions)) if k in names}
        returns, zs = session.run(None, feed)
        return torch.from_numpy(returns), torch.from_numpy(zs)

    return run, {"onnxruntime": ort.__version__}


def gemm_gflops(rows: int, inner: int, cols: int, repeats: int = 30) -> float:
    """Median GFLOP/s of a (rows x inner) @ (inner x cols) float32 product on this core."""
    a, b = torch.randn(rows, inner), torch.randn(inner, cols)
    for _ in range(3):
        a @ b
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return 2 * rows * inner * cols / float(np.median(times)) / 1e9


def main() -> None:
    """Time the backends for each N, print a table and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", default="42,73,137", help="candidates per rollout, comma list")
    parser.add_argument("--checkpoint", type=Path, default=None, help="default: a random reference-size Go2 model")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--repeats", type=int, default=20, help="timed calls per backend per round")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile (saves ~20 s per N)")
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    if args.checkpoint is None:
        model, weights = WorldModel(ROBOTS["go2"], WorldModelConfig()), "random init, reference size"
    else:
        model, weights = load_checkpoint(args.checkpoint)[0], str(args.checkpoint)
    planner = MPPIPlanner(model.eval(), PRESETS["cpu"])
    rollout = Rollout(planner).eval()
    with torch.inference_mode():
        latent = model.encode(random_model_input(model.spec))
    z, context = latent.z.clone(), latent.context.clone()
    cfg = model.cfg
    record: dict[str, object] = {
        "what": "one rollout + score of N candidates (MPPIPlanner._rollout), H = 25, 1 torch thread",
        "model_weights": weights,
        "model_parameters": model.num_parameters()["total"],
        "gemm_gflops_ffn_shape": gemm_gflops(137 * 25, cfg.width, cfg.ffn),
        "machine": {
            "cpu": cpu_model(),
            "cores": os.cpu_count(),
            "torch": torch.__version__,
            "load_avg_1m_at_start": os.getloadavg()[0],
        },  # fmt: skip
        "results": [],
    }
    for n in (int(s) for s in args.samples.split(",")):
        actions = torch.rand(n, 25, model.spec.action_dim, generator=torch.Generator().manual_seed(n)) * 2 - 1
        backends = {"eager": rollout}
        with torch.inference_mode():
            reference = rollout(z, context, actions)
            counter = FlopCounterMode(display=False)
            with counter:
                rollout(z, context, actions)
            if not args.no_compile:
                start = time.perf_counter()
                backends["compile"] = torch.compile(rollout, dynamic=False)
                backends["compile"](z, context, actions)
                compile_s = time.perf_counter() - start
        with torch.no_grad():
            ort_backend = onnx_backend(rollout, z, context, actions)
        if ort_backend is not None:
            backends["onnxruntime"], versions = ort_backend
            record["machine"].update(versions)  # type: ignore[union-attr]
        times: dict[str, list[float]] = {name: [] for name in backends}
        diffs: dict[str, float] = {}
        with torch.inference_mode():
            for name, fn in backends.items():
                returns, zs = fn(z, context, actions)
                diffs[name] = max(float((returns - reference[0]).abs().max()), float((zs - reference[1]).abs().max()))
            for _ in range(args.rounds):
                for name, fn in backends.items():
                    fn(z, context, actions)
                    for _ in range(args.repeats):
                        start = time.perf_counter()
                        fn(z, context, actions)
                        times[name].append((time.perf_counter() - start) * 1e3)
        flops = counter.get_total_flops()
        row = {"samples": n, "mflop": flops / 1e6,
               "arithmetic_only_ms": flops / record["gemm_gflops_ffn_shape"] / 1e6}  # fmt: skip
        if not args.no_compile:
            row["compile_s"] = compile_s
        eager_p50 = float(np.percentile(times["eager"], 50))
        for name, ms in times.items():
            p50 = float(np.percentile(ms, 50))
            row[name] = {"p50_ms": p50, "p99_ms": float(np.percentile(ms, 99)), "ms_per_candidate": p50 / n,
                         "speedup_p50_vs_eager": eager_p50 / p50, "max_abs_diff_vs_eager": diffs[name]}  # fmt: skip
        record["results"].append(row)  # type: ignore[union-attr]
        print(f"N={n:4d}  {flops / 1e6:7.0f} MFLOP  arithmetic alone {row['arithmetic_only_ms']:5.1f} ms")
        for name in backends:
            r = row[name]
            print(
                f"   {name:<12} p50 {r['p50_ms']:6.2f}  p99 {r['p99_ms']:6.2f} ms  {r['ms_per_candidate']:.3f} ms/cand"
                f"  x{r['speedup_p50_vs_eager']:.2f}  max|diff| {r['max_abs_diff_vs_eager']:.1e}"
            )
    record["machine"]["load_avg_1m_at_end"] = os.getloadavg()[0]  # type: ignore[index]
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(record, indent=2) + "\n")
    print(f"GEMM on this core: {record['gemm_gflops_ffn_shape']:.1f} GFLOP/s; wrote {args.json}")


if __name__ == "__main__":
    main()
