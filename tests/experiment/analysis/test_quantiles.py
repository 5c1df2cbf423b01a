"""Histogram quantiles the way Prometheus' histogram_quantile takes them."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrystorm.experiment.analysis.quantiles import (
    combine,
    cumulative_at,
    difference,
    highest_finite_bound,
    histogram_quantile,
    upper_bound_of_max,
)

INF = math.inf
BUCKETS = [(0.1, 10.0), (0.5, 30.0), (1.0, 40.0), (INF, 40.0)]


def test_linear_interpolation_within_a_bucket():
    assert histogram_quantile(0.25, BUCKETS) == pytest.approx(0.1)  # rank 10: top of the first bucket
    assert histogram_quantile(0.5, BUCKETS) == pytest.approx(0.1 + 0.4 * (20 - 10) / 20)
    assert histogram_quantile(0.1, BUCKETS) == pytest.approx(0.1 * 4 / 10)  # lower bound 0
    assert histogram_quantile(1.0, BUCKETS) == pytest.approx(1.0)


def test_rank_in_the_inf_bucket_gives_the_highest_finite_bound():
    buckets = [(0.1, 1.0), (1.0, 2.0), (INF, 10.0)]
    assert histogram_quantile(0.99, buckets) == 1.0
    assert highest_finite_bound(buckets) == 1.0


def test_empty_or_malformed_histograms():
    assert histogram_quantile(0.5, []) is None
    assert histogram_quantile(0.5, [(0.1, 0.0), (INF, 0.0)]) is None
    assert histogram_quantile(0.5, [(0.1, 3.0)]) is None  # no +Inf bucket
    with pytest.raises(ValueError, match="within"):
        histogram_quantile(1.5, BUCKETS)


def test_difference_and_upper_bound_of_max():
    start = [(0.1, 5.0), (0.5, 5.0), (INF, 5.0)]
    end = [(0.1, 5.0), (0.5, 9.0), (1.0, 9.0), (INF, 9.0)]
    assert difference(end, start) == [(0.1, 0.0), (0.5, 4.0), (1.0, 9.0), (INF, 4.0)]
    assert upper_bound_of_max([(0.1, 0.0), (0.5, 4.0), (1.0, 4.0), (INF, 4.0)]) == 0.5
    assert upper_bound_of_max([(0.1, 0.0), (INF, 2.0)]) == INF
    assert upper_bound_of_max([(0.1, 0.0), (INF, 0.0)]) is None


@given(
    counts=st.lists(st.integers(0, 100), min_size=1, max_size=8),
    q1=st.floats(0, 1),
    q2=st.floats(0, 1),
)
def test_quantiles_are_monotone_and_within_the_bounds(counts, q1, q2):
    bounds = [0.01 * 3**i for i in range(len(counts))]
    cumulative, running = [], 0
    for bound, count in zip(bounds, counts, strict=True):
        running += count
        cumulative.append((bound, float(running)))
    buckets = [*cumulative, (INF, float(running))]
    low, high = sorted((q1, q2))
    a, b = histogram_quantile(low, buckets), histogram_quantile(high, buckets)
    if running == 0:
        assert a is None and b is None
        return
    assert 0 <= a <= b <= bounds[-1] + 1e-12


CUMULATIVE = st.lists(
    st.tuples(st.sampled_from([0.001, 0.01, 0.1, 0.5, 1.0, 2.5, 10.0, math.inf]), st.integers(0, 10**6)),
    max_size=8,
).map(sorted)


@given(parts=st.lists(st.one_of(st.none(), CUMULATIVE), max_size=4))
def test_combine_is_the_sum_of_each_parts_step_at_every_bound(parts):
    """The one-pass merge gives what its docstring's formula gives, bound by bound."""
    present = [part for part in parts if part]
    bounds = sorted({bound for part in present for bound, _ in part})
    expected = [(bound, math.fsum(cumulative_at(part, bound) for part in present)) for bound in bounds]
    assert combine(*parts) == expected
