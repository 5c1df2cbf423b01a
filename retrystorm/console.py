"""User-facing output: one rich console for tables and progress, on stderr or stdout."""

from __future__ import annotations

from rich.console import Console

#: Human-readable output (tables, verdicts). Machine-readable output (``--json``)
#: goes to plain stdout instead, so it can be piped.
out = Console(highlight=False)
#: Progress and notices that must not mix with a ``--json`` document on stdout.
err = Console(stderr=True, highlight=False)
