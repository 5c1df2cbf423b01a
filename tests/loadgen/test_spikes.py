"""The live spike's schedule: users at each moment, the ``--load-spikes`` text both ways, bad text refused."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrystorm.errors import SpecError
from retrystorm.loadgen.spikes import LoadSpike, SpikeSchedule, format_load_spikes, parse_load_spikes


def test_spikes_add_up_while_they_last_and_end_at_their_end():
    schedule = SpikeSchedule(40, (LoadSpike(20.0, 25.0, 2.0), LoadSpike(22.0, 30.5, 1.075)))
    assert [schedule.users_at(t) for t in (0, 19.99, 20, 22, 24.99, 25, 30.49, 30.5)] == [
        40, 40, 80, 83, 83, 43, 43, 40,
    ]  # fmt: skip
    assert [schedule.next_change_s(t) for t in (0, 20, 25, 30.5)] == [20.0, 22.0, 30.5, None]


def test_each_spike_adds_users_times_factor_minus_one_rounded_as_the_simulator_does():
    assert LoadSpike(0, 1, 2.5).added_users(1000) == 1500
    assert LoadSpike(0, 1, 1.0).added_users(1000) == 0
    assert LoadSpike(0, 1, 1.5).added_users(3) == 2  # round(1.5): to even, as Python rounds everywhere


def test_the_load_factor_is_the_users_in_force_over_the_tests():
    schedule = SpikeSchedule(40, (LoadSpike(20.0, 25.0, 2.0), LoadSpike(22.0, 30.5, 1.1)))
    assert [schedule.factor_at(t) for t in (0, 20, 22, 25, 30.5)] == [1.0, 2.0, 2.1, 1.1, 1.0]


def test_the_spawn_rate_starts_the_largest_spike_within_a_second():
    schedule = SpikeSchedule(100, (LoadSpike(5, 6, 3.0), LoadSpike(8, 9, 1.5)))
    assert schedule.spawn_rate(10.0) == 200.0
    assert schedule.spawn_rate(1000.0) == 1000.0
    assert SpikeSchedule(100, ()).spawn_rate(10.0) == 10.0


def test_the_text_people_type_reads_as_at_for_and_factor():
    assert parse_load_spikes("60s+10s:x2, 2m+500ms:X1.5") == (LoadSpike(60, 70, 2.0), LoadSpike(120, 120.5, 1.5))
    assert parse_load_spikes("none") == parse_load_spikes("  ") == ()
    assert format_load_spikes(()) == "none"


spike = st.builds(
    lambda start_ms, length_ms, factor: LoadSpike(start_ms / 1000, (start_ms + length_ms) / 1000, factor),
    st.integers(0, 10**9), st.integers(1, 10**7), st.floats(1, 100, allow_nan=False),
)  # fmt: skip


@settings(derandomize=True, max_examples=200, deadline=1000)
@given(st.lists(spike, max_size=20))
def test_what_the_runner_writes_the_load_generator_reads_back_to_the_millisecond(spikes):
    read = parse_load_spikes(format_load_spikes(spikes))
    assert [s.factor for s in read] == [s.factor for s in spikes]
    assert all(
        abs(a.start_s - b.start_s) < 1e-6 and abs(a.end_s - b.end_s) < 1e-6 for a, b in zip(read, spikes, strict=True)
    )


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("60s:x2", "expected AT+FOR:xFACTOR"),
        ("60s+10s", "expected AT+FOR:xFACTOR"),
        ("60s+10s:2", "expected AT+FOR:xFACTOR"),
        ("60+10s:x2", "AT: got '60' (add a unit)"),
        ("60s+0s:x2", "FOR must be > 0"),
        ("60s+10s:x0.5", "FACTOR must be from 1 to 100"),
        ("60s+10s:x101", "FACTOR must be from 1 to 100"),
        ("60s+10s:xnan", "FACTOR must be from 1 to 100"),
        ("60s+10s:xlots", "could not convert"),
        ("60s+10s:x2,", "got ''"),
        ("1e400s+1s:x2", "AT:"),
        (",".join(["1s+1s:x2"] * 10_001), "at most 10,000"),
    ],
)
def test_anything_else_is_one_line_naming_the_form_accepted(text, words):
    with pytest.raises(SpecError) as caught:
        parse_load_spikes(text)
    message = str(caught.value)
    assert words in message and "\n" not in message and len(message) < 400
