from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
BUNDLED = ROOT / "pipeline" / "data" / "realsumm"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The team's ../shared folder; tests that need it skip cleanly when it is absent."""
    if not (SHARED / "data").is_dir():
        pytest.skip("../shared is not beside this clone")
    return SHARED
