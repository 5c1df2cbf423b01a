"""``retrystorm dashboards``: generate the Grafana dashboards from code; push them to a Grafana."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from retrystorm.console import out
from retrystorm.errors import UserError

#: What generating the dashboards needs: Grafana's foundation SDK, the ``grafana`` extra.
GRAFANA_EXTRA = "pip install 'retrystorm[grafana]'"


def _foundation_sdk(what: str) -> None:
    """Fail with one line when the ``grafana`` extra (the foundation SDK) is not installed."""
    try:
        import grafana_foundation_sdk  # noqa: F401
    except ImportError:
        raise UserError(f"{what} needs Grafana's foundation SDK (grafana-foundation-sdk): {GRAFANA_EXTRA}") from None


@click.group()
def dashboards() -> None:
    """Grafana dashboards generated from code: write them, or upload them to a Grafana."""


@dashboards.command()
@click.option(
    "--out",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory to write (default: the package's grafana/dashboards, which Grafana provisions).",
)
@click.option("--check", is_flag=True, help="Write nothing; exit 1 when a dashboard file differs from the code.")
def build(*, directory: Path | None, check: bool) -> None:
    """(Re)write the dashboard JSON from code, or check it is up to date."""
    _foundation_sdk("retrystorm dashboards build")
    from retrystorm.dashboards.files import DASHBOARD_DIR, stale_dashboards, write_dashboards

    target = directory or DASHBOARD_DIR
    if check:
        stale = stale_dashboards(target)
        for path in stale:
            out.print(f"{path}: differs from the generator's output; run `retrystorm dashboards build`")
        if stale:
            sys.exit(1)
        out.print(f"dashboards in {target} are up to date")
        return
    for path in write_dashboards(target):
        out.print(f"wrote {path}")


@dashboards.command()
@click.option("--grafana-url", envvar="GRAFANA_URL", required=True, help="Grafana's base URL [env GRAFANA_URL].")
@click.option("--token", envvar="GRAFANA_TOKEN", default=None, help="Service-account token [env GRAFANA_TOKEN].")
@click.option("--user", envvar="GRAFANA_USER", default=None, help="Basic-auth user [env GRAFANA_USER].")
@click.option("--password", envvar="GRAFANA_PASSWORD", default=None, help="Basic-auth password [env GRAFANA_PASSWORD].")
@click.option("--folder", default=None, help="Folder to put the dashboards in (created if missing; default: none).")
def push(*, grafana_url: str, token: str | None, user: str | None, password: str | None, folder: str | None) -> None:
    """Upload the shipped dashboards to an existing Grafana, overwriting the ones with the same uid."""
    from retrystorm.dashboards.push import push_dashboards
    from retrystorm.dashboards.shipped import shipped_dashboards
    from retrystorm.grafana import GrafanaSettings

    settings = GrafanaSettings(url=grafana_url, token=token, user=user, password=password)
    if folder is not None and not folder.strip():
        raise click.BadParameter("got an empty name, expected a folder title", param_hint="--folder")
    for pushed in push_dashboards(settings, shipped_dashboards(), folder=folder):
        out.print(f"pushed {pushed.uid} (version {pushed.version}) to {settings.where()}: {pushed.url}")
