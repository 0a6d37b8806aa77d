"""Data-parallel training across processes (``torchrun``), CPU (gloo) or GPU (nccl).

The world model is called through named methods (``encode``, ``predict`` ...) rather than one
``forward``, so ``DistributedDataParallel``'s forward hooks do not fit. Instead each rank computes
gradients on its own batch and :func:`average_gradients` all-reduces them before the optimizer step;
parameters start identical (:func:`broadcast_parameters`) and therefore stay identical. This is the
same arithmetic as DDP without bucketing/overlap, which is irrelevant at ~1 M parameters.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True, kw_only=True)
class DistInfo:
    """Where this process sits in the job."""

    rank: int = 0
    """Global rank (0 = writes logs and checkpoints)."""
    world_size: int = 1
    """Number of processes."""
    local_rank: int = 0
    """Rank on this node (selects the GPU)."""

    @property
    def enabled(self) -> bool:
        """True when more than one process takes part."""
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        """True on the process that logs and writes files."""
        return self.rank == 0


def init_from_env(device: str = "cpu") -> DistInfo:
    """Join the process group that ``torchrun`` describes in the environment; no-op when run alone.

    Args:
        device: ``"cpu"`` uses gloo, ``"cuda"`` uses nccl and selects ``cuda:LOCAL_RANK``.

    Returns:
        This process's rank information (world size 1 when ``WORLD_SIZE`` is unset).
    """
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return DistInfo()
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if not dist.is_initialized():
        backend = "nccl" if device.startswith("cuda") else "gloo"
        if backend == "nccl":
            torch.cuda.set_device(local_rank)
        dist.init_process_group(backend=backend, rank=rank, world_size=world_size)
    return DistInfo(rank=rank, world_size=world_size, local_rank=local_rank)


def broadcast_parameters(module: torch.nn.Module, info: DistInfo) -> None:
    """Copy rank 0's parameters and buffers to every rank."""
    if not info.enabled:
        return
    with torch.no_grad():
        for tensor in list(module.parameters()) + list(module.buffers()):
            dist.broadcast(tensor.data, src=0)


def average_gradients(params: list[torch.nn.Parameter], info: DistInfo) -> None:
    """All-reduce (mean) the gradients of ``params``; a missing gradient counts as zero."""
    if not info.enabled:
        return
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    flat = torch.cat([g.reshape(-1) for g in grads])  # one collective instead of one per tensor
    dist.all_reduce(flat, op=dist.ReduceOp.SUM)
    flat /= info.world_size
    offset = 0
    for p, g in zip(params, grads, strict=True):
        n = g.numel()
        p.grad = flat[offset : offset + n].view_as(p).clone()
        offset += n


def average_scalars(values: dict[str, float], info: DistInfo) -> dict[str, float]:
    """Mean of a metrics dict over ranks (same keys on every rank)."""
    if not info.enabled or not values:
        return values
    keys = sorted(values)
    tensor = torch.tensor([values[k] for k in keys], dtype=torch.float64)
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return {k: float(v) / info.world_size for k, v in zip(keys, tensor.tolist(), strict=True)}


def barrier(info: DistInfo) -> None:
    """Wait for every rank (no-op when alone)."""
    if info.enabled:
        dist.barrier()


def shutdown(info: DistInfo) -> None:
    """Leave the process group."""
    if info.enabled and dist.is_initialized():
        dist.destroy_process_group()
