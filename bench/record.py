"""What every bench script's ``--record`` shares: the machine's facts, peak RSS, the JSON file.

``bench/RESULTS.md`` is rendered by ``bench/make_results.py`` from ``bench/results/*.json``, one
file per row of the page (its id is the file's name). A script run with ``--record`` prints its
usual table and then writes the rows it measured, each with what makes a figure comparable
later: when (UTC), on which machine state (``--machine quiet|shared``, with the 1-minute load
average read before and after the measurement, so a "quiet" claim can be checked), the exact
command line, the git commit (``+dirty`` when tracked files outside ``bench/results`` differ)
and the Python, polars and pyarrow versions. The machine state is the caller's word: no script
can tell that no other job ran, and the default is the modest one, ``shared``.

The files are written atomically (a temporary file in the same folder, then ``os.replace``), so
an interrupted run leaves the previous row in place, never half a file.

This module is imported by the scripts as ``record`` (``bench/`` is ``sys.path[0]`` when a
script runs as ``python bench/bench_x.py``) and by ``bench/make_results.py`` for the fields.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
#: Where ``--record`` writes by default, and where ``make_results.py`` reads.
RESULTS = BENCH / "results"
SCHEMA = 1
#: The page's three sections, in the page's order.
SECTIONS = ("peer", "ray", "target")
#: Keys every row file has (values may be null only where ``NULLABLE`` says, and there only in
#: rows copied from the log, which did not record them).
FIELDS = (
    "schema",
    "id",
    "section",
    "benchmark",
    "workload",
    "peer",
    "curate_figure",
    "peer_figure",
    "ratio",
    "target",
    "rss_curate",
    "rss_peer",
    "measured",
    "command",
    "commit",
    "versions",
    "source",
)
MEASURED_FIELDS = ("utc", "state", "load_before", "load_after", "note")
#: Fields a row copied from the log may leave null (the log did not keep them per row).
NULLABLE_IN_COPIES = ("commit", "versions")
STATES = ("quiet", "shared")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--record [DIR]`` and ``--machine``, the same in every script."""
    parser.add_argument(
        "--record",
        nargs="?",
        const=RESULTS,
        type=Path,
        metavar="DIR",
        help="also write the rows as JSON for bench/RESULTS.md (default DIR: bench/results)",
    )
    parser.add_argument(
        "--machine",
        choices=STATES,
        default="shared",
        help="with --record: quiet only if no other job ran during the measurement",
    )


@dataclass
class Row:
    """One row of the page, as the script that measured it words it.

    The ``*_figure``, ``ratio``, ``target`` and ``rss_*`` fields are the texts of the page's
    cells (markdown); ``values`` keeps the numbers behind them, for whoever compares runs.
    """

    id: str
    section: str
    benchmark: str
    workload: str
    curate_figure: str
    peer: str | None = None
    peer_figure: str | None = None
    ratio: str | None = None
    target: str | None = None
    rss_curate: str | None = None
    rss_peer: str | None = None
    values: dict[str, Any] = field(default_factory=dict)
    note: str | None = None  # shown after the machine state, e.g. "reduced size"


def size(n: int) -> str:
    """A workload's size as the page writes it: ``1 M``, ``100k``, ``2,000``."""
    if n >= 1_000_000 and n % 100_000 == 0:
        return f"{n / 1e6:g} M"
    if n >= 10_000 and n % 1_000 == 0:
        return f"{n // 1000}k"
    return f"{n:,}"


def load_average() -> float:
    """The 1-minute load average: on 2 cores, above ~1 something else is running."""
    return round(os.getloadavg()[0], 2)


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M")


def peak_mib(usage: Any) -> float:
    """Peak RSS in MiB from a ``resource`` usage (``os.wait4`` or ``getrusage``): Linux gives
    ``ru_maxrss`` in KiB."""
    return usage.ru_maxrss / 1024


def self_peak_mib() -> float:
    """This process's own peak RSS in MiB (its children not included), as ``ru_maxrss``."""
    import resource

    return peak_mib(resource.getrusage(resource.RUSAGE_SELF))


def own_peak_mib() -> float:
    """This process's peak RSS in MiB since it started its program (``VmHWM``), for a child
    to print to its parent. Why not the child's ``ru_maxrss`` from ``os.wait4``: Linux carries
    the parent's high-water mark into a child spawned by ``vfork`` + ``exec`` (what
    ``subprocess`` does), so a child of a 600 MiB parent reports at least 600 MiB even if it
    ran ``pass``; ``VmHWM`` belongs to the child's own address space."""
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return self_peak_mib()  # not Linux: the best there is


#: GNU time: forks the measured command from its own small address space and writes the
#: command's ``ru_maxrss`` (KiB), which no parent's high-water mark reaches.
TIME = Path("/usr/bin/time")


def wrap_for_peak(cmd: list[str] | str, out: Path) -> list[str] | str:
    """``cmd`` run under GNU time writing its own peak RSS to ``out`` (read it with
    :func:`read_peak`); ``cmd`` unchanged where there is no ``/usr/bin/time``. A string is a
    shell command (``subprocess(..., shell=True)``) and stays one."""
    if not TIME.exists():
        return cmd
    if isinstance(cmd, str):
        return shlex.join([str(TIME), "-f", "%M", "-o", str(out), "sh", "-c", cmd])
    return [str(TIME), "-f", "%M", "-o", str(out), *cmd]


def read_peak(out: Path, usage: Any) -> float:
    """Peak RSS in MiB written by :func:`wrap_for_peak`'s GNU time, else (no ``time``) the
    ``os.wait4`` usage's, which may carry the parent's high-water mark (see
    :func:`own_peak_mib`)."""
    try:
        return int(Path(out).read_text().split()[-1]) / 1024
    except (OSError, ValueError, IndexError):
        return peak_mib(usage)


@contextlib.contextmanager
def child_peak(
    cmd: list[str] | str,
) -> Iterator[tuple[list[str] | str, Callable[[Any], float]]]:
    """``cmd`` wrapped by :func:`wrap_for_peak`, and a function of the ``os.wait4`` usage that
    gives the child's own peak RSS in MiB::

        with record.child_peak(cmd) as (wrapped, peak):
            proc = subprocess.Popen(wrapped)
            _, status, usage = os.wait4(proc.pid, 0)
            rss = peak(usage)
    """
    with tempfile.TemporaryDirectory(prefix="bench-peak-") as tmp:
        out = Path(tmp) / "peak"
        yield wrap_for_peak(cmd, out), lambda usage: read_peak(out, usage)


@dataclass
class ChildRun:
    """One child process as the scripts measure it: its wall time, its own peak RSS, its CPU
    seconds (user + system), its exit code and what it printed (when captured)."""

    wall: float
    peak_mib: float
    cpu: float
    code: int
    stdout: str = ""
    stderr: str = ""


def run_child(
    cmd: list[str],
    env: dict[str, str] | None = None,
    *,
    stdout: bool = False,
    stderr: bool = False,
) -> ChildRun:
    """Run ``cmd`` as a child (``env`` added to this environment), timed from its start to its
    exit, its own peak RSS read through :func:`child_peak`; ``stdout``/``stderr``: capture
    them (else discarded, and stderr left to the terminal). The one way every script times a
    whole process, so their figures are taken alike."""
    out_to = subprocess.PIPE if stdout else subprocess.DEVNULL
    err_to = subprocess.PIPE if stderr else None
    with child_peak(cmd) as (wrapped, peak):
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            wrapped, stdout=out_to, stderr=err_to, env={**os.environ, **(env or {})}
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        rss = peak(usage)
    return ChildRun(
        wall=wall,
        peak_mib=rss,
        cpu=usage.ru_utime + usage.ru_stime,
        code=os.waitstatus_to_exitcode(status),
        stdout=proc.stdout.read().decode() if proc.stdout else "",
        stderr=proc.stderr.read().decode() if proc.stderr else "",
    )


def git_commit() -> str | None:
    """HEAD's short hash, ``+dirty`` if tracked files outside the recorded results differ (a
    figure from uncommitted code cannot be reproduced from the commit alone)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
             ":!bench/results", ":!bench/RESULTS.md"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+dirty" if dirty else "")


def versions() -> dict[str, str]:
    """Python, polars and pyarrow versions, read from the installed metadata (not imported:
    recording must not change what a script imports)."""
    out = {"python": sys.version.split()[0]}
    for name in ("polars", "pyarrow"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def command_line(argv: list[str] | None = None) -> str:
    """The command as run from the repository root, ``python bench/X.py ARGS``."""
    argv = sys.argv if argv is None else argv
    script = Path(argv[0]).resolve()
    try:
        shown = str(script.relative_to(ROOT))
    except ValueError:
        shown = argv[0]
    return shlex.join(["python", shown, *argv[1:]])


class Recorder:
    """Made before the measurement (the load average before it), written after it."""

    def __init__(self, folder: Path, machine: str, argv: list[str] | None = None) -> None:
        self.folder = Path(folder)
        self.machine = machine
        self.command = command_line(argv)
        self.started = utc_now()
        self.load_before = load_average()

    def document(self, row: Row) -> dict[str, Any]:
        """The JSON document of ``row`` (the load average after is read now)."""
        if row.section not in SECTIONS:
            raise ValueError(f"{row.id}: section {row.section!r} is not one of {SECTIONS}")
        script = self.command.split()[1]
        return {
            "schema": SCHEMA,
            "id": row.id,
            "section": row.section,
            "benchmark": row.benchmark,
            "workload": row.workload,
            "peer": row.peer,
            "curate_figure": row.curate_figure,
            "peer_figure": row.peer_figure,
            "ratio": row.ratio,
            "target": row.target,
            "rss_curate": row.rss_curate,
            "rss_peer": row.rss_peer,
            "measured": {
                "utc": self.started,
                "finished_utc": utc_now(),
                "state": self.machine,
                "load_before": self.load_before,
                "load_after": load_average(),
                "note": row.note,
            },
            "command": self.command,
            "commit": git_commit(),
            "versions": versions(),
            "source": f"measured by {script} --record",
            "values": row.values,
        }

    def write(self, *rows: Row) -> list[Path]:
        """Write every row to ``<folder>/<id>.json`` and say so on stdout."""
        paths = [write_json(self.folder / f"{row.id}.json", self.document(row)) for row in rows]
        for path in paths:
            print(f"recorded {path}")
        return paths


def start(args: argparse.Namespace) -> Recorder | None:
    """A :class:`Recorder` if the script was asked to ``--record``, else None."""
    if getattr(args, "record", None) is None:
        return None
    return Recorder(args.record, args.machine)


def write_json(path: Path, document: dict[str, Any]) -> Path:
    """``document`` as indented JSON, atomically: a reader sees the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def problems(document: dict[str, Any]) -> list[str]:
    """What a row file lacks: missing keys, bad section or state, nulls a measured row may not
    have. Empty when the row is complete (used by the test and by ``make_results.py``)."""
    rid = document.get("id", "?")
    out = [f"{rid}: no {key}" for key in FIELDS if key not in document]
    if out:
        return out
    copied = str(document["source"]).startswith("recorded ")
    if not copied and not str(document["source"]).startswith("measured by "):
        out.append(f"{rid}: source must say 'measured by ...' or 'recorded <date>, copied ...'")
    if document["section"] not in SECTIONS:
        out.append(f"{rid}: section {document['section']!r}")
    measured = document["measured"]
    out += [f"{rid}: no measured.{key}" for key in MEASURED_FIELDS if key not in measured]
    if measured.get("state") not in STATES:
        out.append(f"{rid}: measured.state {measured.get('state')!r}")
    required = ["benchmark", "workload", "curate_figure", "command", "source"]
    if document["section"] != "target":
        required += ["peer", "peer_figure", "ratio"]
    else:
        required.append("target")
    if not copied:
        required += list(NULLABLE_IN_COPIES)
        if measured.get("load_before") is None or measured.get("load_after") is None:
            out.append(f"{rid}: a measured row needs the load average before and after")
    out += [f"{rid}: {key} is empty" for key in required if not document.get(key)]
    return out
