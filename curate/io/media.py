"""Media files as a table: content hash, real kind and metadata per file, cached; near-duplicates.

:func:`scan_media` runs :func:`curate.io.media_scan.scan_file` over a list of paths in a thread
pool and returns one row per distinct path (:data:`SCHEMA`). A cache keyed by (absolute path,
size, modification time in ns) makes a re-run over unchanged files read nothing but the cache
file; a changed file (new size or mtime) is read again. :func:`near_duplicate_pairs` finds every
pair of 64-bit perceptual hashes within a Hamming distance without comparing all pairs.

Why threads, not processes: the work per file is reading and hashing (:mod:`hashlib` releases
the GIL on blocks of a MiB) and decoding inside Pillow, libsndfile and FFmpeg (which release it
too); a thread starts in microseconds and shares the imported libraries, where a spawned
process pays ~0.5 s and the imports per worker. ``bench/bench_media.py`` measures both.

Why the cache skips "racy" entries: a file rewritten within the same mtime tick and at the same
size (a re-generated WAV of the same length) would keep its old hash. As git does for its
index, an entry whose mtime lies within :data:`RACY_NS` of the scan is not stored, so it is read
again next time; files older than that are keyed safely.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from curate.core.engine import available_cores
from curate.core.engine import current as current_engine
from curate.core.errors import UsageError
from curate.core.outputs import (
    MANIFEST,
    MARKER_DIR,
    atomic_path,
    guard_file,
    is_curate_folder,
    manifest,
    named,
)
from curate.io.media_scan import COLUMNS, error_row, scan_file
from curate.io.read import is_stream

#: One row per file (``cached``: the row came from the cache, the file was not opened).
SCHEMA: dict[str, pl.DataType] = {
    "path": pl.String(),
    "size": pl.Int64(),
    "mtime_ns": pl.Int64(),
    "sha256": pl.String(),
    "kind": pl.String(),
    "format": pl.String(),
    "codec": pl.String(),
    "mode": pl.String(),
    "width": pl.Int64(),
    "height": pl.Int64(),
    "fps": pl.Float64(),
    "duration_s": pl.Float64(),
    "sample_rate": pl.Int64(),
    "channels": pl.Int64(),
    "frames": pl.Int64(),
    "phash": pl.UInt64(),
    "error_kind": pl.String(),
    "error": pl.String(),
    "cached": pl.Boolean(),
}
assert set(SCHEMA) - {"cached"} == set(COLUMNS)

#: Name of the folder curate creates for caches beside a manifest.
CACHE_DIR = ".curate-cache"
CACHE_FILE = "media.parquet"
#: Parquet key-value metadata that marks a file as curate's media cache (and its layout).
CACHE_TAG = (b"curate", b"media-cache/1")
#: Entries modified this close to the scan are not cached (see the module docstring).
RACY_NS = 2_000_000_000
#: Below this many files to read, the scan stays in the calling thread.
POOL_MIN_FILES = 4
#: Error kinds that depend on more than the file's (size, mtime): never cached.
_UNCACHED_ERRORS = ("missing", "unreadable")


def user_cache_root() -> Path:
    """curate's folder in the user's cache: ``$XDG_CACHE_HOME/curate`` (default
    ``~/.cache/curate``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "curate"


def default_cache(manifest_path: str | Path) -> Path:
    """The media cache of one dataset folder, in the user's cache folder:
    ``~/.cache/curate/media/<digest of the manifest's folder>.parquet``.

    Why not beside the manifest: ``audit``, ``validate`` and ``check`` are read-only commands
    whose users do not expect a new folder in their dataset repository (an untracked file in a
    git checkout, and a parquet file a later folder read would take for data). One file per
    dataset folder keeps each cache as small as that dataset; the entries are keyed by
    absolute path, size and mtime, so a moved or edited file is never served stale.
    """
    folder = str(Path(manifest_path).resolve().parent)
    digest = hashlib.sha1(folder.encode("utf-8"), usedforsecurity=False).hexdigest()[:16]
    return user_cache_root() / "media" / f"{digest}.parquet"


def input_cache(path: str | Path | None) -> Path | None:
    """:func:`default_cache` of a dataset input (a manifest file, or a dataset folder), or None
    when it has no local folder to key one by: the Hub, standard input, a pipe (``/dev/fd/63``
    resolves into ``/proc/<pid>``, a new folder each run)."""
    if path is None or is_stream(path) or not Path(path).exists():
        return None
    first = Path(path)
    return default_cache(first if first.is_file() else first / "manifest")


def default_workers() -> int:
    return available_cores()


def _key(abspath: str, size: int | None, mtime_ns: int | None) -> tuple[str, int, int] | None:
    if size is None or mtime_ns is None:
        return None
    return abspath, size, mtime_ns


def read_cache(path: str | Path | None) -> dict[tuple[str, int, int], dict[str, Any]]:
    """Cached rows by (absolute path, size, mtime_ns); an absent or unreadable cache is empty.

    A file at ``path`` that is not curate's cache is refused: the user pointed ``--cache`` at
    something else, and the write at the end would replace it.
    """
    if path is None or not Path(path).exists():
        return {}
    try:
        # ParquetFile, not read_table: read_table imports pyarrow.dataset (1.5 s on first use)
        table = pq.ParquetFile(path).read()
    except (OSError, pa.ArrowException):
        _check_ours(Path(path), None)
        return {}
    _check_ours(Path(path), table.schema.metadata)
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    out: dict[tuple[str, int, int], dict[str, Any]] = {}
    for row in frame.iter_rows(named=True):
        key = _key(row.pop("abspath"), row["size"], row["mtime_ns"])
        if key is not None:
            out[key] = row
    return out


def _check_ours(path: Path, meta: dict[bytes, bytes] | None) -> None:
    if meta is not None and meta.get(CACHE_TAG[0]) == CACHE_TAG[1]:
        return
    if is_curate_folder(path.parent) and path.suffix == ".parquet":
        return  # our own folder: a damaged cache of ours is rebuilt
    raise UsageError(
        f"{named('--cache', 'cache')} {path}: exists and is not a curate media cache; curate "
        "never overwrites files it did not create (give a new file name)"
    )


def write_cache(
    path: str | Path, rows: Iterable[dict[str, Any]], inputs: Sequence[str | Path] = ()
) -> None:
    """Write ``rows`` (with ``abspath``) atomically; creates curate's cache folder if needed.

    The folder :data:`CACHE_DIR` is created with curate's marker so that it is recognisably
    ours; an existing file is replaced only if it is curate's cache (checked again here).
    """
    target = Path(path)
    # inputs (the manifest, every media file scanned) are refused here; whether an existing
    # file is curate's cache is read_cache's question (its mark is parquet metadata)
    guard_file(
        target,
        [str(i) for i in inputs],
        option=named("--cache", "cache"),
        owned=lambda _: True,
        cache=True,
    )
    if target.exists():
        read_cache(target)  # refuses a file that is not ours
    folder = target.parent
    if (folder.name == CACHE_DIR or folder == user_cache_root() / "media") and not folder.exists():
        folder.mkdir(parents=True)
        (folder / MARKER_DIR).mkdir()
        info = manifest(None) | {"purpose": "media scan cache (safe to delete)"}
        (folder / MARKER_DIR / MANIFEST).write_bytes(orjson.dumps(info))
    names = ["abspath", *[c for c in SCHEMA if c != "cached"]]
    frame = pl.DataFrame(
        [{n: r.get(n) for n in names} for r in rows],
        schema={"abspath": pl.String(), **{c: t for c, t in SCHEMA.items() if c != "cached"}},
        orient="row",
    )
    table = frame.to_arrow()
    table = table.replace_schema_metadata(dict([CACHE_TAG]))
    with atomic_path(target) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def scan_media(
    paths: Sequence[str],
    *,
    root: str | Path | None = None,
    cache: str | Path | None = None,
    workers: int | None = None,
    strict_cache: bool = False,
    inputs: Sequence[str | Path] = (),
) -> pl.DataFrame:
    """Scan every distinct path once; one row each, in first-seen order (:data:`SCHEMA`).

    ``root``: relative paths are taken under it (default: the current folder). ``cache``: the
    cache file (None: no cache). ``workers``: threads (default: the available cores, at most 8;
    tiny scans stay in-process). ``strict_cache``: a cache that cannot be written raises
    :class:`OSError` instead of being skipped — right for an explicit ``--cache``, wrong for the
    default one beside a manifest on a read-only share. ``inputs``: files the cache must never
    replace (the manifest).
    """
    base = Path(root) if root is not None else Path.cwd()
    unique = list(dict.fromkeys(paths))
    absolute = [os.path.abspath(base / p) for p in unique]
    if cache is not None and strict_cache:
        # an explicit --cache is judged before the hashing, not after it: an input, a file in
        # a curate output folder (read_cache then says whether an existing file is a cache)
        guard_file(
            cache,
            [*map(str, inputs), *absolute],
            option=named("--cache", "cache"),
            owned=lambda _: True,
            cache=True,
        )
    cached = read_cache(cache)
    started = time.time_ns()
    rows: list[dict[str, Any] | None] = [None] * len(unique)
    todo: list[int] = []
    for i, (p, a) in enumerate(zip(unique, absolute, strict=True)):
        try:
            st = os.stat(a)
        except OSError as e:  # missing: nothing to open
            rows[i] = error_row(p, e) | {"cached": False}
            continue
        hit = cached.get((a, st.st_size, st.st_mtime_ns))
        if hit is not None:
            rows[i] = hit | {"path": p, "cached": True}
        else:
            todo.append(i)
    n = workers if workers is not None else default_workers()
    engine = current_engine()
    if not engine.is_local():  # shards of files as tasks; rows come back in file order
        k = max(1, min(len(todo), 4 * engine.parallelism(n)))
        size = -(-len(todo) // k) if todo else 1
        shards = [
            ([(unique[i], absolute[i]) for i in todo[a : a + size]],)
            for a in range(0, len(todo), size)
        ]
        done = [r for part in engine.map(scan_shard, shards, label="media shards") for r in part]
    elif n > 1 and len(todo) >= POOL_MIN_FILES:
        with ThreadPoolExecutor(n, thread_name_prefix="curate-media") as pool:
            done = list(pool.map(lambda i: scan_file(unique[i], absolute[i]), todo))
    else:
        done = [scan_file(unique[i], absolute[i]) for i in todo]
    for i, row in zip(todo, done, strict=True):
        rows[i] = row | {"cached": False}
    if cache is not None and todo:
        fresh = {
            (a, r["size"], r["mtime_ns"]): r
            for a, r in zip(absolute, rows, strict=True)
            if r is not None and _cacheable(r, started)
        }
        scanned = set(absolute)
        keep = {k: v for k, v in cached.items() if k[0] not in scanned}
        merged = [v | {"abspath": k[0]} for k, v in {**keep, **fresh}.items()]
        try:
            write_cache(cache, merged, [*inputs, *absolute])
        except OSError:
            if strict_cache:
                raise
    return pl.DataFrame(rows, schema=SCHEMA, orient="row")


def scan_shard(files: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """:func:`scan_file` over ``(path as written, absolute path)`` pairs: one engine task."""
    return [scan_file(p, a) for p, a in files]


def _cacheable(row: dict[str, Any], started_ns: int) -> bool:
    if row["size"] is None or row["mtime_ns"] is None or row["error_kind"] in _UNCACHED_ERRORS:
        return False
    return bool(row["mtime_ns"] < started_ns - RACY_NS)


# --------------------------------------------------------------------------- near-duplicates


def bands(bits: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` contiguous (shift, width) bands covering ``bits`` bits, widths differing by
    at most one."""
    widths = [bits // parts + (1 if i < bits % parts else 0) for i in range(parts)]
    out, shift = [], 0
    for w in widths:
        out.append((shift, w))
        shift += w
    return out


def near_duplicate_pairs(
    frame: pl.DataFrame,
    max_distance: int,
    *,
    key: str = "path",
    hash_column: str = "phash",
    bits: int = 64,
) -> pl.DataFrame:
    """Every pair of rows whose hashes differ in at most ``max_distance`` bits.

    Columns ``path_a``, ``path_b`` (``path_a < path_b``), ``distance``; sorted. Rows with a null
    hash are ignored; each key is taken once (its first hash).

    Multi-index hashing, not all pairs: split the bits into ``max_distance + 1`` bands; two
    hashes within ``max_distance`` bits must agree exactly on at least one band (pigeonhole),
    so an equi-join per band finds every candidate, and a vectorised popcount of the XOR keeps
    the true pairs. The cost is the candidates: about n² / 2^(bits/(d+1)) per band on random
    hashes — tiny for the usual d ≤ 10 on 64 bits (6-bit bands), quadratic only when the
    hashes really are crowded (then the output is too).
    """
    if not 0 <= max_distance < bits:
        raise UsageError(f"near-duplicate distance must be 0..{bits - 1}, got {max_distance}")
    df = (
        frame.select(pl.col(key).alias("id"), pl.col(hash_column).cast(pl.UInt64).alias("h"))
        .drop_nulls()
        .unique("id", keep="first", maintain_order=True)
        .sort("id")
        .with_row_index("i")
    )
    empty = pl.DataFrame(
        schema={"path_a": df.schema["id"], "path_b": df.schema["id"], "distance": pl.Int64()}
    )
    if df.height < 2:
        return empty
    h = df["h"].to_numpy()
    idx = df["i"].to_numpy()
    candidates = []
    for shift, width in bands(bits, max_distance + 1):
        band = (h >> np.uint64(shift)) & np.uint64((1 << width) - 1)
        b = pl.DataFrame({"i": idx, "b": band})
        j = b.join(b, on="b", suffix="_r").filter(pl.col("i") < pl.col("i_r"))
        candidates.append(j.select("i", "i_r"))
    cand = pl.concat(candidates).unique()
    if cand.height == 0:
        return empty
    a = cand["i"].to_numpy()
    r = cand["i_r"].to_numpy()
    dist = np.bitwise_count(h[a] ^ h[r]).astype(np.int64)
    keep = dist <= max_distance
    ids = df["id"]
    return pl.DataFrame(
        {
            "path_a": ids.gather(a[keep]),
            "path_b": ids.gather(r[keep]),
            "distance": dist[keep],
        }
    ).sort("path_a", "path_b")
