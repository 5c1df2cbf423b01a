"""``retrystorm init``: probe a service once, then write a starter scenario for it that runs as is.

Before it writes anything, ``init`` sends each request once (:mod:`retrystorm.runner.probe_once`) and prints its
status and latency. With ``--command`` it starts the command first, as a run would (cwd: the scenario's folder;
this interpreter's folder first on ``PATH``), waits until the URL answers (60 s), and stops everything it started
afterwards (nothing may answer at the URL before it starts: the probe would measure that instead); without one,
the service must be answering already (5 s). A scenario whose requests all fail is
refused (exit 2, one line, nothing written): every attempt of its run would fail, steady state included. The load
written is :func:`retrystorm.experiment.scenario.starter.suggest_load`'s, from the slowest working request's
latency. ``--no-probe`` writes the modest default load without sending anything. ``--example`` writes the worked
example's app (``app.py``, a WSGI app for gunicorn) instead, so that the Get started page runs as pasted.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import tempfile
from importlib import resources
from pathlib import Path

import click
import pydantic

from retrystorm.addresses import http_address
from retrystorm.console import out
from retrystorm.errors import UserError
from retrystorm.experiment.scenario.service import RequestEntry
from retrystorm.experiment.scenario.starter import DEFAULT_LOAD, starter_scenario, suggest_load
from retrystorm.runner.errors import RunFailedError
from retrystorm.runner.local.processes import ManagedProcess, first_error
from retrystorm.runner.probe_once import ProbeAnswer, probe_requests
from retrystorm.runner.readiness import READY_TIMEOUT_S, wait_ready
from retrystorm.runner.readiness import probe as readiness_probe
from retrystorm.user_files import UserFileError, write_user_file

#: A service init does not start must answer within this long; one it starts, within the run's own limit.
RUNNING_READY_TIMEOUT_S = 5.0
EXAMPLE_COMMAND = "gunicorn -w 2 -b 127.0.0.1:8000 app:app"


@click.command("init")
@click.argument("url", required=False)
@click.option(
    "--request", "requests", multiple=True, metavar="'METHOD PATH'",
    help="A request of the mix, e.g. 'POST /orders' (repeatable; default: 'GET /'); its path follows URL's.",
)  # fmt: skip
@click.option("--command", "command", default=None, help="Start this for each strategy; a pause freezes its group.")
@click.option("--pid", type=click.IntRange(2), default=None, help="A running process to pause.")
@click.option("--container", default=None, help="A container to pause (label retrystorm.chaos=allow).")
@click.option("--service", default=None, help="A compose service to pause (label retrystorm.chaos=allow).")
@click.option(
    "-o", "--out", "path", type=click.Path(dir_okay=False, path_type=Path), default=Path("scenario.yaml"),
    show_default=True, help="Where to write the scenario.",
)  # fmt: skip
@click.option("--force", is_flag=True, help="Overwrite the file if it exists.")
@click.option("--no-probe", is_flag=True, help="Send nothing: write the modest default load, unchecked.")
@click.option("--example", is_flag=True, help="Write the worked example's app.py (a WSGI app for gunicorn); no URL.")
def init(
    *,
    url: str | None,
    requests: tuple[str, ...],
    command: str | None,
    pid: int | None,
    container: str | None,
    service: str | None,
    path: Path,
    force: bool,
    no_probe: bool,
    example: bool,
) -> None:
    """Probe your service at URL once, then write a starter scenario for it: a load suggested from the latency
    measured, a 15 s freeze, fixed retries against backoff.

    Each request is sent once and its status and latency printed; if every one fails, nothing is written (exit 2).
    Give at most one of --command, --pid, --container, --service: what a pause freezes (--command is started for
    the probe and stopped after). The file runs as is: `retrystorm run scenario.yaml`.
    """
    if example:
        _write_example(path.parent / "app.py", url=url, force=force)
        return
    if url is None:
        raise UserError("URL: missing; give your service's address, e.g. http://127.0.0.1:8000 (or --example)")
    url = _checked_url(url)
    mix = [_parsed_request(text) for text in requests] or [("GET", "/")]
    given = [(kind, value) for kind, value in (("command", command), ("pid", pid), ("container", container),
             ("service", service)) if value is not None]  # fmt: skip
    if len(given) > 1:
        raise UserError(f"give at most one of --command, --pid, --container, --service (got {len(given)})")
    _check_out(path, force=force)
    load = DEFAULT_LOAD
    if not no_probe:
        load = suggest_load(_probe(url, mix, command, path.parent.resolve()))
    name = path.name.removesuffix(".yaml").removesuffix(".yml") or "my-service"
    text = starter_scenario(url, name=name, pause=given[0] if given else None, requests=mix, load=load)
    _write(path, text, force=force)
    out.print(f"wrote {path}; next: retrystorm run {path} --dry-run, then retrystorm run {path}", markup=False)
    if load.latency_s is not None:
        out.print(
            f"load: {load.users} users thinking {load.think_s:g} s on average (about {load.rate_per_s:.3g} requests/s),"
            f" attempt timeout {load.attempt_timeout_s:g} s; where the storm really starts depends on how many "
            f"requests the service serves at once: `retrystorm map {path}` finds it (see the file's comments)",
            markup=False,
        )


def _check_out(path: Path, *, force: bool, elsewhere: str = "-o") -> None:
    """Refuse, before anything is sent, a path that is a symbolic link, or a file that exists without ``force``."""
    if path.is_symlink():
        raise UserError(f"{path}: a symbolic link; init never writes through one: remove it or name another file")
    if os.path.exists(path) and not force:  # noqa: PTH110 - False, not an error, for a name too long
        raise UserError(f"{path} exists; pass --force to overwrite it, or {elsewhere} to write elsewhere")


def _write(path: Path, text: str, *, force: bool) -> None:
    """Write ``text`` to ``path``, never through a symbolic link (:func:`~retrystorm.user_files.write_user_file`)."""
    try:
        write_user_file(path, text, replace=force)
    except UserFileError as error:
        raise UserError(f"{path}: cannot write it: {error}") from None


def _checked_url(url: str) -> str:
    try:
        return http_address(url)
    except ValueError:
        raise UserError(f"URL: got {url!r}, expected an http:// address like http://127.0.0.1:8000") from None


def _parsed_request(text: str) -> tuple[str, str]:
    """``'POST /orders'`` -> ``("POST", "/orders")``, checked as a scenario's request is."""
    method, _, request_path = text.strip().partition(" ")
    try:
        entry = RequestEntry(method=method.upper(), path=request_path.strip())
    except pydantic.ValidationError as error:
        problem = error.errors()[0]["msg"].removeprefix("Value error, ")
        raise UserError(f"--request: got {text!r}: {problem}; expected 'METHOD PATH', e.g. 'GET /orders'") from None
    return entry.method, entry.path


def _probe(url: str, mix: list[tuple[str, str]], command: str | None, folder: Path) -> float:
    """Probe the service (started from ``command`` if given); the slowest working request's latency, in seconds."""
    answers = asyncio.run(_probe_service(url, mix, command, folder))
    for answer in answers:
        out.print(f"probe: {answer.line()}", markup=False)
    working = [answer for answer in answers if answer.works]
    if not working:
        first = answers[0]
        seen = f"answered {first.status}" if first.status is not None else f"got no answer ({first.problem})"
        raise UserError(
            f"every request failed ({first.method} {first.path} {seen}), so would every attempt of the run; "
            "give requests your service serves (--request 'METHOD PATH'); nothing was written"
        )
    return max(answer.latency_s for answer in working)


async def _probe_service(url: str, mix: list[tuple[str, str]], command: str | None, folder: Path) -> list[ProbeAnswer]:
    if command is None:
        try:
            await wait_ready(url, None, timeout_s=RUNNING_READY_TIMEOUT_S, what="your service")
        except RunFailedError as error:
            raise UserError(f"{error}; start it first, or give --command to have init start it") from None
        return await probe_requests(url, mix)
    if await readiness_probe(url, None) is None:  # else the probe would measure that service, not the command's
        raise UserError(
            f"something already answers at {url}: stop it, as --command is started for the probe (and for each "
            "strategy of the run), or leave out --command to probe the running service"
        )
    with tempfile.TemporaryDirectory(prefix="retrystorm-init-") as scratch:
        process = ManagedProcess(
            "--command", shlex.split(command), Path(scratch) / "service.log", cwd=folder, tools_on_path=True
        )
        try:

            def alive() -> None:
                if not process.running:
                    raise UserError(_exit_line(process))

            try:
                await wait_ready(url, None, alive=alive, timeout_s=READY_TIMEOUT_S, what="the service of --command")
            except RunFailedError as error:
                raise UserError(str(error).splitlines()[0]) from None
            return await probe_requests(url, mix)
        finally:
            await process.stop_group()


def _exit_line(process: ManagedProcess) -> str:
    """``--command exited with status 1 before the service answered: <the first line of its own error>``."""
    text = process.log_path.read_text(encoding="utf-8", errors="replace")
    found = first_error(text)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    cause = found[1] if found is not None else (lines[-1] if lines else "it printed nothing")
    return f"--command exited with status {process.popen.poll()} before the service answered: {cause}"


def _write_example(app: Path, *, url: str | None, force: bool) -> None:
    """Write the worked example's WSGI app to ``app`` and say how to start it."""
    if url is not None:
        raise UserError("--example writes the example app and takes no URL; probe it afterwards with init URL")
    _check_out(app, force=force, elsewhere="-o DIR/scenario.yaml")
    source = resources.files("retrystorm.experiment.scenario").joinpath("example/app.py")
    _write(app, source.read_text(encoding="utf-8"), force=force)
    out.print(
        f"wrote {app} (every request takes 50 ms of a worker); start it with `{EXAMPLE_COMMAND}` in "
        f"{app.parent} (pip install gunicorn), or let init start it: retrystorm init http://127.0.0.1:8000 "
        f'--command "{EXAMPLE_COMMAND}"',
        markup=False,
    )
