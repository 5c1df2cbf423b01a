"""The ``retrystorm`` command: one group, subcommands loaded only when used.

Each subcommand lives beside the code it drives (``loadgen/cli.py``, ``target/cli.py``,
...) and is imported lazily, so ``retrystorm target`` never imports plotting or Locust.
Errors a user can cause print one line and exit 2; see :func:`main`.
"""

from __future__ import annotations

import importlib
import logging
import sys
from typing import NoReturn

import click

from retrystorm import __version__
from retrystorm.errors import EnvironmentFailureError, UserError, did_you_mean
from retrystorm.extras import missing_extra_of
from retrystorm.host import command_problem, python_problem

#: Subcommand name -> "module:attribute" of its click command.
COMMANDS: dict[str, tuple[str, str]] = {
    "strategies": (
        "retrystorm.loadgen.cli:strategies",
        "List retry strategies, presets and budgets; show and plot delays.",
    ),
    "models": ("retrystorm.target.models_cli:models", "List the overload models and their parameters."),
    "sim": (
        "retrystorm.sim.cli:sim",
        "Simulate strategies against a model in virtual time: the seed experiments and more.",
    ),
    "chaos": ("retrystorm.chaos.cli:chaos", "Pause targets or cut their CPU, always undone; recover what was left."),
    "target": ("retrystorm.target.cli:target", "Run the target service: the overload model over HTTP, with metrics."),
    "scenarios": (
        "retrystorm.experiment.cli:scenarios",
        "List the shipped scenarios, which run by name; print one as YAML.",
    ),
    "map": (
        "retrystorm.runner.map_cli:map_command",
        "Sweep trigger size, duration and load in the simulator: where each strategy tips over.",
    ),
    "init": (
        "retrystorm.runner.init_cli:init",
        "Write a starter scenario for your own service: a URL, what a pause freezes.",
    ),
    "run": (
        "retrystorm.runner.cli:run",
        "Run a scenario live: each strategy against a fresh target, outages, verdicts.",
    ),
    "worker": (
        "retrystorm.runner.worker_cli:worker",
        "Run a Locust worker that joins a run's master on another host (a scenario's hosts.master).",
    ),
    "demo": ("retrystorm.runner.cli:demo", "The seed outage, laptop-sized and live: fixed retries against backoff."),
    "k8s": (
        "retrystorm.integrations.kubernetes.cli:k8s",
        "Kubernetes manifests for a scenario: Locust master and workers, target, dashboards.",
    ),
    "dashboards": (
        "retrystorm.dashboards.cli:dashboards",
        "Grafana dashboards from code: write them; push them to a Grafana.",
    ),
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *COMMANDS])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return super().get_command(ctx, cmd_name)
        module_name, _, attribute = COMMANDS[cmd_name][0].partition(":")
        command: click.Command = getattr(importlib.import_module(module_name), attribute)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """An unknown subcommand is a usage error that names the closest one."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            hint = did_you_mean(name, self.list_commands(ctx))
            raise click.UsageError(f"no command {name!r}{hint}; commands: {', '.join(self.list_commands(ctx))}", ctx)
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in sorted(COMMANDS)]
        rows += [(name, cmd.get_short_help_str()) for name, cmd in sorted(self.commands.items())]
        with formatter.section("Commands"):
            formatter.write_dl(sorted(rows))


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="retrystorm")
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
def cli(verbose: int) -> None:
    """Which client retry strategies let a stalled or overloaded service come back."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def main(argv: list[str] | None = None) -> NoReturn:
    """Entry point: run the CLI; a user error prints one line and exits 2, a failure of the environment 3."""
    try:
        refuse_where_it_cannot_run(sys.argv[1:] if argv is None else argv)
        try:
            result = cli.main(args=argv, prog_name="retrystorm", standalone_mode=False)
        except ModuleNotFoundError as error:  # a package of an extra that is not installed: which extra, one line
            missing = missing_extra_of(error, command_path(sys.argv[1:] if argv is None else argv))
            if missing is None:
                raise
            raise missing from error
    except UserError as error:  # one line per problem (a scenario file may have several)
        for line in str(error).splitlines() or [""]:
            click.echo(f"retrystorm: error: {line}", err=True)
        sys.exit(error.exit_code)
    except EnvironmentFailureError as error:
        click.echo(f"retrystorm: {' '.join(str(error).split())}", err=True)
        sys.exit(error.exit_code)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.Abort:
        click.echo("retrystorm: aborted", err=True)
        sys.exit(130)
    except click.ClickException as error:
        message = error.format_message().replace("\n", " ")
        command = error.ctx.command_path if isinstance(error, click.UsageError) and error.ctx else "retrystorm"
        click.echo(f"{command}: error: {message} (see {command} --help)", err=True)
        sys.exit(error.exit_code)
    sys.exit(result if isinstance(result, int) else 0)


def refuse_where_it_cannot_run(argv: list[str]) -> None:
    """A Python too old, or a Linux command on another system: a user error saying where it runs, before it starts."""
    problem = python_problem() or command_problem(argv)
    if problem:
        raise UserError(problem)


def command_path(argv: list[str]) -> str:
    """The command a user typed, without its options and arguments past the subcommands (``retrystorm sim smira``)."""
    words = []
    for word in argv:
        if word.startswith("-"):
            break
        words.append(word)
    return " ".join(["retrystorm", *words[:2]])


if __name__ == "__main__":  # pragma: no cover
    main()
