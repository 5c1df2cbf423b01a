"""The project's exception tree.

Every error a user can cause derives from :class:`UserError`; the command line prints
its message on one line and exits with code 2. A failure of the environment (an
engine unreachable, a child process that died) derives from
:class:`EnvironmentFailureError`: one line, exit code 3. Everything else derives from
:class:`RetrystormError` and keeps its traceback, because it is a bug.
"""

from __future__ import annotations

import difflib
import math
import reprlib
from collections.abc import Iterable


class RetrystormError(Exception):
    """Root of every error raised on purpose by retrystorm."""


class EnvironmentFailureError(RetrystormError):
    """The machine could not do what was asked (an engine unreachable, a process that died, a denied signal).

    Not the user's input and not a bug: the command line prints its message on one line
    and exits with code 3.
    """

    exit_code = 3


class UserError(RetrystormError):
    """Bad input from a user: a flag, a spec string, a YAML file, an HTTP body.

    The message must name what is wrong and what is accepted, on one line.
    """

    exit_code = 2


class SpecError(UserError):
    """A strategy, budget or model spec that cannot be parsed or is out of range."""


class DurationError(SpecError):
    """A duration string that is malformed or negative."""


#: How many characters of a user's text an error message quotes.
SHOWN_CHARS = 40


class _Short(reprlib.Repr):
    """``repr`` cut short, for quoting what a user gave in a one-line message."""

    def __init__(self) -> None:
        super().__init__()
        self.maxstring = self.maxother = SHOWN_CHARS
        self.maxlevel = 2

    def repr_int(self, x: int, level: int) -> str:
        # Python refuses to print an int of more than 4300 digits; a long one is cut anyway
        if x.bit_length() > 128:
            return f"a whole number of about {int(x.bit_length() * math.log10(2)) + 1} digits"
        return super().repr_int(x, level)


_SHORT = _Short()


def shown(value: object) -> str:
    """``value`` as an error message quotes it: one line, at most about 40 characters of it.

    ``'1111...1111' (5000 characters)`` for a long text, ``a whole number of about 5000
    digits`` for a huge int (whose ``repr`` Python refuses), ``repr`` otherwise.
    """
    text = _SHORT.repr(value)
    if isinstance(value, str) and len(value) > SHOWN_CHARS:
        return f"{text} ({len(value)} characters)"
    return text


#: A name longer than this is not compared with the known ones: nothing known is that long.
MAX_SUGGESTED_CHARS = 64


def did_you_mean(name: object, known: Iterable[str]) -> str:
    """`` (did you mean 'smira'?)`` for the known name closest to ``name``; empty when none is close.

    Close means :func:`difflib.get_close_matches`' ratio of at least 0.6, or a known name
    that starts with ``name`` (``fix`` for ``fixed:100ms``). Matching ignores case.
    """
    if not isinstance(name, str) or not name or len(name) > MAX_SUGGESTED_CHARS:
        return ""
    candidates = [each for each in known if each != name]
    lowered = {each.lower(): each for each in candidates}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=1)
    if close:
        return f" (did you mean {lowered[close[0]]!r}?)"
    starts = [each for each in candidates if each.lower().startswith(name.lower())]
    return f" (did you mean {starts[0]!r}?)" if starts else ""
