"""A late command link for the in-process loop: the commands of a live graph that cannot keep up, emulated.

Why: on a starved computer (the whole graph on one busy core) the live graph keeps 76–78 % of the in-process
distance, while one period of fixed, known delay costs the same model 2 % in-process and a planner with no
Gaussian samples costs nothing shown (``bench_results/GO2_STARVED_PLANNER.md``). What the in-process loop could not
emulate is what remains: a delay that changes from step to step and steps with no fresh command (the robot
applies the newest command it has, however old). ``LateLink`` sits between planner and env and does that.

Model: the command sent at tick s (planned from the observation of step s) reaches the robot after a latency of
l_s control periods, l_s in {0, 1, 2}, drawn from a Markov chain (lateness comes in runs, as a busy core's
time slices do); delivery keeps order (one publisher, a reliable keep-last queue). At step t the robot applies
the newest command that has arrived (arrival <= t); a step whose command did not change is a step without a fresh
command, and the command's delay there is t - s. Before the first command arrives the robot holds the default pose
(zeros), as the driver's watchdog does.

``play_plan``: the command carries the plan's mean (row k = the action for k periods after its observation, the
first d rows the commands the plan assumed in flight) and the robot applies the row its delay points at, as a
trajectory controller samples a stamped trajectory at the current time, instead of repeating row d.

``incremental``: each command is a move applied once when it arrives, as the UR5e hardware driver moves its TCP
target by each action it receives; a step without a fresh command moves nothing (zeros), while the robot still
reports the newest command as executed (the driver's ``executed_command``). Of several commands arriving in one
step only the newest acts (a keep-last reader behind a starved executor).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simdist_core.planning.in_flight import plan_row


@dataclass(frozen=True, kw_only=True)
class LinkTiming:
    """Markov chain over a command's latency (control periods): ``transitions[i][j]`` = P(next j | previous i)."""

    transitions: tuple[tuple[float, ...], ...]

    def __post_init__(self) -> None:
        rows = np.asarray(self.transitions, dtype=np.float64)
        if rows.ndim != 2 or rows.shape[0] != rows.shape[1] or rows.shape[0] < 1:
            raise ValueError(f"LinkTiming: transitions must be a square matrix, got shape {rows.shape}")
        if not (np.all(rows >= 0) and np.allclose(rows.sum(axis=1), 1.0)):
            raise ValueError(f"LinkTiming: each row of transitions must be probabilities summing to 1, got {rows}")


LINK_TIMINGS: dict[str, LinkTiming] = {
    # Fitted to the timing (not the distances) of the four Go2 foam graph runs with every node on one core beside a
    # busy job (bench_results/go2_delay_vs_shipped/parity_G1_*.json): commands applied 0 / 1 / 2+ periods late on
    # 27 / 68 / 5 % of steps, a fresh command on 85 %; this chain gives 27 / 68 / 5 % and 85 %
    # (bench_results/GO2_LATE_LINK.md says how it was fitted).
    "one_core": LinkTiming(transitions=((0.55, 0.40, 0.05), (0.17, 0.81, 0.02), (0.10, 0.42, 0.48))),
}
"""Named link timings (``simdist eval --late-link``)."""


class LateLink:
    """Commands from planner to robot with the latency of ``timing``; ``step`` once per control period."""

    def __init__(
        self,
        timing: LinkTiming,
        action_dim: int,
        rng: np.random.Generator,
        *,
        play_plan: bool = False,
        incremental: bool = False,
    ) -> None:
        if play_plan and incremental:
            raise ValueError("LateLink: an incremental robot applies each command once; it cannot play a plan")
        self.timing = timing
        self.action_dim = action_dim
        self.play_plan = play_plan
        self.incremental = incremental
        self._rng = rng
        self._cumulative = np.cumsum(np.asarray(timing.transitions, np.float64), axis=1)
        self.counts: dict[str, int] = {"steps": 0, "fresh_command_steps": 0, "default_pose_steps": 0}
        if incremental:
            self.counts["unmoved_steps"] = 0  # steps with a command in force but none fresh: nothing applied
        self.delay_counts = [0] * len(timing.transitions)
        """Steps per delay of the applied command (last bin: that many periods or more)."""
        self.reset()

    def reset(self) -> None:
        """A new episode: nothing in flight, the robot holds the default pose until a command arrives."""
        self._t = 0
        self._latency = 0
        self._last_arrival = -1
        self._pending: list[tuple[int, int, np.ndarray]] = []  # (tick sent, step it arrives, rows), in order
        self._applied: tuple[int, np.ndarray] | None = None  # (tick sent, rows) of the command the robot has
        self.executed = np.zeros(self.action_dim, np.float32)
        """What the robot reports it executed in the last step (the applied action, but with ``incremental`` the
        newest command's action also on steps that moved nothing)."""

    def step(self, action: np.ndarray, plan: np.ndarray | None = None) -> tuple[np.ndarray, int | None]:
        """Send this tick's command and advance one period.

        Args:
            action: (A,) the command (what the robot applies when it does not play plans).
            plan: (K, A) with ``play_plan``: row k is the action for k periods after the observation the command
                answers (the plan's mean; None: the command carries ``action`` only, as after a fallback).

        Returns:
            The action the robot applies this step and its delay in periods (None: the default pose, no command yet).
        """
        rows = np.asarray(action, np.float32).reshape(1, self.action_dim)
        if self.play_plan and plan is not None:
            rows = np.asarray(plan, np.float32).reshape(-1, self.action_dim)
        u = self._rng.random()
        self._latency = int(np.searchsorted(self._cumulative[self._latency], u, side="right"))
        self._latency = min(self._latency, len(self.timing.transitions) - 1)
        arrival = max(self._t + self._latency, self._last_arrival)  # delivery keeps order
        self._last_arrival = arrival
        self._pending.append((self._t, arrival, rows))
        fresh = False
        while self._pending and self._pending[0][1] <= self._t:
            sent_tick, _, cmd_rows = self._pending.pop(0)
            self._applied, fresh = (sent_tick, cmd_rows), True
        self.counts["steps"] += 1
        if self._applied is None:
            self.counts["default_pose_steps"] += 1
            self._t += 1
            self.executed = np.zeros(self.action_dim, np.float32)
            return self.executed.copy(), None
        sent_tick, cmd_rows = self._applied
        delay = self._t - sent_tick
        self.counts["fresh_command_steps"] += int(fresh)
        self.delay_counts[min(delay, len(self.delay_counts) - 1)] += 1
        self._t += 1
        if self.incremental:
            self.executed = cmd_rows[0].copy()
            if not fresh:
                self.counts["unmoved_steps"] += 1
                return np.zeros(self.action_dim, np.float32), delay
            return cmd_rows[0].copy(), delay
        self.executed = plan_row(cmd_rows, delay).copy()
        return self.executed.copy(), delay

    def summary(self) -> dict[str, float]:
        """Fresh-command fraction and the share of steps per delay (of the steps with a command)."""
        with_command = max(1, self.counts["steps"] - self.counts["default_pose_steps"])
        return {
            "fresh_command_fraction": self.counts["fresh_command_steps"] / with_command,
            **{f"delay_{d}_fraction": n / with_command for d, n in enumerate(self.delay_counts)},
            **{k: float(v) for k, v in self.counts.items()},
        }
