"""The commands already on their way when the planner plans: what it must plan around (delay compensation).

A live graph's command acts d control periods after the observation it answers (d = 0 in the in-process loop).
The planner then plans for the state d periods ahead: every candidate starts with the d commands sent in the
ticks before (``MPPIPlanner.plan_latent``'s ``committed``). d is the median of the delays the robot reported for
its last ``window`` steps (a stamped command tells the robot which observation it answers, and the robot reports
the delay it applied it with); without a report the caller's estimate stands in.

Shared by the planner node and the in-process loop that emulates a late graph (``simdist_core.eval.late_link``),
so both plan around the same commands.
"""

from __future__ import annotations

from collections import deque

import numpy as np

MAX_COMPENSATED_DELAY = 4
"""Longest delay (control periods) planned around; beyond it the latent is nearly stale."""
DELAY_WINDOW = 25
"""Steps whose reported delay the compensated delay is the median of (half a second at 50 Hz)."""


class InFlightCommands:
    """The last commands sent and the delays the robot reported; ``committed`` is what the next plan starts with."""

    def __init__(self, window: int = DELAY_WINDOW, max_delay: int = MAX_COMPENSATED_DELAY) -> None:
        if window < 1 or max_delay < 0:
            raise ValueError(f"InFlightCommands: window must be >= 1 and max_delay >= 0, got {window}, {max_delay}")
        self._sent: deque[np.ndarray] = deque(maxlen=max(max_delay, 1))
        self._reported: deque[float] = deque(maxlen=window)
        self.max_delay = max_delay
        self.counts = [0] * (max_delay + 1)
        """Plans made per compensated delay (index = d)."""

    def new_episode(self) -> None:
        """The last episode's commands are not the ones the new episode's first steps meet (the delays stay)."""
        self._sent.clear()

    def sent(self, action: np.ndarray) -> None:
        """A command was published (one per tick, oldest first)."""
        self._sent.append(np.asarray(action, np.float32))

    def reported(self, delay: float) -> None:
        """The delay (periods) the robot applied a command with; negative or non-finite = not stamped, ignored."""
        if np.isfinite(delay) and delay >= 0:
            self._reported.append(float(delay))

    def delay(self, horizon: int, estimate: int | None = None) -> int:
        """The delay the next plan starts after: the median reported one (else ``estimate``, else 0).

        Capped by the commands sent, ``max_delay`` and ``horizon - 1`` (the plan needs one step of its own).
        """
        d = int(np.median(self._reported)) if self._reported else (estimate or 0)
        return max(0, min(d, len(self._sent), self.max_delay, horizon - 1))

    def committed(self, horizon: int, estimate: int | None = None) -> np.ndarray | None:
        """The last d commands sent, oldest first ((d, A)), or None when d = 0; counts the plan under its d."""
        d = self.delay(horizon, estimate)
        self.counts[d] += 1
        return np.stack(list(self._sent)[len(self._sent) - d:]) if d else None


def plan_row(plan: np.ndarray, delay: int) -> np.ndarray:
    """The row of a command's plan for a step ``delay`` periods after its observation (the last row past the end).

    ``plan`` is (K, A), row k for k periods after the observation: a late command plays on instead of repeating.

    Emulated in-process (``simdist_core.eval.late_link``, ``bench_results/GO2_LATE_LINK.md``): with the commands of
    a graph on one busy core, repeating the command kept 0.70 of the on-time distance on foam, playing the plan 0.98.
    """
    return plan[row_for_delay(len(plan), delay)]


def row_for_delay(num_rows: int, delay: int) -> int:
    """The index of the plan row for a step ``delay`` periods after the observation (the last row past the end)."""
    return min(max(delay, 0), num_rows - 1)


def plan_to_send(plan_out: object) -> np.ndarray | None:
    """The plan a command carries: the plan's mean in [-1, 1] ((H, A), row k for k periods after its observation).

    None for a fallback (its mean is no plan), a planner that returns only an action, or a non-finite mean.
    """
    mean = getattr(plan_out, "mean", None)
    if mean is None or getattr(plan_out, "fallback", None):
        return None
    plan = np.clip(np.asarray(mean, np.float32), -1.0, 1.0)
    return plan if np.all(np.isfinite(plan)) else None
