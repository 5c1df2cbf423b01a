"""The live spike's schedule: users at each moment, how it travels to the Locust process, bad text refused."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loadgen.spikes import Spike, SpikeSchedule, format_spikes, parse_spikes
from retrystorm.errors import UserError


def test_spikes_add_up_while_they_last_and_end_at_their_end():
    schedule = SpikeSchedule(40, (Spike(20.0, 25.0, 40), Spike(22.0, 30.5, 3)))
    assert [schedule.users_at(t) for t in (0, 19.99, 20, 22, 24.99, 25, 30.49, 30.5)] == [
        40,
        40,
        80,
        83,
        83,
        43,
        43,
        40,
    ]
    assert [schedule.next_change_s(t) for t in (0, 20, 25, 30.5)] == [20.0, 22.0, 30.5, None]


def test_the_load_factor_is_the_users_in_force_over_the_runs():
    schedule = SpikeSchedule(40, (Spike(20.0, 25.0, 40), Spike(22.0, 30.5, 4)))
    assert [schedule.factor_at(t) for t in (0, 20, 22, 25, 30.5)] == [1.0, 2.0, 2.1, 1.1, 1.0]


spike = st.builds(
    lambda start, length, extra: Spike(start, start + length, extra),
    st.floats(0, 1e6, allow_nan=False), st.floats(1e-3, 1e4, allow_nan=False), st.integers(0, 10**6),
)  # fmt: skip


@settings(derandomize=True, max_examples=200, deadline=1000)
@given(st.lists(spike, max_size=20))
def test_what_the_runner_writes_the_shape_reads_back_exactly(spikes):
    assert parse_spikes(format_spikes(spikes)) == spikes


@pytest.mark.parametrize("text", ["1:2", "2:1:5", "1:2:-1", "a:2:3", "1:inf:3", "1:2:3:4", "1:2:3;"])
def test_anything_else_is_one_line_naming_the_variable(text):
    with pytest.raises(UserError, match=r"^RETRYSTORM_SPIKES: got .*; expected START:END:EXTRA \(seconds, users\)$"):
        parse_spikes(text)
