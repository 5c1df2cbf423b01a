"""``retrystorm scenarios``: the shipped scenarios, one line each; one of them as YAML."""

from __future__ import annotations

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
