"""The spike player's decisions (:class:`retrystorm.loadgen.spikes.SpikeSteps`) step by step; Locust's own runner:
live tests."""

from retrystorm.loadgen.spikes import TICK_S, LoadSpike, SpikeSteps


def test_users_go_up_at_a_spikes_start_and_back_at_its_end_at_a_rate_that_starts_them_within_a_second():
    steps = SpikeSteps((LoadSpike(5.0, 8.0, 3.0),), 100)
    taken = [steps.step(t, 100, 10.0) for t in (0.0, 4.5, 5.0, 6.0, 8.0, 9.0)]
    assert [step.start for step in taken] == [None, None, (300, 200.0), None, (100, 200.0), None]
    assert [step.factor for step in taken] == [1.0, 1.0, 3.0, 3.0, 1.0, 1.0]
    assert [step.sleep_s for step in taken] == [TICK_S, 0.5, TICK_S, TICK_S, TICK_S, TICK_S]  # wakes at the start


def test_an_edit_of_the_users_in_the_web_ui_moves_the_base_without_a_start_of_its_own():
    steps = SpikeSteps((LoadSpike(5.0, 8.0, 2.0),), 100)
    assert steps.step(1.0, 50, 10.0).start is None  # the web UI asked Locust for 50 itself
    assert steps.step(5.0, 50, 10.0).start == (100, 50.0)  # twice the new base
    assert steps.step(6.0, 80, 10.0).start == (160, 80.0)  # edited during the spike: the spike follows


def test_no_users_no_start():
    steps = SpikeSteps((LoadSpike(0.0, 8.0, 3.0),), 0)
    assert [steps.step(t, 0, 1.0).start for t in (0.0, 1.0)] == [None, None]
