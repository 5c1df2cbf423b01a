"""Builders of the report's tests: runs fabricated as curves and analysed by the real
retrystorm.experiment.analysis functions (recoveries, RunResult, evaluate, results_document), so the
shapes stay in sync; and readers of what was written (PNG sizes, the page's tags and text).
"""

from __future__ import annotations

import dataclasses
import struct
from html.parser import HTMLParser

from retrystorm.experiment.analysis import LatencySummary, RunResult, evaluate, recoveries, results_document
from retrystorm.experiment.analysis.mechanism import after_resumes
from retrystorm.experiment.report import StrategyCurves
from retrystorm.experiment.scenario import Assertions

DURATION_S = 120


def curves(
    label: str,
    *,
    outages=((30.0, 50.0),),
    server_back_s: float | None = 6.0,
    users_back_s: float | None = 20.0,
    steady_goodput: float = 100.0,
    stuck_in_flight: float = 5000.0,
) -> StrategyCurves:
    """One strategy's curves: steady, then each outage; the server and the users come back
    ``server_back_s`` / ``users_back_s`` after the resume, or never (``None``)."""
    goodput, attempts, in_flight, delay = [], [], [], []
    for second in range(DURATION_S):
        start, end = float(second), float(second + 1)
        paused = next(((a, b) for a, b in outages if a < end and start < b), None)
        last = max((b for _, b in outages if b <= start), default=None)
        if paused is not None:
            goodput.append(0.0)
            attempts.append(steady_goodput * 3)
            in_flight.append(None)  # a paused target is not read
            delay.append(None)
            continue
        since = None if last is None else start - last
        server_ok = since is None or (server_back_s is not None and since + 1 >= server_back_s)  # read at the end
        users_ok = since is None or (users_back_s is not None and since >= users_back_s)
        goodput.append(steady_goodput if users_ok else steady_goodput * 0.2)
        attempts.append(steady_goodput * (1.05 if server_ok else 8.0))
        in_flight.append(20.0 if server_ok else stuck_in_flight)
        delay.append(0.1 if server_ok else 300.0)
    return StrategyCurves(
        label=label,
        times_s=[float(i + 1) for i in range(DURATION_S)],
        goodput=goodput,
        attempts=attempts,
        in_flight=in_flight,
        delay_s=delay,
        outages=[tuple(outage) for outage in outages],
    )


def result(
    entry: StrategyCurves,
    *,
    attempts: int = 13_000,
    requests: int = 10_000,
    succeeded: int = 9_500,
    assertions: Assertions | None = None,
    latencies=(0.1, 0.2, 0.4, 3.0),
    peak: int | None = None,
) -> RunResult:
    """The run of ``entry`` analysed by the real recovery analysis, verdicts evaluated."""
    found = recoveries(entry.samples(), entry.recovery_outages()) if entry.outages else []
    seen = [value for value in entry.in_flight if value is not None]
    aftermath = [figures.to_json() for figures in after_resumes(entry.samples(), found)]
    run = RunResult(
        strategy=entry.label,
        spec="exponential:base=100ms",
        attempts=attempts,
        requests=requests,
        succeeded=succeeded,
        gave_up=requests - succeeded,
        unfinished=0,
        latency=LatencySummary.of(latencies),
        peak_in_flight=peak if peak is not None else (round(max(seen)) if seen else None),
        recoveries=found,
        extra={"after_resume": aftermath},
    )
    if assertions is None:
        return run
    return dataclasses.replace(run, verdicts=evaluate(assertions, run))


def document(*runs: RunResult, **extra: object) -> dict[str, object]:
    """The results document of ``runs``, as the runner writes it."""
    return results_document("laptop-sigstop", runs, **extra)


# --- helpers reading what was written ------------------------------------------------------------

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from the IHDR chunk, which must come first."""
    assert data[:8] == PNG_MAGIC
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    return struct.unpack(">II", data[16:24])


class Page(HTMLParser):
    """Collects tags, text, image sources and external references of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []
        self.images: list[str] = []
        self.open: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        values = dict(attrs)
        if tag == "img":
            self.images.append(values["src"])
        if tag not in ("meta", "img", "br"):
            self.open.append(tag)

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, f"</{tag}> closes <{self.open[-1] if self.open else None}>"
        self.open.pop()

    def handle_data(self, data):
        if not self.open or self.open[-1] != "style":  # what a reader sees, not the style sheet
            self.text.append(data)


def parse(text: str) -> Page:
    page = Page()
    page.feed(text)
    page.close()
    assert page.open == []
    return page


def words(text: str) -> str:
    """The page's text as a reader sees it: the words of every element, one space apart."""
    return " ".join(" ".join(parse(text).text).split())
