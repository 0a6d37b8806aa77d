"""How fast a simulated robot may run: a real-time factor that follows what the control loop keeps up with.

A simulator can do what a robot cannot: slow its clock down. When the machine running the whole graph is too
slow for real time (a laptop, or a shared 2-vCPU VM in a busy hour, where the robot got a fresh command on
85 % of its steps at real time), the robot acts on stale commands and falls for
reasons the model has nothing to do with, and a finetuner that yields to the loop never finishes a round.
Gazebo's answer is the same: its real-time factor drops below 1 when the physics cannot keep up. Here it drops
when the *control loop* cannot: every node follows ``/clock``, so slowing sim time gives each node more wall
time per control period, and every figure stays in simulated time.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RealTimeGovernor:
    """Sets the real-time factor from the share of steps that applied a fresh command, within ``[floor, ceiling]``.

    Multiplicative decrease, additive increase: after each window of ``window_steps`` control steps it lowers
    the factor by ``decrease`` if fewer than ``keep`` of them got a fresh command, raises it by ``step`` (up to
    ``ceiling``) if at least ``recover`` did, and otherwise holds it. Windows start at the first fresh command:
    before the planner is up (or while nothing commands the robot at all) there is nothing to keep up with.
    """

    ceiling: float
    """The real-time factor asked for (the governor never runs faster)."""
    floor: float
    """The slowest it may run (0 < floor <= ceiling)."""
    window_steps: int = 250
    """Control steps per decision (5 s of sim time at 50 Hz)."""
    keep: float = 0.95
    """Below this share of fresh-command steps the factor goes down (the demo's bar for a loop that keeps up)."""
    recover: float = 0.99
    """At or above this share the factor goes back up."""
    decrease: float = 0.7
    """Factor applied on a window that missed ``keep``."""
    step: float = 0.05
    """Added on a window that reached ``recover``."""
    rtf: float = field(init=False)
    """The real-time factor to pace the next step with."""
    reductions: int = field(init=False, default=0)
    """Windows that lowered the factor."""
    _steps: int = field(init=False, default=0)
    _fresh: int = field(init=False, default=0)
    _started: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        if not 0.0 < self.floor <= self.ceiling:
            raise ValueError(f"need 0 < floor <= ceiling, got {self.floor=}, {self.ceiling=}")
        if not (self.window_steps >= 1 and 0.0 < self.keep <= self.recover <= 1.0 and 0.0 < self.decrease < 1.0
                and self.step > 0.0):
            raise ValueError(f"need window_steps >= 1, 0 < keep <= recover <= 1, 0 < decrease < 1, step > 0; got "
                             f"{self.window_steps=}, {self.keep=}, {self.recover=}, {self.decrease=}, {self.step=}")
        self.rtf = self.ceiling

    def set_ceiling(self, ceiling: float) -> None:
        """A new factor asked for (a parameter change at run time): the governor stays at or below it."""
        if ceiling <= 0.0:
            raise ValueError(f"ceiling must be > 0, got {ceiling=}")
        self.ceiling = ceiling
        self.floor = min(self.floor, ceiling)
        self.rtf = min(self.rtf, ceiling)

    def record(self, steps: int, fresh: int) -> float:
        """Count ``steps`` control steps of which ``fresh`` applied a newly arrived command; return the factor."""
        if not 0 <= fresh <= steps:
            raise ValueError(f"need 0 <= fresh <= steps, got {fresh=}, {steps=}")
        if not self._started:
            if fresh == 0:
                return self.rtf
            self._started = True
        self._steps += steps
        self._fresh += fresh
        if self._steps >= self.window_steps:
            share = self._fresh / self._steps
            if share < self.keep:
                self.rtf = max(self.floor, self.rtf * self.decrease)
                self.reductions += 1
            elif share >= self.recover:
                self.rtf = min(self.ceiling, self.rtf + self.step)
            self._steps = self._fresh = 0
        return self.rtf
