"""``retrystorm chaos``: one-shot outages and recovery of targets left paused."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import click

from chaos.backends import FaultBackend, ProcessBackend
from chaos.controller import DEFAULT_MAX_OUTAGE_S, OutageController
from chaos.journal import Journal, default_journal_path
from retrystorm.cli_types import DURATION
from retrystorm.console import out
from retrystorm.durations import format_duration

log = logging.getLogger(__name__)

JOURNAL_OPTION = click.option(
    "--journal",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help=f"Pause journal (default {default_journal_path()}, or $RETRYSTORM_CHAOS_JOURNAL).",
)


def make_backends(names: tuple[str, ...], project: str | None = None) -> dict[str, FaultBackend]:
    """The named backends; ``docker`` connects to the engine now and fails clearly if it cannot."""
    backends: dict[str, FaultBackend] = {}
    for name in names:
        if name == "process":
            backends[name] = ProcessBackend()
        else:
            from chaos.backends.docker import DockerBackend

            backends[name] = DockerBackend(project=project)
    return backends


@click.group()
def chaos() -> None:
    """Pause targets the way SIGSTOP / docker pause does, and always resume them."""


@chaos.command()
@click.option(
    "--backend",
    "backend_names",
    type=click.Choice(["process", "docker"]),
    multiple=True,
    default=("process",),
    show_default=True,
    help="Backends to recover (repeatable).",
)
@click.option("--project", default=None, help="Only this compose project (docker).")
@JOURNAL_OPTION
def recover(*, backend_names: tuple[str, ...], project: str | None, journal: Path | None) -> None:
    """Resume every target a killed controller left paused (journal; labelled paused containers)."""

    async def run() -> list[str]:
        controller = OutageController(make_backends(backend_names, project), Journal(journal))
        return [ref.describe() for ref in await controller.recover()]

    resumed = asyncio.run(run())
    out.print("\n".join(f"resumed {what}" for what in resumed) if resumed else "nothing was left paused")


@chaos.command()
@click.argument("target")
@click.option("--for", "duration", type=DURATION, required=True, help="Outage length, e.g. 30s.")
@click.option(
    "--backend", "backend_name", type=click.Choice(["process", "docker"]), default="process", show_default=True
)
@click.option("--project", default=None, help="Only this compose project (docker).")
@click.option(
    "--max-outage",
    type=DURATION,
    default=format_duration(DEFAULT_MAX_OUTAGE_S),
    show_default=True,
    help="No outage lasts longer than this, whatever --for says.",
)
@JOURNAL_OPTION
def pause(
    *, target: str, duration: float, backend_name: str, project: str | None, max_outage: float, journal: Path | None
) -> None:
    """Pause TARGET for a while, then resume it; Ctrl-C or SIGTERM resume it at once.

    TARGET is pid:NUMBER for the process backend, a compose service name for docker.
    """

    async def run() -> None:
        backends = make_backends((backend_name,), project)
        async with OutageController(backends, Journal(journal), max_outage_s=max_outage) as controller:
            done = asyncio.Event()
            controller.install_signal_handlers(done.set)
            outage = await controller.pause(target, duration)
            out.print(f"paused {target} for {format_duration(outage.duration_s)} (outage {outage.id})")
            waiter = asyncio.create_task(done.wait())
            while outage.status == "active" and not done.is_set():
                await asyncio.wait([waiter], timeout=0.1)
            waiter.cancel()
            out.print(f"resumed {target} ({outage.end_reason})")

    asyncio.run(run())
