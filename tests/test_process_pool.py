"""The local engine's process pool: what its workers start with."""

from __future__ import annotations

import os

import pytest

from curate.core.engine import process_pool


def _env(name: str) -> str | None:
    return os.environ.get(name)


def test_a_worker_starts_with_one_openblas_thread_and_the_parent_keeps_its_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker imports numpy, whose OpenBLAS threads cost it CPU the scan needs; the variable
    is the worker's alone: the parent's environment is as it was."""
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    with process_pool(1) as pool:
        assert pool.submit(_env, "OPENBLAS_NUM_THREADS").result(timeout=60) == "1"
    assert "OPENBLAS_NUM_THREADS" not in os.environ


def test_a_user_set_openblas_thread_count_reaches_the_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    with process_pool(1) as pool:
        assert pool.submit(_env, "OPENBLAS_NUM_THREADS").result(timeout=60) == "3"
    assert os.environ["OPENBLAS_NUM_THREADS"] == "3"


_RUN_WITH = """
import os, sys
sys.argv = ["curate", *{args!r}]
import curate.cli.main as m
def main(**_):
    sys.stdout.write(repr((os.environ.get("OPENBLAS_THREAD_TIMEOUT"), "numpy" in sys.modules)))
    sys.stdout.flush()
    return 0
m.main = main
from curate.cli.entry import run
run()
"""


@pytest.mark.parametrize(
    ("args", "user", "seen"),
    [
        (["audit", "mquake", "x.json"], None, ("4", True)),
        (["audit", "mquake", "x.json"], "20", ("20", True)),
        (["--help"], None, (None, False)),  # the catalogue imports no numpy: nothing to set
    ],
)
def test_the_console_script_has_idle_blas_threads_sleep_unless_the_user_says(
    args: list[str], user: str | None, seen: tuple[str | None, bool]
) -> None:
    """numpy's OpenBLAS threads spin for ~0.1 s of CPU after it is imported, on the cores a data
    command needs; the console script sets how long (before numpy loads), a user's value kept."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    if user is not None:
        env["OPENBLAS_THREAD_TIMEOUT"] = user
    r = subprocess.run(
        [sys.executable, "-c", _RUN_WITH.format(args=args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout == repr(seen)
