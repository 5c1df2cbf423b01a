"""``python -m retrystorm``: the Python version is checked before anything else is imported (see retrystorm.host)."""

import sys

from retrystorm.host import python_problem

problem = python_problem()
if problem is not None:
    sys.stderr.write(f"retrystorm: error: {problem}\n")
    sys.exit(2)

from retrystorm.cli import main  # noqa: E402 - only once the Python version is known to be new enough

main()
