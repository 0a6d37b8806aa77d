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
