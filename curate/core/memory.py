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


#: ``mallopt``'s parameter for the most arenas glibc makes (``M_ARENA_MAX`` in malloc.h).
_M_ARENA_MAX = -8


def one_heap() -> None:
    """Have every thread allocate from glibc's main heap: one arena (``M_ARENA_MAX``), not one
    per thread that allocates.

    Why: glibc gives a thread allocating beside others a heap of its own, and what a batch frees
    there stays resident after :func:`release_freed` (that trims the main heap well, a thread's
    heap hardly at all). The knowledge-editing reader parses JSON Lines batches in threads (the
    16 MiB blocks and Arrow's batches, in glibc through Arrow's system pool): measured at 100k
    MQuAKE cases, ~60 MB of ~400 MB resident after the load was the threads' freed batches,
    none with one arena, for the same CPU time (the threads allocate few, large blocks, so they
    seldom wait on the arena's lock). Called once by the command line before any thread starts
    (an arena made before stays); a library caller's process keeps its own settings.
    """
    if _MALLOPT is not None:
        _MALLOPT(_M_ARENA_MAX, 1)


def _libc(name: str) -> Any:
    try:
        import ctypes

        return getattr(ctypes.CDLL("libc.so.6"), name)
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to trim or tune
        return None


_TRIM = _libc("malloc_trim")
_MALLOPT = _libc("mallopt")
