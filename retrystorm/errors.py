"""The project's exception tree.

Every error a user can cause derives from :class:`UserError`; the command line prints
its message on one line and exits with code 2. Everything else derives from
:class:`RetrystormError` and keeps its traceback, because it is a bug or an
environment failure, not bad input.
"""

from __future__ import annotations


class RetrystormError(Exception):
    """Root of every error raised on purpose by retrystorm."""


class UserError(RetrystormError):
    """Bad input from a user: a flag, a spec string, a YAML file, an HTTP body.

    The message must name what is wrong and what is accepted, on one line.
    """

    exit_code = 2


class SpecError(UserError):
    """A strategy, budget or model spec that cannot be parsed or is out of range."""


class DurationError(SpecError):
    """A duration string that is malformed or negative."""


#: Characters of a value a message shows (a 5,000-digit number stays a short line).
SHOWN_CHARACTERS = 40


def shorten(text: str) -> str:
    """``text`` for a one-line message: cut, with its length, when longer than :data:`SHOWN_CHARACTERS`."""
    if len(text) <= SHOWN_CHARACTERS:
        return text
    return f"{text[: SHOWN_CHARACTERS // 2]}... ({len(text)} characters)"
