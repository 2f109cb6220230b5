"""The in-context RL family (XLand-100B-style learning histories in HDF5): reader and registration.

Layout and invariants: :mod:`curate.schemas.icrl`. Tables: :mod:`curate.schemas.icrl_tables`.
The scan over the arrays: :mod:`curate.families.icrl_scan`. Rules: :mod:`curate.audits.icrl`.

Reading happens in two steps. :meth:`IcrlFamily.load` checks that each input really is an HDF5
file (by its signature, before any HDF5 library call: a saved HTML or XML error page, an empty
or truncated download is one precise line and exit 2) and reads the *metadata* only — the root's
members, each task group's attributes and each dataset's dtype, shape, chunks and filter — into
the ``tasks`` table. The arrays are read later, once, by the scan, when the first rule that
needs its tables asks for them (the shared table ``scan``); ``--metadata-only`` never reads them,
and ``--tasks N`` / ``--fraction F`` scan a seeded sample of the task groups.

Why a process pool: h5py serialises every call on one lock, so threads cannot decompress two
chunks at once; processes can. The scan is split into contiguous ranges of task groups, each
scanned by :func:`curate.families.icrl_scan.scan_tasks` in a worker started with ``spawn`` (no
HDF5 or polars state is forked), and the results are concatenated in order. Small scans run in
the calling process: starting workers costs more than it saves below a few million steps.
"""

from __future__ import annotations

import math
import os
import random
import re
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import polars as pl
import pyarrow as pa

from curate.audits.icrl import RULES, SCAN
from curate.dataset import LoadedDataset
from curate.errors import InputError, UsageError
from curate.families.base import Family, Progress, no_records
from curate.families.icrl_scan import merge, scan_tasks
from curate.findings import InputInfo, Report, rule_output
from curate.io import HF_SCHEME, STDIN, sha256_of
from curate.options import FamilyOptions
from curate.rules import AuditContext
from curate.schemas.icrl import (
    ATTRS,
    DATASET_SPECS,
    DATASETS,
    IcrlOptions,
    parse_env_id,
)
from curate.schemas.icrl_tables import (
    EPISODE_SCHEMA,
    HISTORY_SCHEMA,
    LENGTH_SCHEMA,
    TASK_SCHEMA,
    IcrlData,
    IcrlFile,
    ScanTables,
)
from curate.streams import SplitStream

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


def _local_file(name: str) -> Path:
    if name == STDIN:
        raise UsageError("icrl reads HDF5 files by path, not standard input")
    if name.startswith(HF_SCHEME):
        raise UsageError("icrl reads local HDF5 files; download it first (hf:// is not read)")
    path = Path(name)
    if not path.exists():
        raise InputError("no such file", path=path)
    if path.is_dir():
        raise InputError("a folder, not an HDF5 file (give the .hdf5 file itself)", path=path)
    return path


# --------------------------------------------------------------------------- metadata


def _attr_value(group: h5py.Group, name: str) -> tuple[bool, Any]:
    if name not in group.attrs:
        return False, None
    try:
        value = group.attrs[name]
    except (OSError, TypeError, ValueError):
        return True, object()
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(()).item()
    if isinstance(value, np.generic):
        value = value.item()
    return True, value


def _int_name(name: str) -> int | None:
    return int(name) if re.fullmatch(r"[0-9]+", name) else None


def _group_row(file_index: int, path: str, name: str, obj: Any) -> dict[str, Any]:
    row: dict[str, Any] = {c: None for c in TASK_SCHEMA}
    row.update(file=file_index, path=path, name=name, index=_int_name(name), scanned=False)
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
                bad.append(f"{a}: {type(value).__name__} {value!r}"[:120])
        elif isinstance(value, str):
            row[a.replace("-", "_")] = value
        else:
            bad.append(f"{a}: {type(value).__name__} {value!r}"[:120])
    row["attrs_missing"], row["attrs_bad"] = missing, bad
    env = parse_env_id(values.get("env-id"))
    row["max_steps"] = env.max_steps if env else None
    members = list(obj.keys())
    row["datasets_missing"] = [d for d in DATASETS if d not in members]
    row["datasets_extra"] = sorted(m for m in members if m not in DATASETS)
    shapes = {}
    scannable = not row["datasets_missing"]
    for d in DATASETS:
        if d not in members:
            continue
        ds = obj[d]
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
            try:
                obj = f.get(name, getlink=False)
            except (OSError, KeyError):  # a dangling link
                obj = None
            row = _group_row(file_index, str(path), name, obj)
            row["position"] = i
            rows.append(row)
            if progress and i % 1000 == 999:
                progress(f"metadata {path.name}: {i + 1} of {len(names)} groups", i + 1)
    return pl.DataFrame(rows, schema=TASK_SCHEMA) if rows else pl.DataFrame(schema=TASK_SCHEMA)


def _check_layout(path: Path, meta: pl.DataFrame) -> None:
    """An HDF5 file that holds no task group at all is not this family's: exit 2, one line."""
    if meta.height == 0:
        raise no_records(path, "the HDF5 file's root is empty")
    present = meta.filter(
        (pl.col("kind") == "group") & (pl.col("datasets_missing").list.len() < len(DATASETS))
    )
    if present.height == 0:
        shown = ", ".join(repr(n) for n in meta["name"].head(5).to_list())
        more = f" and {meta.height - 5} more" if meta.height > 5 else ""
        raise InputError(
            "an HDF5 file of another layout: no root group holds any of "
            f"{', '.join(DATASETS)} (the root holds {shown}{more})",
            path=path,
        )


def _choose(meta: pl.DataFrame, opts: IcrlOptions) -> pl.DataFrame:
    """Mark the groups the scan reads: every scannable one, or the seeded sample."""
    if opts.metadata_only:
        return meta.with_columns(pl.lit(False).alias("scanned"))
    names = meta.filter(pl.col("scannable"))["name"].to_list()
    if opts.tasks is not None or opts.fraction is not None:
        k = opts.tasks if opts.tasks is not None else math.ceil(opts.fraction * len(names))
        names = random.Random(opts.seed).sample(names, min(k, len(names)))
    return meta.with_columns(pl.col("name").is_in(names).alias("scanned"))


# --------------------------------------------------------------------------- the scan


def _jobs(data: IcrlData, workers: int) -> list[tuple[int, str, list[str], list[int]]]:
    """Contiguous ranges of scanned groups per file, about four per worker (load balance)."""
    jobs = []
    chosen = data.tasks.filter(pl.col("scanned"))
    for f in data.files:
        mine = chosen.filter(pl.col("file") == f.index).sort("position")
        if mine.height == 0:
            continue
        names, idx = mine["name"].to_list(), mine["position"].to_list()
        parts = max(1, min(len(names), 4 * workers)) if workers > 1 else 1
        size = math.ceil(len(names) / parts)
        for a in range(0, len(names), size):
            jobs.append((f.index, f.path, names[a : a + size], idx[a : a + size]))
    return jobs


def _workers(opts: IcrlOptions) -> int:
    if opts.workers is not None:
        return opts.workers
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))


def run_scan(data: IcrlData) -> ScanTables:
    """Scan every chosen task group once (in parallel when it pays) → :class:`ScanTables`."""
    opts = data.options if isinstance(data.options, IcrlOptions) else IcrlOptions()
    t0 = time.perf_counter()
    chosen = data.tasks.filter(pl.col("scanned"))
    total = int((chosen["histories"] * chosen["steps"]).sum() or 0)
    workers = _workers(opts)
    if opts.workers is None and total < POOL_MIN_STEPS:
        workers = 1  # by default, small scans stay in-process; an explicit --workers is obeyed
    jobs = _jobs(data, workers)
    workers = min(workers, len(jobs)) or 1
    if workers > 1:
        with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
            futures = [pool.submit(scan_tasks, p, g, i) for _, p, g, i in jobs]
            results = [fut.result() for fut in futures]
    else:
        results = [scan_tasks(p, g, i) for _, p, g, i in jobs]
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


# --------------------------------------------------------------------------- the family


class IcrlFamily(Family):
    name = "icrl"
    aliases = ("xland",)
    title = "In-context RL learning histories (XLand-100B-style HDF5)"
    task_categories = ("reinforcement-learning",)
    license = "cc-by-sa-4.0"
    Options = IcrlOptions
    rules = RULES

    def load(
        self,
        paths: Sequence[str | Path],
        options: FamilyOptions | None = None,
        *,
        progress: Progress | None = None,
        keep_records: bool = False,
        encoding: str | None = None,
        **raw: Any,
    ) -> IcrlData:
        """Check each input is an HDF5 file and read its metadata (no array data)."""
        opts = self.options(options, **raw)
        assert isinstance(opts, IcrlOptions)
        if isinstance(paths, str | Path):
            paths = [paths]
        if not paths:
            raise UsageError("no input given")
        metas, files, inputs = [], [], []
        row0 = 0
        for i, name in enumerate(paths):
            path = _local_file(str(name))
            check_hdf5(path)
            meta = read_metadata(path, i, progress)
            _check_layout(path, meta)
            meta = _choose(meta, opts)
            # records are histories: a group's first history's row over all inputs
            h = meta["histories"].fill_null(0)
            meta = meta.with_columns((row0 + h.cum_sum() - h).alias("row"))
            n_hist = int(h.sum())
            files.append(
                IcrlFile(
                    i,
                    str(path),
                    sha256_of(path),
                    path.stat().st_size,
                    n_hist,
                    int((meta["kind"] == "group").sum()),
                )
            )
            inputs.append(InputInfo(str(path), files[-1].sha256, n_hist, "hdf5"))
            metas.append(meta)
            row0 += n_hist
            if progress:
                progress(f"read metadata of {path.name}", row0)
        tasks = pl.concat(metas, how="vertical") if metas else pl.DataFrame(schema=TASK_SCHEMA)
        return IcrlData(
            family=self.name,
            inputs=inputs,
            schema_findings=rule_output([]),
            options=opts,
            files=files,
            tasks=tasks,
            scanner=run_scan,
        )

    def audit(
        self,
        data: LoadedDataset,
        options: FamilyOptions | None = None,
        *,
        select: Sequence[str] | None = None,
        ignore: Sequence[str] | None = None,
        progress: Progress | None = None,
        **raw: Any,
    ) -> Report:
        """The core audit; with ``--metadata-only`` the rules that need the arrays are not run
        (the report's ``rules_run`` says so), rather than run on nothing and found clean."""
        opts = data.options if options is None and not raw else self.options(options, **raw)
        if isinstance(opts, IcrlOptions) and opts.metadata_only:
            ignore = [*(ignore or []), *[r.code for r in self.rules if SCAN in r.needs]]
        return super().audit(data, opts, select=select, ignore=ignore, progress=progress)

    def summarise(self, report: Report, ctx: AuditContext) -> None:
        """The figures a user compares with the published table (per file and in total):
        tasks, histories, transitions, episodes, mean/median final return, median episode
        length — over the scanned groups (the sample, with --tasks/--fraction)."""
        data = ctx.data
        assert isinstance(data, IcrlData)
        scan = ctx.built("scan")
        groups = data.groups()
        stats: dict[str, Any] = {
            "tasks": groups.height,
            "histories": int(groups["histories"].fill_null(0).sum()),
            "transitions": int((groups["histories"] * groups["steps"]).fill_null(0).sum()),
            "tasks_scanned": int(groups["scanned"].sum()),
        }
        if isinstance(scan, ScanTables) and scan.histories.height:
            h = scan.histories
            final = h["final_return"].drop_nans().drop_nulls()
            lengths = scan.lengths
            stats.update(
                histories_scanned=h.height,
                transitions_scanned=int(h["steps_read"].sum()),
                episodes=int(h["episodes"].sum()),
                mean_final_return=_round(final.mean()),
                median_final_return=_round(final.median()),
                median_episode_length=_weighted_median(lengths),
                scan_seconds=round(scan.seconds, 3),
                scan_workers=scan.workers,
            )
        elif data.options is not None and getattr(data.options, "metadata_only", False):
            stats["metadata_only"] = True
        report.stats.update(stats)
        report.stats["headline"] = [_headline(stats)]

    # ----------------------------------------------------------------- export / fix (later)
    def to_tables(self, data: LoadedDataset) -> dict[str, SplitStream | pa.Table]:
        """Not yet: episodes/segments as parquet and a cleaned HDF5 come with issue 10 item 5."""
        raise UsageError(
            "icrl: export is not implemented yet (learning histories are audited only)"
        )

    def fix(self, *args: Any, **kwargs: Any):  # type: ignore[override]
        """Not yet: a cleaned HDF5 that drops or repairs flagged histories (issue 10 item 5)."""
        raise UsageError("icrl: fix is not implemented yet (learning histories are audited only)")


def _round(x: Any) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 4)


def _weighted_median(lengths: pl.DataFrame) -> float | None:
    """Median of the completed episodes' lengths from their histogram."""
    total = int(lengths["count"].sum() or 0)
    if not total:
        return None
    cum = lengths.sort("length")["count"].cum_sum()
    values = lengths.sort("length")["length"]
    lo = int(values[int((cum >= (total + 1) // 2).arg_max())])
    hi = int(values[int((cum >= total // 2 + 1).arg_max())])
    return (lo + hi) / 2


def _headline(s: dict[str, Any]) -> str:
    parts = [f"{s['tasks']:,} tasks", f"{s['histories']:,} histories"]
    parts.append(f"{s['transitions']:,} transitions")
    if "episodes" in s:
        if s["tasks_scanned"] < s["tasks"]:
            parts.append(f"{s['tasks_scanned']:,} tasks scanned")
        parts.append(f"{s['episodes']:,} episodes")
        if s.get("mean_final_return") is not None:
            parts.append(
                f"final return mean {s['mean_final_return']} / median {s['median_final_return']}"
            )
        if s.get("median_episode_length") is not None:
            parts.append(f"median episode length {s['median_episode_length']:g}")
    elif s.get("metadata_only"):
        parts.append("metadata only (no array read)")
    return ", ".join(parts)


FAMILY = IcrlFamily()

__all__ = ["FAMILY", "SIGNATURE", "IcrlFamily", "check_hdf5", "read_metadata", "run_scan"]
