"""The ``curate`` console script: a tiny module so that Ctrl-C while the heavy libraries load
(polars, pyarrow, pydantic: a second or two) still ends with one line and exit 130.

Why a signal during the imports ends the process from its handler (``os._exit``) rather than
as KeyboardInterrupt: an exception raised inside a C extension's module initialisation can
crash the interpreter (seen: a segmentation fault inside orjson's import), and nothing exists
yet that would need cleaning up — no output, no worker, no staging folder. (It used to be held
until the imports were done: up to three seconds on a busy machine.)
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

_NAMES: dict[int, str] = {
    signal.SIGINT: "interrupted",
    signal.SIGTERM: "terminated",
    signal.SIGHUP: "hangup",
}


def _end_now(signum: int, _frame: object) -> None:
    with contextlib.suppress(Exception):
        sys.stderr.write(f"curate: {_NAMES[signum]}\n")
        sys.stderr.flush()
    os._exit(128 + signum)


def run() -> None:
    previous = {sig: signal.signal(sig, _end_now) for sig in _NAMES}
    try:
        from curate.cli.main import main

        if not answers_from_the_catalogue(sys.argv[1:]):
            # A data command: the libraries every one of them uses (polars, pyarrow, pydantic,
            # orjson) are imported here, under the handler above, not later by the command.
            # First, before any of them starts a thread: one glibc heap for all threads.
            from curate.core.memory import one_heap

            one_heap()
            _idle_blas_threads_sleep()
            import curate.api  # noqa: F401
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
    code = main(restore_signals=False)  # kept until the stop signals are ignored below
    # The run is decided and reported; what is left is the interpreter's teardown (freeing
    # tables, joining threads), which can take a while after a big run. A signal then found
    # the default action (Python restores it for handlers of its own during finalisation, and
    # any of polars' threads may take a process-wide signal) and killed a finished run
    # silently with 130, its output complete. Ignored now, it cannot change what was decided;
    # Python leaves an ignored signal ignored through its finalisation.
    for sig in _NAMES:
        with contextlib.suppress(OSError, ValueError):
            signal.signal(sig, signal.SIG_IGN)
    _exit(code)


#: How long an idle OpenBLAS thread spins before it sleeps, as a power of two of CPU cycles
#: (OpenBLAS's ``OPENBLAS_THREAD_TIMEOUT``; 4 is its least, its default 28 is ~0.1 s).
_BLAS_SPIN = "4"


def _idle_blas_threads_sleep() -> None:
    """Have numpy's OpenBLAS threads sleep at once when they have nothing to do, unless the
    user says otherwise; set before numpy is imported (OpenBLAS reads it as it loads).

    Why: OpenBLAS starts one thread per core when numpy is imported, and each spins looking for
    work before it sleeps, on the cores the command needs: measured, importing numpy took 0.14
    CPU-s instead of 0.07, and an audit of 100k MQuAKE cases ~0.1 s more wall time. Not one
    thread (``OPENBLAS_NUM_THREADS=1``): a label model's linear algebra keeps every core
    (the glycan label-issue benchmark ran as fast).
    """
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", _BLAS_SPIN)


def answers_from_the_catalogue(args: list[str]) -> bool:
    """Whether the command line only asks for help, the version, the rules or completions:
    what the command line answers without the data libraries (issue 36). Any other run is a
    data command, which imports them at once."""
    return (
        not args
        or "--help" in args
        or args[0] in ("--version", "rules")
        or bool(os.environ.get("_CURATE_COMPLETE"))
    )


def _exit(code: int) -> None:
    """End the process without tearing the interpreter down object by object.

    Why: after a big run, Python's finalisation frees every table, array and string one at a
    time — measured 1-2 s after ``export icrl`` had printed its last line, time every command
    paid and that a Ctrl-C had to wait through. Everything that must happen at exit still does:
    the standard streams are flushed and the ``atexit`` hooks run (multiprocessing unlinks its
    semaphores there); every output was already closed and renamed by the run itself.
    """
    import atexit

    # Nothing is written after this but what the hooks send to multiprocessing's resource
    # tracker; a pipe to a process already gone must not turn the decided exit code into -13.
    with contextlib.suppress(OSError, ValueError):
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()
    os._exit(code)
