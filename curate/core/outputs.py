"""The one gate every write goes through: curate never deletes or overwrites what it did not create.

Why a gate and not care in each writer: a dataset tool is pointed at folders full of irreplaceable
data, often with paths typed by hand (``--out ..``, ``--out .``, ``-o data.json``). One wrong path
must cost an error line, never a dataset. So every writer asks this module first:

* :func:`guard_folder` — an ``--out`` folder is refused when it is an input, contains an input, lies
  inside an input folder, is an existing file, a symbolic link, or the current folder; an existing
  non-empty folder is replaced only with ``overwrite`` *and* only when curate wrote it, which the
  marker ``.curate/manifest.json`` (command, version, input hashes) proves.
* :func:`guard_file` — a report ``--output`` (any file: ``--report``, ``--plot``, the baseline,
  the media cache) is refused when it is an input of the run (or a path the run's input globs
  match), lies inside a curate output folder (the marker included: such a folder is replaced
  only as a whole), or is a folder; an existing file is replaced only when curate wrote it (its
  generator mark, :data:`CURATE_MARKS`) or with ``overwrite``; inputs never, not even with
  ``overwrite``. The input check comes first, so an input is refused as one and never with a
  hint that ``overwrite`` would do. A character device, FIFO or socket (``-o /dev/stdout``) is
  written in place: nobody's file, nothing to stage.
* :func:`staged_folder` / :func:`atomic_path` — the new content is written beside the target under
  a name that carries our process id and renamed into place only when complete. The staging copy
  is removed on every exit path Python sees (error, Ctrl-C, SIGTERM through
  :func:`install_signal_handlers`); a run killed with SIGKILL leaves it behind, and the next run
  writing the same target sweeps it (only when the process that made it is gone).

Exit code 2 (one line) for every refusal: it is a usage error, and nothing has been touched.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import shutil
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from curate.core.errors import InputError, UsageError, cli_spelling, command_line_spelling

MARKER_DIR = ".curate"
MANIFEST = "manifest.json"

# Staging names: ``.<target>.curate-tmp-<pid>-<random>`` (new content) and
# ``.<target>.curate-old-<pid>-<random>`` (the previous output, between two renames).
_STAGE = re.compile(r"^\.(?P<name>.+)\.curate-(?P<kind>tmp|old)-(?P<pid>\d+)-[^/]*$")


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived: unwind (running every cleanup) and exit 128 + signal.

    A BaseException of our own rather than KeyboardInterrupt: typer turns KeyboardInterrupt into a
    silent exit 130 before our handler sees it, and library code sometimes catches it.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


#: Signals that end a run after cleanup (exit 128 + signal number).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


#: Stop signals received since :func:`install_signal_handlers` (the first decides the exit code).
_received: list[int] = []
#: Outputs moved into place since then (what a signal that came late leaves complete).
_committed: list[Path] = []
#: A run is on (:func:`install_signal_handlers` to :func:`forget_run`); else nothing is recorded.
_recording = False
#: The handlers :func:`install_signal_handlers` replaced, put back by :func:`forget_run`.
_previous_handlers: dict[int, Any] = {}


#: multiprocessing's own source folder (the standard library's): see :func:`_raise_interrupted`.
_MULTIPROCESSING = os.path.join(os.path.dirname(os.__file__), "multiprocessing") + os.sep
#: How long a signal may wait for the main thread to leave multiprocessing's code.
_HOLD_AT_MOST = 0.5
#: When the signal now waiting for that was first held (``None``: none is).
_held_since: float | None = None


def _raise_interrupted(signum: int, frame: Any) -> None:
    """The stop signals' handler: record the signal and raise :class:`Interrupted`.

    Not inside polars' Python layer (Rust may be its caller, and panics on an exception): the
    exception is raised in curate's frame below it instead, when polars has returned
    (:func:`_raise_when_back`). Not while the main thread runs multiprocessing's own code: its
    bookkeeping is not written
    to survive an exception half way. Seen: a process pool's queues release their semaphores
    in the main thread (``sem_unlink``, then a line to the resource tracker); Ctrl-C between
    the two left the tracker believing in a semaphore that no longer existed, and it said so
    after curate's one line ("There appear to be 1 leaked semaphore objects", "[Errno 2] No
    such file or directory": five lines on stderr). The signal is taken again a few
    milliseconds later, once the main thread is back in curate's code (at most
    :data:`_HOLD_AT_MOST` seconds later, whatever it is doing).
    """
    global _held_since
    outer = _curate_frame_under_polars(frame)
    if outer is not None:
        _received.append(signum)
        _raise_when_back(outer, signum)
        return
    now = time.monotonic()
    if _in_multiprocessing(frame) and (_held_since is None or now - _held_since < _HOLD_AT_MOST):
        if _held_since is None:
            _held_since = now
            _received.append(signum)
        _redeliver(signum)
        return
    if _held_since is None:
        _received.append(signum)
    _held_since = None
    raise Interrupted(signum)


def _curate_frame_under_polars(frame: Any) -> Any:
    """The innermost of curate's frames when polars' own Python code runs above it, else ``None``.

    Polars' Rust core calls back into its Python layer (a data type's ``__init__`` while
    ``DataFrame.schema`` converts dtypes) and unwraps the result: an exception raised there by
    the handler became a Rust panic (``pyo3_runtime.PanicException``, a BaseException, with
    Rust's panic message and a traceback on stderr, exit 1; seen in ``export deepfake``, and
    in two of three signals sent to a loop over a wide frame's schema).
    """
    polars = sys.modules.get("polars")
    where = getattr(polars, "__file__", None) if polars is not None else None
    if where is None:
        return None
    root = os.path.dirname(where) + os.sep
    seen = False
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(root):
            seen = True
        elif name.startswith(_CURATE):
            return frame if seen else None
        frame = frame.f_back
    return None


def _raise_when_back(frame: Any, signum: int) -> None:
    """Raise :class:`Interrupted` in ``frame`` at its next line, that is, as soon as the call
    into polars it is making has returned (the way a debugger stops a frame: a trace function
    on it alone). Not a timed retry: a loop that is in polars nearly all the time would be
    caught there again and again, and the retry has to give up some time."""
    previous = sys.gettrace()

    def stop(f: Any, event: str, arg: Any) -> Any:
        f.f_trace = None
        sys.settrace(previous)
        raise Interrupted(signum)

    frame.f_trace_lines = True
    frame.f_trace = stop
    sys.settrace(previous or _no_tracing)


def _no_tracing(frame: Any, event: str, arg: Any) -> None:
    """The global trace function while :func:`_raise_when_back` waits: no other frame is traced."""
    return None


#: curate's own source folder: where a stack walk for a library's frames stops.
_CURATE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _in_multiprocessing(frame: Any) -> bool:
    """Is ``frame``, or any frame that called it, multiprocessing's code?"""
    while frame is not None:
        if frame.f_code.co_filename.startswith(_MULTIPROCESSING):
            return True
        frame = frame.f_back
    return False


def _unraisable(args: Any) -> None:
    """``sys.unraisablehook``: an :class:`Interrupted` that Python had to drop is sent again.

    A handler's exception raised while a weakref callback or a ``__del__`` runs cannot leave
    it: Python printed "Exception ignored in: <function WeakValueDictionary...>" with a
    traceback, and the run went on (``export icrl`` exited 0 after Ctrl-C). Here the message is
    not printed and the same signal is sent to the main thread again a moment later, when the
    callback has returned and the exception can unwind the run as any other.
    """
    if isinstance(args.exc_value, Interrupted):
        _redeliver(args.exc_value.signum)
        return
    _previous_unraisable(args)


def _redeliver(signum: int) -> None:
    def send() -> None:
        time.sleep(0.005)
        with suppress(OSError, ValueError):
            signal.pthread_kill(threading.main_thread().ident or 0, signum)

    threading.Thread(target=send, name="curate-redeliver", daemon=True).start()


_previous_unraisable = sys.unraisablehook


def install_signal_handlers() -> None:
    """Make SIGINT, SIGTERM and SIGHUP raise :class:`Interrupted` so staging is removed.

    The signal is also *recorded*: Python cannot deliver an exception raised in a handler that
    runs inside a weakref callback or a ``__del__`` ("Exception ignored in ..."), and the run
    would go on and exit 0 as if nothing had happened. Every commit point asks
    :func:`raise_if_interrupted` before it renames, and the CLI checks once more at the end.
    """
    _received.clear()
    _committed.clear()
    global _previous_unraisable, _held_since, _recording
    _held_since = None
    _recording = True
    if sys.unraisablehook is not _unraisable:
        _previous_unraisable, sys.unraisablehook = sys.unraisablehook, _unraisable
    for sig in STOP_SIGNALS:
        with suppress(ValueError, OSError):  # not the main thread, or no such signal
            before = signal.signal(sig, _raise_interrupted)
            if before is not _raise_interrupted:
                _previous_handlers[sig] = before


def forget_run(*, restore: bool = True) -> None:
    """Forget the ended run's signals and outputs; ``restore`` its handlers' predecessors. Why:
    a program going on after ``main`` (a notebook, ``curate.api`` next) found the run's Ctrl-C
    waiting at its next rename, and its own Ctrl-C recorded by curate's handler."""
    global _held_since, _recording
    _recording, _held_since = False, None
    for sig, before in list(_previous_handlers.items()) if restore else []:
        with suppress(ValueError, OSError, TypeError):  # not the main thread
            if signal.getsignal(sig) is _raise_interrupted:
                signal.signal(sig, before)
        del _previous_handlers[sig]
    if restore and sys.unraisablehook is _unraisable:
        sys.unraisablehook = _previous_unraisable
    _received.clear()
    _committed.clear()


def received_signal() -> int | None:
    """The first stop signal this run received (handled or swallowed), else ``None``."""
    return _received[0] if _received else None


def raise_if_interrupted() -> None:
    """Raise :class:`Interrupted` for a stop signal whose exception was swallowed on its way.

    Called right before every rename that publishes an output: an interrupted run must leave
    no output, and the exit code must say what happened.
    """
    if _received:
        raise Interrupted(_received[0])


def committed_outputs() -> list[Path]:
    """The outputs this run has moved into place (complete), oldest first."""
    return list(_committed)


def _publish(tmp: Path, target: Path) -> None:
    """``os.replace`` that first honours a swallowed signal and afterwards records the output."""
    raise_if_interrupted()
    os.replace(tmp, target)
    if _recording:
        _committed.append(target)


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP while cleaning up; deliver the first one afterwards.

    Why: a second Ctrl-C during cleanup used to abort the cleanup half way and leave a staging
    folder behind. Outside the main thread (no handlers can be set) this does nothing.
    """
    pending: list[int] = []
    previous: dict[int, Any] = {}
    try:
        for sig in STOP_SIGNALS:
            previous[sig] = signal.signal(sig, lambda n, _f: pending.append(n))
    except ValueError:  # not the main thread
        for num, old in previous.items():
            signal.signal(num, old)
        previous = {}
    try:
        yield
    finally:
        for num, old in previous.items():
            signal.signal(num, old)
        if pending and previous:
            handler = previous.get(pending[0])
            if callable(handler):
                handler(pending[0], None)
            elif handler == signal.SIG_DFL:  # a library caller's default: the signal's own end
                signal.raise_signal(pending[0])


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# --------------------------------------------------------------------------- path checks


def _real(path: str | Path) -> Path:
    return Path(os.path.realpath(os.path.expanduser(str(path))))


def _same(a: Path, b: Path) -> bool:
    if a == b:
        return True
    try:
        return os.path.samefile(a, b)  # hard links, bind mounts
    except OSError:
        return False


def _inputs(inputs: Sequence[str | Path]) -> list[Path]:
    return [_real(p) for p in inputs if str(p) not in ("", "-")]


# --------------------------------------------------------------------------- names in messages

#: Within it, refusals name command-line flags (``--out``, ``--overwrite``); outside it the
#: API's arguments (``out``, ``overwrite=True``). The one switch every message reads
#: (:func:`curate.core.errors.command_line_spelling`, which the CLI turns on for its command), so
#: the output gate and the rest of the library never disagree about whose words to use. Every
#: guard also takes the names explicitly (``option=``, ``overwrite_option=``), which win.
cli_names = command_line_spelling


def named(cli: str, api: str) -> str:
    """``cli`` under :func:`cli_names`, else ``api``."""
    return cli if cli_spelling() else api


# --------------------------------------------------------------------------- curate's own files

#: The mark curate leaves in every report it writes, in a form each format can carry: the last
#: line of a text report, an HTML/XML comment at the end of Markdown and after JUnit's XML
#: declaration, a debug command at the end of GitHub annotations. A later run finds it and
#: knows the file is its own to replace (re-running CI into the same path just works).
GENERATOR_MARK = "generator: curate"

#: Marks of curate's files in the formats that carry one natively, searched in the first and
#: last 4 KB of an existing file: the line above, the HTML ``generator`` meta tag, the JSON
#: reports' ``"tool": "curate"`` key, SARIF's ``tool.driver.name``, the overlap figures'
#: metadata (:data:`curate.overlap.plot.MARK`).
CURATE_MARKS: tuple[re.Pattern[bytes], ...] = (
    re.compile(rb"generator: curate\b"),
    re.compile(rb'<meta name="generator" content="curate'),
    re.compile(rb'"tool":\s*"curate"'),
    re.compile(rb'"driver":\s*\{\s*"name":\s*"curate"'),
    re.compile(rb"curate overlap plot"),
)
_PROBE = 4096


def generator_line(fmt: str) -> str:
    """The last line curate appends to a ``fmt`` report written to a file ('' when the format
    carries its mark itself: JSON, SARIF, HTML, JUnit; or cannot carry one: CSV)."""
    from curate.core.version import __version__

    mark = f"{GENERATOR_MARK} {__version__}"
    return {
        "text": f"{mark}\n",
        "markdown": f"<!-- {mark} -->\n",
        "github": f"::debug::{mark}\n",
    }.get(fmt, "")


def with_generator(text: str, fmt: str, target: str | Path | None = None) -> str:
    """A report as curate writes it to a file: with its generator mark (see
    :func:`generator_line`). Standard output is left as it was, and so is a ``target`` that is
    a stream (``-o /dev/stdout | grep``, a named pipe): a pipe is nobody's file."""
    if target is not None and is_stream(target):
        return text
    line = generator_line(fmt)
    if not line:
        return text
    return text + ("" if not text or text.endswith("\n") else "\n") + line


def written_by_curate(path: str | Path, marker: bytes | re.Pattern[bytes] | None = None) -> bool:
    """Does the file at ``path`` carry curate's mark (or ``marker``) near its start or end?"""
    patterns = list(CURATE_MARKS)
    if isinstance(marker, bytes):
        patterns.append(re.compile(re.escape(marker)))
    elif marker is not None:
        patterns.append(marker)
    try:
        with open(path, "rb") as fh:
            head = fh.read(_PROBE)
            size = os.fstat(fh.fileno()).st_size
            tail = b""
            if size > _PROBE:
                fh.seek(max(_PROBE, size - _PROBE))
                tail = fh.read(_PROBE)
    except OSError:
        return False
    return any(p.search(head) or p.search(tail) for p in patterns)


def is_stream(path: str | Path) -> bool:
    """Is ``path`` (links followed) a character device, a FIFO or a socket?

    Such a target (``/dev/stdout`` on a pipe, ``/dev/null``, a named pipe) is nobody's file: it
    is written in place — no staging file beside it, no rename over it, no generator mark, no
    question of who wrote it (``curate audit … -o /dev/stdout | jq``).
    """
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _refuse_inputs(
    p: Path, inputs: Sequence[str | Path], option: str, extra: str, patterns: Sequence[str] = ()
) -> None:
    """An input of the run (the same file, a hard link, a file inside an input folder, or a
    path one of the run's input globs matches) is never a destination, whatever ``overwrite``
    says. One ``stat`` per input: a deepfake manifest's media files may number in the hundred
    thousands. A character device (``/dev/null``, a terminal) is no one's data: read from and
    written to, it is not refused."""
    real = _real(p)
    try:
        st = os.stat(p)  # links followed: /dev/stdout's real path (/proc/N/fd/pipe:[…]) is none
        ident: tuple[int, int] | None = (st.st_dev, st.st_ino)
        if stat.S_ISCHR(st.st_mode):
            ident = None
    except OSError:
        ident = None
    for raw in inputs:
        if str(raw) in ("", "-"):
            continue
        try:
            ist = os.stat(raw)
        except OSError:  # a missing input cannot be overwritten (nor be a folder)
            continue
        if ident is not None and (ist.st_dev, ist.st_ino) == ident:
            raise UsageError(
                f"{option} {p}: is an input of this run; curate never overwrites input{extra}"
            )
        if stat.S_ISDIR(ist.st_mode):
            inp = _real(raw)
            if real.is_relative_to(inp):
                raise UsageError(
                    f"{option} {p}: is inside the input folder {inp}; write it elsewhere"
                )
    for pattern in patterns:
        if glob_matches(pattern, real):
            raise UsageError(
                f"{option} {p}: matches the input pattern {_shown(pattern)} of this run (the "
                f"next run would read it as data); curate never overwrites input{extra}"
            )


def _shown(path: str | Path) -> str:
    """``path`` relative to the current folder when under it, as the user typed it."""
    with suppress(ValueError):
        rel = os.path.relpath(path)
        if not rel.startswith(".."):
            return rel
    return str(path)


def glob_matches(pattern: str | Path, path: str | Path) -> bool:
    """Would :func:`glob.glob` (``recursive=True``) find ``path`` with ``pattern``, were it there?

    Both are compared as real absolute paths (the pattern's fixed leading folders resolved), one
    segment at a time: ``*``, ``?`` and ``[...]`` stay within a segment, ``**`` spans any number
    of them. Why not :func:`fnmatch.fnmatch`: its ``*`` crosses ``/``, so ``data/*.json`` would
    claim ``data/old/x.json``, which ``curate check`` never reads.
    """
    import fnmatch
    import glob

    parts = Path(os.path.abspath(os.path.expanduser(str(pattern)))).parts
    fixed = 0
    while fixed < len(parts) and not glob.has_magic(parts[fixed]):
        fixed += 1
    head = _real(Path(*parts[:fixed])) if fixed else Path("/")
    rest = parts[fixed:]
    target = _real(path)
    if not target.is_relative_to(head):
        return False
    segs = target.relative_to(head).parts

    def match(i: int, j: int) -> bool:
        if i == len(rest):
            return j == len(segs)
        if rest[i] == "**":
            return any(match(i + 1, k) for k in range(j, len(segs) + 1))
        return j < len(segs) and fnmatch.fnmatchcase(segs[j], rest[i]) and match(i + 1, j + 1)

    return match(0, 0)


def curate_folder_of(path: str | Path) -> Path | None:
    """The nearest folder holding ``path`` that curate wrote as a whole (it has the marker
    ``.curate/manifest.json`` naming curate), or None. The marker itself counts as inside."""
    real = _real(path)
    for folder in real.parents:
        if is_curate_folder(folder):
            return folder
    return None


def _is_cache_folder(folder: Path) -> bool:
    """A folder curate keeps its media scan cache in (its marker says what it is for)."""
    import orjson

    try:
        info = orjson.loads((folder / MARKER_DIR / MANIFEST).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return False
    return isinstance(info, dict) and "cache" in str(info.get("purpose", ""))


def guard_file(
    target: str | Path,
    inputs: Sequence[str | Path],
    *,
    option: str | None = None,
    overwrite: bool = False,
    overwrite_option: str | None = None,
    marker: bytes | re.Pattern[bytes] | None = None,
    owned: Callable[[Path], bool] | None = None,
    patterns: Sequence[str] = (),
    all_inputs_known: bool = True,
    cache: bool = False,
) -> Path:
    """Check a report/file destination before any work; raises :class:`UsageError` (exit 2).

    The checks run from the most to the least fundamental, so that the message gives the real
    reason and never suggests a switch that would not help:

    1. an input of the run (``inputs``: the data, the configuration, the baseline, alias,
       mapping and id files, media a manifest names; ``patterns``: the globs the run reads its
       data by, absolute) — refused whatever ``overwrite`` says;
    2. a file inside a curate output folder (one with ``.curate/manifest.json``), the marker
       included — such a folder is replaced only as a whole (``--out … --overwrite``), and a
       report written into it would make its file list lie; ``cache=True`` allows curate's own
       media cache folder;
    3. a folder;
    4. an existing non-empty regular file curate did not write (it carries none of
       :data:`CURATE_MARKS`, nor ``marker``; ``owned`` decides instead for a format no mark fits,
       such as the media cache) — replaced only with ``overwrite``. An *empty* file is
       replaced: it holds nothing to lose (``touch report.json`` is a common placeholder).
       ``all_inputs_known=False`` leaves this check to a later call: the data will name more
       inputs (the media of a deepfake manifest), and a file that turns out to be one must be
       refused as an input, not with a hint to pass ``overwrite``.

    A character device, FIFO or socket (``/dev/stdout``, ``/dev/null``, a named pipe) is
    written in place (:func:`atomic_path`): only the input check applies to it.

    ``option``/``overwrite_option`` name the destination and the switch in messages; by default
    the CLI's flags (``--output``, ``--overwrite``) under :func:`cli_names`, else the API's
    argument names.
    """
    option = option or named("--output", "output")
    switch = overwrite_option or named("--overwrite", "overwrite=True")
    p = Path(target)
    _refuse_inputs(p, inputs, option, f" (not even with {switch})" if overwrite else "", patterns)
    if is_stream(p):
        return p
    folder = curate_folder_of(p)
    if folder is not None and not (cache and _is_cache_folder(folder)):
        raise UsageError(
            f"{option} {p}: is inside the curate output folder {_shown(folder)}, which curate "
            "replaces only as a whole; write it elsewhere"
        )
    if p.is_dir():
        raise UsageError(f"{option} {p}: is a folder; give a file name")
    if all_inputs_known and not overwrite and p.is_file() and p.stat().st_size:
        mine = owned(p) if owned is not None else written_by_curate(p, marker)
        if not mine:
            raise UsageError(
                f"{option} {p}: exists and was not written by curate; pass {switch} to replace "
                "it, or choose another name"
            )
    if not p.exists() or p.is_file():
        check_writable(p)
    return p


def check_writable(target: str | Path) -> None:
    """Fail now, before minutes of reading, if ``target`` cannot be created: the nearest existing
    ancestor must be a writable folder (a read-only file system says so even to root)."""
    p = Path(os.path.abspath(target))
    probe = p.parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(probe))
    if not os.access(
        probe, os.W_OK | os.X_OK, effective_ids=os.access in os.supports_effective_ids
    ):
        err = errno.EROFS if _read_only(probe) else errno.EACCES
        raise PermissionError(err, os.strerror(err), str(target))


def _read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def is_curate_folder(path: str | Path) -> bool:
    """Did curate write this folder? (its marker file is present and names curate)."""
    import orjson

    marker = Path(path) / MARKER_DIR / MANIFEST
    try:
        return orjson.loads(marker.read_bytes()).get("tool") == "curate"
    except (OSError, orjson.JSONDecodeError, AttributeError):
        return False


def guard_folder(
    target: str | Path,
    inputs: Sequence[str | Path],
    *,
    overwrite: bool,
    option: str | None = None,
    overwrite_option: str | None = None,
    all_inputs_known: bool = True,
) -> Path:
    """Check an output folder before any work; raises :class:`UsageError` (exit 2).

    The current folder first (never replaced, input or not), then inputs (an input, holding
    one, inside an input folder), then what the path is (a link, a file, inside a curate output
    folder), then what an existing folder holds. ``all_inputs_known=False`` stops before the
    last group and before "is an existing file": the data will name more inputs (a manifest's
    media), and the folder or file may be one of them or hold one — a later call, with every
    input, must then say so.

    ``option``/``overwrite_option`` name the folder and the switch in messages (default: the
    CLI's ``--out``/``--overwrite`` under :func:`cli_names`, else ``out``/``overwrite=True``).
    """
    option = option or named("--out", "out")
    switch = overwrite_option or named("--overwrite", "overwrite=True")
    p = Path(target)
    real = _real(p)
    cwd = _real(Path.cwd())
    if cwd.is_relative_to(real):
        raise UsageError(
            f"{option} {p}: is the current folder or contains it; give a new folder name"
        )
    # inputs before what the path is: the real reason, never a hint that another name or a
    # switch would make writing there fine
    for inp in _inputs(inputs):
        if _same(real, inp):
            raise UsageError(
                f"{option} {p}: is an input of this run; curate never deletes or overwrites input"
            )
        if inp.is_relative_to(real):
            raise UsageError(
                f"{option} {p}: contains the input {inp}; curate never deletes or overwrites input"
            )
        if real.is_relative_to(inp):
            raise UsageError(f"{option} {p}: is inside the input folder {inp}; write it elsewhere")
    if p.is_symlink():
        raise UsageError(f"{option} {p}: is a symbolic link; give the folder itself")
    if p.exists() and not p.is_dir() and all_inputs_known:
        raise UsageError(f"{option} {p}: is an existing file; give a folder name")
    outer = curate_folder_of(p)
    if outer is not None:
        raise UsageError(
            f"{option} {p}: is inside the curate output folder {_shown(outer)}, which curate "
            "replaces only as a whole; write it elsewhere"
        )
    check_writable(p)
    if not all_inputs_known:
        return p
    sweep_stale(p)
    if p.is_dir() and any(p.iterdir()):
        if not is_curate_folder(p):
            raise UsageError(
                f"{option} {p}: exists, is not empty and was not written by curate (no "
                f"{MARKER_DIR}/{MANIFEST}); {switch} replaces only curate's own output folders"
            )
        if not overwrite:
            raise UsageError(f"{option} {p}: exists (a curate output); pass {switch} to replace it")
        foreign = foreign_entries(p)
        if foreign:
            shown = ", ".join(foreign[:5]) + (" ..." if len(foreign) > 5 else "")
            raise UsageError(
                f"{option} {p}: holds {len(foreign)} file(s) curate did not write or that changed "
                f"since ({shown}); move them out first: {switch} replaces only curate's files"
            )
    return p


def _listing(root: Path) -> dict[str, list[int]]:
    """Every file under ``root`` except the marker: relative path → [size, mtime_ns]."""
    out: dict[str, list[int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        if rel_dir == Path(MARKER_DIR):
            continue
        dirnames.sort()
        for name in sorted(filenames):
            st = os.lstat(os.path.join(dirpath, name))
            out[str(rel_dir / name)] = [st.st_size, st.st_mtime_ns]
    return out


def foreign_entries(folder: str | Path) -> list[str]:
    """What in a curate output folder curate did not write, or was changed after it wrote it.

    The marker lists every file with its size and modification time; anything else (a user's
    notes, a ``.git`` folder, an edited card) is foreign, and ``--overwrite`` refuses to delete
    it. A marker without a file list (a hand-made one) makes everything foreign.
    """
    import orjson

    root = Path(folder)
    try:
        listed = orjson.loads((root / MARKER_DIR / MANIFEST).read_bytes()).get("files")
    except (OSError, orjson.JSONDecodeError, AttributeError):
        listed = None
    if not isinstance(listed, dict):
        listed = {}
    found = _listing(root)
    foreign = [name for name, stat in found.items() if listed.get(name) != stat]
    extra_markers = (
        [f"{MARKER_DIR}/{n}" for n in os.listdir(root / MARKER_DIR) if n not in (MANIFEST, "lock")]
        if (root / MARKER_DIR).is_dir()
        else []
    )
    return sorted(foreign + extra_markers)


# --------------------------------------------------------------------------- staging


LOCK = "lock"


def _held(path: Path) -> bool:
    """Is ``path`` (a staging lock file, or a staging file) locked by a live curate run?

    A lock, not a process id: a run in another container or PID namespace on the same machine
    has a pid this process cannot see, but the kernel still knows its lock.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing releases a lock we took
    return False


def _lock(path: Path) -> int:
    """Hold an exclusive lock on ``path`` for as long as the returned descriptor is open."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def remove_staging(folder: Path) -> None:
    """Delete a staging folder, curate's marker last, with stop signals held until done.

    Marker last: if anything stops the deletion, what is left is still recognisable as curate's
    and the next run's sweep finishes the job.
    """
    with signals_deferred():
        if not folder.exists():
            return
        for entry in sorted(folder.iterdir()):
            if entry.name == MARKER_DIR:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
        shutil.rmtree(folder, ignore_errors=True)


def sweep_stale(target: str | Path) -> list[Path]:
    """Remove staging leftovers of killed runs for ``target``; returns what was removed.

    Only names this module makes (``.<name>.curate-{tmp,old}-<pid>-…``) that no live run holds
    (see :func:`_held`), and for folders only those holding curate's marker. If a run died
    between its two renames, the target is missing and its previous output is still staged as
    ``old``: that is put back.
    """
    target = Path(target)
    parent = target.parent if str(target.parent) else Path(".")
    removed: list[Path] = []
    try:
        entries = list(parent.iterdir())
    except OSError:
        return removed
    stale_old: list[Path] = []
    for entry in entries:
        m = _STAGE.match(entry.name)
        if m is None or m.group("name") != _stage_base(target):
            continue
        if entry.is_dir() and not entry.is_symlink():
            marker = entry / MARKER_DIR
            if not marker.is_dir() or _held(marker / LOCK):
                continue
            if m.group("kind") == "old":
                stale_old.append(entry)
                continue
            remove_staging(entry)
        elif entry.is_file() and entry.name.endswith(".tmp") and not _held(entry):
            entry.unlink(missing_ok=True)
        else:
            continue
        removed.append(entry)
    for old in stale_old:
        if not target.exists() and not target.is_symlink() and len(stale_old) == 1:
            os.replace(old, target)  # the previous output, restored
        else:
            remove_staging(old)
            removed.append(old)
    return removed


def _stage_base(target: Path) -> str:
    """The target's name as staging names carry it: long names are cut and tagged with a hash,
    so that a legal 250-character name still leaves room for the staging suffix."""
    name = target.name
    if len(name.encode()) <= 180:
        return name
    import hashlib  # here, not at the top: a help or a completion never stages (issue 36)

    digest = hashlib.sha1(name.encode()).hexdigest()[:10]
    return name.encode()[:150].decode("utf-8", "ignore") + "~" + digest


def _stage_name(target: Path, kind: str) -> str:
    return f".{_stage_base(target)}.curate-{kind}-{os.getpid()}-"


def manifest(command: Sequence[str] | None, inputs: Sequence[Any] = ()) -> dict[str, Any]:
    """The marker's content: what wrote this folder, from what (inputs as path + sha256)."""
    from curate.core.version import __version__

    return {
        "tool": "curate",
        "version": __version__,
        "command": list(command) if command is not None else None,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "inputs": [
            {"path": str(getattr(i, "path", i)), "sha256": getattr(i, "sha256", None)}
            for i in inputs
        ],
    }


@contextmanager
def staged_folder(
    target: str | Path,
    *,
    inputs: Sequence[str | Path] = (),
    overwrite: bool = False,
    marker: dict[str, Any] | None = None,
) -> Iterator[Path]:
    """Yield an empty staging folder; on success it replaces ``target``.

    The guard runs again here (the library is used without the CLI too), stale staging folders
    are swept first, and the marker is written (and locked) before anything else so that even a
    partial staging folder is recognisable as curate's own and never taken for a dead run's.
    On success the marker gets the list of files written (what ``--overwrite`` may replace
    later). An existing *empty* target folder is filled in place (it may be a mount point that
    cannot be renamed); a curate folder is replaced in two renames. An OSError names ``target``
    (and the file inside it), not the staging folder the user never asked for.
    """
    import tempfile  # not at the top: only a write needs it (issue 36: help in a blink)

    import orjson

    target = guard_folder(target, inputs, overwrite=overwrite)
    parent = target.parent if str(target.parent) else Path(".")
    tmp: Path | None = None
    lock_fd: int | None = None
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=_stage_name(target, "tmp"), dir=parent))
        os.chmod(tmp, 0o777 & ~current_umask())  # mkdtemp makes 0700; a dataset is for sharing
        (tmp / MARKER_DIR).mkdir()
        lock_fd = _lock(tmp / MARKER_DIR / LOCK)
        info = dict(marker or manifest(None))
        (tmp / MARKER_DIR / MANIFEST).write_bytes(orjson.dumps(info, option=orjson.OPT_INDENT_2))
        yield tmp
        info["files"] = _listing(tmp)
        (tmp / MARKER_DIR / MANIFEST).write_bytes(orjson.dumps(info, option=orjson.OPT_INDENT_2))
        raise_if_interrupted()
        # The renames are one step as far as a signal is concerned: it waits until the output
        # is either in place or not (and then ends the run, saying the output is complete).
        with signals_deferred():
            if target.is_dir() and not any(target.iterdir()):
                _fill_in_place(tmp, target)
            elif target.exists():
                # Checked again now: the folder may have changed while we worked.
                guard_folder(target, inputs, overwrite=overwrite)
                old = Path(tempfile.mkdtemp(prefix=_stage_name(target, "old"), dir=parent))
                try:
                    os.replace(target, old)  # over the empty placeholder folder
                except BaseException:
                    old.rmdir()
                    raise
                try:
                    os.replace(tmp, target)
                except BaseException:
                    os.replace(old, target)
                    raise
                remove_staging(old)
            else:
                os.replace(tmp, target)
            if _recording:
                _committed.append(target)
            tmp = None  # nothing of ours to remove any more
            (target / MARKER_DIR / LOCK).unlink(missing_ok=True)
    except OSError as e:
        if tmp is not None:
            remove_staging(tmp)
        raise _renamed(e, tmp, target) from None
    except InputError as e:  # a re-audit of what was staged (curate fix): say the user's path
        if tmp is not None:
            remove_staging(tmp)
        raise _unstaged(e, tmp, target) from None
    except BaseException:
        if tmp is not None:
            remove_staging(tmp)
        raise
    finally:
        if lock_fd is not None:
            os.close(lock_fd)


def _fill_in_place(tmp: Path, target: Path) -> None:
    """Move the staged entries into an empty existing folder, marker last, then drop ``tmp``."""
    with signals_deferred():
        entries = sorted(tmp.iterdir(), key=lambda e: e.name == MARKER_DIR)
        for entry in entries:
            os.replace(entry, target / entry.name)
        tmp.rmdir()


@contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; rename it over ``target`` only on success.

    Why: a crash or Ctrl-C mid-write must never leave a half-written report or dataset that a
    later CI step would take for a good one. A target that exists but is not a regular file (a
    device such as ``/dev/null``, a FIFO) is written in place: renaming over it would replace it.
    """
    target = Path(target)
    if is_stream(target):
        # Opened by the name given, links and all: ``/dev/stdout`` on a pipe resolves to
        # ``/proc/N/fd/pipe:[…]``, a name no one can create a file beside (nor open).
        for stream in (sys.stdout, sys.stderr):  # what was printed comes first
            with suppress(Exception):
                stream.flush()
        try:
            yield target
        except OSError as e:
            raise _renamed(e, None, target) from None
        return
    if target.is_symlink():  # write the file the link points to, keep the link
        target = Path(os.path.realpath(target))
    if target.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a folder", str(target))
    if target.exists() and not target.is_file():  # anything else that is no regular file
        try:
            yield target
        except OSError as e:
            raise _renamed(e, None, target) from None
        return
    parent = target.parent if str(target.parent) else Path(".")
    tmp: Path | None = None
    fd: int | None = None
    try:
        parent.mkdir(parents=True, exist_ok=True)
        sweep_stale(target)
        import tempfile  # not at the top: only a write needs it (issue 36: help in a blink)

        fd, name = tempfile.mkstemp(prefix=_stage_name(target, "tmp"), suffix=".tmp", dir=parent)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held until closed: "a live run's"
        tmp = Path(name)
        os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp makes 0600; a report is a normal file
        yield tmp
        with signals_deferred():
            _publish(tmp, target)
            tmp = None
    except OSError as e:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise _renamed(e, tmp, target) from None
    except BaseException:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise


def _renamed(e: OSError, staging: Path | None, target: Path) -> OSError:
    """The same OSError, naming the user's target instead of our staging path."""
    name = e.filename
    if name is None or _STAGE.match(Path(str(name)).name):
        name = target
    elif staging is not None and Path(str(name)).is_relative_to(staging):
        name = target / Path(str(name)).relative_to(staging)
    return OSError(e.errno, e.strerror or str(e), str(name))


def _unstaged(e: InputError, staging: Path | None, target: Path) -> InputError:
    """The same InputError, naming the file in ``target`` instead of the staging folder: a
    fixed file is re-audited where it was written, and ``…/.out.curate-tmp-1396-lhfc25c_/x``
    is a name the user never asked for and that no longer exists when they read it."""
    if e.path is None or staging is None:
        return e
    where, staging = Path(e.path), Path(staging)
    if not where.is_relative_to(staging):
        where, staging = where.absolute(), staging.absolute()
        if not where.is_relative_to(staging):
            return e
    e.path = str(target / where.relative_to(staging))
    e.args = (e.one_line(),)
    return e


def write_bytes_atomic(target: str | Path, data: bytes) -> None:
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)
