"""Contiguous perturbation schedule: statistics match the spec (bursts 1–50, gaps 25–500, std 0.05–2.5, 2.5 % clean)."""

import numpy as np
import pytest
from simdist_core.data.perturbation import PerturbationConfig, PerturbationSchedule, apply_noise

A = 12


def _runs(flags: np.ndarray) -> list[tuple[bool, int, bool]]:
    """(value, length, complete) runs; a run touching the episode end is incomplete."""
    out, start = [], 0
    for i in range(1, len(flags) + 1):
        if i == len(flags) or flags[i] != flags[start]:
            out.append((bool(flags[start]), i - start, i < len(flags)))
            start = i
    return out


def _episode(schedule, rng, n_steps):
    schedule.reset(rng)
    noise, flags = zip(*(schedule.step() for _ in range(n_steps)), strict=True)
    return np.stack(noise), np.array(flags)


def test_burst_and_gap_lengths_match_spec():
    schedule = PerturbationSchedule(PerturbationConfig(), action_dim=A)
    rng = np.random.default_rng(0)
    bursts, gaps, first_gaps = [], [], []
    for _ in range(60):
        noise, flags = _episode(schedule, rng, 4000)
        if not schedule.noised_episode:
            continue
        runs = _runs(flags)
        assert runs[0][0] is False, "an episode must start with a clean gap"
        first_gaps.append(runs[0][1])
        for value, length, complete in runs:
            if complete:
                (bursts if value else gaps).append(length)
        # noise is exactly zero outside bursts and non-zero inside
        assert np.all(noise[~flags] == 0.0)
        assert np.all(np.any(noise[flags] != 0.0, axis=1))
    bursts, gaps = np.array(bursts), np.array(gaps)
    assert bursts.min() == 1 and bursts.max() == 50, (bursts.min(), bursts.max())
    assert gaps.min() >= 25 and gaps.max() <= 500, (gaps.min(), gaps.max())
    assert min(first_gaps) >= 25
    # uniform integer draws: mean 25.5 and 262.5 (hundreds of samples -> tolerance of several standard errors)
    assert abs(bursts.mean() - 25.5) < 2.5, bursts.mean()
    assert abs(gaps.mean() - 262.5) < 25.0, gaps.mean()


def test_never_noised_fraction_is_two_and_a_half_percent():
    schedule = PerturbationSchedule(PerturbationConfig(), action_dim=A)
    rng = np.random.default_rng(1)
    n = 8000
    clean = 0
    for _ in range(n):
        schedule.reset(rng)
        clean += not schedule.noised_episode
    # binomial sd = sqrt(0.025 * 0.975 / 8000) = 0.00175; 4 sd tolerance
    assert abs(clean / n - 0.025) < 0.007, clean / n
    # a never-noised episode really never perturbs
    schedule.config = PerturbationConfig(never_noised_fraction=1.0)
    noise, flags = _episode(schedule, rng, 2000)
    assert not flags.any() and not noise.any()


def test_per_joint_std_drawn_per_episode_in_range_and_used():
    schedule = PerturbationSchedule(PerturbationConfig(never_noised_fraction=0.0), action_dim=A)
    rng = np.random.default_rng(2)
    stds = []
    for _ in range(300):
        schedule.reset(rng)
        stds.append(schedule.std.copy())
    stds = np.stack(stds)
    assert stds.min() >= 0.05 and stds.max() <= 2.5
    assert stds.min() < 0.2 and stds.max() > 2.3, "uniform draws should cover the range"
    assert np.all(stds.std(axis=1) > 0), "stds must differ per joint"
    # the burst noise has the drawn per-joint std (bursts forced long and gaps short to get many samples)
    schedule = PerturbationSchedule(
        PerturbationConfig(never_noised_fraction=0.0, burst_steps_min=50, gap_steps_min=1, gap_steps_max=1),
        action_dim=A,
    )
    noise, flags = _episode(schedule, np.random.default_rng(3), 20000)
    measured = noise[flags].std(axis=0)
    np.testing.assert_allclose(measured, schedule.std, rtol=0.05)


def test_seeded_reproducible():
    a = PerturbationSchedule(action_dim=A)
    b = PerturbationSchedule(action_dim=A)
    na, fa = _episode(a, np.random.default_rng(7), 1500)
    nb, fb = _episode(b, np.random.default_rng(7), 1500)
    np.testing.assert_array_equal(na, nb)
    np.testing.assert_array_equal(fa, fb)


def test_apply_noise_clips_after_adding():
    out = apply_noise(np.array([0.9, -0.5, 0.0]), np.array([0.5, -1.0, 0.25], np.float32))
    np.testing.assert_allclose(out, [1.0, -1.0, 0.25])
    assert out.dtype == np.float32


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(burst_steps_min=0),
        dict(gap_steps_min=30, gap_steps_max=20),
        dict(std_min=-1.0),
        dict(never_noised_fraction=2),
    ],
)
def test_config_validation_names_field(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs)).split("_")[0]):
        PerturbationConfig(**kwargs)


def test_step_before_reset_raises():
    with pytest.raises(RuntimeError, match="reset"):
        PerturbationSchedule(action_dim=2).step()
