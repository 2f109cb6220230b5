"""Reading learning histories: is it HDF5 at all, the metadata of each root member, the scan.

:func:`check_hdf5` looks at the file's signature before any HDF5 library call (a saved HTML or
XML error page, an empty or truncated download is one precise line and exit 2);
:func:`read_metadata` reads each root member's attributes and each dataset's dtype, shape,
chunks and filter into the ``tasks`` table, never array data; :func:`run_scan` reads the arrays
once, in a process pool when the file is big enough (see :mod:`curate.families.icrl` for why
processes). Kept apart from the family class so that the family module holds the contract
(options, rules, tables, fix frame, writer) and this one the HDF5 reading it rests on.
"""

from __future__ import annotations

import math
import random
import re
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import polars as pl

from curate.core.engine import available_cores, process_pool
from curate.core.engine import current as current_engine
from curate.core.errors import CurateWarning, InputError, UsageError, arg, quoted
from curate.families.base import Progress, no_records
from curate.io.records import HF_SCHEME, is_stdin
from curate.io.xland_scan import merge, scan_tasks
from curate.schemas.icrl import (
    ATTRS,
    DATASET_SPECS,
    DATASETS,
    DROPPED_ATTR,
    IcrlOptions,
    parse_env_id,
)
from curate.schemas.icrl_tables import (
    EPISODE_SCHEMA,
    HISTORY_SCHEMA,
    LENGTH_SCHEMA,
    TASK_SCHEMA,
    IcrlData,
    ScanTables,
)

#: The 8-byte HDF5 signature; it sits at offset 0 or, after a user block, at 512, 1024, 2048, …
SIGNATURE = b"\x89HDF\r\n\x1a\n"
#: Below this many steps (over all scanned histories) the scan runs in the calling process.
POOL_MIN_STEPS = 1 << 23
#: dtype kind each dataset must have for the scan to read it (exact dtypes are RL104's job).
_KINDS = {"states": "u", "actions": "u", "rewards": "f", "dones": "b", "expert_actions": "u"}


# --------------------------------------------------------------------------- is it HDF5 at all


def _signature_offset(head: bytes, size: int) -> int | None:
    offset = 0
    while offset + len(SIGNATURE) <= min(size, len(head)):
        if head[offset : offset + len(SIGNATURE)] == SIGNATURE:
            return offset
        offset = 512 if offset == 0 else offset * 2
    return None


def _what_else(head: bytes) -> str:
    """What a file without the HDF5 signature holds instead, for the one-line error."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").decode("utf-8", "replace")
    low = text[:512].lower()
    if low.startswith("<!doctype html") or low.startswith("<html") or "<html" in low[:256]:
        title = re.search(r"<title[^>]*>(.*?)</title>", text, re.S | re.I)
        shown = f" titled {' '.join(title.group(1).split())[:80]!r}" if title else ""
        return (
            f"an HTML page{shown}, not an HDF5 file: the download saved an error or "
            "login page under this name"
        )
    if low.startswith("<?xml") or low.startswith("<error"):
        code = re.search(r"<Code>(.*?)</Code>", text, re.S)
        msg = re.search(r"<Message>(.*?)</Message>", text, re.S)
        said = ": ".join(" ".join(m.group(1).split())[:80] for m in (code, msg) if m)
        return (
            f"an XML document{f' ({said})' if said else ''}, not an HDF5 file: the download "
            "saved the server's error response under this name"
        )
    if low.startswith("{") or low.startswith("["):
        return "a JSON document, not an HDF5 file"
    if head[:2] == b"\x1f\x8b":
        return "a gzip stream, not an HDF5 file (decompress it first)"
    if head[:4] == b"PK\x03\x04":
        return "a zip archive, not an HDF5 file (extract it first)"
    shown = head[:8].hex(" ")
    return f"not an HDF5 file: no HDF5 signature (it starts with bytes {shown})"


def check_hdf5(path: Path) -> None:
    """Raise :class:`InputError` unless ``path`` is an HDF5 file h5py can open.

    Checked by signature first (no HDF5 call on a web page), then by opening it: HDF5 records
    the file's end address in its superblock, so a download that stopped early is recognised
    and said with both sizes.
    """
    size = path.stat().st_size
    if size == 0:
        raise InputError("empty file (0 bytes), not an HDF5 file", path=path)
    with open(path, "rb") as fh:
        head = fh.read(4096)
    if _signature_offset(head, size) is None:
        raise InputError(_what_else(head), path=path)
    try:
        h5py.File(path, "r").close()
    except OSError as e:
        text = " ".join(str(e).split())
        m = re.search(r"eof = (\d+).*stored_eof = (\d+)", text)
        if m:
            have, want = int(m.group(1)), int(m.group(2))
            raise InputError(
                f"truncated HDF5 file: {have:,} of {want:,} bytes (the download or copy "
                "stopped early)",
                path=path,
            ) from None
        raise InputError(f"unreadable HDF5 file: {text}", path=path) from None


def local_file(name: str) -> Path:
    if is_stdin(name):
        raise UsageError("icrl reads HDF5 files by path, not standard input")
    if name.startswith(HF_SCHEME):
        raise UsageError("icrl reads local HDF5 files; download it first (hf:// is not read)")
    path = Path(name)
    if not path.exists():
        raise InputError("no such file", path=path)
    if path.is_dir():
        # a folder ``curate fix`` wrote (or any folder) holding exactly one HDF5 file
        found = sorted(p for p in path.iterdir() if p.suffix in (".hdf5", ".h5") and p.is_file())
        if len(found) == 1:
            return found[0]
        raise InputError(
            "a folder, not an HDF5 file (give the .hdf5 file itself"
            + (f"; it holds {len(found)} HDF5 files)" if found else ")"),
            path=path,
        )
    if not path.is_file():  # a pipe or device: HDF5 is read by offsets, not as a stream
        raise InputError(
            "not a regular file (a pipe or a device): HDF5 is read by offsets; write it to a "
            "file first",
            path=path,
        )
    return path


# --------------------------------------------------------------------------- metadata


@dataclass(frozen=True)
class Unreadable:
    """An attribute that is present but cannot be read (a corrupt heap, an unknown type).

    Why a value of its own and not a bare ``object()``: RL104 quotes the value it got, and an
    object's repr holds its memory address, so two audits of one file differed; this one says
    what went wrong, the same way on every run.
    """

    reason: str

    def __repr__(self) -> str:
        return f"unreadable ({self.reason})"


def _attr_value(group: h5py.Group, name: str) -> tuple[bool, Any]:
    if name not in group.attrs:
        return False, None
    try:
        value = group.attrs[name]
    except (OSError, TypeError, ValueError) as e:
        # h5py's reason, without any address (HDF5 prints none in these, but be sure)
        why = re.sub(r" at 0x[0-9a-fA-F]+", "", " ".join(str(e).split()))[:120]
        return True, Unreadable(why or type(e).__name__)
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(()).item()
    if isinstance(value, np.generic):
        value = value.item()
    return True, value


def _wrong(name: str, value: Any) -> str:
    """``env-id: int 5``: an attribute of the wrong type as RL104 quotes it (its value cut)."""
    if isinstance(value, Unreadable):
        return f"{name}: {value!r}"
    return f"{name}: {type(value).__name__} {quoted(value, 80)}"


def _int_name(name: str) -> int | None:
    return int(name) if re.fullmatch(r"[0-9]+", name) else None


def _open_member(parent: h5py.Group, name: str) -> tuple[Any, str | None]:
    """``parent[name]``, or ``(None, what it is)`` when it is a link that cannot be followed.

    A dangling soft link or an external link to a file that is not there (or lacks the target)
    raises ``KeyError`` deep in HDF5 ("can't open file"): said here as what the member is, so
    a rule reports it and nothing later opens it.
    """
    try:
        link = parent.get(name, getlink=True)
    except (OSError, KeyError, RuntimeError):
        link = None
    try:
        return parent[name], None
    except (OSError, KeyError, RuntimeError, ValueError):
        pass
    if isinstance(link, h5py.SoftLink):
        return None, f"a dangling soft link (to {link.path})"
    if isinstance(link, h5py.ExternalLink):
        return None, (f"an external link to {link.filename}:{link.path} that cannot be opened")
    return None, "a member that cannot be opened"


def _group_row(
    file_index: int, path: str, name: str, obj: Any, broken: str | None = None
) -> dict[str, Any]:
    row: dict[str, Any] = {c: None for c in TASK_SCHEMA}
    row.update(file=file_index, path=path, name=name, index=_int_name(name), scanned=False)
    if broken is not None:
        row.update(kind="link", scannable=False, links_broken=[broken])
        return row
    if isinstance(obj, h5py.Dataset):
        row.update(kind="dataset", scannable=False)
        return row
    if not isinstance(obj, h5py.Group):
        row.update(kind="other", scannable=False)
        return row
    row["kind"] = "group"
    missing, bad = [], []
    values: dict[str, Any] = {}
    for a in ATTRS:
        present, value = _attr_value(obj, a)
        if not present:
            missing.append(a)
            continue
        values[a] = value
        if a == "ruleset-id":
            ok = isinstance(value, int) and not isinstance(value, bool)
            if ok:
                row["ruleset_id"] = value
            else:
                bad.append(_wrong(a, value))
        elif isinstance(value, str):
            row[a.replace("-", "_")] = value
        else:
            bad.append(_wrong(a, value))
    row["attrs_missing"], row["attrs_bad"] = missing, bad
    env = parse_env_id(values.get("env-id"))
    row["max_steps"] = env.max_steps if env else None
    present, dropped = _attr_value(obj, DROPPED_ATTR)
    if present:
        row["histories_dropped"] = int(np.size(dropped)) if dropped is not None else 0
    members = list(obj.keys())
    row["datasets_missing"] = [d for d in DATASETS if d not in members]
    row["datasets_extra"] = sorted(m for m in members if m not in DATASETS)
    shapes = {}
    scannable = not row["datasets_missing"]
    broken_links = []
    for d in DATASETS:
        if d not in members:
            continue
        ds, broken = _open_member(obj, d)
        if broken is not None:
            broken_links.append(f"{d} is {broken}")
            row[f"{d}_dtype"] = "link"
            scannable = False
            continue
        if not isinstance(ds, h5py.Dataset):
            row[f"{d}_dtype"] = "group"
            scannable = False
            continue
        row[f"{d}_dtype"] = str(ds.dtype)
        row[f"{d}_shape"] = list(ds.shape)
        row[f"{d}_chunks"] = list(ds.chunks) if ds.chunks else None
        row[f"{d}_compression"] = ds.compression
        spec = DATASET_SPECS[d]
        shapes[d] = tuple(ds.shape)
        if (
            ds.dtype.kind != _KINDS[d]
            or len(ds.shape) != spec.ndim
            or tuple(ds.shape[2:]) != spec.trailing
        ):
            scannable = False
    row["links_broken"] = broken_links
    hl = {s[:2] for s in shapes.values() if len(s) >= 2}
    first = shapes.get("actions") or next(iter(shapes.values()), None)
    if first is not None and len(first) >= 2:
        row["histories"], row["steps"] = int(first[0]), int(first[1])
    row["scannable"] = bool(scannable and len(hl) == 1)
    return row


def _sort_key(name: str) -> tuple[int, int, str]:
    n = _int_name(name)
    return (0, n, name) if n is not None else (1, 0, name)


def read_metadata(path: Path, file_index: int, progress: Progress | None = None) -> pl.DataFrame:
    """The ``tasks`` rows of one file (:data:`TASK_SCHEMA`): no array data is read."""
    rows = []
    with h5py.File(path, "r") as f:
        names = sorted(f.keys(), key=_sort_key)
        for i, name in enumerate(names):
            obj, broken = _open_member(f, name)
            row = _group_row(file_index, str(path), name, obj, broken)
            row["position"] = i
            rows.append(row)
            if progress and i % 1000 == 999:
                progress(f"metadata {path.name}: {i + 1} of {len(names)} groups", i + 1)
    return pl.DataFrame(rows, schema=TASK_SCHEMA) if rows else pl.DataFrame(schema=TASK_SCHEMA)


def check_layout(path: Path, meta: pl.DataFrame) -> None:
    """An HDF5 file none of whose root groups looks like a task group is not this family's:
    exit 2, one line naming what the root holds.

    A task group looks like one when it holds all five datasets, or when its name is an integer
    and it holds at least three of them: a D4RL file (root datasets) or a Minari file (groups
    ``episode_0`` … with ``actions``, ``rewards``, ``observations``) share dataset names with
    XLand but are neither, and auditing them would report every member as broken.
    """
    if meta.height == 0:
        raise no_records(path, "the HDF5 file's root is empty")
    n_present = len(DATASETS) - pl.col("datasets_missing").list.len()
    present = meta.filter(
        (pl.col("kind") == "group")
        & ((n_present == len(DATASETS)) | (pl.col("index").is_not_null() & (n_present >= 3)))
    )
    if present.height == 0:
        shown = ", ".join(repr(n) for n in meta["name"].head(5).to_list())
        more = f" and {meta.height - 5} more" if meta.height > 5 else ""
        groups = meta.filter(pl.col("kind") == "group")
        inside = ""
        if groups.height:
            g = groups.row(0, named=True)
            members = sorted(
                [d for d in DATASETS if d not in (g["datasets_missing"] or [])]
                + list(g["datasets_extra"] or [])
            )
            inside = f"; group {g['name']!r} holds {', '.join(members) or 'nothing'}"
        raise InputError(
            "an HDF5 file of another layout: no root group looks like a task group (a group "
            f"named by an integer holding {', '.join(DATASETS)}); the root holds "
            f"{shown}{more}{inside}",
            path=path,
        )


def choose_tasks(meta: pl.DataFrame, opts: IcrlOptions, path: Path) -> pl.DataFrame:
    """Mark the groups the scan reads: every scannable one, or the seeded sample (of each
    file)."""
    if opts.metadata_only:
        return meta.with_columns(pl.lit(False).alias("scanned"))
    names = meta.filter(pl.col("scannable"))["name"].to_list()
    if opts.tasks is not None or opts.fraction is not None:
        if opts.tasks is not None:
            k = opts.tasks
        else:
            assert opts.fraction is not None  # one of the two, by the test above
            k = math.ceil(opts.fraction * len(names))
        if opts.tasks is not None and k > len(names):
            # A cap, not a protocol: more than there are scans all (the same answer a full
            # audit gives), but said, so that "200 tasks audited" is never believed wrongly.
            warnings.warn(
                f"{path}: {arg('--tasks', k)}, but the file has only {len(names)} task "
                "group(s) to scan: all of them are scanned",
                CurateWarning,
                stacklevel=2,
            )
        names = random.Random(opts.seed).sample(names, min(k, len(names)))
    return meta.with_columns(pl.col("name").is_in(names).alias("scanned"))


# --------------------------------------------------------------------------- the scan


def _jobs(
    data: IcrlData, workers: int, per_worker: int = 4
) -> list[tuple[int, str, list[str], list[int]]]:
    """Contiguous ranges of scanned groups per file, about ``per_worker`` per worker (load
    balance)."""
    jobs = []
    chosen = data.tasks.filter(pl.col("scanned"))
    for f in data.files:
        mine = chosen.filter(pl.col("file") == f.index).sort("position")
        if mine.height == 0:
            continue
        names, idx = mine["name"].to_list(), mine["position"].to_list()
        parts = max(1, min(len(names), per_worker * workers)) if workers > 1 else 1
        size = math.ceil(len(names) / parts)
        for a in range(0, len(names), size):
            jobs.append((f.index, f.path, names[a : a + size], idx[a : a + size]))
    return jobs


def _workers(opts: IcrlOptions) -> int:
    if opts.workers is not None:
        return opts.workers
    return available_cores()


def _pool_scan(fn: Any, units: Sequence[tuple[Any, ...]], workers: int) -> list[Any]:
    """``fn`` over ``units`` on ``workers`` processes: this one and ``workers - 1`` of the local
    engine's pool (``spawn``: see the module docstring), results in unit order.

    Why this process scans too: a spawned worker takes ~0.2 s to start (it imports numpy, h5py,
    libdeflate) before its first unit, and this process would only wait meanwhile. The pool is
    given units from the front, two per worker ahead of what it has finished (one running, one
    waiting), topped up each time this process has scanned one from the back: both sides end
    within about a unit of each other, whatever the start-up costs. (Not every unit submitted
    at once with this process cancelling the ones it takes: a pool that breaks, a worker killed,
    then fails on the cancelled futures it still holds, ``InvalidStateError`` in its manager
    thread, instead of ending cleanly.)"""
    results: list[Any] = [None] * len(units)
    with process_pool(workers - 1) as pool:
        futures: dict[int, Any] = {}
        front, back = 0, len(units)
        ahead = 2 * (workers - 1)

        def top_up() -> None:
            nonlocal front
            while front < back and sum(not f.done() for f in futures.values()) < ahead:
                futures[front] = pool.submit(fn, *units[front])
                front += 1

        top_up()
        while front < back:
            back -= 1
            results[back] = fn(*units[back])
            top_up()
        for i, fut in futures.items():
            results[i] = fut.result()
    return results


def run_scan(data: IcrlData) -> ScanTables:
    """Scan every chosen task group once (in parallel when it pays) → :class:`ScanTables`."""
    opts = data.options if isinstance(data.options, IcrlOptions) else IcrlOptions()
    t0 = time.perf_counter()
    chosen = data.tasks.filter(pl.col("scanned"))
    total = int((chosen["histories"] * chosen["steps"]).sum() or 0)
    engine = current_engine()
    if engine.is_local():
        workers = _workers(opts)
        if opts.workers is None and total < POOL_MIN_STEPS:
            workers = 1  # by default, small scans stay in-process; an explicit --workers is obeyed
    else:  # on a cluster: its CPUs (units of contiguous groups merge by concatenation)
        workers = engine.parallelism(_workers(opts))
    # locally, small units: this process and the pool share them (see _pool_scan), and the
    # last of them is what one side may wait for; a unit costs only the file's opening
    jobs = _jobs(data, workers, 16 if engine.is_local() else 4)
    workers = min(workers, len(jobs)) or 1
    units = [(str(Path(p).resolve()), g, i) for _, p, g, i in jobs]
    results = engine.map(
        scan_tasks,
        units,
        label="task-group ranges",
        local=(lambda fn, u: _pool_scan(fn, u, workers)) if workers > 1 else None,
    )
    per_file: dict[int, list[dict[str, Any]]] = {}
    for (fi, *_), res in zip(jobs, results, strict=True):
        per_file.setdefault(fi, []).append(res)
    hist_parts, ep_parts = [], []
    lengths = np.zeros(1, dtype=np.int64)
    for fi, parts in per_file.items():
        merged = merge(parts)
        h = pl.DataFrame(merged["histories"]).with_columns(pl.lit(fi, pl.Int32).alias("file"))
        hist_parts.append(h)
        ep_parts.append(
            pl.DataFrame(merged["episodes"]).with_columns(pl.lit(fi, pl.Int32).alias("file"))
        )
        n = max(lengths.size, merged["lengths"].size)
        lengths = np.pad(lengths, (0, n - lengths.size))
        lengths[: merged["lengths"].size] += merged["lengths"]
    starts = data.tasks.select(
        "file", pl.col("position").alias("group_index"), pl.col("row").alias("__row0")
    )
    if hist_parts:
        histories = (
            pl.concat(hist_parts, how="diagonal_relaxed")
            .join(starts, on=["file", "group_index"], how="left")
            .with_columns(
                (pl.col("__row0") + pl.col("history")).alias("row"),
                pl.format("{}/{}", "group", "history").alias("record"),
            )
            .select([pl.col(c).cast(t) for c, t in HISTORY_SCHEMA.items()])
        )
    else:
        histories = pl.DataFrame(schema=HISTORY_SCHEMA)
    episodes = (
        pl.concat(ep_parts, how="diagonal_relaxed")
        .with_columns(pl.col("done").cast(pl.Boolean))
        .select([pl.col(c).cast(t) for c, t in EPISODE_SCHEMA.items()])
        if ep_parts
        else pl.DataFrame(schema=EPISODE_SCHEMA)
    )
    nz = np.flatnonzero(lengths)
    length_table = pl.DataFrame(
        {"length": nz.astype(np.int64), "count": lengths[nz]}, schema=LENGTH_SCHEMA
    )
    return ScanTables(histories, episodes, length_table, time.perf_counter() - t0, workers)
