"""The live progress display: phase, elapsed and remaining time, outage state, goodput, in flight.

On a terminal a ``rich`` Live panel redrawn every reading; anywhere else (CI logs, a
pipe) plain lines: one at each phase change and one every :data:`PLAIN_EVERY_S`.
"""

from __future__ import annotations

import dataclasses
from types import TracebackType

from rich.console import Console
from rich.live import Live
from rich.table import Table

from retrystorm.durations import format_duration

#: Seconds between plain progress lines.
PLAIN_EVERY_S = 5


@dataclasses.dataclass(frozen=True, slots=True)
class Status:
    """What the display shows after one reading."""

    label: str
    index: int
    total: int
    phase: str
    elapsed_s: float
    duration_s: float
    remaining_total_s: float
    outage: str
    goodput: float | None
    attempts: float | None
    in_flight: float | None
    in_backoff: float | None
    #: False for a service without server readings: its in-flight count is never read.
    server_read: bool = True


def _in_flight(status: Status, missing: str) -> str:
    if not status.server_read:
        return "not read (the server is judged from the clients)"
    return _number(status.in_flight) if status.in_flight is not None else missing


def _number(value: float | None, unit: str = "") -> str:
    return "-" if value is None else f"{value:,.0f}{unit}"


def _clock(seconds: float) -> str:
    """Whole seconds up to ten minutes (``65s``, not ``1m5s``), beyond that ``12m30s``."""
    whole = round(max(0.0, seconds))
    return f"{whole}s" if whole < 600 else format_duration(whole)


def status_line(status: Status) -> str:
    """The status as one plain line."""
    in_flight = _in_flight(status, "no answer")
    return (
        f"[{status.index}/{status.total} {status.label}] {_clock(status.elapsed_s)}/{_clock(status.duration_s)} "
        f"{status.phase}; {status.outage}; goodput {_number(status.goodput, '/s')}, "
        f"attempts {_number(status.attempts, '/s')}, in flight {in_flight}, in backoff {_number(status.in_backoff)}; "
        f"about {_clock(status.remaining_total_s)} left in all"
    )


def status_table(status: Status) -> Table:
    """The status as a small two-column table."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    in_flight = _in_flight(status, "no answer (paused?)")
    remaining = f"about {_clock(status.remaining_total_s)} left in all"
    rows = [
        ("strategy", f"{status.label}  ({status.index} of {status.total})"),
        ("phase", status.phase),
        ("time", f"{_clock(status.elapsed_s)} of {_clock(status.duration_s)}; {remaining}"),
        ("outage", status.outage),
        ("goodput", f"{_number(status.goodput, ' requests/s')}   attempts {_number(status.attempts, '/s')}"),
        ("in flight", f"{in_flight}   users in backoff {_number(status.in_backoff)}"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


class Display:
    """Shows :class:`Status` updates on ``console``; use as a context manager."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.live: Live | None = None
        self._last_phase: tuple[str, str] | None = None
        self._last_line_s: float = -PLAIN_EVERY_S

    def __enter__(self) -> Display:
        if self.console.is_terminal:
            self.live = Live(console=self.console, refresh_per_second=4, transient=True)
            self.live.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self.live is not None:
            self.live.__exit__(kind, error, trace)
            self.live = None

    def note(self, text: str) -> None:
        """A line that stays (start and end of a strategy, warnings)."""
        self.console.print(text, markup=False, highlight=False, soft_wrap=True)

    def update(self, status: Status) -> None:
        """Show ``status``."""
        if self.live is not None:
            self.live.update(status_table(status))
            return
        phase = (status.label, status.phase)
        if phase != self._last_phase or status.elapsed_s - self._last_line_s >= PLAIN_EVERY_S - 1e-9:
            self.note(status_line(status))
            self._last_phase = phase
            self._last_line_s = status.elapsed_s
