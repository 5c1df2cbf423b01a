"""Reference pages of what is written as a spec or a flag: strategies, presets, budgets, models, Locust options.

The strategy and model pages hold what ``retrystorm strategies`` and ``retrystorm models`` print, from the same
registries and the same :func:`retrystorm.spec.describe_params`. The Locust options are read from the functions
that register them on Locust's parser (:func:`retrystorm.loadgen.flags.add_arguments` and the Retry storm tab's
:func:`retrystorm.loadgen.storm_sources.add_arguments`), called here with a parser that records them.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable
from typing import Any

from retrystorm.loadgen import flags, otel_plugin, storm_sources
from retrystorm.loadgen.strategies import BUDGETS, STRATEGIES
from retrystorm.spec import Registry, params_of
from retrystorm.target.models import MODELS

#: What registers options on Locust's parser, in the order the plugin calls them (loadgen/plugin.py).
OPTION_REGISTRARS: tuple[Callable[[Any], None], ...] = (
    flags.add_arguments,
    storm_sources.add_arguments,
    otel_plugin.add_arguments,
)


def cell(text: object) -> str:
    """``text`` as one Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("``", "`").replace("|", "\\|")


def code(text: object) -> str:
    """``text`` as inline code in a table cell (empty stays a dash)."""
    shown = str(text)
    if not shown:
        return "-"
    ticks = "``" if "`" in shown else "`"
    return f"{ticks}{cell(shown)}{ticks}"


def summary(cls: type[Any]) -> str:
    """The first paragraph of a class's docstring, as the listings print it, in Markdown."""
    first = (inspect.getdoc(cls) or "").split("\n\n")[0]
    return cell(re.sub(r":[a-z]+:`~?([^`]+)`", r"`\1`", first).replace("``", "`"))


def table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    """A Markdown table."""
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _param_row(info: Any) -> list[str]:
    default = info.type.to_text(info.default)
    return [code(info.key), code(default), cell(info.describe_bounds(short=True)), cell(info.help)]


def registry_section(registry: Registry[Any], *, include: Callable[[type[Any]], bool] = lambda _cls: True) -> str:
    """One subsection per registered class: what it does, then each parameter's default, accepted values, meaning."""
    parts = []
    for name, cls in registry.items():
        if not include(cls):
            continue
        parts.append(f"### `{name}`\n\n{summary(cls)}")
        library = getattr(cls, "library", "")
        if library:
            parts.append(f"Source: {cell(library)}.")
        rows = [
            [
                code(info.key),
                code(info.type.to_text(info.default)),
                cell(info.describe_bounds(short=True)),
                cell(info.help),
            ]
            for info in params_of(cls)
        ]
        parts.append(table(["parameter", "default", "accepted", "meaning"], rows) if rows else "No parameters.")
    return "\n\n".join(parts)


def strategies_page() -> str:
    """Every strategy, client-library preset and budget with its parameters."""
    return "\n\n".join(
        [
            "# Strategies, presets and budgets",
            (
                "What `retrystorm strategies` prints: every retry strategy, client-library preset and retry budget, "
                "with each parameter's default, the values it accepts and what it means. A strategy is written as a "
                "spec, `NAME` or `NAME:key=value,...` (`exponential:base=100ms,jitter=full`), or as a mapping with a "
                "`name` key in a scenario; a budget the same way. [Strategies and budgets](../concepts/strategies.md) "
                "says what each is for; [Client libraries](../concepts/client-libraries.md) where each preset's "
                "numbers come from."
            ),
            "## Strategies",
            registry_section(STRATEGIES, include=lambda cls: not cls.is_preset),
            "## Client-library presets",
            (
                "Written wherever a strategy is; also `grpc-service-config:FILE.json` (a gRPC service config's "
                "`retryPolicy` and `retryThrottling`, read as `grpc-retry`)."
            ),
            registry_section(STRATEGIES, include=lambda cls: cls.is_preset),
            "## Budgets",
            "Shared by the users of one load-generating process (`--retry-budget`, a scenario's `budget`).",
            registry_section(BUDGETS),
        ]
    )


def models_page() -> str:
    """Every overload model with its parameters."""
    return "\n\n".join(
        [
            "# Overload models",
            (
                "What `retrystorm models` prints: every overload model of the built-in target and the simulator, with "
                "each parameter's default, the values it accepts and what it means. A model is written as a spec "
                "(`exponential:limit=40`), as flags of `retrystorm target` (`--model queue --workers 5`), as a "
                "scenario's `model:`, or as the body of `PUT /admin/model`. [Overload models](../concepts/models.md) "
                "says what each is for."
            ),
            registry_section(MODELS).replace("### ", "## "),
        ]
    )


class _RecordingParser:
    """Stands in for Locust's argument parser: records each ``add_argument`` call as it is made."""

    def __init__(self) -> None:
        self.arguments: list[tuple[tuple[str, ...], dict[str, Any]]] = []

    def add_argument(self, *names: str, **settings: Any) -> None:
        self.arguments.append((names, settings))


def locust_options_page() -> str:
    """Every option retrystorm adds to Locust, as registered on its parser."""
    parser = _RecordingParser()
    for register in OPTION_REGISTRARS:
        register(parser)
    rows = []
    for names, settings in parser.arguments:
        flag = ", ".join(names)
        takes_value = settings.get("action") != "store_true"
        default = settings.get("default")
        shown_default = ("off" if not default else "on") if not takes_value else (default if default != "" else "-")
        choices = settings.get("choices")
        help_text = settings.get("help", "")
        if choices:
            help_text += f" One of: {', '.join(str(choice) for choice in choices)}."
        env = settings.get("env_var")
        web = "no" if settings.get("include_in_web_ui") is False else "yes"
        rows.append([code(flag), code(shown_default), cell(help_text), code(env or ""), web])
    return "\n\n".join(
        [
            "# Locust options",
            (
                "The options retrystorm's Locust user adds to Locust's own (`locust -f loadgen/locustfile.py --help` "
                "lists both). Set them on the command line, in the web UI's start form (those marked *web UI*), or, "
                "on a distributed run, on the master: workers receive them. A bad value stops Locust at start with "
                "one line naming the flag (exit 2); in the web UI the start is refused with the same line. "
                "[The load generator](../guides/locust.md) explains them."
            ),
            table(["option", "default", "meaning", "environment", "web UI"], rows),
        ]
    )
