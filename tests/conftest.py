from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOKEN = Path.home() / ".ray" / "auth_token"
SHARED = ROOT.parent / "shared"
BUNDLED = ROOT / "pipeline" / "data" / "realsumm"


def _starts_ray(item: pytest.Item) -> bool:
    """Whether a test needs Ray started in this process (the session's ``local_ray``) or
    starts a Ray cluster of its own (marked ``cluster``)."""
    return "local_ray" in getattr(item, "fixturenames", ()) \
        or item.get_closest_marker("cluster") is not None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the modules holding a Ray test after all the others, in their collected order.

    Ray's start is the slowest and least predictable step of a session, and a Ray that fails
    to start (or dies) fails every later test that needs it: run last, such a failure hides
    no result of the rest. Whole modules move, so module-scoped fixtures are still set up
    once.
    """
    ray_modules = {item.module.__name__ for item in items
                   if getattr(item, "module", None) is not None and _starts_ray(item)}
    items.sort(key=lambda item: getattr(item, "module", None) is not None
               and item.module.__name__ in ray_modules)  # stable: order kept within each


@pytest.fixture(autouse=True)
def _no_forked_workers(request, monkeypatch):
    """The in-process engine runs its tasks here (threads, or in turn), never in forked
    workers, unless the test is marked ``forks``.

    Forking the test process costs far more than forking a user's command: late in a session
    it holds 1-2 GB, copied on write by every fork (four modules of local runs, at load 4 on
    2 cores: 54 s of wall and 7.4 CPU-s of system time forked, 13 s and 1.6 s not). Results
    are equal either way; forked workers have tests of their own (marked ``forks``, and
    tests/engine/test_local_pool.py, whose commands run in processes of their own). A Ray
    initialized in the session does the same (``pipeline.engine.local.can_fork``).
    """
    if request.node.get_closest_marker("forks") is None:
        from pipeline.engine import local

        monkeypatch.setattr(local, "can_fork", lambda: False)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The team's ../shared folder; tests that need it skip cleanly when it is absent."""
    if not (SHARED / "data").is_dir():
        pytest.skip("../shared is not beside this clone")
    return SHARED


@pytest.fixture(scope="module")
def moto():
    """Moto's S3 server on loopback for a module's tests (skips without ``moto[server]``)."""
    pytest.importorskip("moto")
    from tests.support.ns_cluster import MotoServer

    server = MotoServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def local_ray():
    """A local Ray instance for the whole session (reused if one is already running).

    Two CPUs, listening on 127.0.0.1 only, with a token (see ``pipeline.engine.ray_runner``).
    """
    import importlib.util
    import sys

    if importlib.util.find_spec("ray") is None:
        pytest.skip("ray is not installed")
    from pipeline.engine.ray_runner import LocalRay

    had_token = TOKEN.exists()
    # LocalRay imports ray first (an earlier import would make it fall back to 127.0.0.2)
    running = "ray" in sys.modules and sys.modules["ray"].is_initialized()
    if "ray" in sys.modules and not running:
        # ray read its auth mode ('disabled') at import: LocalRay's token would be refused
        pytest.fail("ray was imported in the test process before the session's local Ray "
                    "started: import it in a subprocess (see tests/engine/test_ray_job_env.py)")
    started = None if running else LocalRay(num_cpus=2)
    import ray

    yield ray
    if started is not None:
        started.shutdown()
    assert had_token or not TOKEN.exists(), "a Ray token file appeared in the home directory"
