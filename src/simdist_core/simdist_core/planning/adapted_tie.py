"""The planner's tie to the frozen policy prior, loosened once the model has learned this robot.

The deployed planner subtracts ``prior_weight`` x a candidate plan's mean squared distance from the policy prior's
plan (``PlannerConfig.prior_weight``), so MPPI cannot exploit what a model that has never seen this robot gets
wrong. Dynamics-only finetuning leaves the prior frozen and teaches the dynamics the robot's own transitions; a
model finetuned on enough of them can be searched harder. Measured on the UR5e (protocols
``UR5E_TIE_AFTER_ADAPTING.md`` and ``UR5E_TIE_CONFIRM.md`` under ``bench_results/``): at tie 500 the shipped model
inserts fewer pegs than at 1000 on the milder stand-in (0.35 against 0.617), adapted models about as many or more;
on the harder shifted peg adapted models inserted 0.267 at tie 500 against 0.161 at 1000 and the shipped model's
0.15 on the benchmark's episodes, but on new episodes of either stand-in the gain over the shipped model was not
shown (``UR5E_TIE_SHIFTED_NEW.md``), so no graph turns this on by default.

A model counts as adapted when its manifest says it was finetuned on at least ``after_data_steps`` steps of this
robot's data (``data_steps``, written by the finetuner node and by ``simdist finetune --bag``): a model that has
seen less than the measured ones is not given a tie nobody measured it with.
"""

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AdaptedTie:
    """``prior_weight`` for a model finetuned on at least ``after_data_steps`` steps; negative = never loosen."""

    prior_weight: float = -1.0
    """The tie an adapted model runs with (>= 0), or negative: every model keeps the deployed tie."""
    after_data_steps: int = 0
    """Steps of this robot's data a model must have been finetuned on to count as adapted."""

    def __post_init__(self) -> None:
        if math.isnan(self.prior_weight):
            raise ValueError("adapted prior_weight is nan")
        if self.after_data_steps < 0:
            raise ValueError(f"after_data_steps must be >= 0, got {self.after_data_steps}")

    @property
    def enabled(self) -> bool:
        """Whether any model is ever given the looser tie."""
        return self.prior_weight >= 0.0

    def applies(self, data_steps: int | None) -> bool:
        """Whether a model finetuned on ``data_steps`` steps of robot data (None: not finetuned) gets the tie."""
        return self.enabled and data_steps is not None and data_steps >= self.after_data_steps

    def prior_weight_for(self, deployed: float, data_steps: int | None) -> float:
        """The tie for a model finetuned on ``data_steps`` steps: ``prior_weight`` if it applies, else ``deployed``."""
        return self.prior_weight if self.applies(data_steps) else deployed


def finetuned_data_steps(manifest: Any) -> int | None:  # noqa: ANN401  (a Manifest, or anything without extras)
    """Steps of robot data the checkpoint was finetuned on (the finetuner's ``data_steps``), or None.

    None for a pretrained checkpoint and for a value that is not a non-negative integer: a malformed count never
    loosens the tie.
    """
    extra = getattr(manifest, "extra", None)
    steps = extra.get("data_steps") if isinstance(extra, dict) else None
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        return None
    return steps
