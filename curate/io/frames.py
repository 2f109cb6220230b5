"""Tables given in memory: a polars or pandas DataFrame, a pyarrow Table, a ``datasets.Dataset``
or ``DatasetDict``, passed to the API where a path would go.

Why an input kind of its own and not "write it to a temporary parquet file": a notebook user
auditing a 10 M-row frame should not pay for a copy on disk, and the findings must name the
object (``<pandas DataFrame>``), not a temporary path. :func:`as_input` wraps the object in a
:class:`MemoryTable`, a ``str`` (its display name) carrying the frame, so it travels through
the API's path handling like ``-`` or ``hf://``; a family that reads frames
(:attr:`~curate.families.base.InputSpec.frames`) takes it back with :func:`in_memory`.

A ``DatasetDict``'s splits become the rows' splits, as a dataset folder's layout does.

May import: ``curate.core`` and the rest of ``curate.io``.
"""

from __future__ import annotations

import hashlib
from abc import ABCMeta
from typing import TYPE_CHECKING, Any

import polars as pl

from curate.core.errors import InputError
from curate.io.read import SPLIT_FROM_LAYOUT

if TYPE_CHECKING:
    from typing_extensions import TypeIs

__all__ = ["MemoryTable", "TableLike", "as_input", "in_memory", "is_frame"]


class MemoryTable(str):
    """An in-memory table as an input: the string is its name in reports."""

    frame: pl.DataFrame
    kind: str
    sha256: str

    def __new__(cls, frame: pl.DataFrame, kind: str) -> MemoryTable:
        self = super().__new__(cls, f"<{kind}>")
        self.frame = frame
        self.kind = kind
        self.sha256 = _digest(frame)
        return self

    @property
    def name(self) -> str:
        return str(self)


def _kind(obj: Any) -> str | None:
    """The kind of table ``obj`` is, by its class's module (no import of pandas or datasets
    just to ask)."""
    return _kind_of(type(obj))


def _kind_of(cls: type) -> str | None:
    module = cls.__module__.split(".", 1)[0]
    names = {
        ("polars", "DataFrame"): "polars DataFrame",
        ("polars", "LazyFrame"): "polars LazyFrame",
        ("pandas", "DataFrame"): "pandas DataFrame",
        ("pyarrow", "Table"): "pyarrow Table",
        ("datasets", "Dataset"): "datasets Dataset",
        ("datasets", "DatasetDict"): "datasets DatasetDict",
    }
    return names.get((module, cls.__name__))


class TableLike(metaclass=ABCMeta):  # noqa: B024 (a check, nothing to implement)
    """What the API takes as a table in memory, for its argument checks:
    ``isinstance(df, TableLike)`` holds for the kinds :func:`as_input` reads, without
    importing pandas or ``datasets`` to ask."""

    #: How argument errors name it (``paths: expected a path or a DataFrame ...``).
    described_as = "a DataFrame (polars, pandas), a pyarrow Table or a datasets Dataset"

    @classmethod
    def __subclasshook__(cls, sub: type) -> bool:
        return _kind_of(sub) is not None


def is_frame(obj: Any) -> TypeIs[TableLike]:
    """Is ``obj`` a table the API takes in place of a path? (Exactly ``isinstance(obj,
    TableLike)``, which lets a type checker narrow a path-or-table argument either way.)"""
    return _kind(obj) is not None


def as_input(obj: Any) -> MemoryTable:
    """``obj`` as an input (see the module doc)."""
    kind = _kind(obj)
    assert kind is not None
    if kind == "polars DataFrame":
        frame = obj
    elif kind == "polars LazyFrame":
        frame = obj.collect()
    elif kind == "pandas DataFrame":
        frame = _pandas_frame(obj)
    elif kind == "pyarrow Table":
        frame = pl.from_arrow(obj)
    elif kind == "datasets Dataset":
        frame = _dataset_frame(obj)
    else:
        frame = pl.concat(
            [
                _dataset_frame(d).with_columns(pl.lit(s, pl.String).alias(SPLIT_FROM_LAYOUT))
                for s, d in obj.items()
            ],
            how="diagonal_relaxed",
        )
    assert isinstance(frame, pl.DataFrame)
    return MemoryTable(frame, kind)


def _pandas_frame(df: Any) -> pl.DataFrame:
    """A pandas DataFrame as polars: a named index (or a MultiIndex's named levels) kept as
    columns, as ``datasets.Dataset.from_pandas`` keeps them (they were dropped without a word:
    a frame indexed by ``id`` lost its ids); a column name given twice, or cells polars
    cannot hold (objects of mixed kinds), one line naming the frame, never polars' traceback
    (found by a new-user review). An unnamed index is pandas' row numbering: not data."""
    where = "<pandas DataFrame>"
    names = [str(c) for c in df.columns]
    twice = next((c for c in names if names.count(c) > 1), None)
    if twice is not None:
        raise InputError(f"column {twice!r} is given twice", path=where)
    if any(n is not None for n in df.index.names):
        clash = next((str(n) for n in df.index.names if n is not None and str(n) in names), None)
        if clash is not None:
            raise InputError(f"index {clash!r} is also a column's name", path=where)
        df = df.reset_index(level=[n for n in df.index.names if n is not None])
    try:
        return pl.from_pandas(df)
    except Exception as e:  # polars' or pyarrow's reason, one line
        reason = " ".join(str(e).split())[:300]
        raise InputError(
            f"cannot read the frame ({type(e).__name__}: {reason})", path=where
        ) from None


def _dataset_frame(ds: Any) -> pl.DataFrame:
    """A ``datasets.Dataset``'s rows as polars, through its Arrow table (a selected or
    shuffled view: its rows, in its order)."""
    table = ds.data.table if ds._indices is None else ds.with_format("arrow")[:]
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame


def in_memory(path: Any) -> MemoryTable | None:
    """The in-memory table an input is, or None for a path."""
    return path if isinstance(path, MemoryTable) else None


def _digest(frame: pl.DataFrame) -> str:
    """The sha256 of the table's Arrow IPC stream: what the report's input hash is for a file
    (the same table gives the same hash; any cell changed gives another)."""
    import pyarrow as pa

    h = hashlib.sha256()

    class _Sink:
        closed = False

        def write(self, b: Any) -> int:
            h.update(b)
            return len(b)

        def flush(self) -> None:
            return None

    table = frame.to_arrow()
    with pa.ipc.new_stream(pa.PythonFile(_Sink(), mode="w"), table.schema) as writer:
        writer.write_table(table)
    return h.hexdigest()
