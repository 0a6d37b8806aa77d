"""Update math: loss + optimizer step over selected world-model parts (rsl_rl ``algorithms/`` role).

``WorldModelTrainer`` trains named parts of a ``WorldModel`` on ``WindowBatch`` dicts and returns
``dict[str, float]`` per update; it knows nothing about data loading, logging or files (runners
do that). ``DynamicsFinetuner`` is the SimDist adaptation step: only ``model.dynamics`` gets
gradients, every other part is frozen (``requires_grad=False``) and stays bit-identical, and the
loss is latent consistency only (what the real robot can supervise without labels).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch

from simdist_core.training.common import OptimConfig, lr_at, make_optimizer
from simdist_core.training.distributed import DistInfo, average_gradients

Batch = Mapping[str, Any]
"""A ``WindowBatch`` (see the brief / ``simdist_core.data.sampler``)."""
Regularizer = Callable[[torch.nn.Module, Batch], tuple[torch.Tensor, dict[str, float]]]
"""An extra training term: ``(model, batch) -> (weighted scalar with grad, named float terms for logging)``."""

MAX_CONSECUTIVE_NONFINITE = 10
"""Updates with a non-finite loss are skipped; this many in a row means training diverged."""


def compute_loss(model: torch.nn.Module, batch: Batch, weights: Any) -> tuple[torch.Tensor, dict[str, float]]:
    """Call ``simdist_core.training.losses.world_model_loss`` and normalise its result.

    Returns:
        (scalar loss tensor with grad, named float terms including ``"loss"``).
    """
    from simdist_core.training.losses import world_model_loss

    out = world_model_loss(model, batch, weights)
    if isinstance(out, tuple):
        loss, terms = out[0], dict(out[1])
    elif isinstance(out, Mapping):
        terms = dict(out)
        loss = terms.pop("loss") if "loss" in terms else terms.pop("total")
    else:
        loss, terms = out, {}
    metrics = {k: float(v.detach()) if isinstance(v, torch.Tensor) else float(v) for k, v in terms.items()}
    metrics["loss"] = float(loss.detach())
    return loss, metrics


def trainable_parameters(model: torch.nn.Module, parts: Iterable[str] | None) -> list[torch.nn.Parameter]:
    """Freeze every part not in ``parts`` (None = train all) and return the trainable parameters."""
    if parts is None:
        for p in model.parameters():
            p.requires_grad_(True)
    else:
        from simdist_core.models.world_model import freeze_except

        freeze_except(model, tuple(parts))
    return [p for p in model.parameters() if p.requires_grad]


class WorldModelTrainer:
    """Adam + warmup/cosine over the selected parts of a world model.

    Args:
        model: a ``simdist_core.models.WorldModel`` (or anything ``world_model_loss`` accepts).
        weights: loss weights object passed through to ``world_model_loss``.
        optim: optimizer/schedule settings.
        total_steps: length of the schedule (cosine reaches its floor here).
        parts: names of the parts to train; None trains all.
        dist_info: data-parallel setup; gradients are averaged over ranks when enabled.
        regularizer: called as ``regularizer(model, batch) -> (weighted term, named float terms)`` every update;
            the term is added to the loss (e.g. ``simdist_core.training.anchor.ActionEffectAnchor``). Evaluation
            (``evaluate``, the validation gate) scores the weighted loss terms without it.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        *,
        weights: Any,
        optim: OptimConfig,
        total_steps: int,
        parts: Iterable[str] | None = None,
        dist_info: DistInfo | None = None,
        regularizer: Regularizer | None = None,
    ) -> None:
        if total_steps < 1:
            raise ValueError(f"total_steps must be >= 1, got {total_steps=}")
        self.model = model
        self.weights = weights
        self.optim_cfg = optim
        self.total_steps = total_steps
        self.parts = None if parts is None else tuple(parts)
        self.dist_info = dist_info or DistInfo()
        self.regularizer = regularizer
        self.params = trainable_parameters(model, self.parts)
        self.optimizer = make_optimizer(self.params, optim)
        self.step = 0
        """Number of optimizer updates done (the schedule position)."""
        self._nonfinite_streak = 0

    def update(self, batch: Batch) -> dict[str, float]:
        """One optimizer step on ``batch``; returns loss terms, ``lr`` and ``grad_norm``.

        A non-finite loss skips the step (reported as ``skipped=1``).

        Raises:
            FloatingPointError: ``MAX_CONSECUTIVE_NONFINITE`` non-finite losses in a row.
        """
        self.model.train()
        lr = lr_at(self.step, self.total_steps, self.optim_cfg)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        loss, metrics = compute_loss(self.model, batch, self.weights)
        if self.regularizer is not None:
            extra, extra_terms = self.regularizer(self.model, batch)
            loss = loss + extra
            metrics.update(extra_terms)
            metrics["loss"] = float(loss.detach())
        self.optimizer.zero_grad(set_to_none=True)
        finite = math.isfinite(metrics["loss"])
        if self.dist_info.enabled:  # every rank must take the same branch or the all-reduce hangs
            flag = torch.tensor([0.0 if finite else 1.0])
            torch.distributed.all_reduce(flag)
            finite = bool(flag.item() == 0.0)
        if not finite:
            self._nonfinite_streak += 1
            if self._nonfinite_streak >= MAX_CONSECUTIVE_NONFINITE:
                raise FloatingPointError(
                    f"{self._nonfinite_streak} non-finite losses in a row at step {self.step} "
                    f"(last terms {metrics}): lower optim.lr or check the data for NaN"
                )
            return {**metrics, "lr": lr, "grad_norm": float("nan"), "skipped": 1.0}
        self._nonfinite_streak = 0
        loss.backward()
        average_gradients(self.params, self.dist_info)
        clip = self.optim_cfg.grad_clip if self.optim_cfg.grad_clip > 0 else float("inf")
        grad_norm = float(torch.nn.utils.clip_grad_norm_(self.params, clip))
        self.optimizer.step()
        self.step += 1
        return {**metrics, "lr": lr, "grad_norm": grad_norm, "skipped": 0.0}

    @torch.no_grad()
    def evaluate(self, batches: Iterable[Batch]) -> dict[str, float]:
        """Mean loss terms over ``batches`` in eval mode (no parameter change)."""
        return evaluate_loss(self.model, batches, self.weights)


class DynamicsFinetuner(WorldModelTrainer):
    """SimDist adaptation: latent-consistency loss, gradients to ``model.dynamics`` only.

    Args:
        model: the world model to adapt in place.
        optim: optimizer settings (reference: Adam 2e-4 with warmup, batch 32).
        total_steps: schedule length.
        parts: parts to train; ``("dynamics",)`` is SimDist, ``None`` (all) is the full-finetune baseline.
        weights: loss weights; default = latent consistency only (``finetune_loss_weights()``).
        regularizer: an extra training term (see ``WorldModelTrainer``).
    """

    def __init__(
        self,
        model: torch.nn.Module,
        *,
        optim: OptimConfig,
        total_steps: int,
        parts: Iterable[str] | None = ("dynamics",),
        weights: Any = None,
        regularizer: Regularizer | None = None,
    ) -> None:
        super().__init__(
            model,
            weights=finetune_loss_weights() if weights is None else weights,
            optim=optim,
            total_steps=total_steps,
            parts=parts,
            regularizer=regularizer,
        )


def finetune_loss_weights(reward: float = 0.0, reward_on_predicted: bool = True, value: float = 0.0,
                          bc: float = 0.0) -> Any:  # noqa: ANN401
    """Loss weights with only the latent-consistency term on (the rest are labels a robot lacks).

    ``reward`` > 0 also weighs the reward head's terms, for data that carries each transition's reward
    (``FinetuneConfig.reward_weight``): on encoded latents, and on predicted latents unless
    ``reward_on_predicted`` is False (``FinetuneConfig.reward_on_predicted``). ``value`` > 0 weighs the value
    head's terms on both, for simulation data with value labels (``FinetuneConfig.value_weight``). ``bc`` > 0
    weighs the policy prior's imitation of expert labels (``FinetuneConfig.bc_weight``), simulation data only.
    """
    from simdist_core.models.world_model import LossWeights

    return LossWeights(consistency=1.0, reward=reward if reward_on_predicted else 0.0, value=value,
                       reward_encoded=reward, value_encoded=value, bc=bc, probe=0.0)  # fmt: skip


@torch.no_grad()
def evaluate_loss(model: torch.nn.Module, batches: Iterable[Batch], weights: Any) -> dict[str, float]:
    """Mean of each loss term over ``batches`` with the model in eval mode (restored afterwards)."""
    was_training = model.training
    model.eval()
    sums: dict[str, float] = {}
    count = 0
    for batch in batches:
        _, metrics = compute_loss(model, batch, weights)
        for key, value in metrics.items():
            sums[key] = sums.get(key, 0.0) + value
        count += 1
    model.train(was_training)
    if count == 0:
        raise ValueError("evaluate_loss got no batches: the held-out split is empty")
    return {key: value / count for key, value in sums.items()}
