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
