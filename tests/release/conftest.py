"""The release install tests reuse the end-to-end session's broker fixture (`cluster`) and
helpers; they start their own workers from the release archives."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent.parent
for path in (TESTS_DIR, TESTS_DIR / "e2e"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from e2e.conftest import cluster  # noqa: E402,F401  (the fixture, registered here)
