"""Fit the planner's sample count to the time a control tick has (a deadline-aware MPPI budget).

Why: the in-process evaluation is untimed, so a command always acts on the state it was planned from; the live
graph is not. When one tick's plan takes longer than the control period the command answers an observation two
or three periods old, a delay the world model never saw: on a 2-core VM whose planner needed 23 ms per tick
(p50) for the ``cpu`` preset's 32 + 8 + 1 rollouts, the Go2 fell in all 60 foam episodes through the graph at
real-time factor 1 (command delay 2–3 periods) against 31/60 in-process with the same weights and seeds. The
budget bench measured no loss in task metric from halving the Gaussian samples (16 vs 32 at one iteration:
flat 5.77 vs 5.76 m, foam 2.87 vs 2.73 m over 10 episodes), so fewer samples on time beat more samples late.

``SampleBudget`` watches the planner's own compute time per tick and steps the Gaussian sample count down when
a high quantile of it exceeds its share of the period, and back up (never above the configured count) when
there is room again. It decides once per full window of ticks on that window only, so one decision's effect is
measured before the next. Policy-prior candidates and the warm start are never dropped: with zero Gaussian
samples the planner still executes the better of the prior's plan and last tick's plan (the ``prior`` preset).
Plain Python, no clock of its own: the caller measures and passes seconds, so tests can drive it exactly.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class SampleBudgetConfig:
    """When and how far the Gaussian sample count moves."""

    target_fraction: float = 0.6
    """Share of the control period the plan may take (the rest is for encoding, DDS and the robot's step)."""
    quantile: float = 0.9
    """Quantile of the window's plan times compared with the target."""
    window: int = 25
    """Ticks per decision (half a second at 50 Hz)."""
    shrink: float = 0.75
    """Sample count multiplier when over the target (rounded down)."""
    grow_below: float = 0.6
    """Grow (inverse of ``shrink``, rounded up) only when the quantile is under this fraction of the target."""
    min_samples: int = 0
    """Floor of the Gaussian sample count."""

    def __post_init__(self) -> None:
        if not 0.0 < self.target_fraction <= 1.0:
            raise ValueError(f"target_fraction must be in (0, 1], got {self.target_fraction=}")
        if not 0.0 < self.quantile <= 1.0:
            raise ValueError(f"quantile must be in (0, 1], got {self.quantile=}")
        if self.window < 1:
            raise ValueError(f"window must be >= 1, got {self.window=}")
        if not 0.0 < self.shrink < 1.0:
            raise ValueError(f"shrink must be in (0, 1), got {self.shrink=}")
        if not 0.0 < self.grow_below < 1.0:
            raise ValueError(f"grow_below must be in (0, 1), got {self.grow_below=}")
        if self.min_samples < 0:
            raise ValueError(f"min_samples must be >= 0, got {self.min_samples=}")


class SampleBudget:
    """The Gaussian sample count to plan with next, from measured plan times.

    Args:
        max_samples: the configured count (the planner preset's ``num_samples``); never exceeded.
        period_s: the control period.
        cfg: thresholds and steps.
    """

    def __init__(self, max_samples: int, period_s: float, cfg: SampleBudgetConfig | None = None) -> None:
        if max_samples < 0 or not period_s > 0.0:
            raise ValueError(f"need max_samples >= 0 and period_s > 0, got {max_samples=}, {period_s=}")
        self.cfg = cfg or SampleBudgetConfig()
        self.max_samples = max_samples
        self.num_samples = max_samples
        self.target_s = self.cfg.target_fraction * period_s
        self.reductions = 0
        self.increases = 0
        self.last_quantile_s = math.nan
        self._times: deque[float] = deque(maxlen=self.cfg.window)

    def observe(self, plan_s: float) -> int:
        """Record one tick's plan time (seconds); returns the sample count for the next tick.

        Non-finite or negative times are ignored (a clock glitch must not move the budget).
        """
        if not (math.isfinite(plan_s) and plan_s >= 0.0):
            return self.num_samples
        self._times.append(plan_s)
        if len(self._times) < self.cfg.window:
            return self.num_samples
        times = sorted(self._times)
        self._times.clear()
        q = times[min(len(times) - 1, math.ceil(self.cfg.quantile * len(times)) - 1)]
        self.last_quantile_s = q
        floor = min(self.cfg.min_samples, self.max_samples)
        if q > self.target_s and self.num_samples > floor:
            self.num_samples = max(floor, math.floor(self.num_samples * self.cfg.shrink))
            self.reductions += 1
        elif q < self.cfg.grow_below * self.target_s and self.num_samples < self.max_samples:
            grown = max(self.num_samples + 1, math.ceil(self.num_samples / self.cfg.shrink))
            self.num_samples = min(self.max_samples, grown)
            self.increases += 1
        return self.num_samples
