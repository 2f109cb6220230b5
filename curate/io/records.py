"""What every reader yields: record batches, input names and the opened :class:`Source`.

Why at the bottom of :mod:`curate.io`: the format readers (JSON, CSV, parquet, folders, shards)
and the resolver above them all speak in these types; keeping them apart from any reader lets
each reader module import them without importing the others.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from curate.core.errors import InputError

BATCH_ROWS = 8192


#: Bytes decoded at a time when a JSON Lines file is not UTF-8.
DECODE_CHUNK = 1 << 20


#: The input name that means standard input.
STDIN = "-"


HF_SCHEME = "hf://"


#: Compression suffixes and the codec each one means.
COMPRESSIONS = {".gz": "gzip", ".gzip": "gzip", ".zst": "zstd", ".zstd": "zstd"}


#: How standard input says it is compressed.
MAGIC = ((b"\x1f\x8b", "gzip"), (b"\x28\xb5\x2f\xfd", "zstd"))


#: Standard input (and a pipe) is kept in memory up to this size, then in an anonymous
#: temporary file.
STDIN_SPOOL_MEMORY = 64 << 20


FILE_FORMATS = {
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".csv": "csv",
    ".tsv": "csv",
}


class Lines:
    """Consecutive non-blank lines of a UTF-8 JSON Lines file, kept as the one ``bytes`` they
    were read as: ``count`` lines, the first being line ``line`` at byte offset ``at``.

    Why not a list of lines: a reader that parses the batch in C++ (pyarrow's JSON reader)
    needs the bytes in one piece, and splitting 8,192 lines into objects only to join them
    again cost ~2 CPU-seconds per 100k MQuAKE cases, on the thread that reads the file. The
    lines are split only when something asks for one (an invalid record's message).
    """

    __slots__ = ("at", "count", "data", "line")
    data: bytes
    line: int
    at: int
    count: int

    def __init__(self, data: bytes, line: int, at: int, count: int) -> None:
        self.data, self.line, self.at, self.count = data, line, at, count

    def split(self) -> tuple[list[bytes], list[int], list[int]]:
        """The lines (each with its newline, as iterating the file gives them), their
        1-based numbers and their byte offsets."""
        parts = self.data.split(b"\n")
        last = parts.pop()
        raws = [x + b"\n" for x in parts]
        if last:
            raws.append(last)
        ats, at = [], self.at
        for r in raws:
            ats.append(at)
            at += len(r)
        return raws, list(range(self.line, self.line + len(raws))), ats


class Batch:
    """Consecutive records of one split of one file; ``offset`` is the index of the first.

    ``rows`` are the records as Python objects, what every family validates. A parquet batch
    makes them only when asked (:attr:`rows`): a reader that builds its columns from
    :attr:`arrow` never pays for millions of Python objects.
    """

    __slots__ = (
        "_error",
        "_lines",
        "_parse",
        "_raw",
        "_rows",
        "arrow",
        "blob",
        "offset",
        "split",
    )

    def __init__(
        self,
        split: str | None,
        offset: int,
        rows: list[dict[str, Any]] | None = None,
        lines: list[int] | None = None,
        raw: list[bytes] | None = None,
        arrow: Any = None,
        error: Callable[[BaseException], InputError] | None = None,
        parse: Callable[[], list[dict[str, Any]]] | None = None,
        blob: Lines | None = None,
    ) -> None:
        self.split: str | None = split
        self.offset: int = offset
        self._rows = rows
        self._lines = lines
        self._raw = raw
        #: The batch as an Arrow record batch (parquet inputs): columns straight from the file.
        self.arrow: Any = arrow
        self._error = error
        #: Makes ``rows`` from ``raw`` (JSON Lines), raising the reader's errors.
        self._parse = parse
        #: The records' lines in one piece (UTF-8 JSON Lines): what :attr:`raw` and
        #: :attr:`lines` are split from when asked.
        self.blob: Lines | None = blob

    def _split_blob(self) -> None:
        if self.blob is not None and self._raw is None:
            self._raw, self._lines, _ = self.blob.split()

    @property
    def lines(self) -> list[int] | None:
        """1-based line numbers (JSON Lines only), for error messages."""
        self._split_blob()
        return self._lines

    @property
    def raw(self) -> list[bytes] | None:
        """Each record's line as read (UTF-8 JSON Lines only), so a reader that builds columns
        in C++ (pyarrow's JSON reader) can use the bytes instead of the parsed objects."""
        self._split_blob()
        return self._raw

    def moved(self, split: str | None, offset: int) -> Batch:
        """The same records as part of a dataset folder: tagged with a split, offset moved."""
        b = Batch(
            split,
            offset,
            self._rows,
            self._lines,
            self._raw,
            self.arrow,
            self._error,
            blob=self.blob,
        )
        b._parse = self._parse
        return b

    @property
    def rows(self) -> list[dict[str, Any]]:
        if self._rows is None and self._parse is not None:
            self._rows = self._parse()
        if self._rows is None:
            try:
                self._rows = self.arrow.to_pylist() if self.arrow is not None else []
            except InputError:
                raise
            except Exception as e:
                if self._error is None:
                    raise
                raise self._error(e) from None
        return self._rows

    def __len__(self) -> int:
        if self._rows is not None:
            return len(self._rows)
        if self.blob is not None:
            return self.blob.count
        return len(self._raw) if self._raw is not None else self.arrow.num_rows


class InputName(str):
    """The name of an input that is not a local path: ``hf://datasets/...`` or ``<stdin>``.

    A ``str`` (a :class:`Path` would fold ``hf://`` into ``hf:/``) with the one attribute of
    ``Path`` that callers use for display, :attr:`name`.
    """

    __slots__ = ()

    @property
    def name(self) -> str:
        return self.rstrip("/").rsplit("/", 1)[-1]


class SplitInput(str):
    """An input path that belongs to one split, as a project configuration's ``splits`` mapping
    says (``splits = {train = "train.csv", test = "test.csv"}``).

    Why a ``str`` with an attribute and not a new parameter: the path travels unchanged through
    every family's ``load`` to :func:`open_source` and :func:`read_frame`, which tag its records
    with the split exactly as a dataset folder's layout does (:meth:`Batch.moved`, the
    ``__split__`` column), so no family needs to know where the split came from.
    """

    # Not named ``split``: a slot of that name would hide ``str.split`` on the path itself.
    __slots__ = ("split_name",)
    split_name: str

    def __new__(cls, path: str, split: str) -> SplitInput:
        s = super().__new__(cls, path)
        s.split_name = split
        return s

    def __reduce__(self) -> tuple[Any, ...]:
        return (SplitInput, (str(self), self.split_name))


def split_of(path: Any) -> str | None:
    """The split a :class:`SplitInput` assigns, else None."""
    return path.split_name if isinstance(path, SplitInput) else None


def tagged(batches: Iterator[Batch], split: str) -> Iterator[Batch]:
    for b in batches:
        yield b.moved(split, b.offset)


@dataclass
class Source:
    """An opened input: what it is and an iterator over its batches."""

    #: A :class:`Path` for a local input (a ``FOLDER:CONFIG`` input: the folder), else an
    #: :class:`InputName`; what error messages name.
    path: Path | InputName
    format: str
    batches: Iterator[Batch]
    sha256: str = ""
    splits: dict[str, int] = field(default_factory=dict)
    #: :func:`read_frame` only: cells that held a list or an object and became text, per column
    #: (row index → ``list`` | ``nested list`` | ``object``), and those rows' records as read.
    #: Why keep them: a table family must report such a cell as malformed (and keep the record
    #: whole in a changelog), not treat its JSON text as an ordinary value.
    nested_cells: dict[str, dict[int, str]] = field(default_factory=dict)
    nested_records: dict[int, dict[str, Any]] = field(default_factory=dict)
    #: :func:`read_frame` of a CSV/TSV file only: the physical line each row starts on (a
    #: quoted value may span lines), or None when that cannot be told for sure.
    row_lines: list[int] | None = None
    #: :func:`read_frame` of a typed input (JSON, parquet) only: the columns whose every value
    #: was a string. Every cell reaches the rules as text, so this is what remembers that
    #: ``"12"`` was text and must be published as text, not as the number a CSV cell would be.
    text_columns: set[str] = field(default_factory=set)
    #: The card config read (a folder whose README declares ``configs``), else None.
    config: str | None = None
    #: Where the bytes come from (a :class:`Path` or a :class:`Blob`), for :func:`read_frame`.
    location: Any = field(default=None, repr=False)


def brief(e: BaseException, first_line_only: bool = False) -> str:
    """A library's (often multi-line) message as one short clause for an InputError."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    if first_line_only:
        lines = lines[:1]
    text = "; ".join(lines) or type(e).__name__
    return text if len(text) <= 300 else text[:297] + "..."


#: Names of standard input as a path: read as ``-`` (once per command, its terminal refused).
STDIN_PATHS = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})


def is_stdin(text: str) -> bool:
    """Whether an input names standard input: ``-``, or ``/dev/stdin`` and its aliases (which
    the shell may have redirected from a file: the stream is read, not the file)."""
    return text == STDIN or os.path.normpath(text) in STDIN_PATHS
