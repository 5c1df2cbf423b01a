"""``retrystorm scenarios``: the shipped scenarios, one line each; one of them as YAML."""

from __future__ import annotations

from pathlib import Path

import click

from retrystorm.console import out


@click.command("scenarios")
@click.argument("name", required=False)
def scenarios(*, name: str | None) -> None:
    """List the shipped scenarios (name, what it shows); with NAME, print that scenario's YAML.

    A shipped scenario runs by its name from any directory (`retrystorm run smira-laptop`,
    `retrystorm sim run smira-sigstop`); `retrystorm scenarios NAME > mine.yaml` starts your own.
    """
    from retrystorm.experiment.scenario import load_scenario, shipped_names, shipped_scenario

    if name is not None:
        out.print(shipped_scenario(name).read_text(encoding="utf-8"), end="", markup=False, emoji=False, soft_wrap=True)
        return
    names = shipped_names()
    width = max((len(each) for each in names), default=0)
    for each in names:
        lines = load_scenario(shipped_scenario(each)).description.strip().splitlines()
        out.print(f"{each:<{width}}  {lines[0] if lines else ''}".rstrip(), markup=False, emoji=False, soft_wrap=True)


@click.command("init")
@click.argument("url")
@click.option("--command", "command", default=None, help="Start this for each strategy; a pause freezes its group.")
@click.option("--pid", type=click.IntRange(2), default=None, help="A running process to pause.")
@click.option("--container", default=None, help="A container to pause (label retrystorm.chaos=allow).")
@click.option("--service", default=None, help="A compose service to pause (label retrystorm.chaos=allow).")
@click.option(
    "-o", "--out", "path", type=click.Path(dir_okay=False, path_type=Path), default=Path("scenario.yaml"),
    show_default=True, help="Where to write the scenario.",
)  # fmt: skip
@click.option("--force", is_flag=True, help="Overwrite the file if it exists.")
def init(
    *,
    url: str,
    command: str | None,
    pid: int | None,
    container: str | None,
    service: str | None,
    path: Path,
    force: bool,
) -> None:
    """Write a starter scenario for your service at URL: a modest load, a 15 s freeze, fixed vs backoff.

    Give at most one of --command, --pid, --container, --service: what a pause freezes. Each
    field is explained in a comment; the file runs as is: `retrystorm run scenario.yaml`.
    """
    from retrystorm.addresses import http_address
    from retrystorm.errors import UserError
    from retrystorm.experiment.scenario.starter import starter_scenario

    try:
        url = http_address(url)
    except ValueError:
        raise UserError(f"URL: got {url!r}, expected an http:// address like http://127.0.0.1:8000") from None
    given = [(kind, value) for kind, value in (("command", command), ("pid", pid), ("container", container),
             ("service", service)) if value is not None]  # fmt: skip
    if len(given) > 1:
        raise UserError(f"give at most one of --command, --pid, --container, --service (got {len(given)})")
    if path.exists() and not force:
        raise UserError(f"{path} exists; pass --force to overwrite it, or -o to write elsewhere")
    name = path.name.removesuffix(".yaml").removesuffix(".yml") or "my-service"
    text = starter_scenario(url, name=name, pause=given[0] if given else None)
    path.write_text(text, encoding="utf-8")
    out.print(f"wrote {path}; next: retrystorm run {path} --dry-run, then retrystorm run {path}", markup=False)
