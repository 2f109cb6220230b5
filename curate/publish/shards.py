"""Parquet shards of one split: Arrow batches cast to the declared features, cut into files
under a byte (and optional row) limit and row groups under a byte limit, each file hashed as it
is written.

Why limits in bytes: the Hub's viewer and ``datasets`` stream row groups, and a row group of
long nested lists (a learning history) can be gigabytes at a fixed row count.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from curate.core.errors import InputError, UsageError
from curate.core.streams import SplitStream
from curate.io.typed import CLASS_LABELS

if TYPE_CHECKING:  # datasets is imported when features are written
    import datasets

#: Uncompressed Arrow bytes per parquet file: ``datasets``' default ``max_shard_size`` ("500MB").
MAX_SHARD_BYTES = 500_000_000


#: Uncompressed Arrow bytes per row group: the Dataset Viewer's limit (``datasets``' "100MB").
MAX_ROW_GROUP_BYTES = 100_000_000


@dataclass
class _SplitResult:
    rows: int = 0
    num_bytes: int = 0
    shards: list[tuple[str, int, str]] = field(default_factory=list)  # (relpath, size, sha256)


def declared_features(features: Any, schemas: list[pa.Schema]) -> datasets.Features:
    """``datasets.Features`` to write: the given ones, or the splits' schemas unified (any
    other metadata dropped: a table read from the Hub carries the features it had there, which
    a fix may have made untrue), the columns :data:`CLASS_LABELS` names as ``ClassLabel``."""
    import datasets

    if features is not None:
        if isinstance(features, pa.Schema):
            return datasets.Features.from_arrow_schema(features)
        return datasets.Features(features)
    plain = list(dict.fromkeys(s.remove_metadata() for s in schemas))
    unified = plain[0] if len(plain) == 1 else pa.unify_schemas(plain, promote_options="permissive")
    out = datasets.Features.from_arrow_schema(unified)
    labels = [
        json.loads(s.metadata[CLASS_LABELS]) for s in schemas if CLASS_LABELS in (s.metadata or {})
    ]
    for name, names in (labels[0] if labels else {}).items():
        if name in out and pa.types.is_integer(unified.field(name).type):
            out[name] = datasets.ClassLabel(names=names)
    return out


@dataclass(frozen=True)
class Limits:
    rows: int | None
    shard_bytes: int
    group_bytes: int


def writer_options(schema: pa.Schema) -> dict[str, Any]:
    """The parquet writer settings ``datasets`` uses (its ``ParquetWriter``): content-defined
    chunking with its default options, the page index, and its per-column compression and
    dictionary choices (``get_parquet_column_options``), taken from ``datasets`` itself.

    Why: the Hub's storage (Xet) de-duplicates uploads by content-defined chunks; with pages
    cut where the content says, a remaster that changes 1 % of the rows re-uses the unchanged
    pages of the original's files instead of uploading the whole dataset again."""
    from datasets import Features, config
    from datasets.arrow_writer import get_parquet_column_options

    features = Features.from_arrow_schema(schema)
    return {
        "use_content_defined_chunking": config.DEFAULT_CDC_OPTIONS,
        "write_page_index": True,
        **get_parquet_column_options(features, schema),
    }


def _cdc_mark() -> dict[str, str]:
    from datasets import config

    return {"content_defined_chunking": json.dumps(config.DEFAULT_CDC_OPTIONS)}


class _ShardWriter:
    """Writes one split: row groups buffered up to the byte limit, shards cut by bytes/rows."""

    def __init__(self, folder: Path, split: str, schema: pa.Schema, limits: Limits) -> None:
        self.folder = folder
        self.split = split
        self.schema = schema
        self.limits = limits
        self.paths: list[Path] = []
        self.writer: pq.ParquetWriter | None = None
        self.shard_rows = 0  # written into the open shard
        self.shard_bytes = 0
        self.pending: list[pa.RecordBatch] = []  # the next row group
        self.pending_rows = 0
        self.pending_bytes = 0
        self.rows = 0
        self.options = writer_options(schema)

    # capacity left in the open shard / row group
    def _room_rows(self) -> int | None:
        if self.limits.rows is None:
            return None
        return self.limits.rows - self.shard_rows - self.pending_rows

    def _room_bytes(self) -> int:
        return min(
            self.limits.shard_bytes - self.shard_bytes - self.pending_bytes,
            self.limits.group_bytes - self.pending_bytes,
        )

    def add(self, batch: pa.RecordBatch) -> None:
        offset, n = 0, batch.num_rows
        while offset < n:
            room_rows = self._room_rows()
            take = n - offset if room_rows is None else min(n - offset, room_rows)
            if take <= 0:
                self._close_shard()
                continue
            piece = batch.slice(offset, take)
            size = piece.nbytes
            room = self._room_bytes()
            while size > room and take > 1:
                # shrink by the average row size, at least by one row per step
                take = max(1, min(take - 1, int(take * room / size)))
                piece = batch.slice(offset, take)
                size = piece.nbytes
            if size > room:  # not even one row fits what is left
                if self.pending_rows:  # a new row group first, then try again
                    self._flush_group()
                    continue
                if self.shard_rows and self.limits.shard_bytes - self.shard_bytes < size:
                    self._close_shard()  # a new shard, then try again
                    continue
                # else: one row bigger than a row group may be; it gets a row group of its own
            self.pending.append(piece)
            self.pending_rows += take
            self.pending_bytes += size
            offset += take
            if self.pending_bytes >= self.limits.group_bytes:
                self._flush_group()
            if self._room_rows() == 0:
                self._close_shard()
        self.rows += n

    def _flush_group(self) -> None:
        if not self.pending:
            return
        if self.writer is None:
            path = self.folder / f".{self.split}-{len(self.paths):05d}.parquet.partial"
            self.paths.append(path)
            self.writer = pq.ParquetWriter(path, self.schema, **self.options)
            self.writer.add_key_value_metadata(_cdc_mark())
        group = pa.Table.from_batches(self.pending, schema=self.schema)
        self.writer.write_table(group, row_group_size=max(1, group.num_rows))
        self.shard_rows += self.pending_rows
        self.shard_bytes += self.pending_bytes
        self.pending, self.pending_rows, self.pending_bytes = [], 0, 0

    def _close_shard(self) -> None:
        self._flush_group()
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        self.shard_rows = self.shard_bytes = 0

    def finish(self) -> list[Path]:
        """Close the last shard and give every shard its final name (``-of-`` the total)."""
        self._close_shard()
        if not self.paths:  # an empty split still gets a (row-less) file, so it loads
            path = self.folder / f".{self.split}-00000.parquet.partial"
            pq.write_table(self.schema.empty_table(), path, **self.options)
            self.paths.append(path)
        n = len(self.paths)
        final = []
        for i, path in enumerate(self.paths):
            target = self.folder / f"{self.split}-{i:05d}-of-{n:05d}.parquet"
            os.replace(path, target)
            final.append(target)
        return final


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with exactly ``schema``'s columns and types (metadata included)."""
    if batch.schema.remove_metadata() == schema.remove_metadata():
        return pa.RecordBatch.from_arrays(batch.columns, schema=schema)
    extra = [n for n in batch.schema.names if n not in schema.names]
    if extra:
        raise UsageError(f"a record batch has columns the features do not declare: {extra}")
    arrays = [
        batch.column(f.name) if f.name in batch.schema.names else pa.nulls(len(batch), f.type)
        for f in schema
    ]
    try:
        return pa.RecordBatch.from_arrays(
            [
                a.cast(f.type) if a.type != f.type else a
                for a, f in zip(arrays, schema, strict=True)
            ],
            schema=schema,
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise UsageError(f"a record batch does not fit the declared features: {e}") from None


def write_split(
    folder: Path, split: str, stream: SplitStream, schema: pa.Schema, limits: Limits
) -> _SplitResult:
    if stream.row_group_bytes is not None and stream.row_group_bytes < limits.group_bytes:
        limits = replace(limits, group_bytes=stream.row_group_bytes)  # the rows' own cap
    writer = _ShardWriter(folder / "data", split, schema, limits)
    try:
        for batch in stream:
            if batch.num_rows:
                writer.add(_conform(batch, schema))
        paths = writer.finish()
    finally:
        if writer.writer is not None:
            writer.writer.close()
    if stream.num_rows is not None and stream.num_rows != writer.rows:
        raise InputError(
            f"split {split}: expected {stream.num_rows} records, read {writer.rows} "
            "(did an input change during the export?)"
        )
    result = _SplitResult(rows=writer.rows)
    for path in paths:
        # num_bytes as ``datasets`` counts it: the Arrow size of the data read back from the file
        # (row group by row group, so memory stays at one row group).
        pf = pq.ParquetFile(path)
        result.num_bytes += sum(
            pf.read_row_group(i).nbytes for i in range(pf.metadata.num_row_groups)
        )
        result.shards.append((f"data/{path.name}", path.stat().st_size, _sha256(path)))
    return result


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()
