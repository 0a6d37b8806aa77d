"""Confidence intervals for episode metrics (percentile bootstrap, numpy only) and the paired sign test.

Episodes of a closed-loop evaluation are few (10-30) and their metrics far from normal (a fall ends an
episode at ~0 m, a good one walks 5 m), so intervals come from resampling episodes rather than from a
normal approximation. Seeded: the same inputs give the same interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

RESAMPLES = 5000
"""Bootstrap resamples: the 2.5/97.5 % quantiles move by < 1 % of the interval between reruns."""

EPISODE_METRIC = {"go2": "forward_progress_m", "ur5e": "success"}
"""Robot -> the per-episode task metric key of ``RobotEnv.metrics`` (what evaluations compare)."""


def episode_values(per_episode: Sequence[dict], task: str) -> list[float]:
    """The task metric of each episode (``EPISODE_METRIC`` of the task's robot; 0 where an episode lacks it)."""
    key = EPISODE_METRIC[task.split("/")[0]]
    return [float(e.get(key, 0.0)) for e in per_episode]


def episode_summary(per_episode: Sequence[dict], task: str) -> dict:
    """Episodes, metric key, mean metric per episode with its 95 % interval, and falls (episodes that fell)."""
    mean, low, high = mean_ci(episode_values(per_episode, task))
    return {"episodes": len(per_episode), "metric": EPISODE_METRIC[task.split("/")[0]],
            "metric_mean": round(mean, 3), "metric_ci95": [round(low, 3), round(high, 3)],
            "falls": int(sum(float(e.get("fell", 0.0)) for e in per_episode))}


def mean_ci(values: Sequence[float], level: float = 0.95, seed: int = 0) -> tuple[float, float, float]:
    """(mean, low, high): the mean of ``values`` and its bootstrap interval.

    Raises:
        ValueError: no values, or a non-finite one.
    """
    x = _finite(values, "values")
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, (RESAMPLES, x.size))].mean(axis=1)
    low, high = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(x.mean()), float(low), float(high)


def paired_ratio_ci(
    numerator: Sequence[float], denominator: Sequence[float], level: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """(ratio, low, high) of ``mean(numerator) / mean(denominator)``, resampling pairs (same episode seed).

    Pairs are resampled together: both sides ran the same seeds, so a hard seed weighs on both.
    Resamples whose denominator mean is not positive are dropped (a ratio is meaningless there).

    Raises:
        ValueError: different lengths, no values, a non-finite value, or ``mean(denominator) <= 0``.
    """
    a, b = _finite(numerator, "numerator"), _finite(denominator, "denominator")
    if a.size != b.size:
        raise ValueError(f"paired_ratio_ci: {a.size} numerator values but {b.size} denominator values")
    if b.mean() <= 0:
        raise ValueError(f"paired_ratio_ci: mean of the denominator is {b.mean():g}; the ratio is undefined")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, a.size, (RESAMPLES, a.size))
    num, den = a[idx].mean(axis=1), b[idx].mean(axis=1)
    ok = den > 0
    low, high = np.quantile(num[ok] / den[ok], [(1 - level) / 2, (1 + level) / 2])
    return float(a.mean() / b.mean()), float(low), float(high)


def ratio_of_ratios_ci(
    a_after: Sequence[float], a_before: Sequence[float], b_after: Sequence[float], b_before: Sequence[float],
    level: float = 0.95, seed: int = 0,
) -> tuple[float, float, float]:
    """(ratio, low, high) of ``(mean(a_after) / mean(a_before)) / (mean(b_after) / mean(b_before))``.

    For two ways of measuring the same before/after change on the same episode seeds (e.g. through the
    live graph and in-process): all four series are resampled with the same seed indices. Resamples with
    a non-positive mean in a denominator are dropped.

    Raises:
        ValueError: series of different lengths, empty or non-finite, or a non-positive denominator mean.
    """
    series = [_finite(x, name) for x, name in ((a_after, "a_after"), (a_before, "a_before"), (b_after, "b_after"),
                                               (b_before, "b_before"))]
    if len({x.size for x in series}) != 1:
        raise ValueError(f"ratio_of_ratios_ci: series lengths differ: {[x.size for x in series]}")
    a1, a0, b1, b0 = series
    if a0.mean() <= 0 or b0.mean() <= 0 or b1.mean() <= 0:
        raise ValueError("ratio_of_ratios_ci: a denominator mean is not positive; the ratio is undefined")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, a1.size, (RESAMPLES, a1.size))
    m = [x[idx].mean(axis=1) for x in series]
    ok = (m[1] > 0) & (m[2] > 0) & (m[3] > 0)
    draws = (m[0][ok] / m[1][ok]) / (m[2][ok] / m[3][ok])
    low, high = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])
    return float((a1.mean() / a0.mean()) / (b1.mean() / b0.mean())), float(low), float(high)


def cluster_mean_ci(
    clusters: Sequence[Sequence[float]], level: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """(mean, low, high): the mean over all episodes of all clusters (seeds) and its two-level bootstrap interval.

    Why two levels: in ``simdist bench adaptation`` the episodes of one seed all evaluate the SAME finetuned
    model (trained on that seed's experience), so they are not independent draws; the spread between seeds
    (another run of the whole experiment) is part of the uncertainty. Resampling episodes alone would
    understate it. Each resample draws the seeds with replacement, then, within each drawn seed, its
    episodes with replacement, and takes the mean over all drawn episodes (the point estimate is the same
    pooled mean). With one seed this is the ordinary episode bootstrap. Seeded: same inputs, same interval.

    Raises:
        ValueError: no clusters, an empty cluster, or a non-finite value.
    """
    values, sizes = _clusters(clusters, "clusters")
    pick, mask = _cluster_draws(sizes, seed)
    draws = (values[pick] * mask).sum(axis=(1, 2)) / mask.sum(axis=(1, 2))
    low, high = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])
    return float(np.nansum(values) / sizes.sum()), float(low), float(high)


def paired_cluster_ratio_ci(
    numerator: Sequence[Sequence[float]], denominator: Sequence[Sequence[float]], level: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """(ratio, low, high) of pooled ``mean(numerator) / mean(denominator)``, paired two-level bootstrap.

    Both series hold, per seed, values of the SAME evaluation episodes (e.g. a method and zero-shot, or
    two methods, each run on that seed's evaluation seeds), so each resample draws seeds, then episode
    indices within each seed, and applies the same draw to both series (see :func:`cluster_mean_ci` for
    why two levels). Resamples whose denominator mean is not positive are dropped.

    Raises:
        ValueError: cluster counts or sizes differ, empty or non-finite values, or ``mean(denominator) <= 0``.
    """
    num, den = _paired_cluster_means(numerator, denominator, seed)
    if den[0] <= 0:
        raise ValueError(f"paired_cluster_ratio_ci: mean of the denominator is {den[0]:g}; the ratio is undefined")
    ok = den[1:] > 0
    low, high = np.quantile(num[1:][ok] / den[1:][ok], [(1 - level) / 2, (1 + level) / 2])
    return float(num[0] / den[0]), float(low), float(high)


def paired_cluster_difference_ci(
    a: Sequence[Sequence[float]], b: Sequence[Sequence[float]], level: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """(difference, low, high) of pooled ``mean(a) - mean(b)``, paired two-level bootstrap.

    As :func:`paired_cluster_ratio_ci`, for metrics whose ratio is undefined (a negative zero-shot progress).

    Raises:
        ValueError: cluster counts or sizes differ, empty or non-finite values.
    """
    ma, mb = _paired_cluster_means(a, b, seed)
    low, high = np.quantile(ma[1:] - mb[1:], [(1 - level) / 2, (1 + level) / 2])
    return float(ma[0] - mb[0]), float(low), float(high)


def sign_test_p(wins: int, losses: int) -> float:
    """Exact two-sided sign test: P(a split at least this uneven | wins and losses equally likely); ties dropped.

    For paired success/failure outcomes (two checkpoints or planners on the same episodes), where a bootstrap of
    a 0/1 difference says little about how uneven the discordant pairs are.
    """
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(0, min(wins, losses) + 1)) / 2**n
    return min(1.0, 2 * tail)


def _paired_cluster_means(
    a: Sequence[Sequence[float]], b: Sequence[Sequence[float]], seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Pooled means of ``a`` and ``b`` (index 0) followed by their ``RESAMPLES`` paired two-level resamples."""
    va, sa = _clusters(a, "a")
    vb, sb = _clusters(b, "b")
    if sa.shape != sb.shape or np.any(sa != sb):
        raise ValueError(f"paired cluster bootstrap: cluster sizes differ: {sa.tolist()} vs {sb.tolist()}")
    pick, mask = _cluster_draws(sa, seed)
    count = mask.sum(axis=(1, 2))
    out = []
    for values in (va, vb):
        draws = (np.nan_to_num(values[pick]) * mask).sum(axis=(1, 2)) / count
        out.append(np.concatenate([[np.nansum(values) / sa.sum()], draws]))
    return out[0], out[1]


def _clusters(clusters: Sequence[Sequence[float]], name: str) -> tuple[np.ndarray, np.ndarray]:
    """Ragged clusters as a NaN-padded (clusters, max size) array and the sizes; checks every value."""
    rows = [_finite(c, f"{name}[{i}]") for i, c in enumerate(clusters)]
    if not rows:
        raise ValueError(f"{name}: no clusters")
    sizes = np.array([r.size for r in rows])
    values = np.full((len(rows), int(sizes.max())), np.nan)
    for i, r in enumerate(rows):
        values[i, : r.size] = r
    return values, sizes


def _cluster_draws(sizes: np.ndarray, seed: int) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
    """Index arrays of ``RESAMPLES`` two-level draws (seeds, then episodes within each) and their validity mask.

    Returns ``(rows, cols), mask``: ``values[rows, cols]`` is (RESAMPLES, clusters, max size); ``mask`` is 1
    where the slot holds a drawn episode (a drawn cluster of size n fills its first n slots).
    """
    rng = np.random.default_rng(seed)
    k, width = sizes.size, int(sizes.max())
    rows = rng.integers(0, k, (RESAMPLES, k))
    n = sizes[rows][..., None]  # (R, k, 1)
    cols = np.minimum((rng.random((RESAMPLES, k, width)) * n).astype(np.int64), n - 1)
    mask = (np.arange(width)[None, None, :] < n).astype(np.float64)
    return (rows[..., None], cols), mask


def _finite(values: Sequence[float], name: str) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if x.size == 0:
        raise ValueError(f"{name}: no values")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name}: non-finite values {x[~np.isfinite(x)][:5]}")
    return x
