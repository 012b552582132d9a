"""The driver of a submitted Ray job adds to the job's runtime_env only what does not conflict.

Ray's own merge (``ray.runtime_env.runtime_env._merge_runtime_env``, the function
``ray.init`` applies to a job's driver) is the judge: it returns None, and ``ray.init``
refuses the run with "Failed to merge the Job's runtime env", when a field or an
``env_vars`` key is in both.
"""

from __future__ import annotations

import json

import pytest

from pipeline.engine.ray_runner import (
    JOB_CONFIG_VAR,
    job_runtime_env,
    package_runtime_env,
    runtime_env_within_job,
)
from pipeline.errors import ExecutionError

STORAGE = {"OVERLAP_S3_ENDPOINT": "http://127.0.0.1:9000", "OVERLAP_S3_ALLOW_HTTP": "1"}
CLONE = {"working_dir": "gcs://_ray_pkg_0123456789abcdef.zip",
         "excludes": [".venv", ".git", "runs"]}


def _ours() -> dict:
    env = package_runtime_env()
    env["env_vars"] = dict(STORAGE)
    return env


def _ray_merge():
    """Ray's merge, run in a process of its own: importing ray here would fix this test
    process's auth mode ('disabled') before the session's local Ray sets 'token', and every
    later local Ray of the session would fail to start."""
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("ray") is None:
        pytest.skip("ray is not installed")
    code = ("import json, sys\n"
            "from ray.runtime_env.runtime_env import _merge_runtime_env\n"
            "print(json.dumps([_merge_runtime_env(a, b) for a, b in json.load(sys.stdin)]))\n")

    def merge_all(pairs: list[tuple[dict, dict | None]]) -> list[dict | None]:
        done = subprocess.run([sys.executable, "-c", code], input=json.dumps(pairs),
                              capture_output=True, text=True, check=True, timeout=120)
        return json.loads(done.stdout)

    return merge_all


def test_outside_a_job_the_runtime_env_is_unchanged():
    ours = _ours()
    assert job_runtime_env({}) is None
    assert runtime_env_within_job(ours, None) == ours
    assert runtime_env_within_job(None, {"env_vars": {"A": "1"}}) is None


def test_the_job_config_is_read_as_ray_writes_it():
    job = {"runtime_env": CLONE, "metadata": {"job_submission_id": "raysubmit_x"}}
    assert job_runtime_env({JOB_CONFIG_VAR: json.dumps(job)}) == CLONE
    assert job_runtime_env({JOB_CONFIG_VAR: json.dumps({"metadata": {}})}) == {}
    with pytest.raises(ExecutionError, match="not JSON"):
        job_runtime_env({JOB_CONFIG_VAR: "{not json"})


@pytest.mark.parametrize("job", [
    {},  # a job without a runtime_env: the package is shipped as outside a job
    CLONE,  # a clone as working_dir (its excludes conflict with ours)
    {**CLONE, "env_vars": {"OVERLAP_S3_ENDPOINT": "http://127.0.0.1:9000"}},
    {"py_modules": ["gcs://_ray_pkg_fedcba9876543210.zip"], "pip": ["nltk"]},
    {"env_vars": dict(STORAGE)},  # the storage settings given to the job itself
])
def test_rays_own_merge_accepts_what_the_driver_adds(job):
    ours = _ours()
    mine = runtime_env_within_job(ours, job)
    as_before, merged = _ray_merge()([(job, ours), (job, mine)])
    assert as_before is None or job == {}  # as before: refused whenever they overlap
    assert merged is not None, mine
    # the workers see the storage as the driver does, the job's own values first
    assert {**STORAGE, **job.get("env_vars", {})} == {
        k: merged["env_vars"][k] for k in STORAGE}
    if job.get("working_dir") or job.get("py_modules"):
        assert "py_modules" not in (mine or {}) and "excludes" not in (mine or {})
        assert merged.get("working_dir") == job.get("working_dir")
    else:  # the package still goes to the workers
        assert merged["py_modules"] == ours["py_modules"]
