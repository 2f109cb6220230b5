"""Reading dataset files into record batches, with one-line errors for unusable input.

Formats: JSON array, JSON Lines, parquet, CSV/TSV (flat tables only), and Hugging Face dataset
folders (the hub layout ``data/<split>-*.parquet``, a repository whose card declares ``configs``,
and ``Dataset.save_to_disk`` output). Parquet, JSON Lines and Arrow are streamed in batches so
memory follows the batch, not the file; a JSON *array* must be parsed whole (that is the format),
so big data belongs in JSON Lines or parquet.

Where inputs come from (every one of them is a string, never folded through :class:`Path`):

* a local file or folder;
* ``FOLDER:CONFIG`` — one config of a folder whose ``README.md`` card declares ``configs:``
  (the Hub's multi-config layout). Without ``:CONFIG`` the default config is read, chosen as
  ``datasets.load_dataset(path)`` chooses it: the only config, else the one named ``default`` or
  marked ``default: true``; a card with several configs and no default is exit 2 listing them,
  as is an unknown config. The splits and files are the card's ``data_files`` (globs relative to
  the folder, ``data_dir`` honoured), never guessed from folder names. A path that exists as
  written is always a path, so a file name with a colon still reads;
* ``hf://datasets/OWNER/NAME[@REVISION][/PATH]`` — a dataset repository, folder or file on the
  Hub, read through ``huggingface_hub.HfFileSystem`` (the ``hub`` extra); ``:CONFIG`` works there
  too. Unreachable, missing, private or gated repositories are exit 2 with one line;
* ``-`` — standard input (one per command). Its format is sniffed: ``PAR1`` is parquet; gzip and
  zstd are recognised by their magic bytes; then the first non-blank character decides: ``[`` a
  JSON array, ``{`` JSON Lines when the first line is a whole object (a lone
  ``{"data": [...]}`` line, and a ``{`` spread over lines, is a JSON document), anything else
  CSV (TSV when the header has tabs and no commas). Its sha256 is of the bytes read. It is
  spooled to memory, then to an anonymous temporary file beyond 64 MiB, because readers need to
  look at its start twice;
* a named pipe or process substitution (``<(zcat cases.jsonl.gz)``, ``/dev/fd/63``): read once
  per command (:func:`input_scope`) and spooled like standard input, its format from its
  name's suffix when it has a known one, else sniffed. A pipe can be opened only once, and a
  second open would take bytes the reader never sees. ``/dev/stdin`` is ``-``; any other
  device (``/dev/zero``) is exit 2 unread;
* compressed files: ``.gz`` and ``.zst`` (``data.json.gz``, ``data.jsonl.zst``, ``data.csv.gz``)
  are decompressed as they are read (gzip by the standard library, zstd by pyarrow's codec, both
  verifying the checksum when the file has one). A truncated or corrupt stream is exit 2 naming
  how many decompressed bytes were good; byte offsets in messages count decompressed bytes.

Why records as Python dicts: schema validation (pydantic) needs them to report the exact record and
field of every defect. Families turn the validated records into columnar tables for the rules.

This module resolves an input (where it is, what format) and hands it to the reader of its
format (:mod:`~curate.io.json_files`, :mod:`~curate.io.csv_files`,
:mod:`~curate.io.parquet_files`, :mod:`~curate.io.folders`); :func:`read_frame` reads a flat
table whole for the families that audit tables.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import stat
import sys
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

import curate.io.hub as io_hub
from curate.core.errors import InputError, UsageError
from curate.io.csv_files import csv_batches, read_csv
from curate.io.encodings import UTF8, check_encoding, resolve_encoding
from curate.io.folders import FolderPlan, LocalTree, RemoteTree, folder_batches, plan_folder
from curate.io.hub import hub_call, hub_error, remote_blob, remote_sha256
from curate.io.json_files import json_batches, jsonl_batches
from curate.io.parquet_files import hf_disk_batches, parquet_batches
from curate.io.records import (
    FILE_FORMATS,
    HF_SCHEME,
    MAGIC,
    STDIN_SPOOL_MEMORY,
    Batch,
    InputName,
    Source,
    brief,
    is_stdin,
    split_of,
    tagged,
)
from curate.io.sources import Blob, View, file_kind, kind_of, local_file, split_config


def sha256_of(path: str | Path) -> str:
    """Content hash of a file, or of a folder's files (sorted relative paths and their bytes).

    ``hf://`` inputs: a file's hash is the Hub's LFS sha256 when it has one (nothing is
    downloaded), else the hash of its bytes; a folder's is the hash of the sorted
    ``relative path NUL sha256`` lines of its card and the data files read. Standard input's hash
    is known only once it is read: :func:`open_source` gives it. A pipe's is of the bytes read
    (see :func:`input_scope`).
    """
    if not isinstance(path, Path):
        text = str(path)
        if is_stdin(text):
            raise UsageError("the sha256 of standard input is known once it is read")
        if text.startswith(HF_SCHEME):
            return _resolve(text).digest()
        path = Path(text)
    if _is_pipe(path):
        return _pipe_spool(path)[1]  # of the bytes read (once per input scope)
    h = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        if path.is_dir():
            h.update(str(f.relative_to(path)).encode() + b"\0")
        with open(f, "rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
    return h.hexdigest()


def detect_format(path: str | Path) -> str:
    """Format from the path (folder layout or file suffix); raises InputError when unknown.

    Standard input and a pipe without a known suffix are sniffed (see the module docstring),
    which reads them.
    """
    return _resolve(path).format


def open_source(
    path: str | Path,
    *,
    hash_input: bool = True,
    encoding: str | None = None,
    dictionary: Collection[str] = (),
) -> Source:
    """Open one input for reading; format errors found up front raise :class:`InputError`.

    ``path`` is a local path, ``FOLDER:CONFIG``, an ``hf://`` URL or ``-`` (see the module
    docstring). ``encoding`` applies to the text formats (JSON, JSON Lines, CSV/TSV); ``None``
    means UTF-8 unless the file starts with a byte order mark, which then decides. Parquet and
    Arrow are binary formats whose strings are UTF-8 by specification, so it does not apply to
    them. ``dictionary``: string fields (dotted paths, list levels left out) that parquet
    batches hold as dictionaries, as the file stores them, instead of decoding every value.
    """
    if encoding is not None:
        check_encoding(encoding)  # fail before reading anything; messages keep the user's name
    inp = _resolve(path, encoding)
    batches = inp.batches(encoding, dictionary)
    if (split := split_of(path)) is not None:
        batches = tagged(batches, split)
    try:
        digest = inp.digest() if hash_input else ""
    except OSError as e:
        raise InputError(f"cannot read ({e.strerror or e})", path=e.filename or inp.label) from None
    return Source(inp.label, inp.format, batches, digest, config=inp.config, location=inp.where)


def local_parquet(path: str | Path) -> list[tuple[str | None, list[Path]]] | None:
    """The local parquet files an input is, per split (None for a single file's split), or
    None when it is anything else (a text format, a pipe, the Hub, ``save_to_disk``): what a
    reader that hands whole files to a multi-threaded parquet reader may take directly."""
    text = str(path)
    if is_stdin(text) or text.startswith(HF_SCHEME):
        return None
    try:
        inp = _resolve(path)
    except InputError:
        return None
    if inp.format == "parquet" and isinstance(inp.where, Path):
        return [(split_of(path), [inp.where])]
    if inp.format == "hf-parquet" and inp.plan is not None and isinstance(inp.where, LocalTree):
        return [(s, [inp.where.root / r for r in rels]) for s, rels in inp.plan.splits.items()]
    return None


def check_inputs(paths: Sequence[str | Path]) -> None:
    """Usage checks over a command's inputs: standard input (``-``) can be read only once, and
    one file given twice would count every record twice (each then a duplicate of itself)."""
    stdin = [str(p) for p in paths if is_stdin(str(p))]
    if len(stdin) > 1:
        names = list(dict.fromkeys(stdin))
        if len(names) == 1:
            raise UsageError(f"{names[0]} (standard input) can be given only once")
        raise UsageError(f"{' and '.join(names)} both name standard input, which is read once")
    seen: dict[tuple[Path, str | None], str] = {}
    for p in paths:
        local = local_input(p)
        if local is None or not local.exists():
            continue
        # FOLDER:CONFIG inputs share their folder: one config is the unit there
        config = None if local == Path(str(p)) else str(p).rsplit(":", 1)[-1]
        key = (local.resolve(), config)
        if key in seen:
            spelt = f" (as {seen[key]!r} and {str(p)!r})" if seen[key] != str(p) else ""
            raise UsageError(f"{p} is given twice{spelt}")
        seen[key] = str(p)


def local_input(path: str | Path) -> Path | None:
    """The local file or folder an input reads (the folder of ``FOLDER:CONFIG``), or None for
    standard input and the Hub. Why: output guards must protect what is really read."""
    if isinstance(path, Path):
        return path
    text = str(path)
    if is_stdin(text) or text.startswith(HF_SCHEME):
        return None
    p = Path(text)
    if not p.exists():
        folder, config = split_config(text)
        if config is not None and Path(folder).is_dir():
            return Path(folder)
    return p


@dataclass
class _Input:
    """An input resolved: its name, format, where its bytes are and how to hash them."""

    label: Path | InputName
    format: str
    #: A file (:class:`Path` or :class:`Blob`) or a folder (:class:`LocalTree` or
    #: :class:`RemoteTree`).
    where: Any
    digest: Callable[[], str]
    config: str | None = None
    plan: FolderPlan | None = None

    def batches(self, encoding: str | None, dictionary: Collection[str] = ()) -> Iterator[Batch]:
        if self.plan is not None:
            return folder_batches(self.where, self.plan, encoding, dictionary)
        if self.format == "hf-disk":
            return hf_disk_batches(self.where.root)
        if self.format == "parquet":
            return parquet_batches(self.where, None, 0, dictionary=dictionary)
        reader = {"json": json_batches, "jsonl": jsonl_batches, "csv": csv_batches}
        return reader[self.format](self.where, encoding)


def _resolve(path: str | Path, encoding: str | None = None) -> _Input:
    if not isinstance(path, Path):
        text = str(path)
        if is_stdin(text):
            return _resolve_stdin(encoding)
        if text.startswith(HF_SCHEME):
            return _resolve_remote(text)
    p = Path(path)
    if not p.exists():
        folder, config = split_config(str(path))
        if config is not None and Path(folder).is_dir():
            return _resolve_local(Path(folder), config)
        raise InputError("no such file or folder", path=p)
    return _resolve_local(p, None, encoding)


def _is_pipe(p: Path) -> bool:
    """A FIFO: a named pipe (``mkfifo``) or a process substitution (``<(zcat data.gz)``, which
    the shell passes as ``/dev/fd/63``), whose bytes can be read only once."""
    try:
        return stat.S_ISFIFO(p.stat().st_mode)
    except OSError:
        return False


def is_stream(path: str | Path) -> bool:
    """Standard input or a pipe: bytes with no folder of their own. Why: paths inside such an
    input (a deepfake manifest's media) are relative to the current folder, as for ``-``, not
    to ``/dev/fd``; and a cache keyed by its folder would be a new one each run."""
    return is_stdin(str(path)) or _is_pipe(Path(str(path)))


def _resolve_local(p: Path, config: str | None, encoding: str | None = None) -> _Input:
    if _is_pipe(p):
        spool, digest = _pipe_spool(p)
        return _resolve_spooled(p, spool, digest, encoding, p.name)
    if p.is_file():
        where = local_file(p)
        return _Input(p, file_kind(p.name, p)[0], where, lambda: sha256_of(p))
    if not p.is_dir():  # a device: /dev/zero would be read forever
        raise InputError("a device, not a file or a pipe", path=p)
    tree = LocalTree(p)
    plan = plan_folder(tree, config)
    if plan is not None:
        return _Input(p, plan.format, tree, lambda: sha256_of(p), plan.config, plan)
    if (p / "dataset_info.json").exists() or (p / "dataset_dict.json").exists():
        return _Input(p, "hf-disk", tree, lambda: sha256_of(p))
    raise InputError(
        "not a dataset folder: expected data/<split>-*.parquet, a README.md card with configs, "
        "or save_to_disk output (dataset_info.json / dataset_dict.json)",
        path=p,
    )


# Standard input is read once per process (and stream); later opens (the sniff, the reader, a
# second pass) see the same bytes.
_STDIN_SPOOL: list[tuple[Any, Any, str]] = []  # (the stream spooled, its spool, its sha256)


STDIN_LABEL = InputName("<stdin>")


#: The pipes read in the open :func:`input_scope` (at most one: a nested scope is the outer
#: one), by (device, inode).
_PIPE_SCOPES: list[dict[tuple[int, int], tuple[Any, str]]] = []


def _spool(label: str, stream: Any) -> tuple[Any, str]:
    """``stream`` copied into a spool (memory, then an anonymous temporary file) and its sha256,
    computed on the bytes as read."""
    import tempfile

    # Kept open for the life of the process (stdin) or of the input scope (a pipe).
    spool = tempfile.SpooledTemporaryFile(max_size=STDIN_SPOOL_MEMORY)  # noqa: SIM115
    h = hashlib.sha256()
    what = "standard input" if label == STDIN_LABEL else "the pipe"
    try:
        while chunk := stream.read(1 << 20):
            if isinstance(chunk, str):  # a text stream stood in for stdin
                chunk = chunk.encode("utf-8")
            h.update(chunk)
            spool.write(chunk)
    except (OSError, ValueError) as e:
        spool.close()
        raise InputError(f"cannot read {what} ({brief(e, True)})", path=label) from None
    return spool, h.hexdigest()


def _stdin_spool() -> tuple[Any, str]:
    """Standard input spooled (:func:`_spool`), once per stream."""
    stream = getattr(sys.stdin, "buffer", sys.stdin)
    if _STDIN_SPOOL and _STDIN_SPOOL[0][0] is stream:
        return _STDIN_SPOOL[0][1], _STDIN_SPOOL[0][2]
    if stream is None:
        raise InputError("there is no standard input", path=STDIN_LABEL)
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError, OSError):
        tty = False
    if tty:
        raise UsageError(
            "- reads the dataset from standard input, which is a terminal here: pipe or "
            "redirect the data into curate (curate audit FAMILY - < data.jsonl)"
        )
    spool, digest = _spool(STDIN_LABEL, stream)
    _STDIN_SPOOL[:] = [(stream, spool, digest)]
    return spool, digest


@contextlib.contextmanager
def input_scope() -> Iterator[None]:
    """One operation over its inputs (a command, an API call): within it, each pipe is read
    once, when it is first opened, and every later open of it (the sniff, the reader, the
    second pass of ``fix``) sees the same bytes. Scopes nest: the outermost one holds.

    Why a scope and not the process: a pipe's name outlives its bytes. A program that feeds
    the same ``mkfifo`` (or an ``os.pipe()`` whose descriptor number comes back) to two calls
    means two inputs, and a pipe outside any scope is read anew at each open, as ``cat`` would.
    """
    if _PIPE_SCOPES:
        yield
        return
    _PIPE_SCOPES.append({})
    try:
        yield
    finally:
        for spool, _ in _PIPE_SCOPES.pop().values():
            spool.close()


def _pipe_spool(p: Path) -> tuple[Any, str]:
    """A pipe spooled: its bytes can be read only once, and readers look at its start again.
    Once per :func:`input_scope` (by device and inode: ``/dev/fd/63`` and a link to it are one
    pipe)."""
    try:
        st = p.stat()
        held = _PIPE_SCOPES[0] if _PIPE_SCOPES else {}
        key = (st.st_dev, st.st_ino)
        if key not in held:
            with open(p, "rb") as f:
                held[key] = _spool(str(p), f)
    except OSError as e:
        raise InputError(f"cannot read ({e.strerror or e})", path=p) from None
    return held[key]


def _resolve_stdin(encoding: str | None) -> _Input:
    spool, digest = _stdin_spool()
    return _resolve_spooled(STDIN_LABEL, spool, digest, encoding)


def _resolve_spooled(
    label: Any, spool: Any, digest: str, encoding: str | None, name: str | None = None
) -> _Input:
    """A spooled stream as an input: its format from ``name`` when that has a known suffix,
    else sniffed from its bytes (see the module docstring)."""

    def raw() -> BinaryIO:
        return io.BufferedReader(View(spool))

    if name is not None and kind_of(name)[0] is not None:
        fmt, compression, suffix = file_kind(name, label)
        return _Input(label, fmt, Blob(str(label), raw, compression, suffix), lambda: digest)
    with raw() as fh:
        magic = fh.read(4)
    compression = next((codec for m, codec in MAGIC if magic.startswith(m)), None)
    probe = Blob(str(label), raw, compression, "")
    start = _read_head(probe)
    if start.startswith(b"PAR1"):
        if compression:
            raise InputError(
                f"{compression}-compressed parquet is not read: decompress it first",
                path=label,
            )
        suffix = ".parquet"
    else:
        suffix = _sniff_text(probe, start, encoding)
    fmt = FILE_FORMATS[suffix]
    return _Input(label, fmt, Blob(str(label), raw, compression, suffix), lambda: digest)


def _read_head(src: Blob) -> bytes:
    """The first 64 KiB of a compressed input; a stream that is corrupt from its start is an
    error here rather than "empty input"."""
    with src.open() as fh:
        return fh.read(1 << 16)


def _sniff_text(src: Blob, head: bytes, encoding: str | None) -> str:
    """The format suffix of text on standard input or a pipe (see the module docstring)."""
    codec, skip = resolve_encoding(src, head[:4], encoding)
    text = head[skip:].decode(codec, "ignore").lstrip("\ufeff \t\r\n")
    if not text:
        raise InputError(
            "empty input: expected JSON, JSON Lines, CSV or parquet"
            + (" on standard input" if str(src) == STDIN_LABEL else ""),
            path=src,
        )
    if text[0] == "[":
        return ".json"
    if text[0] != "{":
        header = text.partition("\n")[0]
        return ".tsv" if "\t" in header and "," not in header else ".csv"
    first, more = _first_line(src, skip, codec, text)
    try:
        obj = orjson.loads(first)
    except orjson.JSONDecodeError:
        return ".json"  # an object spread over lines: one JSON document
    if not isinstance(obj, dict):
        return ".json"
    wrapper = len(obj) == 1 and isinstance(next(iter(obj.values())), list)
    return ".json" if wrapper and not more else ".jsonl"


def _first_line(src: Blob, skip: int, codec: str, text: str) -> tuple[bytes | str, bool]:
    """The first non-blank line (whole, however long, when UTF-8) and whether a non-blank line
    follows it."""
    if codec not in UTF8:
        first_text, _, rest = text.partition("\n")
        return first_text, bool(rest.strip())
    more = False
    with src.open() as fh:
        fh.read(skip)
        first = b""
        while not first.strip() and (line := fh.readline()):
            first = line
        while line := fh.readline():
            if line.strip():
                more = True
                break
    return first, more


def _resolve_remote(text: str) -> _Input:
    fs = io_hub.hub_fs()
    label = InputName(text)
    fspath = text[len(HF_SCHEME) :].rstrip("/")
    folder, config = split_config(fspath)
    try:
        info = fs.info(fspath)
        config = None
    except Exception as e:
        # Not found as written (or refused: a colon is not valid in a repository id): a
        # FOLDER:CONFIG, if it has the shape of one.
        if config is None:
            raise hub_error(label, e) from None
        label = InputName(HF_SCHEME + folder)
        fspath = folder
        info = hub_call(label, fs.info, fspath)
    if info.get("type") != "directory":
        if config is not None:
            raise InputError(f"a config ({config!r}) is chosen in a folder, not a file", path=label)
        blob = remote_blob(fs, fspath, label)
        fmt = FILE_FORMATS[blob.suffix]
        return _Input(label, fmt, blob, lambda: remote_sha256(blob, info))
    tree = RemoteTree(fs, fspath, label, str(info.get("name", fspath)))
    plan = plan_folder(tree, config)
    if plan is None:
        raise InputError(
            "not a dataset folder on the Hub: expected data/<split>-*.parquet or a README.md "
            "card with configs",
            path=label,
        )
    return _Input(label, plan.format, tree, lambda: tree.digest(plan), plan.config, plan)


SPLIT_FROM_LAYOUT = "__split__"


def read_frame(path: str | Path, *, encoding: str | None = None) -> tuple[Any, Source]:
    """A flat table as a polars frame of strings (how tabular families read their input).

    CSV is read by polars directly with every column as text, so that ``" N"`` or ``"007"`` reach
    the rules exactly as written. Other formats go through :func:`open_source`; a dataset folder's
    split (from its file layout) becomes the column ``__split__``.

    Records from JSON or parquet need not agree on types (a field that is text in one record and
    a number or an object in the next is common in hand-made files), so columns are built here
    rather than inferred by polars: scalars become their text, nested values their JSON text,
    and a column whose every value is a list of strings stays a list column (label lists).
    """
    import polars as pl

    src = open_source(path, encoding=encoding)
    if src.format == "csv":
        df, src.row_lines = read_csv(src.location, encoding, with_lines=True)
        if df.width == 0:
            raise InputError("empty table", path=src.path)
        if df.height == 0:  # like an empty JSON array: a header alone is not a dataset
            raise InputError("no records found (a header line only)", path=src.path)
        if (split := split_of(path)) is not None:
            df = df.with_columns(pl.lit(split).alias(SPLIT_FROM_LAYOUT))
        return df, src
    columns: dict[str, list[Any]] = {}
    splits: list[str | None] = []
    records: list[dict[str, Any]] = []
    n = 0
    for b in src.batches:
        records.extend(b.rows)
        for key in dict.fromkeys(k for r in b.rows for k in r):
            if key not in columns:
                columns[key] = [None] * n
        for key, values in columns.items():
            values.extend([r.get(key) for r in b.rows])
        splits.extend([b.split] * len(b.rows))
        n += len(b.rows)
    if n == 0:
        raise InputError("no records found", path=src.path)
    if not columns:
        raise InputError("records have no fields", path=src.path)
    src.text_columns = {
        name
        for name, values in columns.items()
        if any(v is not None for v in values) and all(v is None or type(v) is str for v in values)
    }
    series = [
        _text_column(src.path, name, values, src.nested_cells) for name, values in columns.items()
    ]
    src.nested_records = {i: records[i] for c in src.nested_cells.values() for i in c}
    del records
    df = pl.DataFrame(series)
    if any(s is not None for s in splits):
        df = df.with_columns(pl.Series(SPLIT_FROM_LAYOUT, splits, dtype=pl.String))
    return df, src


def _is_str_list(value: Any) -> bool:
    return type(value) is list and all(type(x) is str or x is None for x in value)


def nested_kind(value: Any) -> str | None:
    """None for a scalar cell, else its kind: ``list`` (of scalars), ``nested list``, ``object``."""
    if value is None or isinstance(value, str | int | float | bool):
        return None
    if isinstance(value, list | tuple):
        deep = any(x is not None and not isinstance(x, str | int | float | bool) for x in value)
        return "nested list" if deep else "list"
    return "object"


def _text_column(
    path: Path | InputName, name: str, values: list[Any], nested: dict[str, dict[int, str]]
) -> Any:
    """One column of :func:`read_frame`: strings, or lists of strings when every value is one.

    Cells that were lists or objects are recorded in ``nested`` (see :attr:`Source.nested_cells`).
    """
    import polars as pl

    kinds = set(map(type, values))
    kinds.discard(type(None))
    if kinds <= {str}:
        return pl.Series(name, values, dtype=pl.String)
    if kinds == {list} and all(_is_str_list(v) for v in values if v is not None):
        return pl.Series(name, values, dtype=pl.List(pl.String))
    out: list[str | None] = []
    cells: dict[int, str] = {}
    for i, v in enumerate(values):
        if (kind := nested_kind(v)) is not None:
            cells[i] = kind
        try:
            out.append(_as_text(v))
        except RecursionError:
            raise InputError(
                "value nested too deeply to read as a table cell",
                path=path,
                record=f"#{i}",
                field=name,
            ) from None
    if cells:
        nested[name] = cells
    return pl.Series(name, out, dtype=pl.String)


def _as_text(value: Any) -> str | None:
    """A cell as text: JSON spelling for booleans and nested values (what a user would write)."""
    if value is None or type(value) is str:
        return value
    if type(value) is bool:
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    if isinstance(value, dict | list | tuple):
        try:
            return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
        except (TypeError, orjson.JSONEncodeError):  # orjson stops at 255 levels of nesting
            # and at 64-bit integers; the rare fallback: stdlib json goes as deep as the
            # recursion limit and spells every integer
            try:
                return json.dumps(value, default=str, ensure_ascii=False)
            except (TypeError, ValueError):  # e.g. keys json cannot spell
                return str(value)
    return str(value)
