"""The project's exception tree.

Every error a user can cause derives from :class:`UserError`; the command line prints
its message on one line and exits with code 2. A failure of the environment (an
engine unreachable, a child process that died) derives from
:class:`EnvironmentFailureError`: one line, exit code 3. Everything else derives from
:class:`RetrystormError` and keeps its traceback, because it is a bug.
"""

from __future__ import annotations


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
