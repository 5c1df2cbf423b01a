"""The live network windows as toxics: levels per kind, each set with its own deadline and ended at its change."""

from __future__ import annotations

import asyncio
import time

import pytest

from retrystorm.chaos.backends.base import BackendError
from retrystorm.chaos.network.toxics import Delay, Hang, Loss, Reset
from retrystorm.experiment.scenario import SlowWindow
from retrystorm.experiment.scenario.network import DelayWindow, HangWindow, LossWindow, PartitionWindow, ResetWindow
from retrystorm.runner.errors import RunFailedError
from retrystorm.runner.network_triggers import DEADLINE_GRACE_S, NetworkPlayer, network_changes, toxic_of

from .fakes import VirtualTime, fake_runtime


class RecordingToxics:
    """Toxics set and cleared, in order; ``fail_clear``: every clear refused."""

    def __init__(self, *, fail_clear: bool = False) -> None:
        self.calls: list[tuple] = []
        self.fail_clear = fail_clear

    def set(self, toxic_id, toxic, until_monotonic):
        self.calls.append(("set", toxic_id, toxic, until_monotonic - time.monotonic()))

    def clear(self, toxic_id):
        self.calls.append(("clear", toxic_id))
        if self.fail_clear:
            raise BackendError("cannot reach the fault proxy")
        return True


def test_each_window_becomes_its_toxic_with_the_same_settings():
    assert toxic_of(DelayWindow(0, 1, latency_s=0.2, jitter_s=0.02)) == Delay(latency_s=0.2, jitter_s=0.02)
    assert toxic_of(LossWindow(0, 1, probability=0.1)) == Loss(probability=0.1)
    assert toxic_of(HangWindow(0, 1, probability=0.5)) == Hang(probability=0.5)
    assert toxic_of(ResetWindow(0, 1)) == Reset(probability=1.0)


def test_overlapping_delays_hold_the_longest_and_other_kinds_are_left_to_others():
    windows = [
        DelayWindow(10, 20, latency_s=0.1),
        DelayWindow(15, 25, latency_s=0.3),
        ResetWindow(12, 14),
        PartitionWindow(5, 8),  # routes on hosts: not the proxy's
        SlowWindow(1, 2, capacity=0.5),
    ]
    found = [(c.at_s, c.kind, c.window.latency_s if isinstance(c.window, DelayWindow) else c.window, c.hold_s)
             for c in network_changes(windows)]  # fmt: skip
    assert found == [
        (10, "delay", 0.1, 5),
        (12, "reset", ResetWindow(12, 14), 2),
        (14, "reset", None, 0),
        (15, "delay", 0.3, 10),
        (25, "delay", None, 0),
    ]


def test_the_player_sets_each_level_with_its_deadline_ends_it_at_its_change_and_records_what_happened():
    clock = VirtualTime()
    toxics = RecordingToxics()
    player = NetworkPlayer([DelayWindow(10, 20, latency_s=0.2), HangWindow(12, 13)], toxics, fake_runtime(clock, None))

    async def run():
        await player.play(0.0)
        await player.restore()

    asyncio.run(run())
    [(verb, delay_id, delay, ahead_s), hang, hang_end, delay_end] = toxics.calls
    assert (verb, delay) == ("set", Delay(latency_s=0.2))
    assert ahead_s == pytest.approx(10 + DEADLINE_GRACE_S, abs=0.5)  # the proxy ends it by itself then
    assert hang[:3] == ("set", "hang-2", Hang()) and hang[3] == pytest.approx(1 + DEADLINE_GRACE_S, abs=0.5)
    assert (hang_end, delay_end) == (("clear", "hang-2"), ("clear", delay_id))
    assert player.in_force == {}
    assert [(w.kind, w.start_s, w.end_s) for w in player.actual(0.0)] == [("delay", 10, 20), ("hang", 12, 13)]


def test_an_interrupted_run_ends_what_is_in_force_and_reports_what_it_could_not_end():
    clock = VirtualTime()
    toxics = RecordingToxics(fail_clear=True)
    player = NetworkPlayer([LossWindow(1, 30, probability=0.1)], toxics, fake_runtime(clock, None))

    async def run():
        playing = asyncio.create_task(player.play(0.0))
        await clock.sleep(5)
        playing.cancel()  # as SIGINT cancels the run
        with pytest.raises(asyncio.CancelledError):
            await playing
        with pytest.raises(RunFailedError, match=r"could not end every fault in the network .* loss of 'target'"):
            await player.restore()

    asyncio.run(run())
    assert [call[0] for call in toxics.calls] == ["set", "clear"]
    [loss] = player.actual(0.0)
    assert (loss.start_s, loss.end_s) == (1, 5)


def test_network_windows_without_a_proxy_are_refused_when_the_player_is_made():
    with pytest.raises(ValueError, match="need a fault proxy"):
        NetworkPlayer([ResetWindow(1, 2)], None, fake_runtime(VirtualTime(), None))
    assert NetworkPlayer([SlowWindow(1, 2, capacity=0.5)], None, fake_runtime(VirtualTime(), None)).changes == []


class RecordingPartitions:
    """Partitions started and ended, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def start_partition(self, target, hold_s):
        self.calls.append(("start", target, hold_s))
        return f"p{len(self.calls)}"

    def end_partition(self, fault_id):
        self.calls.append(("end", fault_id))


def test_overlapping_partitions_merge_into_one_held_until_the_last_ends_and_each_is_healed():
    clock = VirtualTime()
    partitions = RecordingPartitions()
    windows = [PartitionWindow(5, 8), PartitionWindow(7, 12), PartitionWindow(20, 21)]
    player = NetworkPlayer(windows, None, fake_runtime(clock, None), partitions=partitions)

    async def run():
        await player.play(0.0)
        await player.restore()

    asyncio.run(run())
    assert partitions.calls == [
        ("start", "target", 7 + DEADLINE_GRACE_S), ("end", "p1"), ("start", "target", 1 + DEADLINE_GRACE_S),
        ("end", "p3"),
    ]  # fmt: skip
    assert [(w.kind, w.start_s, w.end_s) for w in player.actual(0.0)] == [("partition", 5, 12), ("partition", 20, 21)]
