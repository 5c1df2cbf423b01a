"""Click parameter types for specs and durations, so bad flags exit 2 with one line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from retrystorm.durations import parse_duration
from retrystorm.errors import SpecError
from retrystorm.spec import Registry

F = TypeVar("F", bound=Callable[..., Any])


class DurationType(click.ParamType):  # type: ignore[type-arg]
    """``100ms``, ``2s``, ``5m`` -> seconds as a float."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        try:
            return parse_duration(value, what=param.name if param and param.name else "duration")
        except SpecError as error:
            self.fail(str(error), param, ctx)


class SpecType(click.ParamType):  # type: ignore[type-arg]
    """A spec string parsed by a :class:`~retrystorm.spec.Registry`."""

    def __init__(self, registry: Registry[Any]) -> None:
        self.registry = registry
        self.name = registry.kind

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return self.registry.parse(value)
        except SpecError as error:
            self.fail(str(error), param, ctx)


DURATION = DurationType()


def otel_endpoint_option(what: str) -> Callable[[F], F]:
    """``--otel-endpoint URL`` (or ``OTEL_EXPORTER_OTLP_ENDPOINT``): export ``what`` over OTLP; off by default."""
    return click.option(
        "--otel-endpoint",
        envvar="OTEL_EXPORTER_OTLP_ENDPOINT",
        default=None,
        metavar="URL",
        help=f"Export {what} over OTLP to the collector at URL (http://HOST:4317 for grpc; "
        "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf for HTTP, port 4318). Off by default; needs the otel extra "
        "[env OTEL_EXPORTER_OTLP_ENDPOINT].",
    )
