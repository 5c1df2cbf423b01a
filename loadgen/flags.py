"""The load generator's options on Locust's parser: the command line, the web UI's start form, the workers.

:func:`add_arguments` registers every option of :data:`~retrystorm.loadgen.options.OPTIONS` and
:data:`~retrystorm.loadgen.options.FLAGS` (from the ``init_command_line_parser`` hook), so they
appear in the web UI's start form and travel to the workers with the master's parsed
options, and the flags that only a process has (``--metrics-port``, ``--chaos-url``, ``--web-token``...).
Each value's argparse ``type`` is the option's own check (:mod:`retrystorm.loadgen.options`): a bad
flag exits 2 with its one-line message before anything starts, and the value stays the
text as written.

No Locust import: the parser is only duck-typed, so this module stays importable anywhere.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from retrystorm.chaos.client import check_chaos_url
from retrystorm.durations import format_duration, parse_duration
from retrystorm.errors import SpecError
from retrystorm.loadgen.options import FLAGS, MAX_FLAG_DURATION_S, OPTIONS, read_requests_file

_DAY = format_duration(MAX_FLAG_DURATION_S)


def add_arguments(parser: Any) -> None:
    """Register the flags on Locust's parser (its own ``add_argument``: groups lose the web-UI fields)."""
    group = parser
    for option in OPTIONS:
        choices = list(option.choices) if option.choices else None
        extra = {"action": _AppendLine} if option.flag == "--request" else {}
        group.add_argument(
            option.flag,
            default=option.default,
            help=option.help,
            type=_argparse_type(option.check),
            choices=choices,
            **extra,
        )
    _add_requests_file(group)
    for flag, help_text in FLAGS:
        group.add_argument(flag, action="store_true", default=False, help=help_text)
    group.add_argument(
        "--metrics-port",
        type=int,
        default=0,
        include_in_web_ui=False,
        help="Also serve /metrics on this port (for headless runs and workers); 0: off.",
    )
    group.add_argument(
        "--metrics-linger",
        type=_argparse_type(lambda text: parse_duration(text, what="duration", at_most=MAX_FLAG_DURATION_S)),
        default="0s",
        include_in_web_ui=False,
        help=f"Keep serving /metrics this long (at most {_DAY}) after a headless run ends, for the last scrapes.",
    )
    group.add_argument(
        "--chaos-url",
        type=_argparse_type(check_chaos_url),
        default="none",
        include_in_web_ui=False,
        env_var="RETRYSTORM_CHAOS_URL",
        help="The chaos API (retrystorm chaos serve) the web UI's Chaos tab pauses targets through, "
        "like http://127.0.0.1:8071; none: the tab says how to turn it on.",
    )
    group.add_argument(
        "--chaos-token",
        default="",
        include_in_web_ui=False,
        env_var="RETRYSTORM_CHAOS_TOKEN",
        help="Bearer token of the chaos API, when it is bound beyond loopback [env RETRYSTORM_CHAOS_TOKEN].",
    )
    group.add_argument(
        "--web-token",
        default="",
        include_in_web_ui=False,
        env_var="RETRYSTORM_WEB_TOKEN",
        help="Token the web UI asks for (Authorization: Bearer, or the browser's login with any user name); "
        "needed beyond loopback, where --chaos-token serves without it [env RETRYSTORM_WEB_TOKEN].",
    )


def _add_requests_file(parser: Any) -> None:
    """``--requests-file``: read and checked when parsed, so its text travels to the workers with the options."""
    parser.add_argument(
        "--requests-file",
        type=_requests_file_content,
        default="",
        include_in_web_ui=False,
        help="A file of requests, one --request line each (# comments); added to --request's.",
    )


def _requests_file_content(path: str) -> str:
    """The argparse ``type`` of ``--requests-file``: the file's text, checked; the options carry the text."""
    try:
        return read_requests_file(path)
    except SpecError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


class _AppendLine(argparse.Action):
    """``--request`` is repeatable; its value stays one text (lines), as the web form and the master carry it."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        before = getattr(namespace, self.dest, "") or ""
        setattr(namespace, self.dest, f"{before}\n{values}" if before else values)


def _argparse_type(check: Callable[[str], Any]) -> Callable[[str], str]:
    """An argparse ``type`` that validates with ``check`` and keeps the text as written."""

    def checked(text: str) -> str:
        try:
            check(text)
        except SpecError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        return text

    return checked
