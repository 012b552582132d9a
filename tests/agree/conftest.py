from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import SHARED


@pytest.fixture(scope="session")
def human_dir() -> Path:
    """../shared/data/human (or $OVERLAP_SHARED_DIR/data/human); skips when absent.

    The environment variable lets a worktree that is not beside ../shared run these tests;
    without it they find ../shared as every other test does.
    """
    base = Path(os.environ.get("OVERLAP_SHARED_DIR") or SHARED)
    folder = base / "data" / "human"
    if not (folder / "summeval_ratings.parquet").is_file():
        pytest.skip("../shared/data/human is not beside this clone")
    return folder
