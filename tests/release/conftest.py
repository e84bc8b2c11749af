"""The release install tests reuse the end-to-end session's broker fixture (`cluster`) and
helpers; they start their own workers from the release archives."""

from __future__ import annotations

from e2e.conftest import cluster  # noqa: F401  (the fixture, registered here)
