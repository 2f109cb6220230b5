"""Reading dataset files into record batches, with one-line errors for unusable input.

Formats: JSON array, JSON Lines, parquet, CSV (flat tables only), and Hugging Face dataset folders
(the hub layout ``data/<split>-*.parquet`` and ``Dataset.save_to_disk`` output). Parquet, JSON Lines
and Arrow are streamed in batches so memory follows the batch, not the file; a JSON *array* must be
parsed whole (that is the format), so big data belongs in JSON Lines or parquet.

Why records as Python dicts: schema validation (pydantic) needs them to report the exact record and
field of every defect. Families turn the validated records into columnar tables for the rules.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from curate.errors import InputError
from curate.outputs import atomic_path, current_umask, write_bytes_atomic

__all__ = [
    "Batch",
    "Source",
    "atomic_path",
    "current_umask",
    "detect_format",
    "open_source",
    "read_frame",
    "sha256_of",
    "write_bytes_atomic",
]

BATCH_ROWS = 8192


@dataclass
class Batch:
    """Consecutive records of one split of one file; ``offset`` is the index of the first."""

    split: str | None
    offset: int
    rows: list[dict[str, Any]]
    #: 1-based line numbers (JSON Lines only), for error messages.
    lines: list[int] | None = None


@dataclass
class Source:
    """An opened input: what it is and an iterator over its batches."""

    path: Path
    format: str
    batches: Iterator[Batch]
    sha256: str = ""
    splits: dict[str, int] = field(default_factory=dict)


def sha256_of(path: Path) -> str:
    """Content hash of a file, or of a folder's files (sorted relative paths and their bytes)."""
    h = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        if path.is_dir():
            h.update(str(f.relative_to(path)).encode() + b"\0")
        with open(f, "rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
    return h.hexdigest()


def detect_format(path: Path) -> str:
    """Format from the path (folder layout or file suffix); raises InputError when unknown."""
    if not path.exists():
        raise InputError("no such file or folder", path=path)
    if path.is_dir():
        if list(path.glob("data/*.parquet")) or list(path.glob("*/*.parquet")):
            return "hf-parquet"
        if (path / "dataset_info.json").exists() or (path / "dataset_dict.json").exists():
            return "hf-disk"
        if list(path.glob("*.parquet")):
            return "hf-parquet"
        raise InputError(
            "not a dataset folder: expected data/<split>-*.parquet or save_to_disk output "
            "(dataset_info.json / dataset_dict.json)",
            path=path,
        )
    suffix = "".join(path.suffixes[-2:]).lower() if path.suffix == ".gz" else path.suffix.lower()
    formats = {
        ".json": "json",
        ".jsonl": "jsonl",
        ".ndjson": "jsonl",
        ".parquet": "parquet",
        ".csv": "csv",
        ".tsv": "csv",
    }
    if suffix not in formats:
        raise InputError(
            f"unknown file type {suffix or '(no suffix)'!r}: use .json, .jsonl, .parquet, .csv "
            "or a dataset folder",
            path=path,
        )
    return formats[suffix]


def open_source(path: str | Path, *, hash_input: bool = True) -> Source:
    """Open one input for reading; format errors found up front raise :class:`InputError`."""
    p = Path(path)
    fmt = detect_format(p)
    reader = {
        "json": _json_batches,
        "jsonl": _jsonl_batches,
        "parquet": _parquet_file_batches,
        "csv": _csv_batches,
        "hf-parquet": _hf_parquet_batches,
        "hf-disk": _hf_disk_batches,
    }[fmt]
    batches = reader(p)
    return Source(p, fmt, batches, sha256_of(p) if hash_input else "")


def _position(text: bytes, pos: int) -> str:
    line = text.count(b"\n", 0, pos) + 1
    col = pos - (text.rfind(b"\n", 0, pos) + 1) + 1
    return f"{line}:{col}"


def _orjson_error_pos(err: orjson.JSONDecodeError, data: bytes) -> str:
    # orjson reports line/column in characters; its ``pos`` is a character offset too, so
    # counting bytes of ``data`` would drift on non-ASCII text.
    if getattr(err, "lineno", None):
        return f"{err.lineno}:{err.colno}"
    return _position(data, getattr(err, "pos", 0) or 0)


def _json_batches(path: Path) -> Iterator[Batch]:
    data = path.read_bytes()
    if not data.strip():
        raise InputError("empty file: expected a JSON array of records", path=path)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        msg = str(e).split(":")[0]
        pos = _orjson_error_pos(e, data)
        raise InputError(f"invalid JSON ({msg})", path=path, position=pos) from None
    if isinstance(doc, dict) and len(doc) == 1 and isinstance(next(iter(doc.values())), list):
        # {"data": [...]} wrappers are common; accept one list under a single key.
        doc = next(iter(doc.values()))
    if not isinstance(doc, list):
        raise InputError(
            f"top-level JSON value is {type(doc).__name__}, expected an array of records",
            path=path,
        )
    del data
    for i, rec in enumerate(doc):
        if not isinstance(rec, dict):
            raise InputError(
                f"record is {type(rec).__name__}, expected an object", path=path, record=f"#{i}"
            )
    for start in range(0, len(doc), BATCH_ROWS):
        yield Batch(None, start, doc[start : start + BATCH_ROWS])


def _jsonl_batches(path: Path) -> Iterator[Batch]:
    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    index = 0
    offset = 0
    with open(path, "rb") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError as e:
                msg = str(e).split(":")[0]
                pos = getattr(e, "pos", 0) or 0
                raise InputError(
                    f"invalid JSON ({msg})", path=path, position=f"{lineno}:{pos + 1}"
                ) from None
            if not isinstance(rec, dict):
                raise InputError(
                    f"line holds {type(rec).__name__}, expected a JSON object",
                    path=path,
                    position=str(lineno),
                )
            rows.append(rec)
            lines.append(lineno)
            index += 1
            if len(rows) >= BATCH_ROWS:
                yield Batch(None, offset, rows, lines)
                offset = index
                rows, lines = [], []
    if index == 0 and not rows:
        raise InputError("empty file: expected JSON Lines records", path=path)
    if rows:
        yield Batch(None, offset, rows, lines)


def _parquet_batches(path: Path, split: str | None, offset: int) -> Iterator[Batch]:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except Exception as e:  # pyarrow raises several types for corrupt files
        raise InputError(f"not a readable parquet file ({e})", path=path) from None
    for batch in pf.iter_batches(batch_size=BATCH_ROWS):
        rows = batch.to_pylist()
        yield Batch(split, offset, rows)
        offset += len(rows)


def _parquet_file_batches(path: Path) -> Iterator[Batch]:
    yield from _parquet_batches(path, None, 0)


def _csv_batches(path: Path) -> Iterator[Batch]:
    import polars as pl

    sep = "\t" if path.suffix.lower() == ".tsv" else ","
    try:
        df = pl.read_csv(path, separator=sep, infer_schema=False)
    except Exception as e:
        raise InputError(f"not a readable CSV file ({e})", path=path) from None
    for start in range(0, df.height, BATCH_ROWS):
        yield Batch(None, start, df.slice(start, BATCH_ROWS).to_dicts())


_SHARD = re.compile(r"^(?P<split>[A-Za-z0-9_.]+?)(?:-\d{5}-of-\d{5})?(?:-[^/]*)?\.parquet$")


def hf_parquet_splits(path: Path) -> dict[str, list[Path]]:
    """Split name → shard files for a hub-layout folder (``data/train-00000-of-00002.parquet``)."""
    files = sorted(path.glob("data/*.parquet")) or sorted(path.glob("*.parquet"))
    splits: dict[str, list[Path]] = {}
    if files:
        for f in files:
            m = _SHARD.match(f.name)
            split = m.group("split") if m else f.stem
            splits.setdefault(split, []).append(f)
    else:  # <split>/<file>.parquet
        for f in sorted(path.glob("*/*.parquet")):
            splits.setdefault(f.parent.name, []).append(f)
    return splits


def _hf_parquet_batches(path: Path) -> Iterator[Batch]:
    offset = 0
    for split, files in hf_parquet_splits(path).items():
        for f in files:
            for b in _parquet_batches(f, split, offset):
                offset += len(b.rows)
                yield b


def _hf_disk_batches(path: Path) -> Iterator[Batch]:
    import datasets

    try:
        ds = datasets.load_from_disk(str(path))
    except Exception as e:
        raise InputError(f"not a readable save_to_disk dataset ({e})", path=path) from None
    parts = ds.items() if isinstance(ds, datasets.DatasetDict) else [(None, ds)]
    offset = 0
    for split, d in parts:
        table = d.data.table
        for rb in table.to_batches(max_chunksize=BATCH_ROWS):
            rows = rb.to_pylist()
            yield Batch(split, offset, rows)
            offset += len(rows)


SPLIT_FROM_LAYOUT = "__split__"


def read_frame(path: str | Path) -> tuple[Any, Source]:
    """A flat table as a polars frame of strings (how tabular families read their input).

    CSV is read by polars directly with every column as text, so that ``" N"`` or ``"007"`` reach
    the rules exactly as written. Other formats go through :func:`open_source`; a dataset folder's
    split (from its file layout) becomes the column ``__split__``.
    """
    import polars as pl

    src = open_source(path)
    if src.format == "csv":
        sep = "\t" if src.path.suffix.lower() == ".tsv" else ","
        try:
            df = pl.read_csv(src.path, separator=sep, infer_schema=False)
        except Exception as e:
            raise InputError(f"not a readable CSV file ({e})", path=src.path) from None
        if df.width == 0:
            raise InputError("empty table", path=src.path)
        return df, src
    frames = []
    for b in src.batches:
        if not b.rows:
            continue
        part = pl.from_dicts(b.rows, infer_schema_length=None)
        part = part.with_columns(
            [
                pl.col(c).cast(pl.String)
                for c, t in part.schema.items()
                if t != pl.String and not isinstance(t, pl.List | pl.Struct)
            ]
        )
        if b.split is not None:
            part = part.with_columns(pl.lit(b.split).alias(SPLIT_FROM_LAYOUT))
        frames.append(part)
    if not frames:
        raise InputError("no records found", path=src.path)
    return pl.concat(frames, how="diagonal_relaxed"), src
