"""Bootstrap intervals for episode metrics: what they contain, how they narrow, what they refuse."""

import numpy as np
import pytest
from simdist_core.eval.stats import mean_ci, paired_ratio_ci


def test_mean_interval_contains_the_mean_and_narrows_with_more_episodes():
    rng = np.random.default_rng(1)
    few, many = rng.normal(3.0, 1.5, 10), rng.normal(3.0, 1.5, 200)
    m, lo, hi = mean_ci(few)
    assert lo < m < hi and m == pytest.approx(few.mean())
    _, lo2, hi2 = mean_ci(many)
    assert hi2 - lo2 < (hi - lo) / 2
    assert lo2 < 3.0 < hi2
    assert mean_ci(few) == (m, lo, hi), "seeded: the same inputs give the same interval"


def test_paired_ratio_of_identical_sides_is_one_and_of_a_doubled_side_two():
    x = np.random.default_rng(2).uniform(0.5, 6.0, 30)
    assert paired_ratio_ci(x, x) == pytest.approx((1.0, 1.0, 1.0))
    r, lo, hi = paired_ratio_ci(2 * x, x)
    assert (r, lo, hi) == pytest.approx((2.0, 2.0, 2.0))


def test_paired_ratio_interval_covers_the_truth_for_noisy_sides():
    rng = np.random.default_rng(3)
    base = rng.uniform(0.5, 6.0, 40)
    r, lo, hi = paired_ratio_ci(base * 0.8 + rng.normal(0, 0.3, 40), base)
    assert lo < 0.8 < hi and lo < r < hi and hi < 1.0


@pytest.mark.parametrize(("num", "den", "match"), [
    ([1.0, 2.0], [1.0], "2 numerator values but 1"),
    ([], [], "no values"),
    ([1.0, float("nan")], [1.0, 1.0], "non-finite"),
    ([1.0, 2.0], [0.0, 0.0], "undefined"),
])
def test_paired_ratio_refuses_what_has_no_ratio(num, den, match):
    with pytest.raises(ValueError, match=match):
        paired_ratio_ci(num, den)


def test_ratio_of_ratios_compares_two_measurements_of_one_change():
    from simdist_core.eval.stats import ratio_of_ratios_ci

    rng = np.random.default_rng(4)
    before = rng.uniform(1.0, 4.0, 30)
    after = 2.0 * before + rng.normal(0, 0.2, 30)
    r, lo, hi = ratio_of_ratios_ci(after, before, after, before)
    assert (r, lo, hi) == pytest.approx((1.0, 1.0, 1.0)), "the same measurement twice"
    r, lo, hi = ratio_of_ratios_ci(1.6 * before, before, after, before)
    assert r == pytest.approx(1.6 * before.mean() / after.mean()) and lo < r < hi < 1.0
    with pytest.raises(ValueError, match="lengths differ"):
        ratio_of_ratios_ci(after, before, after[:5], before)


def test_cluster_interval_is_deterministic_and_contains_the_pooled_mean():
    from simdist_core.eval.stats import cluster_mean_ci

    rng = np.random.default_rng(5)
    clusters = [rng.normal(2.0, 1.0, 10).tolist() for _ in range(3)]
    m, lo, hi = cluster_mean_ci(clusters)
    assert m == pytest.approx(np.mean(np.concatenate(clusters))) and lo < m < hi
    assert cluster_mean_ci(clusters) == (m, lo, hi), "seeded: the same inputs give the same interval"
    assert cluster_mean_ci(clusters, seed=1) != (m, lo, hi)
    # ragged clusters: the point estimate is the mean over all episodes
    assert cluster_mean_ci([[1.0, 2.0, 3.0], [10.0]])[0] == pytest.approx(4.0)


def test_cluster_interval_widens_when_seeds_disagree():
    from simdist_core.eval.stats import cluster_mean_ci

    within = np.random.default_rng(6).normal(0.0, 0.5, (3, 10))
    widths = []
    for spread in (0.0, 1.0, 3.0):  # seed means -spread, 0, +spread; the episodes within each seed unchanged
        clusters = within + np.array([[-spread], [0.0], [spread]])
        _, lo, hi = cluster_mean_ci(clusters.tolist())
        widths.append(hi - lo)
        if spread == 3.0:  # an episode bootstrap on the pooled values ignores that episodes of a seed go together
            _, plo, phi = mean_ci(clusters.ravel())
            assert hi - lo > 1.5 * (phi - plo)
    assert widths[0] < widths[1] < widths[2]


def test_paired_cluster_ratio_and_difference_apply_one_draw_to_both_series():
    from simdist_core.eval.stats import paired_cluster_difference_ci, paired_cluster_ratio_ci

    rng = np.random.default_rng(7)
    base = [rng.uniform(0.5, 4.0, 8).tolist() for _ in range(3)]
    doubled = [[2 * v for v in seed] for seed in base]
    assert paired_cluster_ratio_ci(doubled, base) == pytest.approx((2.0, 2.0, 2.0)), "paired: a constant ratio"
    shifted = [[v + 0.5 for v in seed] for seed in base]
    assert paired_cluster_difference_ci(shifted, base) == pytest.approx((0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="undefined"):
        paired_cluster_ratio_ci(base, [[-v for v in seed] for seed in base])
    with pytest.raises(ValueError, match="sizes differ"):
        paired_cluster_ratio_ci(base, [seed[:4] for seed in base])
    with pytest.raises(ValueError, match="no values"):
        paired_cluster_difference_ci([[]], [[]])
