"""The glycan family's normalised tables: what the reader builds and the rules read.

Each input becomes a :class:`GlycanTable`: the original columns (``raw``, kept for export) beside a
normalised frame (``rows``) that the rules read — one row per input row with the glycan, its
canonical key or parse error, the split, and every label as a *list* of strings — and, for
interaction matrices, a long ``cells`` frame. The reader (:mod:`curate.families.glycan`) builds
them; the rules and fixes (:mod:`curate.audits.glycan`) read them. Why a module of its own beside
the column detection and row models (:mod:`curate.schemas.glycan`): these need polars and
pyarrow, and both sit below the rules, so the rules never import the reader.

The helpers below are shared by the export (reader side) and ``fix`` (rules side): one table at a
time, which rows and matrix columns are invalid, and the per-split Arrow tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl
import pyarrow as pa

from curate.core.dataset import LoadedDataset
from curate.core.errors import InputError, UsageError
from curate.core.keys import Keys
from curate.io.read import SPLIT_FROM_LAYOUT
from curate.schemas.glycan import Columns

__all__ = [
    "GLYCAN_KEYS",
    "ID_COLUMNS",
    "GlycanData",
    "GlycanTable",
    "glycan_key_table",
    "invalid_rows_and_columns",
    "single_table",
    "split_tables",
]

#: Columns that may hold a row id: the reader names records by the first one present (when its
#: values are unique), and duplicate checks leave them out of the comparison.
ID_COLUMNS = ("glycan_id", "id", "glycowork_row", "row_id")


def glycan_key_table(data: LoadedDataset) -> pl.DataFrame:
    """``record, split, key`` over every table's rows that have a canonical key: ``curate
    overlap --key glycan`` (:data:`GLYCAN_KEYS`)."""
    assert isinstance(data, GlycanData)
    return (
        data.all_rows()
        .filter(pl.col("key").is_not_null())
        .select(pl.col("record").cast(pl.String), pl.col("split").cast(pl.String), "key")
    )


#: The family's declaration for the shared leakage joins: two rows are the same glycan when
#: their canonical ``key`` is (whatever the spelling; the raw text where it does not parse),
#: and a glycan must not be in an evaluation split and in train. Also ``curate overlap --key
#: glycan``.
GLYCAN_KEYS = Keys(
    "glycan",
    ("key",),
    doc="canonical key of the IUPAC-condensed glycan (branch order and spelling "
    "normalised, as GL401/GL402 compare them); unparsable glycans are left out",
    table=glycan_key_table,
)


@dataclass
class GlycanTable:
    """One input table: its columns, the original data and the normalised rows."""

    index: int
    path: str
    columns: Columns
    raw: pl.DataFrame
    rows: pl.DataFrame
    cells: pl.DataFrame | None = None  # interaction matrices only
    #: raw index → the record as read, for rows whose list/object cells had to become text in
    #: ``raw`` (mixed-type columns): the changelog logs a dropped row as it really was.
    originals: dict[int, dict[str, Any]] = field(default_factory=dict, repr=False)
    #: Columns that were text in a typed input (JSON, parquet): published as text even when
    #: every value is digits (a CSV has no types, so its number-like columns become numbers).
    text_columns: frozenset[str] = frozenset()
    #: Derived frames shared by several rules within one run (the table never changes).
    cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def task(self) -> str:
        return self.columns.task

    @property
    def label_names(self) -> list[str]:
        return self.columns.label_names


@dataclass
class GlycanData(LoadedDataset):
    tables: list[GlycanTable] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    def record_splits(self) -> pl.DataFrame | None:
        """Each row's split (``row``, ``split``) over every table, for the HTML report's split
        filter."""
        return (
            pl.concat([t.rows.select("row", "split") for t in self.tables]) if self.tables else None
        )

    def all_rows(self) -> pl.DataFrame:
        """Rows of every table (label columns differ between tasks, so only shared columns)."""
        shared = ["row", "table", "record", "split", "glycan", "key", "error", "valid", "in_task"]
        return pl.concat([t.rows.select(shared) for t in self.tables])


def invalid_rows_and_columns(t: GlycanTable, invalid: pl.DataFrame) -> tuple[set[int], list[str]]:
    """The table's invalid rows (global row numbers) and its invalid matrix glycan columns."""
    first, last = 0, -1
    if t.rows.height:
        lo, hi = t.rows["row"].min(), t.rows["row"].max()
        assert isinstance(lo, int) and isinstance(hi, int)  # row numbers: integers, never null
        first, last = lo, hi
    rows = {r for r in invalid["row"].drop_nulls().to_list() if first <= r <= last}
    columns = sorted(
        set(invalid.filter(pl.col("row").is_null())["field"].drop_nulls().to_list())
        & set(t.columns.glycan_columns)
    )
    return rows, columns


def single_table(data: GlycanData) -> GlycanTable:
    """The one table ``fix`` and ``export`` work on; several tables are a usage error."""
    if len(data.tables) != 1:
        raise UsageError(
            "fix/export take one glycan table at a time (got "
            f"{len(data.tables)}); audit several together for cross-task leakage"
        )
    return data.tables[0]


def split_tables(table: GlycanTable, raw: pl.DataFrame, split: pl.Series) -> dict[str, pa.Table]:
    """Raw columns (fixed) per split; the split column itself stays in the data too."""
    out_cols = [c for c in raw.columns if c != SPLIT_FROM_LAYOUT]
    df = raw.select(out_cols).with_columns(split.fill_null("train").alias("__s"))
    tables = {}
    for name in ("train", "validation", "test"):
        part = df.filter(pl.col("__s") == name).drop("__s")
        if part.height:
            tables[name] = part.to_arrow()
    others = df.filter(~pl.col("__s").is_in(["train", "validation", "test"]))
    if others.height:
        bad = others["__s"].unique().sort().to_list()[:5]
        raise InputError(
            f"unknown split names {bad} in {others.height} rows: use train/validation/test "
            "(or fix the split column before exporting)",
            path=table.path,
            field=table.columns.split or ", ".join(table.columns.split_flags.values()) or None,
        )
    return tables
