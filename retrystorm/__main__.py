"""``python -m retrystorm``."""

from retrystorm.cli import main

main()
