"""OpenMP's wait policy: PASSIVE unless the user set one, in place before torch starts in the command line,
in every executor worker and in every notebook kernel."""

import json
import os
import subprocess
import sys

import pytest

from countdown_study.runs.threads import set_wait_policy, thread_share, wait_policy


@pytest.mark.parametrize(
    ("environ", "policy"),
    [
        ({}, "PASSIVE"),  # nothing set: the package's default
        ({"OMP_WAIT_POLICY": "ACTIVE"}, "ACTIVE"),  # the user's value is kept
        ({"OMP_WAIT_POLICY": "passive"}, "passive"),
        ({"OMP_WAIT_POLICY": ""}, "PASSIVE"),  # set to nothing is not set
    ],
)
def test_the_wait_policy_is_the_users_else_passive(environ, policy):
    assert wait_policy(environ) == {"OMP_WAIT_POLICY": policy}
    set_wait_policy(environ)
    assert environ["OMP_WAIT_POLICY"] == policy


def test_a_thread_share_sizes_every_library_pool_and_is_at_least_one():
    assert set(thread_share(3).values()) == {"3"} and "OMP_NUM_THREADS" in thread_share(3)
    with pytest.raises(ValueError, match="at least 1 thread, got 0"):
        thread_share(0)


WATCH_TORCH = """
import builtins, json, os, sys
seen = {}
real_import = builtins.__import__
def spy(name, *args, **kwargs):
    if name == "torch" and "torch" not in seen:
        seen["torch"] = os.environ.get("OMP_WAIT_POLICY")
    return real_import(name, *args, **kwargs)
builtins.__import__ = spy
from countdown_study.cli import main
code = main(["runs", "verify", "--root", sys.argv[1]])  # imports the run store (torch), then exit 2
print(json.dumps({"code": code, **seen}))
"""


@pytest.mark.parametrize(("user", "expected"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_the_command_line_sets_the_wait_policy_before_torch_starts(user, expected, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if user is not None:
        env["OMP_WAIT_POLICY"] = user
    done = subprocess.run(
        [sys.executable, "-c", WATCH_TORCH, str(tmp_path / "none")],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"code": 2, "torch": expected}


def test_workers_and_kernels_start_with_the_wait_policy():
    from countdown_study.runs.executor import WORKER_ENVIRONMENT
    from countdown_study.study.pipeline import KERNEL_ENVIRONMENT

    policy = wait_policy()  # this process's: the user's, else PASSIVE
    assert (
        WORKER_ENVIRONMENT["OMP_WAIT_POLICY"]
        == KERNEL_ENVIRONMENT["OMP_WAIT_POLICY"]
        == policy["OMP_WAIT_POLICY"]
    )
