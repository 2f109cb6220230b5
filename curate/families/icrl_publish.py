"""Writing learning histories out: episodes or segments as Arrow batches, and a cleaned HDF5 file.

**Export** (:func:`export_stream`): one row per episode (``--unit episode``) or per fixed-length
segment of a history (``--unit segment --segment-length N``), streamed as record batches of about
:data:`BATCH_STEPS` steps, so memory follows the batch (and one open episode), never the file.
Columns::

    task, history, env_id, benchmark_id, ruleset_id      where the row comes from
    episode | segment                                    its index within the history
    step_start, step_end                                 its steps in the history (end exclusive)
    length                                               step_end - step_start
    done                                                 its last step is a done
    episode_return (episodes)                            the sum of its rewards
    states          list<fixed_size_list<fixed_size_list<uint8>[5]>[5]>   (length, 5, 5)
    actions, expert_actions   list<uint8>
    rewards         list<float16>   as stored (the file's dtype: XLand's float16, what
                                    ``datasets``' hdf5 loader gives; polars and pyarrow read it)
    dones           list<bool>

``states`` keeps the file's packing (``tile * 12 + colour`` per cell): with
``datasets.Dataset.with_format("numpy")`` a row's ``states`` is an array of shape
``(length, 5, 5)``, exactly ``f[task]["states"][history, step_start:step_end]``. An episode's
last row per history is the unfinished episode (``done`` false) when the history ends mid-episode,
so the rows of a history cover every one of its steps, as segments do (the last segment may be
shorter than N).

**Fix** (:func:`write_fixed`): the groups a fix pass keeps (:class:`GroupCopy`, from the records
frame the core's fix engine left, see :meth:`curate.families.icrl.IcrlFamily.write_fixed`): a
group kept whole is copied by HDF5 itself (``H5Ocopy``: the compressed chunks as they are, with
every attribute); a group that loses histories gets datasets with the input's exact creation
properties (dtype, chunks, gzip level, shuffle, fill value) and the kept histories' chunks
copied raw (``read_direct_chunk``/``write_direct_chunk``: no decompression, no recompression, the
bytes of the input). Memory: one chunk at a time.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import polars as pl
import pyarrow as pa

from curate.core.streams import SplitStream
from curate.io.xland_scan import BLOCK_STEPS, block_edges
from curate.schemas.icrl import DATASETS, DROPPED_ATTR, VIEW

#: Steps per exported record batch (about 3.8 MB of arrays; at least one row per batch).
BATCH_STEPS = 1 << 17
#: Bytes per parquet row group of an export (the stream's cap, see :func:`export_stream`).
ROW_GROUP_BYTES = 16_000_000

_META = {
    "task": pa.string(),
    "history": pa.int32(),
    "env_id": pa.string(),
    "benchmark_id": pa.string(),
    "ruleset_id": pa.int64(),
}
_STATE = pa.list_(pa.list_(pa.uint8(), VIEW[1]), VIEW[0])
_STEPS = {
    "states": pa.list_(_STATE),
    "actions": pa.list_(pa.uint8()),
    "rewards": pa.list_(pa.float32()),
    "dones": pa.list_(pa.bool_()),
    "expert_actions": pa.list_(pa.uint8()),
}


def export_schema(unit: str, rewards: pa.DataType | None = None) -> pa.Schema:
    """The exported columns for ``unit`` ("episode" or "segment"), ``rewards`` of the file's
    dtype (float32 when not given)."""
    fields = [pa.field(k, t) for k, t in _META.items()]
    fields.append(pa.field(unit, pa.int32()))
    fields += [
        pa.field("step_start", pa.int64()),
        pa.field("step_end", pa.int64()),
        pa.field("length", pa.int32()),
        pa.field("done", pa.bool_()),
    ]
    if unit == "episode":
        fields.append(pa.field("episode_return", pa.float32()))
    steps = dict(_STEPS)
    if rewards is not None:
        steps["rewards"] = pa.list_(rewards)
    fields += [pa.field(k, t) for k, t in steps.items()]
    return pa.schema(fields)


def _rewards_type(path: str, tasks: list[str]) -> pa.DataType:
    """The Arrow type of the file's rewards: the widest dtype any exported task stores them in
    (one type for the column, and no value narrowed)."""
    with h5py.File(path, "r") as f:
        dtypes = [f[t]["rewards"].dtype for t in dict.fromkeys(tasks) if "rewards" in f[t]]
    return pa.from_numpy_dtype(np.result_type(*dtypes)) if dtypes else pa.float32()


class _Batch:
    """Rows being gathered into one record batch."""

    def __init__(self, unit: str) -> None:
        self.unit = unit
        self.meta: list[dict[str, Any]] = []  # one per piece: the history's columns
        self.pieces: list[tuple[int, np.ndarray, np.ndarray, list[np.ndarray]]] = []
        self.steps = 0
        self.rows = 0

    def add(
        self,
        meta: dict[str, Any],
        first_index: int,
        starts: np.ndarray,
        lengths: np.ndarray,
        arrays: list[np.ndarray],
    ) -> None:
        """Rows ``first_index, first_index+1, …`` of one history: their start steps and lengths,
        and the five arrays over exactly their steps (copied: the reader reuses its buffers)."""
        self.meta.append(meta)
        self.pieces.append((first_index, starts, lengths, [a.copy() for a in arrays]))
        self.steps += int(lengths.sum())
        self.rows += int(lengths.size)

    def build(self, schema: pa.Schema) -> pa.RecordBatch:
        n = [p[1].size for p in self.pieces]
        cols = {
            "task": pa.array(np.repeat([m["task"] for m in self.meta], n).tolist(), pa.string()),
            "history": pa.array(np.repeat([m["history"] for m in self.meta], n), pa.int32()),
            "env_id": pa.array(
                np.repeat([m["env_id"] for m in self.meta], n).tolist(), pa.string()
            ),
            "benchmark_id": pa.array(
                np.repeat([m["benchmark_id"] for m in self.meta], n).tolist(), pa.string()
            ),
            "ruleset_id": pa.array(
                [m["ruleset_id"] for m, k in zip(self.meta, n, strict=True) for _ in range(k)],
                pa.int64(),
            ),  # (a list: a null ruleset id must stay null, not become a float NaN)
        }
        starts = np.concatenate([p[1] for p in self.pieces])
        lengths = np.concatenate([p[2] for p in self.pieces])
        index = np.concatenate([np.arange(p[0], p[0] + p[1].size) for p in self.pieces])
        arrays = [np.concatenate([p[3][i] for p in self.pieces]) for i in range(len(DATASETS))]
        states, actions, rewards, dones, experts = arrays
        offsets = np.zeros(lengths.size + 1, dtype=np.int32)
        np.cumsum(lengths, out=offsets[1:])
        ends = offsets[1:] - 1
        cols[self.unit] = pa.array(index, pa.int32())
        cols["step_start"] = pa.array(starts, pa.int64())
        cols["step_end"] = pa.array(starts + lengths, pa.int64())
        cols["length"] = pa.array(lengths, pa.int32())
        cols["done"] = pa.array(dones[ends], pa.bool_())
        r32 = rewards.astype(np.float32)
        if self.unit == "episode":
            cols["episode_return"] = pa.array(
                np.add.reduceat(r32, offsets[:-1]) if lengths.size else r32[:0], pa.float32()
            )
        off = pa.array(offsets, pa.int32())
        flat = pa.array(np.ascontiguousarray(states).reshape(-1), pa.uint8())
        cell_rows = pa.FixedSizeListArray.from_arrays(flat, VIEW[1])
        views = pa.FixedSizeListArray.from_arrays(cell_rows, VIEW[0])
        cols["states"] = pa.ListArray.from_arrays(off, views)
        cols["actions"] = pa.ListArray.from_arrays(off, pa.array(actions, pa.uint8()))
        stored = schema.field("rewards").type.value_type
        cols["rewards"] = pa.ListArray.from_arrays(
            off, pa.array(rewards.astype(stored.to_pandas_dtype(), copy=False), stored)
        )
        cols["dones"] = pa.ListArray.from_arrays(off, pa.array(dones, pa.bool_()))
        cols["expert_actions"] = pa.ListArray.from_arrays(off, pa.array(experts, pa.uint8()))
        return pa.RecordBatch.from_arrays([cols[f.name] for f in schema], schema=schema)


def _cuts(unit: str, size: int, first_step: int, dones: np.ndarray) -> np.ndarray:
    """Ends (exclusive, buffer positions) of the complete rows in a buffer of ``size`` steps
    starting at history step ``first_step``: after each done, or at each multiple of ``size``."""
    if unit == "episode":
        return np.flatnonzero(dones) + 1
    first = size - first_step % size
    return np.arange(first, dones.size + 1, size)


def _rows_of(
    f: h5py.File, meta: dict[str, Any], unit: str, segment: int, batch_steps: int
) -> Iterator[tuple[int, np.ndarray, np.ndarray, list[np.ndarray]]]:
    """One history's rows as ``(first row index, starts, lengths, arrays)`` pieces, read in
    chunk-aligned blocks; an episode or segment crossing a block edge is carried over."""
    grp = f[meta["task"]]
    ds = [grp[d] for d in DATASETS]
    h, steps = meta["history"], int(ds[1].shape[1])
    chunk = ds[1].chunks[1] if ds[1].chunks else 4096
    carry: list[np.ndarray] | None = None
    carry_start = 0  # history step of the buffer's first step
    index = 0
    for a, b in block_edges(steps, chunk, batch_steps):
        block = [d[h, a:b] for d in ds]
        buf = (
            block if carry is None else [np.concatenate(p) for p in zip(carry, block, strict=True)]
        )
        ends = _cuts(unit, segment, carry_start, buf[3])
        if ends.size:
            starts = np.concatenate(([0], ends[:-1]))
            yield index, starts + carry_start, ends - starts, [x[: ends[-1]] for x in buf]
            index += ends.size
            last = int(ends[-1])
        else:
            last = 0
        carry = [x[last:] for x in buf] if last < buf[0].shape[0] else None
        carry_start += last
    if carry is not None and carry[0].shape[0]:
        n = carry[0].shape[0]
        yield index, np.array([carry_start]), np.array([n]), carry


def export_stream(
    path: str,
    keep: pl.DataFrame,
    unit: str,
    segment: int,
    rows: int | None,
    *,
    batch_steps: int = BATCH_STEPS,
) -> SplitStream:
    """The split of the histories in ``keep`` (columns ``task, history, env_id, benchmark_id,
    ruleset_id``, in output order) of the file at ``path``, as a stream of record batches."""
    metas = keep.select(list(_META)).to_dicts()
    schema = export_schema(unit, _rewards_type(path, [str(m["task"]) for m in metas]))

    def batches() -> Iterator[pa.RecordBatch]:
        batch = _Batch(unit)
        with h5py.File(path, "r") as f:
            for meta in metas:
                for first, starts, lengths, arrays in _rows_of(
                    f, meta, unit, segment, max(batch_steps, BLOCK_STEPS)
                ):
                    batch.add(
                        meta, first, starts.astype(np.int64), lengths.astype(np.int64), arrays
                    )
                    if batch.steps >= batch_steps:
                        yield batch.build(schema)
                        batch = _Batch(unit)
        if batch.rows:
            yield batch.build(schema)

    # 16 MB row groups (about 500k steps): parquet holds the repetition and definition levels
    # of ``states``' 25 uint8 cells per step beside them, so writing a 100 MB row group peaked
    # at 1.4 GB; at 16 MB an export peaks near 0.6 GB (measured on a 3.9M-step file), whatever
    # the file's size.
    return SplitStream(schema, batches, rows, row_group_bytes=ROW_GROUP_BYTES)


# --------------------------------------------------------------------------- the fixed file


def _copy_attrs(src: Any, dst: Any) -> None:
    for k in src.attrs:
        dst.attrs[k] = src.attrs[k]


def _like(src: h5py.Dataset, group: h5py.Group, histories: int) -> h5py.Dataset:
    """A dataset in ``group`` made exactly like ``src`` (type, creation properties: chunks,
    filters and their levels, fill value) but with ``histories`` rows."""
    shape = (histories, *src.shape[1:])
    first = None if src.maxshape[0] is None else histories
    maxshape = tuple(h5py.h5s.UNLIMITED if m is None else m for m in (first, *src.maxshape[1:]))
    space = h5py.h5s.create_simple(shape, maxshape)
    dsid = h5py.h5d.create(
        group.id,
        src.name.rsplit("/", 1)[-1].encode(),
        src.id.get_type(),
        space,
        dcpl=src.id.get_create_plist(),
    )
    out = h5py.Dataset(dsid)
    _copy_attrs(src, out)
    return out


def _copy_rows(src: h5py.Dataset, dst: h5py.Dataset, kept: list[int]) -> None:
    """Rows ``kept`` of ``src`` into rows ``0, 1, …`` of ``dst``: raw chunks when a chunk holds
    one history (the published layout), else decompressed and recompressed block by block."""
    chunks = src.chunks
    if chunks is not None and chunks[0] == 1:
        grid = [range(0, n, c) for n, c in zip(src.shape[1:], chunks[1:], strict=True)]
        for new, old in enumerate(kept):
            for rest in itertools.product(*grid):
                try:
                    mask, raw = src.id.read_direct_chunk((old, *rest))
                except (OSError, KeyError, ValueError):  # never written: the fill value
                    continue
                dst.id.write_direct_chunk((new, *rest), raw, filter_mask=mask)
        return
    steps = src.shape[1] if src.ndim > 1 else 0
    for new, old in enumerate(kept):
        if src.ndim == 1:
            dst[new] = src[old]
            continue
        for a in range(0, steps, BLOCK_STEPS):
            dst[new, a : a + BLOCK_STEPS] = src[old, a : a + BLOCK_STEPS]


@dataclass(frozen=True)
class GroupCopy:
    """One root member of the fixed file: where it comes from and what of it is kept."""

    #: its name in the file read (the input, or an earlier fix pass's file)
    source: str
    #: its name in the fixed file
    name: str
    kind: str
    #: histories of the source group (0 for a member that is not a task group)
    histories: int
    #: the source's indices of the histories kept, in order
    kept: tuple[int, ...]
    #: the input's indices of every history left out so far (the ``curate-dropped-histories``
    #: attribute; empty: the group is copied whole, attributes and all)
    dropped: tuple[int, ...] = ()


def write_fixed(
    src_path: str,
    dst_path: Path,
    groups: Sequence[GroupCopy],
    progress: Callable[[str, int], None] | None = None,
) -> None:
    """Write the fixed file: ``groups``, renamed, with their kept histories."""
    with h5py.File(src_path, "r") as src, h5py.File(dst_path, "w") as dst:
        _copy_attrs(src, dst)
        done = 0
        for g in groups:
            obj = src.get(g.source, getlink=False)
            if obj is None:  # a dangling or external link kept (RL003 ignored): as a link
                link = src.get(g.source, getlink=True)
                if isinstance(link, h5py.SoftLink):
                    dst[g.name] = h5py.SoftLink(link.path)
                elif isinstance(link, h5py.ExternalLink):
                    dst[g.name] = h5py.ExternalLink(link.filename, link.path)
                continue
            if g.kind != "group" or len(g.kept) == g.histories:
                src.copy(obj, dst, name=g.name)
            else:
                out = dst.create_group(g.name)
                _copy_attrs(obj, out)
                out.attrs[DROPPED_ATTR] = np.array(g.dropped, dtype=np.int64)
                for name, member in obj.items():
                    if (
                        isinstance(member, h5py.Dataset)
                        and member.ndim >= 1
                        and member.shape[0] == g.histories
                    ):
                        _copy_rows(member, _like(member, out, len(g.kept)), list(g.kept))
                    else:
                        obj.copy(member, out, name=name)
            done += len(g.kept)
            if progress:
                progress(f"fix: wrote group {g.name}", done)


def kept_per_group(groups: Sequence[GroupCopy]) -> dict[str, int]:
    """Histories per task group of the fixed file (its group names, in order)."""
    return {g.name: len(g.kept) for g in groups if g.kind == "group" and g.kept}


def config_name(histories: int) -> str:
    return f"histories-{histories}"


def configs(path: Path, name: str, kept: dict[str, int]) -> dict[str, dict[str, Any]] | None:
    """The card's ``configs`` for the fixed file ``path`` (``name`` in its folder) when its task
    groups hold unequal numbers of histories, else None (one config for the file).

    Why: the ``hdf5`` builder of ``datasets`` reads a file as ONE table, a column per task group
    and a row per history index, its row count taken from the first group in HDF5's name
    order. A later group with more histories is cut to that count without a word (rows lost),
    one with fewer fails the load. It reads only the groups a config's ``features`` name, so
    one config per history count, each naming its groups (features as the builder infers them
    from the file), reads every history of every group; the default is the count most groups
    have (the larger count on a tie).
    """
    counts = sorted(set(kept.values()), reverse=True)
    if len(counts) <= 1:
        return None
    from datasets import Features
    from datasets.packaged_modules.hdf5.hdf5 import _infer_feature

    members: dict[int, list[str]] = {k: [] for k in counts}
    for g, k in kept.items():
        members[k].append(g)
    default = max(counts, key=lambda k: (len(members[k]), k))
    out: dict[str, dict[str, Any]] = {}
    with h5py.File(path, "r") as f:
        for k in counts:
            feats = {}
            for g in members[k]:
                grp = f[g]
                feats[g] = Features(
                    {d: _infer_feature(grp[d]) for d in grp if isinstance(grp[d], h5py.Dataset)}
                )
            entry: dict[str, Any] = {
                "data_files": [{"split": "train", "path": name}],
                "features": Features(feats)._to_yaml_list(),
            }
            if k == default:
                entry["default"] = True
            out[config_name(k)] = entry
    return out


__all__ = [
    "BATCH_STEPS",
    "GroupCopy",
    "config_name",
    "configs",
    "export_schema",
    "export_stream",
    "kept_per_group",
    "write_fixed",
]
