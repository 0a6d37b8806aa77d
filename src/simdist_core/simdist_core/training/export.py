"""Writing trained world models as checkpoints with their metrics and provenance (``simdist_core.checkpoint``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from simdist_core.checkpoint import Manifest, save_checkpoint
from simdist_core.config import from_dict
from simdist_core.models.world_model import PART_NAMES
from simdist_core.planning.mppi import PlannerConfig


def write_pretrained(
    model: torch.nn.Module, out: Path, metrics: dict[str, float], provenance: dict[str, Any],
    planner_config: Any = None,  # noqa: ANN401
) -> Manifest:
    """Save a pretrained model as version 1 (all parts new); ``extra`` holds metrics and provenance."""
    return save_checkpoint(out, model, version=1, parent_version=None, parts_changed=PART_NAMES,
                           planner_config=planner_config,
                           extra={"kind": "pretrained", "metrics": metrics, "provenance": provenance})  # fmt: skip


def write_finetuned(
    model: torch.nn.Module, out: Path, parent: Manifest, parts: tuple[str, ...] | None, extra: dict[str, Any]
) -> Manifest:
    """Save a finetuned model as ``parent.version + 1``; ``parts`` None means every part changed."""
    changed = PART_NAMES if parts is None else tuple(p for p in PART_NAMES if p in parts)
    planner = None if parent.planner_config is None else from_dict(PlannerConfig, parent.planner_config)
    return save_checkpoint(out, model, version=parent.version + 1, parent_version=parent.version,
                           parts_changed=changed, planner_config=planner,  # deploy with the parent's planner
                           extra={"kind": "finetuned", **extra})  # fmt: skip
