"""User-facing output: one rich console for tables and progress, on stderr or stdout.

On a terminal rich fits output to the terminal's width. Anywhere else (a pipe, a file,
a CI log) it would cut every table to 80 columns, so there these consoles are
:data:`PIPE_WIDTH` wide instead, unless ``COLUMNS`` says otherwise: a piped table keeps
every column and every line of a cell is as long as the table needs.
"""

from __future__ import annotations

import os
from typing import IO

from rich.console import Console, ConsoleDimensions

#: The width of a console that does not write to a terminal (and ``COLUMNS`` is not set).
PIPE_WIDTH = 200


class WideWhenPiped(Console):
    """A rich console :data:`PIPE_WIDTH` wide when it does not write to a terminal."""

    @property
    def size(self) -> ConsoleDimensions:
        """The terminal's size; :data:`PIPE_WIDTH` columns when not a terminal and ``COLUMNS`` is unset."""
        found = super().size
        if self._width is not None or self.is_terminal or "COLUMNS" in os.environ:
            return found
        return ConsoleDimensions(max(found.width, PIPE_WIDTH), found.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size


def wide(console: Console) -> Console:
    """``console`` itself on a terminal; elsewhere a console on the same file :data:`PIPE_WIDTH` wide."""
    if console.is_terminal or isinstance(console, WideWhenPiped):
        return console
    file: IO[str] = console.file
    return Console(file=file, width=max(console.width, PIPE_WIDTH), highlight=False)


#: Human-readable output (tables, verdicts). Machine-readable output (``--json``)
#: goes to plain stdout instead, so it can be piped.
out = WideWhenPiped(highlight=False)
#: Progress and notices that must not mix with a ``--json`` document on stdout.
err = WideWhenPiped(stderr=True, highlight=False)
