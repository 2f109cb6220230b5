"""Handing freed memory back to the system between the phases of a long run.

Why a module: the allocators under curate keep what is freed for the next allocation (glibc's
heaps hold the Python objects a load parses, Arrow's mimalloc pool the batches it reads), and a
phase that comes next with other allocators (or no need of that memory) finds the process
already at the first phase's peak. ``curate diff`` loads one version after the other: without
this the second load started with the first's freed memory still resident (1 M MQuAKE cases:
2.6 GB resident after the first side, of which the side holds 0.1 GB).
"""

from __future__ import annotations

from typing import Any


def release_freed() -> None:
    """Hand glibc's free memory back to the system (``malloc_trim``, where there is glibc) and
    Arrow's default pool's (``release_unused``).

    Why not after every batch: glibc reuses a batch's freed memory for the next one, so the
    resident size plateaus while reading; trimming after every batch doubled the load's time
    at 1 M cases for 3 % less peak (bench/history/RESULTS-log-2026.md). Called once per load.
    """
    if _TRIM is not None:
        _TRIM(0)
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def _malloc_trim() -> Any:
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to trim
        return None


_TRIM = _malloc_trim()
