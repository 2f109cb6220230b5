"""The one gate every write goes through: curate never deletes or overwrites what it did not create.

Why a gate and not care in each writer: a dataset tool is pointed at folders full of irreplaceable
data, often with paths typed by hand (``--out ..``, ``--out .``, ``-o data.json``). One wrong path
must cost an error line, never a dataset. So every writer asks this module first:

* :func:`guard_folder` — an ``--out`` folder is refused when it is an input, contains an input, lies
  inside an input folder, is an existing file, a symbolic link, or the current folder; an existing
  non-empty folder is replaced only with ``overwrite`` *and* only when curate wrote it, which the
  marker ``.curate/manifest.json`` (command, version, input hashes) proves.
* :func:`guard_file` — a report ``--output`` is refused when it is an input or a folder.
* :func:`staged_folder` / :func:`atomic_path` — the new content is written beside the target under
  a name that carries our process id and renamed into place only when complete. The staging copy
  is removed on every exit path Python sees (error, Ctrl-C, SIGTERM through
  :func:`install_signal_handlers`); a run killed with SIGKILL leaves it behind, and the next run
  writing the same target sweeps it (only when the process that made it is gone).

Exit code 2 (one line) for every refusal: it is a usage error, and nothing has been touched.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import orjson

from curate.errors import UsageError

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


def install_signal_handlers() -> None:
    """Make SIGINT and SIGTERM raise :class:`Interrupted` so staging files are removed."""

    def handler(signum: int, _frame: Any) -> None:
        raise Interrupted(signum)

    for sig in (signal.SIGINT, signal.SIGTERM):
        with suppress(ValueError, OSError):  # not the main thread, or no such signal
            signal.signal(sig, handler)


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


def guard_file(
    target: str | Path, inputs: Sequence[str | Path], *, option: str = "--output"
) -> Path:
    """Check a report/file destination before any work; raises :class:`UsageError` (exit 2).

    An existing regular file that is not an input is replaced (reports are rewritten on every run,
    as ``pytest --junitxml`` does); a device such as ``/dev/null`` is written in place.
    """
    p = Path(target)
    real = _real(p)
    if p.is_dir():
        raise UsageError(f"{option} {p}: is a folder; give a file name for the report")
    for inp in _inputs(inputs):
        if _same(real, inp):
            raise UsageError(
                f"{option} {p}: is an input of this run; curate never overwrites input"
            )
        if inp.is_dir() and real.is_relative_to(inp):
            raise UsageError(f"{option} {p}: is inside the input folder {inp}; write it elsewhere")
    return p


def is_curate_folder(path: str | Path) -> bool:
    """Did curate write this folder? (its marker file is present and names curate)."""
    marker = Path(path) / MARKER_DIR / MANIFEST
    try:
        return orjson.loads(marker.read_bytes()).get("tool") == "curate"
    except (OSError, orjson.JSONDecodeError, AttributeError):
        return False


def guard_folder(
    target: str | Path, inputs: Sequence[str | Path], *, overwrite: bool, option: str = "--out"
) -> Path:
    """Check an output folder before any work; raises :class:`UsageError` (exit 2)."""
    p = Path(target)
    real = _real(p)
    if p.is_symlink():
        raise UsageError(f"{option} {p}: is a symbolic link; give the folder itself")
    if p.exists() and not p.is_dir():
        raise UsageError(f"{option} {p}: is an existing file; give a folder name")
    cwd = _real(Path.cwd())
    if cwd.is_relative_to(real):
        raise UsageError(
            f"{option} {p}: is the current folder or contains it; give a new folder name"
        )
    for inp in _inputs(inputs):
        if _same(real, inp) or inp.is_relative_to(real):
            raise UsageError(
                f"{option} {p}: contains the input {inp}; curate never deletes or overwrites input"
            )
        if real.is_relative_to(inp):
            raise UsageError(f"{option} {p}: is inside the input folder {inp}; write it elsewhere")
    if p.is_dir() and any(p.iterdir()):
        if not is_curate_folder(p):
            raise UsageError(
                f"{option} {p}: exists, is not empty and was not written by curate (no "
                f"{MARKER_DIR}/{MANIFEST}); --overwrite replaces only curate's own output folders"
            )
        if not overwrite:
            raise UsageError(
                f"{option} {p}: exists (a curate output); pass --overwrite to replace it"
            )
    return p


# --------------------------------------------------------------------------- staging


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale(target: str | Path) -> list[Path]:
    """Remove staging leftovers of killed runs for ``target``; returns what was removed.

    Only names this module makes (``.<name>.curate-{tmp,old}-<pid>-…``) whose process is gone, and
    for folders only those holding curate's marker. If a run died between its two renames, the
    target is missing and its previous output is still staged as ``old``: that is put back.
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
        if m is None or m.group("name") != target.name or _alive(int(m.group("pid"))):
            continue
        if entry.is_dir() and not entry.is_symlink():
            if not (entry / MARKER_DIR / MANIFEST).is_file():
                continue
            if m.group("kind") == "old":
                stale_old.append(entry)
                continue
            shutil.rmtree(entry, ignore_errors=True)
        elif entry.is_file() and entry.name.endswith(".tmp"):
            entry.unlink(missing_ok=True)
        else:
            continue
        removed.append(entry)
    for old in stale_old:
        if not target.exists() and not target.is_symlink() and len(stale_old) == 1:
            os.replace(old, target)  # the previous output, restored
        else:
            shutil.rmtree(old, ignore_errors=True)
            removed.append(old)
    return removed


def _stage_name(target: Path, kind: str) -> str:
    return f".{target.name}.curate-{kind}-{os.getpid()}-"


def manifest(command: Sequence[str] | None, inputs: Sequence[Any] = ()) -> dict[str, Any]:
    """The marker's content: what wrote this folder, from what (inputs as path + sha256)."""
    from curate import __version__

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
    """Yield an empty staging folder; on success it replaces ``target`` in two renames.

    The guard runs again here (the library is used without the CLI too), stale staging folders
    are swept first, and the marker is written before anything else so that even a partial
    staging folder is recognisable as curate's own. An OSError names ``target`` (and the file
    inside it), not the staging folder the user never asked for.
    """
    target = guard_folder(target, inputs, overwrite=overwrite)
    parent = target.parent if str(target.parent) else Path(".")
    tmp: Path | None = None
    try:
        parent.mkdir(parents=True, exist_ok=True)
        sweep_stale(target)
        tmp = Path(tempfile.mkdtemp(prefix=_stage_name(target, "tmp"), dir=parent))
        os.chmod(tmp, 0o777 & ~current_umask())  # mkdtemp makes 0700; a dataset is for sharing
        (tmp / MARKER_DIR).mkdir()
        info = dict(marker or manifest(None))
        (tmp / MARKER_DIR / MANIFEST).write_bytes(orjson.dumps(info, option=orjson.OPT_INDENT_2))
        yield tmp
        if target.exists():
            # Checked again now: the folder may have changed while we worked.
            guard_folder(target, inputs, overwrite=overwrite)
            old = Path(tempfile.mkdtemp(prefix=_stage_name(target, "old"), dir=parent))
            os.replace(target, old)  # over the empty placeholder folder
            try:
                os.replace(tmp, target)
            except BaseException:
                os.replace(old, target)
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    except OSError as e:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        raise _renamed(e, tmp, target) from None
    except BaseException:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; rename it over ``target`` only on success.

    Why: a crash or Ctrl-C mid-write must never leave a half-written report or dataset that a
    later CI step would take for a good one. A target that exists but is not a regular file (a
    device such as ``/dev/null``, a FIFO) is written in place: renaming over it would replace it.
    """
    target = Path(target)
    if target.is_dir():
        raise IsADirectoryError(21, "is a folder", str(target))
    if target.exists() and not target.is_file():
        try:
            yield target
        except OSError as e:
            raise _renamed(e, None, target) from None
        return
    parent = target.parent if str(target.parent) else Path(".")
    tmp: Path | None = None
    try:
        parent.mkdir(parents=True, exist_ok=True)
        sweep_stale(target)
        fd, name = tempfile.mkstemp(prefix=_stage_name(target, "tmp"), suffix=".tmp", dir=parent)
        os.close(fd)
        tmp = Path(name)
        os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp makes 0600; a report is a normal file
        yield tmp
        os.replace(tmp, target)
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


def write_bytes_atomic(target: str | Path, data: bytes) -> None:
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)
