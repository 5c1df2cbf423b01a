"""The documentation's tools live in scripts/docs (run by MkDocs and by hand), not in the package: on the path."""

from __future__ import annotations

import sys
from pathlib import Path

DOCS_TOOLS = Path(__file__).resolve().parents[2] / "scripts" / "docs"
if str(DOCS_TOOLS) not in sys.path:
    sys.path.insert(0, str(DOCS_TOOLS))
