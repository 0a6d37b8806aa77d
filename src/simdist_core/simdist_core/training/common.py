"""Pieces shared by the training runners: LR schedule, optimizer state I/O, CSV log, provenance.

Optimizer state is stored as safetensors (tensors) + JSON (everything else), never pickle, so a
resumed run never unpickles a file (checkpoints are safetensors + JSON, never pickles).
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file


@dataclass(frozen=True, kw_only=True)
class OptimConfig:
    """Adam with linear warmup then cosine decay (reference: Adam 2e-4, warmup + cosine)."""

    lr: float = 2e-4
    """Peak learning rate."""
    warmup_steps: int = 100
    """Linear warmup from 0 to ``lr`` over this many updates."""
    cosine: bool = True
    """Cosine decay from ``lr`` to ``lr * min_lr_ratio`` after warmup (False = constant)."""
    min_lr_ratio: float = 0.1
    """Final LR as a fraction of ``lr``."""
    weight_decay: float = 0.0
    """Decoupled weight decay (AdamW) when > 0."""
    grad_clip: float = 10.0
    """Global gradient-norm clip; 0 disables."""

    def __post_init__(self) -> None:
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ValueError(f"lr must be a positive finite number, got {self.lr=}")
        if self.warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, got {self.warmup_steps=}")
        if not 0.0 <= self.min_lr_ratio <= 1.0:
            raise ValueError(f"min_lr_ratio must be in [0, 1], got {self.min_lr_ratio=}")
        if self.weight_decay < 0 or self.grad_clip < 0:
            raise ValueError(f"weight_decay and grad_clip must be >= 0, got {self.weight_decay=}, {self.grad_clip=}")


def lr_at(step: int, total_steps: int, cfg: OptimConfig) -> float:
    """Learning rate for update number ``step`` (0-based) of ``total_steps``."""
    if cfg.warmup_steps and step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    if not cfg.cosine:
        return cfg.lr
    span = max(1, total_steps - cfg.warmup_steps)
    progress = min(1.0, (step - cfg.warmup_steps) / span)
    floor = cfg.lr * cfg.min_lr_ratio
    return floor + 0.5 * (cfg.lr - floor) * (1.0 + math.cos(math.pi * progress))


def make_optimizer(params: list[torch.nn.Parameter], cfg: OptimConfig) -> torch.optim.Optimizer:
    """Adam (or AdamW when weight decay is set) over ``params``."""
    if not params:
        raise ValueError("no trainable parameters: check the parts selected for training")
    if cfg.weight_decay > 0:
        return torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    return torch.optim.Adam(params, lr=cfg.lr)


def save_optimizer_state(optimizer: torch.optim.Optimizer, path: Path, extra: dict[str, Any]) -> None:
    """Write optimizer state to ``path`` (safetensors) and ``path.json`` (groups + ``extra``).

    Args:
        optimizer: any torch optimizer whose per-parameter state is tensors or scalars.
        path: target ``*.safetensors`` file.
        extra: JSON-ready runner state (step, config, ...), stored beside the groups.
    """
    state = optimizer.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    scalars: dict[str, Any] = {}
    for idx, per_param in state["state"].items():
        for key, value in per_param.items():
            name = f"state.{idx}.{key}"
            if isinstance(value, torch.Tensor):
                tensors[name] = value.detach().cpu().contiguous()
            else:
                scalars[name] = value
    meta = {"param_groups": state["param_groups"], "scalars": scalars, "extra": extra}
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file_atomic(tensors, path)
    _atomic_write_text(path.with_suffix(".json"), json.dumps(meta, indent=2, default=list))


def load_optimizer_state(optimizer: torch.optim.Optimizer, path: Path) -> dict[str, Any]:
    """Restore what ``save_optimizer_state`` wrote; returns its ``extra`` dict.

    Raises:
        FileNotFoundError: either file is missing.
        ValueError: the saved groups do not match this optimizer (different parts or model).
    """
    meta = json.loads(path.with_suffix(".json").read_text())
    tensors = load_file(str(path))
    per_param: dict[int, dict[str, Any]] = {}
    for name, tensor in tensors.items():
        _, idx, key = name.split(".", 2)
        per_param.setdefault(int(idx), {})[key] = tensor
    for name, value in meta["scalars"].items():
        _, idx, key = name.split(".", 2)
        per_param.setdefault(int(idx), {})[key] = value
    groups = meta["param_groups"]
    for group in groups:
        if "betas" in group:
            group["betas"] = tuple(group["betas"])
    current = optimizer.state_dict()["param_groups"]
    if [len(g["params"]) for g in groups] != [len(g["params"]) for g in current]:
        raise ValueError(
            f"optimizer state in {path} has groups of sizes {[len(g['params']) for g in groups]}, this run has "
            f"{[len(g['params']) for g in current]}: resume with the same parts/model config, or start fresh"
        )
    optimizer.load_state_dict({"state": per_param, "param_groups": groups})
    return dict(meta["extra"])


class CsvLog:
    """Append-only CSV of scalar metrics; new columns after the first row go to a new file suffix."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fields: list[str] | None = None
        if path.exists():
            with path.open() as f:
                header = f.readline().strip()
            self._fields = header.split(",") if header else None

    def write(self, row: dict[str, float | int | str]) -> None:
        """Append one row; keys unseen in the header are dropped (the header is fixed by the first row)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        new = self._fields is None
        if new:
            self._fields = list(row)
        with self.path.open("a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=self._fields, extrasaction="ignore")
            if new:
                writer.writeheader()
            writer.writerow(row)


def git_describe() -> str:
    """``git describe --always --dirty`` of the source tree, or ``"unknown"`` outside a git checkout."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--tags"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() or "unknown"


def directory_checksum(root: Path, pattern: str = "*.json") -> str:
    """sha256 over the sorted (relative name, bytes) of files matching ``pattern`` under ``root``.

    Datasets store per-chunk checksums in their JSON manifests, so hashing the manifests identifies
    the data without reading every array.
    """
    digest = hashlib.sha256()
    for file in sorted(root.rglob(pattern)):
        digest.update(str(file.relative_to(root)).encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()


def save_file_atomic(tensors: dict[str, torch.Tensor], path: Path, metadata: dict[str, str] | None = None) -> None:
    """``safetensors.save_file`` through a temporary file, so a kill mid-write leaves the previous file whole."""
    tmp = path.with_name(path.name + ".tmp")
    save_file(tensors, str(tmp), metadata=metadata)
    tmp.replace(path)


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def seed_everything(seed: int) -> torch.Generator:
    """Seed torch (and numpy) globally; returns a torch generator for sampling."""
    import numpy as np

    torch.manual_seed(seed)
    np.random.seed(seed % (2**32))
    return torch.Generator().manual_seed(seed)


def check_device(what: str, device: str) -> str:
    """A torch device named on the command line that this machine has (``cpu``, ``cuda``, ``cuda:N``).

    Raises:
        UsageError: not a device name, or CUDA asked for where torch has none.
    """
    from simdist_core.cliargs import UsageError

    try:
        parsed = torch.device(device)
    except RuntimeError:
        raise UsageError(f"{what} {device!r} is not a torch device; valid: cpu, cuda, cuda:N") from None
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise UsageError(f"{what} {device!r}: CUDA is not available in this torch build ({torch.__version__}); "
                         "use cpu")
    if parsed.type not in ("cpu", "cuda"):
        raise UsageError(f"{what} {device!r} is not supported; valid: cpu, cuda, cuda:N")
    return device
