"""Input shards: a large JSON Lines or parquet file cut into byte spans or row-group ranges that
separate processes (or Ray tasks) read independently, numbered so that findings name the same
records as a one-process read.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from curate.core.errors import InputError, UsageError
from curate.io.encodings import UTF8, resolve_encoding
from curate.io.json_files import jsonl_blocks, line_stats
from curate.io.parquet_files import parquet_batches
from curate.io.records import HF_SCHEME, Batch, Source, is_stdin, split_of, tagged
from curate.io.sources import Blob, file_kind, open_bytes

#: Bytes of JSON Lines per input shard at most, and at least (tests lower both to force several
#: shards of a small file): see :func:`input_spans`. A parquet shard is a quarter of these in
#: uncompressed row-group bytes, about as many records (measured on MQuAKE: 1.5 GB of row groups
#: for the cases that are 4.9 GB of JSON Lines): a shard is one task's work, and the more even
#: the tasks, the less a node waits for the last one.
SPAN_BYTES = 128 << 20


SPAN_MIN_BYTES = 16 << 20


#: Bytes :func:`count_span` reads at a time.
_COUNT_CHUNK = 8 << 20


@dataclass(frozen=True)
class Span:
    """One shard of an input file that another process can read on its own: a byte range of an
    uncompressed UTF-8 JSON Lines file, or a run of row groups of a parquet file.

    Why: an engine that spreads the reading over machines (``--engine ray``) sends a worker a
    span, not the bytes; the worker reads the file itself (a path on storage every node sees).
    Its batches (:meth:`open`) are those the whole-file reader gives for the same records, with
    the same line numbers, record indexes and errors, provided ``first_line`` and ``first_index``
    (the 1-based line number and 0-based record index of its first line in the file) are set:
    from the footer for parquet (:func:`input_spans`), from a counting pass over the spans
    before it for JSON Lines (:class:`SpanNumbering`).

    A JSON Lines span owns the lines that *start* in ``[start, end)``: its reader seeks to
    ``start``, skips to just past the next newline unless ``start`` is 0, and reads through the
    line that crosses ``end`` (the usual split of line-oriented files), so every line belongs
    to exactly one span whatever the byte offsets.
    """

    #: The input as given (a :class:`SplitInput`'s split is :attr:`split`).
    path: str
    format: str  # "jsonl" | "parquet"
    #: Byte offsets (JSON Lines) or row group indexes (parquet), end excluded.
    start: int
    end: int
    split: str | None = None
    #: Byte order mark bytes at the start of the file (JSON Lines).
    skip: int = 0
    first_line: int = 1
    first_index: int = 0
    #: Records (non-blank lines, rows) in the span, once known.
    records: int | None = None
    #: The file's absolute path, which a worker opens (its working directory is not the
    #: caller's); messages name :attr:`path`, as the whole-file reader does.
    where: str = ""

    def __str__(self) -> str:
        return self.path

    def open(self, dictionary: Collection[str] = ()) -> Source:
        """The span as a :class:`Source` (no hash: that is the whole file's); ``dictionary`` as
        for :func:`open_source`."""
        label = Path(self.path)
        if self.format == "parquet":
            groups = range(self.start, self.end)
            where = self.where or self.path
            blob = Blob(str(label), lambda: open(where, "rb"), None, ".parquet")  # noqa: SIM115
            batches = parquet_batches(blob, self.split, self.first_index, groups, dictionary)
        else:
            batches = _jsonl_span_batches(self)
            if self.split is not None:
                batches = tagged(batches, self.split)
        return Source(label, self.format, batches, location=label)


def input_spans(path: str | Path, encoding: str | None = None, parts: int = 1) -> list[Span] | None:
    """``path`` cut into about ``parts`` spans (within :data:`SPAN_MIN_BYTES` to
    :data:`SPAN_BYTES` each), in file order; JSON Lines spans still need numbering
    (:class:`SpanNumbering`).

    None when the input is not a file another process can read by offsets: standard input,
    the Hub, a folder, a compressed file (a stream has no offsets), a JSON array (its records
    are found only by parsing the whole document), CSV, a JSON Lines file in another encoding
    than UTF-8, and a parquet file whose footer cannot be read or that has no rows (the
    whole-file reader then says what is wrong, as it always does).
    """
    text = str(path)
    if is_stdin(text) or text.startswith(HF_SCHEME):
        return None
    p = Path(text)
    try:
        if not p.is_file():
            return None
        fmt, compression, _ = file_kind(p.name, p)
        if compression is not None or fmt not in ("jsonl", "parquet"):
            return None
        split = split_of(path)
        if fmt == "parquet":
            return _parquet_spans(p, text, split, parts)
        with open(p, "rb") as fh:
            codec, skip = resolve_encoding(p, fh.read(4), encoding)
        size = p.stat().st_size
    except (OSError, InputError, UsageError):
        return None
    if codec not in UTF8 or size <= skip:
        return None
    step = _span_size(size, parts)
    where = os.path.abspath(p)
    return [
        Span(text, "jsonl", s, min(s + step, size), split, skip, where=where)
        for s in range(0, size, step)
    ]


def _span_size(total: int, parts: int, scale: int = 1) -> int:
    most, least = SPAN_BYTES // scale, SPAN_MIN_BYTES // scale
    return max(1, least, min(most, -(-total // max(1, parts))))


def _parquet_spans(p: Path, text: str, split: str | None, parts: int) -> list[Span] | None:
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(p).metadata
        groups = [
            (meta.row_group(i).num_rows, meta.row_group(i).total_byte_size)
            for i in range(meta.num_row_groups)
        ]
    except Exception:  # the whole-file reader names what is wrong
        return None
    if not sum(rows for rows, _ in groups):
        return None
    step = _span_size(sum(size for _, size in groups), parts, 4)
    spans: list[Span] = []
    start = first = rows_in = bytes_in = 0
    for i, (rows, size) in enumerate(groups):
        rows_in += rows
        bytes_in += size
        if bytes_in >= step or i == len(groups) - 1:
            where = os.path.abspath(p)
            spans.append(Span(text, "parquet", start, i + 1, split, 0, 1, first, rows_in, where))
            start, first, rows_in, bytes_in = i + 1, first + rows_in, 0, 0
    return spans


def _line_start(fh: BinaryIO, pos: int, skip: int) -> int:
    """The offset of the first line starting at or after ``pos`` (0: just past the BOM)."""
    if pos <= 0:
        return skip
    fh.seek(pos - 1)
    fh.readline()
    return fh.tell()


def count_span(span: Span, fh: BinaryIO | None = None, digest: Any = None) -> tuple[int, int]:
    """``(lines, records)`` of a JSON Lines span: the lines it owns and those not blank.

    Chunk by chunk, counting in place (no copy of a chunk); ``fh``: the file, open (else it is
    opened); ``digest`` (a hashlib object) is updated with the span's bytes."""
    if fh is None:
        with open_bytes(Path(span.path)) as f:
            return count_span(span, f, digest)
    lines = blank = 0
    a, b = _line_start(fh, span.start, span.skip), _line_start(fh, span.end, span.skip)
    fh.seek(a)
    pos = a
    head = b""  # the line in progress: its bytes so far
    # one buffer read into over and over: a fresh 8 MiB ``bytes`` per read is a fresh mapping
    # whose pages fault in again (~1 CPU-s per 5 GB)
    chunk = bytearray(min(_COUNT_CHUNK, max(0, b - pos)))
    with memoryview(chunk) as mv:
        while pos < b:
            # typeshed's BinaryIO lacks readinto; every stream opened here has it
            got = fh.readinto(mv[: min(len(chunk), b - pos)]) or 0  # type: ignore[attr-defined]
            if not got:
                break
            if digest is not None:
                digest.update(mv[:got])
            pos += got
            first = chunk.find(b"\n", 0, got)
            if first < 0:
                head += mv[:got]
                continue
            lines += 1
            blank += not (head + mv[:first]).strip()
            last = chunk.rfind(b"\n", 0, got)
            whole, blanks = line_stats(chunk, first + 1, last + 1)
            lines += whole
            blank += blanks
            head = bytes(mv[last + 1 : got])
    if head:  # the file's last line, without a newline
        lines += 1
        blank += not head.strip()
    return lines, lines - blank


class SpanNumbering:
    """The JSON Lines spans of one file (:func:`input_spans`, in order) numbered in one
    sequential pass over it: iterating yields each span with its first line number and record
    index as soon as the spans before it are counted, so that a caller can hand it to a worker
    at once while the pass goes on.

    The pass reads every byte of the file once, and ``digest`` (a hashlib object) sees them
    all: the file's hash, which the report carries and which must be taken by one sequential
    read anyway, comes from the same read. Counting beside hashing costs ~2 ms per MB (newlines
    by ``bytes.count``, blank lines only where a line starts with whitespace). After the
    iteration, ``lines`` and ``records`` are the whole file's.
    """

    def __init__(self, spans: Sequence[Span], digest: Any = None) -> None:
        self.spans: list[Span] = list(spans)
        self.digest = digest
        self.lines: int = 0
        self.records: int = 0

    def __iter__(self) -> Iterator[Span]:
        spans = self.spans
        with open_bytes(Path(spans[0].path)) as fh:
            if self.digest is not None and spans[0].skip:
                self.digest.update(fh.read(spans[0].skip))  # the byte order mark
            for span in spans:
                yield dataclasses.replace(span, first_line=self.lines + 1, first_index=self.records)
                lines, records = count_span(span, fh, self.digest)
                self.lines += lines
                self.records += records


class _Upto:
    """The next ``left`` bytes of a file, then end of file (what :func:`jsonl_blocks` reads)."""

    def __init__(self, f: BinaryIO, left: int) -> None:
        self.f, self.left = f, left

    def readinto(self, b: Any) -> int:
        if self.left <= 0:
            return 0
        with memoryview(b) as mv:
            # typeshed's BinaryIO lacks readinto; every stream opened here has it
            got = self.f.readinto(mv[: self.left]) or 0  # type: ignore[attr-defined]
        self.left -= got
        return got


def _jsonl_span_batches(span: Span) -> Iterator[Batch]:
    """:func:`jsonl_batches` (UTF-8) of the lines a span owns, numbered as in the file."""
    path = Path(span.path)
    try:
        fh = open(span.where or span.path, "rb")  # noqa: SIM115  (closed below)
    except OSError as e:
        raise InputError(f"cannot read ({e.strerror or e})", path=path) from None
    with fh:
        a, b = _line_start(fh, span.start, span.skip), _line_start(fh, span.end, span.skip)
        fh.seek(a)
        upto = _Upto(fh, b - a)
        yield from jsonl_blocks(
            path,
            upto,
            a,
            "utf-8",
            span.first_line,
            span.first_index,
            size=b - a,
        )
