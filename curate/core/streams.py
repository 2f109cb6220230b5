"""Data on its way out: a split as a stream of Arrow record batches.

Its own module, below the families and the writers, so that a family can hand its records to
:mod:`curate.publish.folder` without importing it (the layers go data types → families → publish).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa

__all__ = ["SplitData", "SplitStream"]


@dataclass
class SplitStream:
    """One split as record batches made on demand, with the schema every batch has.

    Why not a table: a family's records can be far bigger than memory (a 200k-case MQuAKE export
    is ~0.8 GB of Arrow data, the families to come read hundreds of GB). ``batches`` is called
    each time the stream is iterated, so a stream can be read more than once (each read redoes
    the work). ``num_rows`` is the row count the family expects, when it knows it before reading
    (the writer checks it: a differing count means the input changed under us).
    ``row_group_bytes`` caps the uncompressed bytes per parquet row group the split is written
    in, below the writer's own limit; None: the writer's limit alone. Rows that are long nested
    lists need less: parquet holds a nested column's levels beside its values, several times
    the row group's Arrow size in memory. Why on the stream and not an option of the writer or
    a setting of the family: it follows from the rows' shape, which the stream's maker knows.
    """

    schema: pa.Schema
    batches: Callable[[], Iterable[pa.RecordBatch]]
    num_rows: int | None = None
    row_group_bytes: int | None = None

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        return iter(self.batches())

    def to_table(self) -> pa.Table:
        """The whole split in memory (for tests and small data)."""
        return pa.Table.from_batches(list(self), schema=self.schema)

    @classmethod
    def from_table(cls, table: pa.Table, max_rows: int = 65_536) -> SplitStream:
        """A table sliced into batches (zero-copy), for families whose tables are small."""
        return cls(
            table.schema,
            lambda: table.to_batches(max_chunksize=max_rows),
            table.num_rows,
        )


SplitData = pa.Table | SplitStream | Iterable[pa.RecordBatch]


def small_types(schema: pa.Schema) -> pa.Schema:
    """``schema`` with Arrow's 64-bit-offset types (``large_string``, ``large_list``, what
    polars produces) as their plain forms: the types readers of the published data expect
    (``datasets`` features say ``string``, not ``large_string``), for columns far below 2 GB
    per batch."""

    def small(t: pa.DataType) -> pa.DataType:
        if pa.types.is_large_string(t):
            return pa.string()
        if pa.types.is_large_binary(t):
            return pa.binary()
        if pa.types.is_large_list(t) or pa.types.is_list(t):
            return pa.list_(pa.field(t.value_field.name, small(t.value_type)))
        if pa.types.is_struct(t):
            return pa.struct([pa.field(f.name, small(f.type), f.nullable) for f in t])
        return t

    return pa.schema([pa.field(f.name, small(f.type), f.nullable) for f in schema])
