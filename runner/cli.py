"""``retrystorm run SCENARIO`` and ``retrystorm demo``: a scenario live.

``--backend local`` (the default, and the demo's) starts local processes;
``--backend compose`` drives a running compose stack (:mod:`retrystorm.runner.compose`),
whose addresses come from options or their environment variables.

Exit status: 0 when every assertion holds, 1 when one fails (each failure printed with
the measured value and the bound), 2 on bad input (one line), 3 when the run could
not go on (a process died, its log's tail printed; a service of the stack failed or a
fault backend could not act, one line) or when its figures are not valid: the steady window
did not show the service working (:mod:`retrystorm.experiment.analysis.steady_state`; a run with
triggers stops there, before any of them, with one line naming the request, what it got and
its share), or a load generator was saturated for more than 5 % of a strategy's run
(:mod:`retrystorm.experiment.analysis.validity`; ``--allow-saturated`` keeps the verdicts' status),
4 when a stop condition of the scenario's ``slo:`` was breached (the run stopped there, every
fault reverted: :mod:`retrystorm.runner.slo`), 130 when SIGINT or SIGTERM stopped it (every
target resumed and every process stopped first). ``--junit FILE`` writes the assertions as JUnit
XML (:mod:`retrystorm.runner.junit`) whatever the status.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from retrystorm.chaos.backends.base import BackendError
from retrystorm.chaos.cli import JOURNAL_OPTION
from retrystorm.chaos.journal import Journal
from retrystorm.console import err, out
from retrystorm.errors import UserError
from retrystorm.experiment.scenario import Scenario, SlowWindow, load_scenario, shipped_scenario
from retrystorm.extras import require_extra
from retrystorm.otel import OtelSettings
from retrystorm.runner.compose.endpoints import (
    DEFAULT_LOCUST_URL,
    DEFAULT_PROMETHEUS_URL,
    DEFAULT_TARGET_URL,
    ComposeEndpoints,
)
from retrystorm.runner.errors import RunFailedError
from retrystorm.runner.orchestrate import RunInterruptedError, Stack, execute
from retrystorm.runner.paths import default_folder
from retrystorm.runner.plan import Plan, check_fault_targets, check_live_triggers, make_plan, select
from retrystorm.runner.progress import Display
from retrystorm.runner.record import StrategyRecord, analyse
from retrystorm.runner.runtime import Runtime
from retrystorm.runner.show import draw_report, failures, plan_lines, print_verdicts
from retrystorm.runner.slo import SloGuard, check_guard
from retrystorm.runner.throttle_controls import LEVEL_MARGIN_S
from retrystorm.user_files import prepare_out_folder

log = logging.getLogger(__name__)

DEMO_SCENARIO = "smira-laptop"
#: The most Locust worker processes ``--workers`` starts on this machine.
MAX_WORKERS = 256
#: The most runs of each strategy ``--repeat`` takes.
MAX_REPEAT = 20
EXIT_FAILED = 1
#: A load generator was saturated: the figures measured it, not the service (a validity finding, not bad input).
EXIT_NOT_VALID = 3
#: A stop condition (``slo:``) was breached: the run stopped early, every fault reverted.
EXIT_SLO_BREACHED = 4
EXIT_INTERRUPTED = 130


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    """What the command line asked for beyond the scenario."""

    folder: Path | None = None
    simulate: bool = False
    journal: Path | None = None
    #: The compose stack to run against; ``None``: local processes.
    compose: ComposeEndpoints | None = None
    #: Time, sleep, blocking calls and the dead-man switch (tests pass fakes).
    runtime: Runtime | None = None
    #: Locust processes per strategy on the local backend (``None``: from the cores and the load).
    workers: int | None = None
    #: Exit with the verdicts' status even when a load generator was saturated (the finding is still shown).
    allow_saturated: bool = False
    #: Where a scenario's ``target.command`` runs: the scenario file's folder (default: the current one).
    scenario_dir: Path | None = None
    #: The scenario's stop conditions, checked (``None``: it has none).
    slo: SloGuard | None = None
    #: Where ``--junit`` writes the assertions as JUnit XML.
    junit: Path | None = None
    #: ``--otel-endpoint``: export the run over OTLP (:mod:`retrystorm.runner.otel_export`).
    otel: OtelSettings | None = None
    #: Runs of each strategy (``--repeat``).
    repeat: int = 1
    #: ``--force``: write into a run folder that already holds results.
    force: bool = False


def prepare(
    scenario: Scenario, labels: Sequence[str], stack: Stack, *, simulate: bool = False, repeat: int = 1
) -> tuple[Plan, list[str]]:
    """The plan and each strategy's load description; every check that needs no process (``UserError``).

    With ``simulate``, also the simulator's own checks of each strategy's run, so that
    a scenario it refuses fails now rather than after the live run.
    """
    plan = make_plan(scenario, select(scenario, labels), repeat)
    check_live_triggers(scenario, stack.trigger_refusal)
    check_fault_targets([*plan.outages, *plan.triggers], stack.fault_target_names, stack.name)
    if simulate:
        from retrystorm.runner.compare import check_simulable  # only with --simulate

        check_simulable(scenario, [strategy.entry for strategy in plan.strategies])
    loads = [stack.load.describe(strategy.spec) for strategy in plan.strategies]
    return plan, loads


def _run_live(plan: Plan, stack: Stack, options: RunOptions) -> list[StrategyRecord]:
    with Display(err) as display:
        return asyncio.run(execute(plan, stack, display, Journal(options.journal), options.runtime, slo=options.slo))


def _simulated(plan: Plan, results: Sequence[Any], records: Sequence[Any]) -> tuple[dict[str, object], list[Any]]:
    """``--simulate``: the plan's strategies in the simulator, compared with the live ``results``; and their curves."""
    from retrystorm.runner.compare import comparison, grpc_simulation_notes, simulate
    from retrystorm.runner.outputs import live_curves

    scenario = plan.scenario
    only = scenario.model_copy(update={"strategies": [strategy.entry for strategy in plan.strategies]})
    sim_rows, simulated_curves = simulate(only)
    live_rows = [result.to_json() for result in results]
    curves = [live_curves(record) for record in records]
    document: dict[str, object] = {
        "results": sim_rows,
        "compared": comparison(live_rows, sim_rows, curves, simulated_curves),
    }
    if notes := grpc_simulation_notes(only):
        document["notes"] = notes
        for note in notes:
            err.print(f"simulated: {note}", markup=False, soft_wrap=True)
    return document, simulated_curves


def run_plan(plan: Plan, stack: Stack, folder: Path, options: RunOptions) -> int:
    """Run ``plan`` live, write the results, print the verdicts, then draw the report; the exit status.

    ``results.json`` and the verdicts come before the report: a report that cannot be drawn costs one line on
    stderr, never the verdicts, and the exit status stays the verdicts'.
    """
    from retrystorm.runner.outputs import run_document, write_results

    scenario = plan.scenario
    try:
        records = _run_live(plan, stack, options)
    except RunInterruptedError as error:
        err.print(f"retrystorm run: {error}", markup=False)
        return EXIT_INTERRUPTED
    except RunFailedError as error:
        err.print(f"retrystorm run: {error}", markup=False, soft_wrap=True)
        return RunFailedError.exit_code
    except BackendError as error:  # e.g. no Docker engine: one line, the run could not go on
        err.print(f"retrystorm run: {' '.join(str(error).split())}", markup=False, soft_wrap=True)
        return RunFailedError.exit_code
    results = [analyse(record, scenario.assertions.get(record.label)) for record in records]
    simulated_doc, simulated_curves = _simulated(plan, results, records) if options.simulate else (None, [])
    run_info = {"scenario": scenario.name, "seed": scenario.seed, "stack": stack.name, "folder": str(folder)}
    document = run_document(scenario.name, results, records, run_info, simulated_doc, description=scenario.description)
    breach = options.slo.breach if options.slo is not None else None
    if options.slo is not None:
        skipped = [strategy.spec.label for strategy in plan.strategies[len(records) :]]
        document["slo"] = options.slo.to_json(skipped)
        document["ok"] = document["ok"] and breach is None
    write_results(folder, document, records)
    runs = "one run per strategy" if plan.repeat == 1 else f"{plan.repeat} runs per strategy"
    title = f"{scenario.name}: live, {runs} (times in seconds)"
    shown = [
        dataclasses.replace(result, strategy=f"{result.strategy} #{record.repeat}") if plan.repeat > 1 else result
        for result, record in zip(results, records, strict=True)
    ]
    print_verdicts(out, title, shown, None, document)
    draw_report(out, err, folder, document, records=records, simulated=simulated_curves)
    out.print(f"run folder: {folder}")
    failed = failures(shown)
    for line in failed:
        err.print(f"assertion failed: {line}", markup=False)
    broken = steady_failures(document)
    for label, problem in broken:
        err.print(f"retrystorm run: not valid: {label}: {problem}", markup=False, soft_wrap=True)
    if broken:
        return EXIT_NOT_VALID
    saturated = not_valid(document)
    if saturated:
        err.print(
            f"retrystorm run: not valid: the load generator was saturated during {', '.join(saturated)} "
            "(see Validity above; run with --workers N on a machine with more cores, or less load)"
            + ("; --allow-saturated: exit status from the assertions" if options.allow_saturated else ""),
            markup=False,
            soft_wrap=True,
        )
        if not options.allow_saturated and breach is None:
            return EXIT_NOT_VALID
    if breach is not None:
        err.print(
            f"retrystorm run: stopped early: {breach.describe()}; every fault was reverted"
            + (f"; not run: {', '.join(document['slo']['skipped'])}" if document["slo"]["skipped"] else ""),  # type: ignore[index]
            markup=False,
            soft_wrap=True,
        )
        return EXIT_SLO_BREACHED
    return EXIT_FAILED if failed else 0


def steady_failures(document: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(label, problem)`` of each run whose steady window did not show the service working."""
    return [
        (str(row["strategy"]), str(row["steady_state"].get("problem")))
        for row in document.get("results", [])
        if isinstance(row.get("steady_state"), Mapping) and row["steady_state"].get("valid") is False
    ]


def not_valid(document: Mapping[str, Any]) -> list[str]:
    """The labels whose run the saturation rule found not valid."""
    return [
        str(row["strategy"])
        for row in document.get("results", [])
        if isinstance(row.get("validity"), Mapping) and row["validity"].get("valid") is False
    ]


def _hosts_stack(scenario: Scenario, folder: Path, options: RunOptions) -> Stack:
    """A scenario across hosts (``hosts:``): the hosts backend, whatever ``--backend`` the environment suggests."""
    if options.compose is not None:
        raise UserError("--backend compose: a scenario with hosts: runs on its hosts (leave --backend out)")
    if options.workers is not None:
        raise UserError("--workers: a scenario with hosts: takes its workers from hosts.workers")
    from retrystorm.runner.hosts import hosts_stack

    return hosts_stack(scenario, folder / "logs", admin_token=os.environ.get("RETRYSTORM_ADMIN_TOKEN", ""))


def run_scenario_file(scenario: Scenario, labels: Sequence[str], *, dry_run: bool, options: RunOptions) -> int:
    """Validate, show the plan, and (unless ``dry_run``) run it; the exit status."""
    folder = options.folder or default_folder(scenario.name)
    if scenario.hosts is not None:
        stack = _hosts_stack(scenario, folder, options)
    elif options.compose is None:
        from retrystorm.runner.local import local_stack  # each backend only when used: no Docker SDK for a local run

        stack = local_stack(
            folder / "logs", scenario.target, options.scenario_dir, options.workers, scenario.grpc,
            journal=Journal(options.journal).path,
        )  # fmt: skip
    else:
        if scenario.grpc is not None:
            raise UserError("grpc: the compose stack's target and Locust speak HTTP only; run it with --backend local")
        if any(entry.http_client == "urllib3" for entry in scenario.strategies):
            raise UserError(
                "http_client: urllib3: the compose stack's Locust runs the emulating user only; run it with "
                "--backend local"
            )
        from retrystorm.runner.compose import compose_stack

        timeline = scenario.timeline()
        slows = [w.end_s - w.start_s + LEVEL_MARGIN_S for w in timeline.triggers if isinstance(w, SlowWindow)]
        longest_s = max([outage.duration_s for outage in timeline.outages] + slows, default=0.0)
        stack = compose_stack(options.compose, longest_outage_s=longest_s, service=scenario.target)
    plan, loads = prepare(scenario, labels, stack, simulate=options.simulate, repeat=options.repeat)
    if scenario.slo:  # every query sent once: a bad one is exit 2 before anything starts
        guard = SloGuard(scenario.slo, default_prometheus=options.compose.prometheus_url if options.compose else None)
        check_guard(guard)
        options = dataclasses.replace(options, slo=guard)
    lines = plan_lines(plan, stack.name, stack.targets.describe(scenario.model), loads)
    if dry_run:
        out.print("\n".join(lines), markup=False, highlight=False, soft_wrap=True)
        out.print("dry run: nothing was started", markup=False)
        return 0
    # a local run starts the target and Locust here; every run writes its report here
    require_extra("live" if options.compose is None else "report", "a live run")
    prepare_out_folder(folder, force=options.force)
    err.print("\n".join(lines), markup=False, highlight=False, soft_wrap=True)
    err.print(f"run folder: {folder}", markup=False)
    started = time.time()
    if options.otel is not None:
        from retrystorm.runner.otel_hooks import run_exported

        status = run_exported(plan, stack, folder, options, settings=options.otel, run_plan=run_plan)
    else:
        status = run_plan(plan, stack, folder, options)
    if options.junit is not None:
        from retrystorm.runner.junit import write_junit

        write_junit(options.junit, folder, status, since_epoch_s=started)
    return status


#: The compose backend's options: (flag, dest, environment variable, default, help).
COMPOSE_OPTIONS = (
    ("--target-url", "target_url", "RETRYSTORM_TARGET_URL", DEFAULT_TARGET_URL, "the target as the runner reaches it."),
    (
        "--load-target-url", "load_target_url", "RETRYSTORM_LOAD_TARGET_URL", None,
        "the target as the Locust workers reach it (default: --target-url).",
    ),
    ("--locust-url", "locust_url", "RETRYSTORM_LOCUST_URL", DEFAULT_LOCUST_URL, "the Locust master's web API."),
    ("--prometheus-url", "prometheus_url", "RETRYSTORM_PROMETHEUS_URL", DEFAULT_PROMETHEUS_URL, "Prometheus' API."),
    (
        "--chaos-url", "chaos_url", "RETRYSTORM_CHAOS_URL", None,
        "pause through the stack's chaos API (its metric and annotations see the outages); none: the docker backend.",
    ),
    ("--chaos-token", "chaos_token", "RETRYSTORM_CHAOS_TOKEN", None, "the chaos API's bearer token."),
    ("--admin-token", "admin_token", "RETRYSTORM_ADMIN_TOKEN", None, "the target's admin API bearer token."),
    (
        "--web-token", "web_token", "RETRYSTORM_WEB_TOKEN", None,
        "the Locust master's web UI token (default: the chaos token, as the master takes it).",
    ),
    (
        "--project", "project", "COMPOSE_PROJECT_NAME", None,
        "the compose project whose target container the docker backend pauses (default: any project).",
    ),
)  # fmt: skip


def compose_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--backend`` and the compose backend's options (each with its environment variable)."""
    for flag, dest, envvar, default, help_text in reversed(COMPOSE_OPTIONS):
        command = click.option(
            flag, dest, envvar=envvar, default=default, show_envvar=True, show_default=default is not None,
            metavar="URL" if dest.endswith("url") else "TEXT", help=f"compose: {help_text}",
        )(command)  # fmt: skip
    return click.option(
        "--backend", type=click.Choice(["local", "compose"]), default="local", show_default=True,
        help="local: fresh local processes per strategy; compose: the running compose stack's services.",
    )(command)  # fmt: skip


def compose_endpoints(backend: str, values: dict[str, str | None]) -> ComposeEndpoints | None:
    """The compose stack's addresses for ``--backend compose``; ``None`` for local.

    A compose option typed on the command line with ``--backend local`` is a :class:`UserError`
    (one set by its environment variable is ignored: the stack's containers set them all).
    """
    if backend == "local":
        context = click.get_current_context()
        for flag, dest, *_ in COMPOSE_OPTIONS:
            if context.get_parameter_source(dest) is ParameterSource.COMMANDLINE:
                raise UserError(f"{flag}: applies to --backend compose only; add --backend compose")
        return None
    return ComposeEndpoints(
        target_url=values["target_url"] or DEFAULT_TARGET_URL,
        load_target_url=values["load_target_url"],
        locust_url=values["locust_url"] or DEFAULT_LOCUST_URL,
        prometheus_url=values["prometheus_url"] or DEFAULT_PROMETHEUS_URL,
        project=values["project"],
        chaos_url=values["chaos_url"],
        chaos_token=values["chaos_token"] or "",
        admin_token=values["admin_token"] or "",
        web_token=values["web_token"] or "",
    )


@click.command("run")
@click.argument("scenario_file", metavar="SCENARIO", type=click.Path(path_type=Path))
@click.option("--dry-run", is_flag=True, help="Print the plan (what runs when, against what) and start nothing.")
@click.option(
    "--out", "folder", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="Run folder (default: runs/<scenario>-<UTC time>).",
)  # fmt: skip
@click.option("--force", is_flag=True, help="Write into an --out folder that already holds results, over them.")
@click.option(
    "--strategy", "labels", multiple=True, metavar="LABEL", help="Only the strategy with this label (repeatable)."
)
@click.option("--simulate", is_flag=True, help="Also simulate the scenario; draw and compare its curves.")
@click.option("--seed", type=int, default=None, help="Random seed (default: the scenario's).")
@click.option(
    "--workers", type=click.IntRange(min=1, max=MAX_WORKERS), default=None, metavar="N",
    help="Local backend: Locust processes per strategy, 1 (one process) or a master and N workers on 127.0.0.1 "
    "(default: enough for the peak load at 1,000 attempts/s each, at most one per core but one).",
)  # fmt: skip
@click.option(
    "--repeat", type=click.IntRange(min=1, max=MAX_REPEAT), default=1, show_default=True, metavar="N",
    help="Run each strategy N times (taking turns) and report each figure's spread; a winner must beat the spread.",
)  # fmt: skip
@click.option(
    "--allow-saturated", is_flag=True,
    help="Exit with the assertions' status even when a load generator was saturated (the run is still marked).",
)  # fmt: skip
@click.option(
    "--junit", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
    help="Also write the assertions (and each strategy's validity and stop condition) as JUnit XML, for CI.",
)  # fmt: skip
@click.option(
    "--otel-endpoint", envvar="RETRYSTORM_OTEL_ENDPOINT", show_envvar=True, default=None, metavar="URL",
    help="Also export the run's series and trigger windows over OTLP to this collector (needs the otel extra).",
)  # fmt: skip
@click.option(
    "--otel-protocol", type=click.Choice(["grpc", "http/protobuf"]), default="grpc", show_default=True,
    help="OTLP transport of --otel-endpoint.",
)  # fmt: skip
@JOURNAL_OPTION
@compose_options
def run(
    *,
    scenario_file: Path,
    dry_run: bool,
    folder: Path | None,
    force: bool,
    labels: tuple[str, ...],
    simulate: bool,
    seed: int | None,
    workers: int | None,
    repeat: int,
    allow_saturated: bool,
    junit: Path | None,
    otel_endpoint: str | None,
    otel_protocol: str,
    journal: Path | None,
    backend: str,
    **addresses: str | None,
) -> None:
    """Run SCENARIO live: each strategy against a fresh (or freshly reset) target, the outages, the verdicts.

    SCENARIO is a shipped scenario's name (`retrystorm scenarios` lists them) or a YAML file named as a path
    (`./mine.yaml`; a bare name is always a shipped scenario's). Run as root, a file another user can change is
    refused.

    Writes results.json, timeseries.csv, PNGs and report.html to the run folder. Exit 0
    when every assertion holds, 1 when one fails, 2 on bad input, 3 when the run could
    not go on or a load generator was saturated (not valid; see --allow-saturated), 4 when
    a stop condition (the scenario's slo:) stopped it early, every fault reverted, 130
    when interrupted.
    """
    scenario = load_scenario(scenario_file, overrides={"seed": seed} if seed is not None else None)
    if junit is not None:
        from retrystorm.runner.junit import check_junit_path

        check_junit_path(junit)
    otel = OtelSettings(otel_endpoint, otel_protocol) if otel_endpoint else None
    if otel is not None:
        from retrystorm.otel import require_sdk

        require_sdk()
    compose = compose_endpoints(backend, addresses)
    if compose is not None and workers is not None:
        raise UserError("--workers: applies to --backend local only; a compose stack keeps its own workers")
    if simulate and repeat > 1:
        raise UserError("--simulate: compares one live run per strategy with the simulator; drop --repeat")
    scenario_dir = scenario_file.resolve().parent if scenario_file.is_file() else None
    options = RunOptions(
        folder=folder, simulate=simulate, journal=journal, compose=compose, scenario_dir=scenario_dir,
        workers=workers, allow_saturated=allow_saturated, junit=junit, otel=otel, repeat=repeat, force=force,
    )  # fmt: skip
    status = run_scenario_file(scenario, labels, dry_run=dry_run, options=options)
    click.get_current_context().exit(status)


@click.command("demo")
@click.option(
    "--out", "folder", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="Run folder (default: runs/smira-laptop-<UTC time>).",
)  # fmt: skip
@click.option("--force", is_flag=True, help="Write into an --out folder that already holds results, over them.")
@click.option("--dry-run", is_flag=True, help="Print the plan and start nothing.")
@JOURNAL_OPTION
def demo(*, folder: Path | None, force: bool, dry_run: bool, journal: Path | None) -> None:
    """The seed outage, laptop-sized, live: fixed 100 ms retries against the seed's exponential backoff.

    No Docker: a local target process frozen with SIGSTOP, headless Locust users; about
    3 minutes. Prints the verdicts and the path of report.html.
    """
    scenario = load_scenario(shipped_scenario(DEMO_SCENARIO))
    options = RunOptions(folder=folder, journal=journal, force=force)
    status = run_scenario_file(scenario, (), dry_run=dry_run, options=options)
    click.get_current_context().exit(status)
