"""The simulator's series: counts per interval, written per second under the live runner's names."""

import pytest

from retrystorm.loadgen.series_names import GAUGES, RATES
from retrystorm.sim.series import COUNTERS, Series


def filled(step_s: float) -> Series:
    """Every counter 3 in the first interval, 0 after; in flight 7 at its end, delay 0.1 s."""
    series = Series.empty(2.0, step_s)
    for name in COUNTERS:
        getattr(series, name)[0] = 3
    for name in ("in_flight", "peak_in_flight", "accept_queue", "frozen"):
        getattr(series, name).extend([7] + [0] * series.length)
    series.delay_s.extend([0.1] * (series.length + 1))
    series.trim()
    return series


def test_rows_carry_the_shared_names_per_second():
    row = filled(0.5).rows()[0]
    assert set(RATES) | set(GAUGES) <= set(row)
    assert {name: row[name] for name in RATES} == dict.fromkeys(RATES, 6.0)  # 3 events in 0.5 s
    assert (row["t_s"], row["in_flight"], row["delay_s"]) == (0.5, 7, 0.1)  # gauges as read


def test_one_second_intervals_write_their_counts_as_they_are():
    row = filled(1.0).rows()[0]
    assert {name: row[name] for name in COUNTERS} == dict.fromkeys(COUNTERS, 3)
    assert all(type(row[name]) is int for name in COUNTERS)  # 3, not 3.0, in the CSV


@pytest.mark.parametrize("step_s", [0.25, 1.0, 2.0])
def test_rates_and_rows_agree(step_s):
    series = filled(step_s)
    rows = series.rows()
    for name in COUNTERS:
        assert [row[name] for row in rows] == series.rate(name)
