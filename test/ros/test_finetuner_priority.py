"""The finetuner's worker yields the CPU to the control loop: SCHED_IDLE (Linux) on top of its nice value."""

import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor

import pytest
from simdist_ros.finetuner_node import lower_priority


def _apply(policy: str, nice: int) -> tuple[str, int, int]:
    applied = lower_priority(policy, nice)
    return applied, os.sched_getscheduler(0), os.nice(0)


def _in_child(policy: str, nice: int) -> tuple[str, int, int]:
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(_apply, policy, nice).result(timeout=120)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SCHED_IDLE is a Linux scheduling policy")
def test_idle_policy_puts_the_worker_behind_every_normal_process():
    base = os.nice(0)
    applied, scheduler, nice = _in_child("idle", 5)
    assert applied == "idle" and scheduler == os.SCHED_IDLE
    assert nice == min(19, base + 5)


def test_nice_policy_only_lowers_the_priority():
    base = os.nice(0)
    applied, scheduler, nice = _in_child("nice", 3)
    assert applied == "nice" and scheduler == os.SCHED_OTHER
    assert nice == min(19, base + 3)


def test_duty_cycle_sleeps_for_the_rest_of_the_share():
    from simdist_core.training.adapt import DutyCycle

    now = [0.0]
    slept = []

    def sleep(s):
        slept.append(s)
        now[0] += s

    duty = DutyCycle(0.25, clock=lambda: now[0], sleep=sleep)
    for work in (0.01, 0.03):
        now[0] += work  # one update's work
        duty()
    assert slept == pytest.approx([0.03, 0.09])  # work is a quarter of the time
    assert duty.slept_s == pytest.approx(0.12)
    with pytest.raises(ValueError, match="fraction"):
        DutyCycle(0.0)
    full = DutyCycle(1.0, clock=lambda: now[0], sleep=sleep)
    full()
    assert len(slept) == 2  # no cap: never sleeps


def test_duty_cycle_follows_its_source_within_its_cap():
    from simdist_core.training.adapt import DutyCycle

    now, slept, wanted = [0.0], [], [0.5]

    def sleep(s):
        slept.append(s)
        now[0] += s

    duty = DutyCycle(0.5, clock=lambda: now[0], sleep=sleep, source=lambda: wanted[0])
    for value in (0.5, 0.1, 2.0, float("nan")):  # 2.0 and NaN: never above the configured cap
        wanted[0] = value
        now[0] += 0.01
        duty()
    assert slept == pytest.approx([0.01, 0.09, 0.01, 0.01])
    assert duty.effective() == pytest.approx(0.04 / 0.16)


def test_loop_guard_backs_off_when_training_costs_the_loop_ticks_and_ramps_up_when_it_does_not():
    from simdist_core.training.adapt import LoopGuard

    guard = LoopGuard(ceiling=0.8, floor=0.05, margin=0.02, step=0.1, baseline_weight=1.0)
    assert guard.duty == 0.05, "starts low"
    guard.report(48, 2, training=False)  # a loaded machine: 4 % missed without any training
    assert guard.baseline == pytest.approx(0.04) and guard.duty == 0.05
    for _ in range(20):  # training and the loop keeps its baseline: up to the ceiling, never above
        guard.report(48, 2, training=True)
    assert guard.duty == pytest.approx(0.8)
    guard.report(40, 10, training=True)  # 20 % missed while training: halve
    assert guard.duty == pytest.approx(0.4) and guard.backoffs == 1
    for _ in range(10):
        guard.report(0, 50, training=True)
    assert guard.duty == 0.05, "never below the floor"
    for bad in ((float("nan"), 1), (-5, 1), (0, 0)):  # malformed reports change nothing
        assert guard.report(*bad, training=True) == 0.05
    for late in (float("nan"), -1, 51):  # nor do impossible counts of late ticks
        assert guard.report(50, 0, training=True, late=late) == 0.05


def test_loop_guard_backs_off_when_training_makes_ticks_late():
    """The tick-latency half of the budget: ticks longer than a period may rise by ``late_margin`` at most."""
    from simdist_core.training.adapt import LoopGuard

    guard = LoopGuard(ceiling=0.8, floor=0.1, late_margin=0.01, step=0.1, baseline_weight=1.0)
    guard.report(100, 0, training=False, late=1)  # 1 % of the ticks late without training: the baseline
    assert guard.late_baseline == pytest.approx(0.01)
    for _ in range(10):
        guard.report(100, 0, training=True, late=2)  # 2 %: within the margin
    assert guard.duty == pytest.approx(0.8)
    guard.report(100, 0, training=True, late=3)  # 3 %: over it, although no tick was missed
    assert guard.duty == pytest.approx(0.4) and guard.backoffs == 1
    with pytest.raises(ValueError, match="floor"):
        LoopGuard(ceiling=0.1, floor=0.2)
