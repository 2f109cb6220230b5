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
