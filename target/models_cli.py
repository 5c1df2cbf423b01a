"""``retrystorm models``: list the overload models with their parameters."""

from __future__ import annotations

import click

from retrystorm.console import out
from retrystorm.listing import registry_table
from retrystorm.target.models import MODELS


@click.command()
def models() -> None:
    """List the overload models, their parameters and defaults."""
    out.print(registry_table(MODELS, "Overload models (--model NAME, or a model: mapping in a scenario)"))
