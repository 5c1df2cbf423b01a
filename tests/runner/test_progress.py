"""The live progress display: plain lines off a terminal, a panel on one."""

import dataclasses
import io

from rich.console import Console

from retrystorm.runner.progress import Display, Status, status_line, status_table


def status(elapsed, phase="steady", in_flight=12.0):
    return Status(
        label="fixed:100ms", index=1, total=2, phase=phase, elapsed_s=elapsed, duration_s=70.0,
        remaining_total_s=150.0 - elapsed, outage="next outage in 5s", goodput=98.4, attempts=120.0,
        in_flight=in_flight, in_backoff=3.0,
    )  # fmt: skip


def test_status_line_shows_phase_time_outage_goodput_and_in_flight():
    line = status_line(status(15.0))
    assert line.startswith("[1/2 fixed:100ms] 15s/70s steady; next outage in 5s; goodput 98/s")
    assert "in flight 12" in line
    assert "about 135s left in all" in line
    assert "in flight no answer" in status_line(status(21.0, "outage", in_flight=None))
    unread = dataclasses.replace(status(21.0, in_flight=None), server_read=False)  # a service without metrics:
    assert "in flight not read (the server is judged from the clients)" in status_line(unread)


def test_plain_display_prints_on_phase_changes_and_every_five_seconds():
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=False, width=200)
    with Display(console) as display:
        for second in range(12):
            display.update(status(float(second), "ramp-up" if second < 3 else "steady"))
        display.note("[1/2] done")
    lines = buffer.getvalue().splitlines()
    shown = [line.split("]")[1].split()[0] for line in lines[:-1]]
    assert shown == ["0s/70s", "3s/70s", "8s/70s"]
    assert lines[-1] == "[1/2] done"


def test_terminal_display_draws_a_panel():
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=100)
    with Display(console) as display:
        assert display.live is not None
        display.update(status(30.0, "outage", in_flight=None))
    assert "no answer (paused?)" in buffer.getvalue()
    table = status_table(status(1.0))
    assert table.row_count == 6


def test_the_displayed_attempts_per_second_are_attempts_sent(small):
    """While the server answers nothing, attempts still go out: the display says so at once."""
    from retrystorm.loadgen.readings import Reading
    from retrystorm.runner.orchestrate import StrategyRun
    from retrystorm.runner.plan import make_plan
    from retrystorm.runner.runtime import Runtime

    from .conftest import client

    plan = make_plan(small, small.strategies)
    run = StrategyRun(plan.strategies[0], plan.outages, None, None, (1, 2, 40.0), runtime=Runtime())
    run.readings = [
        Reading(20, 20.0, None, client(0.0, 100.0, sent=100.0)),
        Reading(21, 21.0, None, client(0.0, 100.0, sent=160.0)),
    ]
    shown = run.status(21)
    assert shown.attempts == 60.0
    assert shown.goodput == 0.0
