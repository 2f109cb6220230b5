"""Where a family's expensive, embarrassingly parallel stage runs: in this process or on Ray.

Why a seam and not a second implementation: a family's costly stage (the per-task-group scan of
an XLand file, hashing media files, parsing batches of MQuAKE cases) is already a *pure function
of one work unit* whose outputs merge by concatenation. The family lists its units, names the
function and merges the results; an :class:`Engine` only decides where each call runs. The
rules never see the engine: they run on the driver over the same merged tables, so no rule can
have a Ray-only code path, and a report cannot depend on where the units ran.

Determinism: :meth:`Engine.map` returns results **in unit order** whatever order the tasks
finish in, and the families' units are split so that results do not depend on how many units
there are (concatenation in order). The JSON report of ``--engine ray`` therefore equals the
local one byte for byte, durations aside (the tests assert it for every family).

Fault tolerance is Ray's: each unit is a task with ``max_retries`` (a worker process or node that
dies mid-task is retried elsewhere); an exception *raised by the function* is not retried (it is
the input's fault and would fail again) and surfaces on the driver exactly as it does locally —
a finding where the family turns it into one, else exit 2.

The engine in force is a context variable set by :func:`use_engine` (the CLI's ``--engine``):
library code asks :func:`current` instead of threading an argument through every family.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from curate.core.errors import UsageError, arg

if TYPE_CHECKING:  # not at run time: a help or a completion never starts a pool (issue 36)
    from concurrent.futures import Future

ENGINES = ("local", "ray")
#: The one line a user without Ray is told.
INSTALL_HINT = "--engine ray needs Ray: pip install 'curate[ray]'"
#: Retries of a unit whose worker died (not of one that raised).
MAX_RETRIES = 3

Progress = Callable[[str, int], None]


def available_cores(limit: int = 8) -> int:
    """Cores this process may run on (its CPU affinity, not the machine's count: a container or
    ``taskset`` may allow fewer), at most ``limit``: the local engine's default worker count."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, limit))


class Engine:
    """Runs a pure function over work units; the local engine, in this process."""

    name = "local"

    def parallelism(self, default: int) -> int:
        """How many units to aim for per "worker" slot: the family's own worker count."""
        return default

    def is_local(self) -> bool:
        return True

    def map(
        self,
        fn: Callable[..., Any],
        units: Sequence[tuple[Any, ...]],
        *,
        progress: Progress | None = None,
        label: str = "tasks",
        local: Callable[[Callable[..., Any], Sequence[tuple[Any, ...]]], list[Any]] | None = None,
    ) -> list[Any]:
        """``[fn(*u) for u in units]`` in unit order; ``local``: the family's own pool for it."""
        progress = progress or _PROGRESS.get()
        if local is not None:
            return local(fn, units)
        out = []
        for i, u in enumerate(units):
            out.append(fn(*u))
            if progress and len(units) > 1:
                progress(f"{label} {i + 1}/{len(units)}", i + 1)
        return out

    def submitter(self, make_pool: Callable[[], Any]) -> Any:
        """An executor-like object (``submit(fn, *args) -> future``) for a pipelined stage."""
        return make_pool()

    def close(self) -> None:
        pass


#: Signals a worker process never sees: the terminal sends Ctrl-C (and a closed terminal its
#: hang-up) to the whole process group, and the parent alone decides how the run ends.
_PARENT_ONLY = (signal.SIGINT, signal.SIGHUP)


@contextlib.contextmanager
def process_pool(workers: int) -> Iterator[Any]:
    """A ``spawn`` process pool that a stop signal cannot leave behind or make hang.

    Why not a bare ``ProcessPoolExecutor``: Ctrl-C reaches every process of the terminal's
    group, so each worker printed a ``KeyboardInterrupt`` traceback, a worker killed while it
    held the pool's queue lock left the others blocked on it, and the parent's exit then waited
    on them forever (``fix icrl`` hung for minutes after saying "interrupted"). Here:

    * workers are started with SIGINT and SIGHUP *blocked* (a spawned child inherits the signal
      mask of the thread that starts it, and the pool starts its workers inside ``submit``,
      which the yielded object wraps): they never see the group's signal, while the parent
      blocks them only for the instant of a ``submit``; SIGTERM keeps its default and ends a
      worker at once, without Python's traceback;
    * on any exception (the parent's :class:`~curate.core.outputs.Interrupted` included) queued
      units are cancelled and the workers terminated, then killed if they have not gone within
      a second, and the pool's manager thread is waited for, before the exception goes on: no
      process is left, nothing waits on one, and no thread of the pool still writes to its
      pipes;
    * SIGPIPE is ignored from the first pool on (see the comment below).
    """
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context, resource_tracker

    # The pool talks to its workers over pipes; once a worker is gone, a write to its end is
    # EPIPE, which the pool handles, but under SIGPIPE's default action it killed curate first
    # (exit -13, no message, no clean-up, "leaked semaphore objects"). Ignored, as Python
    # itself sets it at start-up, and left ignored afterwards: the resource tracker's pipe
    # stays open for the rest of the process (every semaphore is unregistered through it at
    # exit), and a write to it with the default action back would be the same death.
    _set_handler(signal.SIGPIPE, signal.SIG_IGN)
    blocked = _block(_PARENT_ONLY)
    try:
        # The pool's queues start multiprocessing's resource tracker (a process of its own)
        # the first time: a Ctrl-C during its start-up killed it, and the parent's next write
        # to it ended the parent by SIGPIPE (exit -13, "leaked semaphore objects").
        resource_tracker.ensure_running()
        pool = ProcessPoolExecutor(workers, mp_context=get_context("spawn"))
    finally:
        _unblock(blocked)
    try:
        yield _MaskedSubmit(pool)
        # Inside the ``try``: a signal while the pool shuts down (waiting for its manager
        # thread) ends it as one in the block does, not with the pool's threads still running.
        pool.shutdown(wait=True)
    except BaseException:
        _kill_pool(pool)
        raise


def _set_handler(sig: int, handler: Any) -> Any:
    """``signal.signal`` where it can be set (the main thread); the previous handler or None."""
    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        return signal.signal(sig, handler)
    except (OSError, ValueError):
        return None


#: What a pool worker's environment says where the user's says nothing: one OpenBLAS thread.
#: Why: numpy starts OpenBLAS's threads when it is imported, and they spin looking for work for
#: a while; a worker does no linear algebra (the HDF5 scan), yet its start cost ~0.1 CPU-s more
#: (0.21 instead of 0.11 CPU-s to import the scan module, measured), taken from the cores the
#: scan runs on. A variable the user set is passed on as it is.
_WORKER_ENV = {"OPENBLAS_NUM_THREADS": "1"}


class _MaskedSubmit:
    """A process pool's ``submit``, with :data:`_PARENT_ONLY` blocked while it may start a
    worker, and :data:`_WORKER_ENV` in the environment it starts with (for that instant)."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        blocked = _block(_PARENT_ONLY)
        added = [k for k in _WORKER_ENV if k not in os.environ]
        try:
            os.environ.update({k: _WORKER_ENV[k] for k in added})
            return self._pool.submit(fn, *args)
        finally:
            for k in added:
                os.environ.pop(k, None)
            _unblock(blocked)


def _block(signals: Sequence[int]) -> set[int] | None:
    """Block ``signals`` in this thread; the mask before, to restore (``None`` off the main
    thread or where the platform has no signal masks)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        return set(signal.pthread_sigmask(signal.SIG_BLOCK, signals))
    except (AttributeError, OSError, ValueError):
        return None


def _unblock(previous: set[int] | None) -> None:
    """Restore the mask :func:`_block` saved: a signal that came meanwhile is delivered now."""
    if previous is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _kill_pool(pool: Any, grace: float = 0.6) -> None:
    """Cancel what has not started, end every worker (SIGTERM, then SIGKILL once ``grace`` has
    passed) and wait for the pool's manager thread to finish with them; stop signals are held
    until then (a second Ctrl-C must not leave the pool half torn down).

    Why one deadline for the whole teardown, short: an interrupted run must end within 2 s,
    and on a loaded machine a grace per step (workers, their kill, the manager) added up to
    2.65 s once; a worker that has not died of SIGTERM by then is killed, which loses nothing
    (its results were going to be thrown away)."""
    from curate.core.outputs import signals_deferred

    with signals_deferred():
        _end_pool(pool, grace)


def _end_pool(pool: Any, grace: float) -> None:
    import time

    processes = list((getattr(pool, "_processes", None) or {}).values())
    # Taken before ``shutdown``, which forgets it (``_executor_manager_thread = None``) when
    # it does not wait: read afterwards, it was always None and the thread never waited for.
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in processes:
        with contextlib.suppress(Exception):
            proc.terminate()
    deadline = time.monotonic() + grace
    for proc in processes:
        with contextlib.suppress(Exception):
            proc.join(max(0.0, deadline - time.monotonic()))
    for proc in processes:
        with contextlib.suppress(Exception):
            if proc.is_alive():
                proc.kill()
                proc.join(0.2)
    # The manager thread sees its workers gone, marks the pool broken, sends its shutdown
    # sentinels through the call queue's feeder thread, closes the queues and ends. Until it
    # has, those threads still write to pipes whose readers are dead (seen: the feeder's
    # sentinel, EPIPE, after Ctrl-C in `fix icrl`); waiting here means nothing of the pool runs
    # once the exception goes on, and its queues' semaphores are released through the resource
    # tracker at exit instead of reported as "leaked semaphore objects".
    if manager is not None:
        manager.join(max(0.2, deadline - time.monotonic()))


def _get(refs: Any) -> Any:
    """``ray.get``, with an exception raised *by a unit* re-raised as itself: the caller sees
    the same :class:`~curate.core.errors.InputError` (one line, exit 2) or finding as locally, not
    Ray's wrapper with a remote traceback. A worker that died past its retries stays Ray's
    error (the cluster's fault, not the input's)."""
    import ray
    from ray.exceptions import RayTaskError

    try:
        with _interruptible():
            return ray.get(refs)
    except RayTaskError as e:
        cause = getattr(e, "cause", None)
        if isinstance(cause, BaseException):
            raise cause from None
        raise


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """A Ray call during which Ctrl-C or SIGTERM arrives raises curate's :class:`~curate.
    outputs.Interrupted` (exit 130/143, staging removed), not Ray's wrapper of it: a signal
    handler that raises inside ``ray.wait``/``ray.get`` (Cython) comes out as ``SystemError:
    ... returned a result with an exception set``, which read as a bug in curate (exit 3)."""
    try:
        yield
    except SystemError as e:
        cause = e.__cause__ or e.__context__
        if cause is not None and not isinstance(cause, Exception):  # Interrupted, Ctrl-C
            raise cause from None
        raise


def _stop_handlers() -> dict[int, Any]:
    """The handlers of the stop signals now (none outside the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    from curate.core.outputs import STOP_SIGNALS

    return {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}


def _restore_handlers(handlers: dict[int, Any]) -> None:
    for sig, handler in handlers.items():
        if handler is not None:
            with contextlib.suppress(ValueError, OSError):
                signal.signal(sig, handler)


def _target(address: str | None) -> str | None:
    """The address Ray will join for ``address`` (RAY_ADDRESS, the latest ``ray start`` of the
    default temp dir, ``auto``: any running), ``None`` when it will start a cluster of its own;
    a ``ray://`` address as given. Ray's own resolution, asked before ``ray.init``."""
    if address and address != "auto":
        return address  # as ray.init: RAY_ADDRESS only stands in for none or auto
    try:
        from ray._private.services import get_ray_address_from_environment
    except ImportError:  # a Ray without it: let ray.init resolve and say what it found
        return address or os.environ.get("RAY_ADDRESS") or "auto"
    try:
        # Ray annotates ``addr`` as str, but its body and docstring take None ("no address")
        return get_ray_address_from_environment(address or None, None)  # type: ignore[arg-type]
    except ConnectionError as e:  # "auto" and nothing running
        raise UsageError(f"{arg('--ray-address', address)}: {' '.join(str(e).split())}") from None


#: Seconds a cluster's address has to accept a connection before curate gives up on it.
CONNECT_TIMEOUT = 5.0


def _check_listening(target: str, given: str | None) -> None:
    """Refuse an address nothing answers at, in seconds: Ray itself retries a dead GCS
    address 20 times ~41 s apart (about 14 minutes of C++ warnings before it fails)."""
    import socket

    if "://" in target:
        return  # Ray Client: its own connection, which fails fast
    shown = given or f"{target} (from RAY_ADDRESS or `ray start`)"
    host, sep, port_text = target.rpartition(":")
    if not sep or not host:
        return  # not HOST:PORT: ray.init says what is wrong with it
    try:
        port = int(port_text)
        if not 0 < port < 65536:
            raise ValueError
    except ValueError:
        raise UsageError(f"{arg('--ray-address', shown)}: {port_text!r} is not a port") from None
    try:
        with socket.create_connection((host.strip("[]"), port), timeout=CONNECT_TIMEOUT) as sock:
            grpc = _speaks_grpc(sock)
    except OSError as e:
        why = "timed out" if isinstance(e, TimeoutError) else (e.strerror or str(e))
        raise UsageError(
            f"{arg('--ray-address', shown)}: no Ray cluster answers at {host}:{port} ({why})"
        ) from None
    if not grpc:
        raise UsageError(
            f"{arg('--ray-address', shown)}: a server answers at {host}:{port}, but not a Ray "
            "cluster "
            "(no gRPC there; a head's address is its GCS port, 6379 unless `ray start "
            "--port` said otherwise)"
        )


#: HTTP/2's client preface and an empty SETTINGS frame (RFC 9113 §3.4): what a gRPC client
#: sends first on a connection.
_H2_HELLO = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def _speaks_grpc(sock: Any) -> bool:
    """Whether the server on ``sock`` answers as a gRPC server does: with HTTP/2's SETTINGS
    frame (frame type 4), sent at once. Why: a Ray GCS is a gRPC server, and an address that
    accepts connections but is something else (a web server, a database) keeps ``ray.init``
    retrying for ~20 s of C++ warnings before it fails. A cluster with TLS on
    (``RAY_USE_TLS``) is not probed in clear text: Ray's own connection says what it says."""
    if os.environ.get("RAY_USE_TLS", "").lower() in ("1", "true", "yes"):
        return True
    sock.settimeout(CONNECT_TIMEOUT)
    try:
        sock.sendall(_H2_HELLO)
        head = b""
        while len(head) < 9:
            more = sock.recv(9 - len(head))
            if not more:
                break
            head += more
    except TimeoutError:
        return False
    return len(head) == 9 and head[3] == 0x04


def _warm() -> None:
    """A no-op task: its only effect is a started worker process."""


class _RayFuture:
    """A Ray object reference with the one method of :class:`~concurrent.futures.Future`
    the pipelined readers call."""

    def __init__(self, ref: Any) -> None:
        self.ref = ref

    def result(self) -> Any:
        return _get(self.ref)

    def cancel(self) -> bool:
        return False


class _RaySubmitter:
    """``submit(fn, *args)`` as a Ray task; ``shutdown`` like a pool's (nothing to stop)."""

    def __init__(self, engine: RayEngine) -> None:
        self.engine = engine

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any] | _RayFuture:
        return _RayFuture(self.engine.remote(fn).remote(*args))

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        pass


class RayEngine(Engine):
    """Units as Ray tasks (``max_retries``), gathered in unit order, progress as tasks finish."""

    name = "ray"

    def __init__(self, address: str | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise UsageError(INSTALL_HINT.replace("--engine ray", arg("--engine", "ray"))) from None
        self.address = address
        self._started = False
        self._remotes: dict[Any, Any] = {}
        #: True when no cluster was there to join and Ray started one for this process.
        self.started_local: bool = False
        if not ray.is_initialized():
            target = _target(address)
            self.started_local = target is None
            if target is not None:
                _check_listening(target, address)
            # At ray.shutdown the driver waits for its last batch of task events (the
            # dashboard's task table) to reach the GCS: ~0.25 s of every command on a
            # two-node cluster, a twelfth of a 3 s audit. curate's driver exits right after;
            # the batch is still sent, not waited for (the workers report their tasks' own
            # ends). A value the user set is kept. Read by Ray's core worker at ray.init.
            os.environ.setdefault("RAY_task_events_shutdown_flush_timeout_ms", "0")
            handlers = _stop_handlers()
            try:
                # address None: join the cluster RAY_ADDRESS or the latest `ray start` names,
                # else start a local one (Ray's own resolution).
                ray.init(
                    address=address,
                    logging_level=40,  # logging.ERROR: logging is not imported for it
                    log_to_driver=False,
                    include_dashboard=False,
                    configure_logging=True,
                )
            except (ConnectionError, ValueError, RuntimeError) as e:
                msg = " ".join(str(e).split()) or type(e).__name__
                where = arg("--ray-address", address)
                raise UsageError(f"{where}: cannot join Ray: {msg}") from None
            finally:
                # ray.init makes SIGTERM sys.exit(15) (exit 1 or 15, no cleanup message);
                # curate's handlers unwind, remove what is staged and exit 143 as locally
                _restore_handlers(handlers)
            self._started = True
        # Start one worker process per cluster CPU now, while the driver reads the input's
        # metadata: a Ray worker starts on first use (~1-3 s of Python and Ray imports), which
        # would otherwise sit on the critical path of the first units. Spread over the nodes:
        # Ray's default prefers the driver's node, where a no-op may take the head's worker
        # again and leave another node's worker to start with its first real task (seen ~2.4 s
        # after the head's on a two-node cluster).
        cpus = self.parallelism(1)
        warm = ray.remote(_warm).options(scheduling_strategy="SPREAD")
        self._warm = [warm.remote() for _ in range(cpus)]

    def is_local(self) -> bool:
        return False

    def parallelism(self, default: int) -> int:
        import ray

        cpus = int(ray.cluster_resources().get("CPU", 1))
        return max(1, cpus)

    def remote(self, fn: Callable[..., Any]) -> Any:
        import ray

        r = self._remotes.get(fn)
        if r is None:
            # SPREAD, as Ray Data schedules its read tasks: units are alike and all submitted at
            # once, and Ray's default packs them on the driver's node, whose raylet queues them
            # there and hands them to another node only as it spills back (a two-node cluster,
            # 37 parquet shards: 22-24 ran on the head, 13-15 on the other node, idle ~3 s)
            r = ray.remote(fn).options(
                max_retries=MAX_RETRIES, retry_exceptions=False, scheduling_strategy="SPREAD"
            )
            self._remotes[fn] = r
        return r

    def map(
        self,
        fn: Callable[..., Any],
        units: Sequence[tuple[Any, ...]],
        *,
        progress: Progress | None = None,
        label: str = "tasks",
        local: Any = None,
    ) -> list[Any]:
        import ray

        progress = progress or _PROGRESS.get()
        remote = self.remote(fn)
        refs = [remote.remote(*u) for u in units]
        pending = list(refs)
        done = 0
        while pending:
            with _interruptible():
                ready, pending = ray.wait(pending, num_returns=1, timeout=1.0)
            if ready:
                done += len(ready)
                if progress:
                    progress(f"ray: {label} {done}/{len(refs)}", done)
        return _get(refs)  # unit order, whatever order they finished in

    def gather(
        self, refs: list[Any], *, progress: Progress | None = None, label: str = "tasks"
    ) -> Iterator[Any]:
        """The results of the tasks ``refs`` in their order, each as soon as it is done (an
        exception a task raised surfaces at its turn, as it would locally), with progress as
        tasks finish in whatever order. ``refs`` is emptied as the results are taken, so Ray
        frees each result once it is taken, not after the last task."""
        import ray

        progress = progress or _PROGRESS.get()
        order = refs
        total = len(order)
        unfinished = list(order)
        finished: set[Any] = set()
        done = 0
        while order:
            ref = order.pop(0)
            while ref not in finished:
                with _interruptible():
                    ready, unfinished = ray.wait(unfinished, num_returns=1, timeout=1.0)
                finished.update(ready)
                done += len(ready)
                if ready and progress:
                    progress(f"ray: {label} {done}/{total}", done)
            finished.discard(ref)
            result = _get(ref)
            del ref
            yield result

    def submitter(self, make_pool: Callable[[], Any]) -> Any:
        return _RaySubmitter(self)

    def close(self) -> None:
        if self._started:
            import ray

            handlers = _stop_handlers()
            try:
                ray.shutdown()
            finally:
                _restore_handlers(handlers)
            self._started = False


_LOCAL = Engine()
_CURRENT: contextvars.ContextVar[Engine] = contextvars.ContextVar("curate_engine", default=_LOCAL)


_PROGRESS: contextvars.ContextVar[Progress | None] = contextvars.ContextVar(
    "curate_engine_progress", default=None
)


@contextlib.contextmanager
def progress_to(callback: Progress | None) -> Iterator[None]:
    """Report units done / total to ``callback`` (the terminal's progress line) in the block:
    the families' scans are called deep inside table building, where no callback is passed."""
    token = _PROGRESS.set(callback)
    try:
        yield
    finally:
        _PROGRESS.reset(token)


def current() -> Engine:
    """The engine in force (the local one unless inside :func:`use_engine`)."""
    return _CURRENT.get()


def make(name: str | None, address: str | None = None) -> Engine:
    """The engine called ``name`` (``local``/``ray``); a bad name or a missing Ray is exit 2."""
    name = (name or "local").lower()
    if name not in ENGINES:
        raise UsageError(
            f"{arg('--engine', name)}: unknown engine (choose from {', '.join(ENGINES)})"
        )
    if name == "local":
        if address:
            raise UsageError(f"{arg('--ray-address')} needs {arg('--engine', 'ray')}")
        return _LOCAL
    return RayEngine(address or None)


@contextlib.contextmanager
def use_engine(name: str | Engine | None, address: str | None = None) -> Iterator[Engine]:
    """Run the block on engine ``name`` (connecting to Ray if asked); disconnects afterwards."""
    engine = name if isinstance(name, Engine) else make(name, address)
    token = _CURRENT.set(engine)
    try:
        yield engine
    finally:
        _CURRENT.reset(token)
        if not isinstance(name, Engine):
            engine.close()


__all__ = [
    "ENGINES",
    "INSTALL_HINT",
    "Engine",
    "RayEngine",
    "current",
    "make",
    "progress_to",
    "use_engine",
]
