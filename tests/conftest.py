from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOKEN = Path.home() / ".ray" / "auth_token"
SHARED = ROOT.parent / "shared"
BUNDLED = ROOT / "pipeline" / "data" / "realsumm"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The team's ../shared folder; tests that need it skip cleanly when it is absent."""
    if not (SHARED / "data").is_dir():
        pytest.skip("../shared is not beside this clone")
    return SHARED


@pytest.fixture(scope="session")
def local_ray():
    """A local Ray instance for the whole session (reused if one is already running).

    Two CPUs, on the loopback address 127.0.0.2 (see ``pipeline.engine.ray_runner``).
    """
    ray = pytest.importorskip("ray")
    from pipeline.engine.ray_runner import LocalRay

    had_token = TOKEN.exists()
    started = None if ray.is_initialized() else LocalRay(num_cpus=2)
    yield ray
    if started is not None:
        started.shutdown()
    assert had_token or not TOKEN.exists(), "a Ray token file appeared in the home directory"
