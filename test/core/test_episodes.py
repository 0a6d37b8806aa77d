"""EpisodeTracker: each rule that starts an episode, bounded announcements, untrusted stamps only split."""

from types import SimpleNamespace

import numpy as np
import pytest
from simdist_core.data import episodes as ep
from simdist_core.data.episodes import EpisodeConfig, EpisodeTracker, header_stamp_ns

DT = 20_000_000  # 50 Hz
J0, B0 = np.zeros(12), np.array([0.0, 0.0, 0.27])


def _run(tracker, n, t0=0, joints=J0, base=B0):
    """Feed n steps one period apart; the reasons returned."""
    return [tracker.step(t0 + k * DT, joints, base) for k in range(n)]


def test_first_step_starts_and_a_steady_stream_continues():
    tracker = EpisodeTracker()
    assert _run(tracker, 5, t0=1_000 * DT) == [ep.FIRST, None, None, None, None]
    assert tracker.t0_ns == 1_000 * DT and tracker.episodes_started == 1
    assert tracker.clock_s(1_004 * DT) == (4 * DT) * 1e-9
    with pytest.raises(ValueError, match="before the first step"):
        EpisodeTracker().clock_s(0)


def test_gap_and_stamp_rules():
    tracker = EpisodeTracker(EpisodeConfig.for_rate(50.0))
    assert tracker.config.max_gap_s == pytest.approx(0.05)
    _run(tracker, 3)
    assert tracker.step(4 * DT, J0, B0) is None, "one lost sample (2 periods) is tolerated"
    assert tracker.step(7 * DT, J0, B0) == ep.GAP, "3 periods > 2.5"
    assert tracker.t0_ns == 7 * DT and tracker.clock_s(8 * DT) == DT * 1e-9
    assert tracker.step(7 * DT, J0, B0) == ep.STAMP, "a repeated stamp"
    assert tracker.step(2 * DT, J0, B0) == ep.STAMP, "a stamp going backwards (a restarted simulator)"
    assert tracker.step(3 * DT, J0, B0) is None


def test_jump_rules_and_thresholds():
    tracker = EpisodeTracker(EpisodeConfig(joint_jump_rad=0.5, base_jump_m=0.3))
    _run(tracker, 2)
    assert tracker.step(2 * DT, J0 + 0.4, B0) is None
    assert tracker.step(3 * DT, J0 + 0.4 + np.eye(12)[3] * 0.6, B0) == ep.JOINT_JUMP
    assert tracker.last_jump[0] == pytest.approx(0.6)
    assert tracker.step(4 * DT, J0 + 0.4, B0) == ep.JOINT_JUMP, "jumping back is a jump too"
    assert tracker.step(5 * DT, J0 + 0.4, B0 + [0.2, 0.0, 0.0]) is None
    assert tracker.step(6 * DT, J0 + 0.4, B0 + [0.2, 0.4, 0.0]) == ep.BASE_JUMP
    assert tracker.step(7 * DT, np.zeros(6), B0) == ep.JOINT_JUMP, "a different joint count cannot continue"
    assert tracker.episodes_started == 5


def test_break_starts_the_next_step_once():
    tracker = EpisodeTracker()
    _run(tracker, 3)
    tracker.break_episode()
    assert tracker.step(3 * DT, J0, B0) == ep.BREAK
    assert tracker.step(4 * DT, J0, B0) is None


def test_announced_boundary_splits_at_the_first_step_at_or_after_it():
    tracker = EpisodeTracker()
    _run(tracker, 3)  # steps at 0, 1, 2 periods
    assert tracker.announce(5 * DT)
    assert tracker.announce(7 * DT + 1)  # between two steps: the step after it opens the episode
    assert tracker.pending == (5 * DT, 7 * DT + 1)
    assert [tracker.step(k * DT, J0, B0) for k in range(3, 10)] == [
        None, None, ep.ANNOUNCED, None, None, ep.ANNOUNCED, None]
    assert tracker.t0_ns == 8 * DT and tracker.pending == ()
    # An announcement that arrives after its step was taken is already passed: ignored (the jump rule
    # covers a late announcement of a real reset).
    assert not tracker.announce(9 * DT) and tracker.counts["announce_passed"] == 1
    assert tracker.step(10 * DT, J0, B0) is None


def test_announced_boundary_inside_a_gap_is_pruned_not_kept_for_later():
    tracker = EpisodeTracker()
    _run(tracker, 2)
    tracker.announce(5 * DT)
    assert tracker.step(20 * DT, J0, B0) == ep.ANNOUNCED  # crossed (and a gap): one new episode
    assert tracker.pending == () and tracker.step(21 * DT, J0, B0) is None


def test_announcements_are_bounded_and_keep_the_earliest():
    tracker = EpisodeTracker(EpisodeConfig(max_pending=4))
    _run(tracker, 1)
    forged = [10**18 + k for k in range(100)]  # a flood of far-future stamps
    kept = [tracker.announce(t) for t in forged]
    assert sum(kept) == 4 and len(tracker.pending) == 4
    assert tracker.announce(3 * DT), "a genuine near boundary pushes out the latest forged one"
    assert tracker.pending == (3 * DT, *forged[:3]) and tracker.counts["announce_overflow"] == 97
    assert [tracker.step(k * DT, J0, B0) for k in range(1, 5)] == [None, None, ep.ANNOUNCED, None]
    assert len(tracker.pending) == 3, "the forged ones stay pending but bounded; each could only split"


def test_malformed_announcements_are_counted_and_ignored():
    tracker = EpisodeTracker()
    for bad in (-1, 1.5, "12", None, True):
        assert not tracker.announce(bad)  # type: ignore[arg-type]
    assert tracker.counts["announce_rejected"] == 5 and tracker.pending == ()


def test_forged_announcements_only_split_never_merge():
    """Whatever is announced, every boundary the other rules find is still there: a forger can add
    episode starts, never remove one."""
    rng = np.random.default_rng(0)
    n = 200
    stamps = np.cumsum(rng.choice([DT, DT, DT, 4 * DT], size=n))
    joints = [J0 + (1.0 if rng.random() < 0.05 else 0.0) for _ in range(n)]

    def starts(announce):
        tracker = EpisodeTracker()
        out = []
        for k in range(n):
            if announce:
                tracker.announce(int(rng.integers(0, stamps[-1] + 10 * DT)))
            if tracker.step(int(stamps[k]), joints[k], B0) is not None:
                out.append(k)
        return set(out)

    honest, forged = starts(False), starts(True)
    assert honest <= forged and len(forged) > len(honest)


def test_header_stamp_ns_validates_untrusted_headers():
    def header(sec, nanosec):
        return SimpleNamespace(stamp=SimpleNamespace(sec=sec, nanosec=nanosec))

    assert header_stamp_ns(header(3, 5)) == 3_000_000_005
    assert header_stamp_ns(header(np.int32(1), np.uint32(0))) == 1_000_000_000
    for bad in (header(-1, 0), header(0, 1_000_000_000), header(1.5, 0), header(True, 0)):
        with pytest.raises(ValueError, match="episode_start"):
            header_stamp_ns(bad)
    with pytest.raises(ValueError, match="no stamp"):
        header_stamp_ns(SimpleNamespace())


def test_config_validation():
    for field in ("max_gap_s", "joint_jump_rad", "base_jump_m"):
        with pytest.raises(ValueError, match=field):
            EpisodeConfig(**{field: 0.0})
    with pytest.raises(ValueError, match="max_pending"):
        EpisodeConfig(max_pending=0)
