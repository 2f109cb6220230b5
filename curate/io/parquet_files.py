"""Parquet files and ``Dataset.save_to_disk`` (Arrow) folders as record batches, streamed by row
group so that memory follows the batch, not the file.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Generator, Iterator
from pathlib import Path
from typing import Any

import curate.io.records as io_records
from curate.core.errors import InputError
from curate.io.records import Batch, brief
from curate.io.sources import Blob


def parquet_batches(
    path: Path | Blob,
    split: str | None,
    offset: int,
    groups: range | None = None,
    dictionary: Collection[str] = (),
) -> Iterator[Batch]:
    """Rows of one parquet file, row group by row group (``groups``: only those, ``offset``
    then being the index of the first one's first row in the file); the string fields named
    in ``dictionary`` (see :func:`open_source`) as dictionary arrays.

    Why per row group: a damaged data page only shows when its row group is decoded, long
    after the file opened fine; naming the row group tells the user how much of the file is
    still good.
    """
    import pyarrow.parquet as pq

    try:
        # Page checksums are optional in parquet; when a writer stored them, a flipped bit is
        # caught here instead of reaching the rules as plausible-looking data.
        source = path.open() if isinstance(path, Blob) else path
        pf = pq.ParquetFile(source, page_checksum_verification=True)
        n_groups = pf.num_row_groups
        leaves = _dictionary_columns(pf.schema, dictionary) if dictionary else []
        coded = None
        if leaves:
            source = path.open() if isinstance(path, Blob) else path
            coded = pq.ParquetFile(
                source,
                page_checksum_verification=True,
                read_dictionary=leaves,
                metadata=pf.metadata,
            )
    except InputError:
        raise
    except Exception as e:  # pyarrow raises several types for corrupt files
        raise InputError(f"not a readable parquet file ({brief(e)})", path=path) from None
    todo = list(range(n_groups) if groups is None else groups)
    rows = [pf.metadata.row_group(rg).num_rows for rg in todo]
    i = 0
    while i < len(todo):
        # Row groups smaller than a batch are read together, several to a batch: a batch
        # costs the tables step ~200 polars calls whatever its size (200k MQuAKE cases in
        # 1,000-row groups: 3.5-3.8 s a group at a time, 1.8-2.2 s together). Should that
        # read fail, the groups are read again one by one, to name the bad one.
        run, total = 1, rows[i]
        while (
            i + run < len(todo)
            and todo[i + run] == todo[i + run - 1] + 1
            and total + rows[i + run] <= io_records.BATCH_ROWS
        ):
            total += rows[i + run]
            run += 1
        if run > 1:
            try:  # at most io_records.BATCH_ROWS rows: one batch; coded fields as dictionaries too
                read = list(
                    (pf if coded is None else coded).iter_batches(
                        batch_size=io_records.BATCH_ROWS,
                        row_groups=todo[i : i + run],
                        use_threads=False,
                    )
                )
            except InputError:
                raise
            except Exception:
                read = None  # read again group by group below, which names the bad group
            for rg in todo[i : i + run] if read is None else ():
                offset = yield from _group_batches(pf, coded, path, rg, n_groups, split, offset)
            for batch in read or ():
                error = functools.partial(_parquet_data_error, path, todo[i], n_groups, offset)
                yield Batch(split, offset, arrow=batch, error=error)
                offset += batch.num_rows
            i += run
            continue
        offset = yield from _group_batches(pf, coded, path, todo[i], n_groups, split, offset)
        i += 1


def _group_batches(
    pf: Any,
    coded: Any,
    path: Path | Blob,
    rg: int,
    n_groups: int,
    split: str | None,
    offset: int,
) -> Generator[Batch, None, int]:
    """One row group's batches (from ``offset``); returns the offset after them."""
    size, reader = io_records.BATCH_ROWS, pf
    rows = pf.metadata.row_group(rg).num_rows
    if coded is not None and rows <= _DICTIONARY_ROWS:
        # A row group's dictionaries come whole with each of its batches (a copy each):
        # read as one batch, a group hands each over once. A larger group is read decoded
        # (200k rows in one group: 1.6x the time with its dictionaries per batch).
        size, reader = max(io_records.BATCH_ROWS, rows), coded
    try:
        # One thread: the readers run their own work on the other cores while this one
        # decodes, and Arrow's threads cost 2.3x the CPU for the same nested batches
        # (measured on 100k MQuAKE cases: 1.97 vs 0.84 CPU-s).
        batches = reader.iter_batches(batch_size=size, row_groups=[rg], use_threads=False)
    except InputError:
        raise
    except Exception as e:
        raise _parquet_data_error(path, rg, n_groups, offset, e) from None
    while True:
        try:
            batch = next(batches, None)
            if batch is None:
                break
        except InputError:
            raise
        except Exception as e:
            raise _parquet_data_error(path, rg, n_groups, offset, e) from None
        # The Python records are made when a reader asks for them (Batch.rows), with the
        # same message should the data be corrupt.
        error = functools.partial(_parquet_data_error, path, rg, n_groups, offset)
        yield Batch(split, offset, arrow=batch, error=error)
        offset += batch.num_rows
    return offset


def _parquet_data_error(
    path: Path | Blob, rg: int, n_groups: int, offset: int, e: BaseException
) -> InputError:
    return InputError(
        f"corrupt parquet data in row group {rg} of {n_groups} ({brief(e)})",
        path=path,
        record=f"#{offset} or later",
    )


def _parquet_file_batches(path: Path | Blob) -> Iterator[Batch]:
    yield from parquet_batches(path, None, 0)


#: The largest row group read with its dictionaries (as one batch): see parquet_batches.
_DICTIONARY_ROWS = 2 * io_records.BATCH_ROWS


#: Names parquet gives the levels of a list (``triples.list.element``; older writers ``item``,
#: ``array``, ``bag``): left out of a column's path to find the field it belongs to.
_LIST_LEVELS = frozenset({"list", "element", "item", "array", "bag", "array_element"})


def _dictionary_columns(schema: Any, fields: Collection[str]) -> list[str]:
    """The string leaf columns of a parquet schema that hold one of ``fields``."""
    out = []
    for i in range(len(schema)):
        col = schema.column(i)
        if col.physical_type != "BYTE_ARRAY":
            continue
        field = ".".join(p for p in col.path.split(".") if p not in _LIST_LEVELS)
        if field in fields:
            out.append(col.path)
    return out


def hf_disk_batches(path: Path) -> Iterator[Batch]:
    import datasets

    try:
        ds = datasets.load_from_disk(str(path))
    except Exception as e:
        raise InputError(f"not a readable save_to_disk dataset ({brief(e)})", path=path) from None
    parts = ds.items() if isinstance(ds, datasets.DatasetDict) else [(None, ds)]
    offset = 0
    for split, d in parts:
        files = [f.get("filename", "") for f in getattr(d, "cache_files", [])]
        where = Path(files[0]) if len(files) == 1 else path
        try:
            batches = d.data.table.to_batches(max_chunksize=io_records.BATCH_ROWS)
        except Exception as e:
            raise InputError(
                f"corrupt Arrow data in split {split or '(default)'} ({brief(e)})", path=where
            ) from None
        for rb in batches:
            try:
                rows = rb.to_pylist()
            except Exception as e:
                raise InputError(
                    f"corrupt Arrow data in split {split or '(default)'} ({brief(e)})",
                    path=where,
                    record=f"#{offset} or later",
                ) from None
            yield Batch(split, offset, rows)
            offset += len(rows)
