"""A table as its file types it: parquet and Arrow columns as stored, text formats as text.

:func:`~curate.io.read.read_frame` turns every cell into text, the house convention for the
families (a verdict must not depend on the format a table came in). The ``table`` family needs
the file's own types as well — "without a model the types come from the file" — and must read
10 M parquet rows without a Python object per cell. :func:`read_table` is that reader:

* parquet files and dataset folders of parquet shards: the Arrow batches, as stored (string
  columns decoded, dictionary columns kept as categoricals by polars), each tagged with its
  split from the folder layout or card (column :data:`SPLIT_FROM_LAYOUT`);
* ``save_to_disk`` folders: the Arrow tables ``datasets`` maps, per split;
* CSV, JSON, JSON Lines, folders of those, stdin, ``.gz``/``.zst``: :func:`read_frame`'s text
  frame (``typed`` is False; the family infers the columns' types from the text).

May import: ``curate.core`` and the rest of ``curate.io``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from curate.core.errors import InputError
from curate.io.read import (
    SPLIT_FROM_LAYOUT,
    detect_format,
    local_parquet,
    open_source,
    read_frame,
)
from curate.io.records import Source, brief, split_of

__all__ = ["ARROW_FORMATS", "CLASS_LABELS", "class_label_names", "named_classes", "read_table"]

#: Formats whose columns carry their own types.
ARROW_FORMATS = frozenset({"parquet", "hf-parquet", "hf-disk"})

#: Schema metadata of a table handed to the export: ``{column: [class names]}`` (JSON), the
#: integer columns to declare as ``ClassLabel`` (the ``table`` family's, as its input had them:
#: :func:`class_label_names`).
CLASS_LABELS = b"curate:class_labels"


def read_table(
    path: str | Path, *, encoding: str | None = None
) -> tuple[pl.DataFrame, Source, bool]:
    """``(frame, source, typed)``: the table at ``path``, typed as the file types it when
    ``typed`` (parquet, Arrow), else as text (see the module doc). A dataset folder's split is
    the column :data:`SPLIT_FROM_LAYOUT`."""
    if detect_format(path) not in ARROW_FORMATS:
        frame, src = read_frame(path, encoding=encoding)
        return frame, src, False
    fast = _local_parquet_frame(path)
    src = open_source(path, encoding=encoding)
    if fast is not None:
        frame = fast
    elif src.format == "hf-disk":
        frame = _disk_frame(Path(str(src.path)))
    else:
        frame = _arrow_frame(src)
    if frame.height == 0:
        raise InputError("no records found", path=src.path)
    if (given := split_of(path)) is not None:
        frame = frame.with_columns(pl.lit(given).alias(SPLIT_FROM_LAYOUT))
    return frame, src, True


def _local_parquet_frame(path: str | Path) -> pl.DataFrame | None:
    """Local parquet files read by polars' own multi-threaded reader (10 M rows in ~1 s, where
    the row-group batches take ~6 s), each split's files tagged; None when the input is not
    local parquet or polars cannot read it: the batch reader then reads it again and says
    precisely what is wrong (file, row group), and it verifies page checksums, which polars
    does not (a damaged page of a compressed file fails to decompress here first)."""
    parts = local_parquet(path)
    if parts is None:
        return None
    frames = []
    try:
        for split, files in parts:
            for f in files:
                part = pl.read_parquet(f)
                if split is not None:
                    part = part.with_columns(pl.lit(split, pl.String).alias(SPLIT_FROM_LAYOUT))
                frames.append(part)
    except Exception:  # the batch reader's error names the file and the row group
        return None
    if not frames:
        return None
    frame = pl.concat(frames, how="diagonal_relaxed") if len(frames) > 1 else frames[0]
    if split_of(path) is not None:  # a single file given as one split: tagged by the caller
        frame = frame.drop(SPLIT_FROM_LAYOUT, strict=False)
    return frame


def _arrow_frame(src: Source) -> pl.DataFrame:
    """The parquet batches as one frame (columns a later file lacks are null there)."""
    parts: list[pl.DataFrame] = []
    tagged = False
    for b in src.batches:
        try:
            part = pl.from_arrow(b.arrow)
        except Exception as e:  # an Arrow type polars has no counterpart for
            raise InputError(f"cannot read as a table ({brief(e)})", path=src.path) from None
        assert isinstance(part, pl.DataFrame)
        if b.split is not None:
            tagged = True
            part = part.with_columns(pl.lit(b.split, pl.String).alias(SPLIT_FROM_LAYOUT))
        parts.append(part)
    if not parts:
        return pl.DataFrame()
    frame = pl.concat(parts, how="diagonal_relaxed") if len(parts) > 1 else parts[0]
    if not tagged and SPLIT_FROM_LAYOUT in frame.columns:
        frame = frame.drop(SPLIT_FROM_LAYOUT)
    return frame


def _disk_frame(path: Path) -> pl.DataFrame:
    """A ``save_to_disk`` folder's splits, each its mapped Arrow table (no copy to Python)."""
    import datasets

    try:
        ds: Any = datasets.load_from_disk(str(path))
    except Exception as e:
        raise InputError(f"not a readable save_to_disk dataset ({brief(e)})", path=path) from None
    parts = ds.items() if isinstance(ds, datasets.DatasetDict) else [(None, ds)]
    frames = []
    for split, d in parts:
        table = d.data.table
        if d._indices is not None:  # a selected/shuffled view: its rows, in its order
            table = d.with_format("arrow")[:]
        part = pl.from_arrow(table)
        assert isinstance(part, pl.DataFrame)
        if split is not None:
            part = part.with_columns(pl.lit(split, pl.String).alias(SPLIT_FROM_LAYOUT))
        frames.append(part)
    return pl.concat(frames, how="diagonal_relaxed") if len(frames) > 1 else frames[0]


#: Integers spelt with a leading zero ("007", a zip code, an id) are text: read as a number
#: they would be published as 7.
_INTEGER = r"^[+-]?(0|[1-9][0-9]*)$"
_FLOAT = r"^[+-]?(((0|[1-9][0-9]*)(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?|inf|infinity|nan)$"
#: The spellings a text cell of a boolean column may have (any case).
BOOLEAN_WORDS = {"true": True, "false": False}


def infer_types(
    frame: pl.DataFrame, keep_text: set[str] | frozenset[str] = frozenset()
) -> pl.DataFrame:
    """A text frame's columns typed as their text spells them: every non-empty cell an integer
    → Int64, a number → Float64, ``true``/``false`` (any case) → Boolean, else String (and the
    columns in ``keep_text``, which were strings in the file). An empty cell is null in a typed
    column. What pandas and ``datasets`` would infer, without their guesses: an integer with a
    leading zero, or one beyond Int64, stays text."""
    out = []
    for name, s in frame.to_dict().items():
        if s.dtype != pl.String or name in keep_text or name == SPLIT_FROM_LAYOUT:
            out.append(s)
            continue
        t = s.str.strip_chars()
        present = t.is_not_null() & (t != "")
        n = int(present.sum())
        if n == 0:
            out.append(s)
            continue
        low = t.str.to_lowercase()
        if int((present & t.str.contains(_INTEGER)).sum()) == n:
            ints = t.str.to_integer(strict=False)
            if int(ints.is_not_null().sum()) == n:
                out.append(ints.alias(name))
                continue
        if int((present & low.str.contains(_FLOAT)).sum()) == n:
            out.append(t.cast(pl.Float64, strict=False).alias(name))
            continue
        if int((present & low.is_in(list(BOOLEAN_WORDS))).sum()) == n:
            out.append((low == "true").alias(name).set(~present, None))
            continue
        out.append(s)
    return pl.DataFrame(out)


def _file_class_labels(path: Path) -> dict[str, list[str]] | None:
    """One parquet file's ``ClassLabel`` columns: curate's own metadata (a fix pass's file,
    :data:`CLASS_LABELS`), else the Hugging Face features ``datasets`` writes; None when the
    file carries neither."""
    import json

    import pyarrow.parquet as pq

    try:
        meta = pq.read_schema(path).metadata or {}
    except OSError:
        return None
    try:
        if CLASS_LABELS in meta:
            ours = json.loads(meta[CLASS_LABELS])
            return {str(k): [str(n) for n in v] for k, v in ours.items() if isinstance(v, list)}
        features = json.loads(meta[b"huggingface"])["info"]["features"]
    except (KeyError, TypeError, ValueError):
        return None
    if not isinstance(features, dict):
        return None
    return {
        str(k): [str(n) for n in v["names"]]
        for k, v in features.items()
        if isinstance(v, dict)
        and v.get("_type") == "ClassLabel"
        and isinstance(v.get("names"), list)
    }


def class_label_names(
    path: str | Path, src: Source, features: list[Any] | None = None
) -> dict[str, list[str]]:
    """The ``ClassLabel`` columns of an input and their class names, index order: from the
    metadata its parquet files carry (the Hugging Face features ``datasets`` writes, or a
    curate fix pass's), else from a dataset folder's card (``features``, its
    ``dataset_info.features`` when the caller has read them, else read here). Top-level columns
    only, and of parquet files only a column every file declares with the same names: an
    index means one class everywhere or is left an integer (splits encoded apart,
    ``class_encode_column`` per split, number their classes apart).

    Why: a ``ClassLabel`` column is stored as integers; its names are in the metadata alone,
    and a table read without them would report ``label 0`` and publish bare indexes whose
    meaning the remaster had lost."""
    parts = local_parquet(path)
    if parts is not None:
        found = [_file_class_labels(f) for _, files in parts for f in files]
        if any(x is not None for x in found):
            first = found[0] or {}
            return {
                k: names
                for k, names in first.items()
                if all(x is not None and x.get(k) == names for x in found)
            }
    hf_folder = src.format.startswith("hf") and isinstance(src.path, Path) and src.path.is_dir()
    if features is None and hf_folder:
        from curate.io.folders import card_features

        assert isinstance(src.path, Path)  # hf_folder says so
        features = card_features(src.path, src.config)
    if not features:
        return {}
    from datasets import ClassLabel, Features

    try:  # datasets' own reading of a card's features (a broken list: card_types says why)
        declared = Features._from_yaml_list(features)
    except Exception:
        return {}
    return {k: list(v.names) for k, v in declared.items() if isinstance(v, ClassLabel)}


def named_classes(frame: pl.DataFrame, labels: dict[str, list[str]]) -> pl.DataFrame:
    """Each integer ``ClassLabel`` column of ``frame`` as its class names (-1, ``datasets``'
    "no label", as null); an index past the names kept as its digits, so that it is seen,
    not lost."""
    exprs = []
    for name, names in labels.items():
        if name not in frame.columns or not frame.schema[name].is_integer():
            continue
        col = pl.col(name)
        digits = col.cast(pl.String)
        exprs.append(
            pl.when(col == -1)
            .then(None)
            .otherwise(
                digits.replace_strict([str(i) for i in range(len(names))], names, default=digits)
            )
            .alias(name)
        )
    return frame.with_columns(exprs) if exprs else frame
