"""JSON arrays and JSON Lines as record batches: orjson where it is exact, the standard library
where it is not (integers beyond 64 bits), with the byte offset and line of every defect.

Why JSON Lines is read in blocks: a block of lines parses in one call and splits across
processes; a JSON *array* must be parsed whole (that is the format).
"""

from __future__ import annotations

import codecs
import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, Protocol

import orjson

import curate.io.records as io_records
from curate.core.errors import InputError
from curate.io.encodings import (
    UTF8,
    check_encoding,
    decode,
    encoding_error,
    markup_hint,
    nul_error,
    resolve_encoding,
    utf8_problem,
)
from curate.io.records import Batch, Lines, brief
from curate.io.sources import Blob, open_bytes, read_bytes, sample_bytes


def _position(text: bytes | str, pos: int) -> str:
    if isinstance(text, bytes):
        line, last = text.count(b"\n", 0, pos), text.rfind(b"\n", 0, pos)
    else:
        line, last = text.count("\n", 0, pos), text.rfind("\n", 0, pos)
    return f"{line + 1}:{pos - (last + 1) + 1}"


def _orjson_error_pos(err: orjson.JSONDecodeError, data: bytes | str) -> str:
    # orjson reports line/column in characters; its ``pos`` is a character offset too, so
    # counting bytes of ``data`` would drift on non-ASCII text.
    if getattr(err, "lineno", None):
        return f"{err.lineno}:{err.colno}"
    return _position(data, getattr(err, "pos", 0) or 0)


#: 19 digits in a row: the shortest integer literal orjson cannot hold (-(2**63) - 1 has 19
#: digits; orjson holds -(2**63) to 2**64 - 1).
_LONG_DIGITS = re.compile(rb"[0-9]{19}")


_LONG_DIGITS_TEXT = re.compile(r"[0-9]{19}")


def _loads(data: bytes | str) -> Any:
    """``orjson.loads``, except that integers beyond 64 bits stay exact.

    Why: orjson reads such an integer as a float without a word (``18446744073709551616`` →
    ``1.8446744073709552e19``; past ~309 digits it raises "number is infinity"), which would
    change an id or a count in the data. The stdlib ``json`` keeps every integer exact but is
    several times slower, so it reads only a document that holds 19 digits in a row somewhere
    (a regex over the raw text, at C speed; a long digit string inside a quoted value sends a
    document there too, harmlessly). Its float and constant hooks make it refuse what orjson
    refuses (``NaN``, ``Infinity``, a float too big for a double), so the fallback never accepts
    a document orjson would call invalid; when it cannot read one either, its error (with its
    position) is raised as orjson's would be.
    """
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        # orjson's only complaint about a valid document with a huge integer
        if "number is infinity" not in str(e) or not _long_digits(data):
            raise
        try:
            return _exact_loads(data)
        except json.JSONDecodeError as later:  # the integer was fine; something after it is not
            raise orjson.JSONDecodeError(later.msg, later.doc, later.pos) from None
        except (ValueError, RecursionError):  # a float too big for a double, as orjson said
            raise e from None
    if not _long_digits(data):
        return doc
    try:
        return _exact_loads(data)
    except (ValueError, RecursionError) as e:  # nested deeper than the stdlib parser goes
        raise orjson.JSONDecodeError(f"cannot read exactly: {brief(e, True)}", "", 0) from None


def _long_digits(data: bytes | str) -> bool:
    if isinstance(data, bytes):
        return _LONG_DIGITS.search(data) is not None
    return _LONG_DIGITS_TEXT.search(data) is not None


def _exact_loads(data: bytes | str) -> Any:
    return json.loads(data, parse_float=_finite_float, parse_constant=_no_constant)


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError("number is infinity when parsed as double")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def json_batches(path: Path | Blob, encoding: str | None = None) -> Iterator[Batch]:
    raw = read_bytes(path)
    data = decode(path, raw, encoding)
    if not data.strip():
        raise InputError("empty file: expected a JSON array of records", path=path)
    try:
        doc = _loads(data)
    except orjson.JSONDecodeError as e:
        if isinstance(data, bytes):
            problem = utf8_problem(path, raw)
            if problem is not None:
                raise problem from None
        elif "\x00" in data:
            codec = check_encoding(encoding or "utf-8")
            raise nul_error(path, codec, max(raw.find(b"\x00"), 0), raw[: 1 << 16]) from None
        msg = str(e).split(":")[0]
        pos = _orjson_error_pos(e, data)
        raise InputError(
            f"invalid JSON ({msg}){markup_hint(data, 'JSON')}", path=path, position=pos
        ) from None
    del raw, data
    if isinstance(doc, dict) and len(doc) == 1 and isinstance(next(iter(doc.values())), list):
        # {"data": [...]} wrappers are common; accept one list under a single key.
        doc = next(iter(doc.values()))
    if not isinstance(doc, list):
        raise InputError(
            f"top-level JSON value is {type(doc).__name__}, expected an array of records",
            path=path,
        )
    for i, rec in enumerate(doc):
        if not isinstance(rec, dict):
            raise InputError(
                f"record is {type(rec).__name__}, expected an object", path=path, record=f"#{i}"
            )
    for start in range(0, len(doc), io_records.BATCH_ROWS):
        yield Batch(None, start, doc[start : start + io_records.BATCH_ROWS])


def _decoded_lines(path: Path | Blob, fh: BinaryIO, codec: str, start: int) -> Iterator[str]:
    """Lines of a non-UTF-8 file, decoded chunk by chunk so memory follows the chunk.

    The incremental decoder keeps an incomplete character between chunks; the bytes it holds
    are subtracted so a decoding error still names its exact byte offset in the file.
    """
    decoder = codecs.getincrementaldecoder(codec)(errors="strict")
    consumed = start
    pending: list[str] = []  # pieces of the current line (a list: a long line stays linear)
    first = True
    while True:
        chunk = fh.read(io_records.DECODE_CHUNK)
        held = len(decoder.getstate()[0])
        try:
            text = decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError as e:
            at = consumed - held + e.start
            bad = e.object[e.start] if e.start < len(e.object) else None
            raise encoding_error(path, codec, at, bad, sample_bytes(path), e.reason) from None
        consumed += len(chunk)
        if first and text.startswith("\ufeff"):
            text = text[1:]
        first = first and not text
        if "\n" in text:
            head, *lines, tail = text.split("\n")
            yield "".join([*pending, head])
            yield from lines
            pending = [tail]
        elif text:
            pending.append(text)
        if not chunk:
            break
    if rest := "".join(pending):
        yield rest


def jsonl_batches(path: Path | Blob, encoding: str | None = None) -> Iterator[Batch]:
    """The records of a JSON Lines file, at most :data:`~curate.io.records.BATCH_ROWS`
    non-blank lines at a time.

    A UTF-8 file is read in whole blocks of lines (:func:`jsonl_blocks`) and its records are
    parsed only when a reader asks for :attr:`Batch.rows`, with the same errors, naming the same
    line: a reader that builds its columns from the bytes in C++ then never makes the Python
    objects. Other encodings are decoded and parsed as they are read.
    """
    index = 0
    fh = open_bytes(path)
    with fh:
        if fh.seekable():
            codec, skip = resolve_encoding(path, fh.read(4), encoding)
            fh.seek(skip)
        else:  # a decompressing stream: look at its start through a second one
            codec, skip = resolve_encoding(path, sample_bytes(path, 4), encoding)
            fh.read(skip)
        if codec in UTF8:
            # the bytes left, of a regular file only (a FIFO or device says 0, and would start
            # the buffer at one byte)
            st = os.fstat(fh.fileno()) if isinstance(path, Path) else None
            size = st.st_size - skip if st is not None and stat.S_ISREG(st.st_mode) else None
            # typeshed's BinaryIO lacks readinto; every stream open_bytes gives has it
            batches = jsonl_blocks(path, fh, skip, codec, size=size)  # type: ignore[arg-type]
        else:
            batches = _decoded_jsonl(path, fh, codec, skip)
        for batch in batches:
            index += len(batch)
            yield batch
    if index == 0:
        raise InputError("empty file: expected JSON Lines records", path=path)


def _decoded_jsonl(path: Path | Blob, fh: BinaryIO, codec: str, skip: int) -> Iterator[Batch]:
    """The records of a JSON Lines file in another encoding than UTF-8, parsed as decoded."""
    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    index = offset = 0
    at = skip
    for lineno, line in enumerate(_decoded_lines(path, fh, codec, skip), start=1):
        line_at, at = at, at + len(line)
        if not line.strip():
            continue
        rows.append(_jsonl_record(path, line, lineno, line_at, index == 0, codec))
        lines.append(lineno)
        index += 1
        if len(lines) >= io_records.BATCH_ROWS:
            yield Batch(None, offset, rows, lines)
            offset = index
            rows, lines = [], []
    if lines:
        yield Batch(None, offset, rows, lines)


#: Bytes a UTF-8 JSON Lines file is read in (a batch is at most this, or BATCH_ROWS lines):
#: under glibc's largest mmap threshold (32 MiB), so each batch's copy reuses the heap instead
#: of faulting fresh pages in (measured: 16-24 MiB fastest of 8-40 MiB).
JSONL_BLOCK = 16 << 20


class ReadsInto(Protocol):
    """All that :func:`jsonl_blocks` reads a stream by: a file opened for bytes, or a byte
    range of one (a span's reader)."""

    def readinto(self, buffer: memoryview, /) -> int | None: ...


def jsonl_blocks(
    path: Path | Blob,
    fh: ReadsInto,
    at: int,
    codec: str,
    lineno: int = 1,
    offset: int = 0,
    size: int | None = None,
) -> Iterator[Batch]:
    """A UTF-8 JSON Lines file's batches as whole blocks of lines (:class:`Lines`), read into
    one reused buffer; ``at``: the byte offset ``fh`` is at (past a byte order mark); ``size``:
    the bytes left to read, when known.

    The records are the non-blank lines, numbered as the file's lines; a block holding a blank
    line is split here (rare), every other block only counted. A line longer than the block
    grows the buffer to hold it. The buffer is no larger than what is left to read (one byte
    more, so the read that finds the end needs no room made): a small file or span does not
    fill 16 MiB of zeroes first (~1.4 ms each, the whole cost of reading a span of a few lines).
    """
    buf = bytearray(JSONL_BLOCK if size is None else max(1, min(JSONL_BLOCK, size + 1)))
    held = 0  # bytes at the start of buf carried over from the last read (a partial line)
    # lineno: line number of buf[0]; offset: records before this block (a Span starts later)
    eof = False
    while True:
        if not eof:
            if held == len(buf):  # one line fills the buffer: make room for the rest of it
                buf.extend(bytes(len(buf)))
            with memoryview(buf) as mv:
                got = fh.readinto(mv[held:])
            eof = not got
            held += got or 0
            cut = held if eof else buf.rfind(b"\n", 0, held) + 1
            if not cut:
                continue
        else:
            cut = held
        if not cut:
            return
        nl, blank = line_stats(buf, 0, cut)
        last_open = buf[cut - 1] != 0x0A  # the file's last line, without a newline
        if (
            nl + last_open > io_records.BATCH_ROWS
        ):  # short lines: io_records.BATCH_ROWS of them make a batch
            pos = -1
            for _ in range(io_records.BATCH_ROWS):
                pos = buf.find(b"\n", pos + 1, cut)
            cut, nl = pos + 1, io_records.BATCH_ROWS
            blank = _blank_lines(buf, 0, cut)
        with memoryview(buf) as mv:
            data = bytes(mv[:cut])
        buf[: held - cut] = buf[cut:held]  # the partial line after the cut, to the front
        held -= cut
        n_lines = nl + (0 if data.endswith(b"\n") else 1)
        if not blank:  # blank lines are skipped, still counted
            blob = Lines(data, lineno, at, n_lines)
            yield _jsonl_batch(path, offset, [], [], [], codec, blob)
            offset += n_lines
        else:
            raws, nums, ats = Lines(data, lineno, at, n_lines).split()
            keep = [i for i, r in enumerate(raws) if r.strip()]
            if keep:
                yield _jsonl_batch(
                    path,
                    offset,
                    [nums[i] for i in keep],
                    [raws[i] for i in keep],
                    [ats[i] for i in keep],
                    codec,
                )
                offset += len(keep)
        lineno += n_lines
        at += len(data)


def _jsonl_batch(
    path: Path | Blob,
    offset: int,
    lines: list[int],
    raws: list[bytes],
    ats: list[int],
    codec: str,
    blob: Lines | None = None,
) -> Batch:
    """A batch of UTF-8 lines (``blob``, or the lists), parsed when its rows are asked for."""

    def parse() -> list[dict[str, Any]]:
        if blob is not None:
            got, nums, at_ = blob.split()
        else:
            got, nums, at_ = raws, lines, ats
        return [
            _jsonl_record(path, line, n, at, offset + i == 0, codec)
            for i, (line, n, at) in enumerate(zip(got, nums, at_, strict=True))
        ]

    if blob is not None:
        return Batch(None, offset, parse=parse, blob=blob)
    return Batch(None, offset, None, lines, raws, parse=parse)


def _jsonl_record(
    path: Path | Blob, line: bytes | str, lineno: int, line_at: int, first: bool, codec: str
) -> dict[str, Any]:
    """One JSON Lines record, or the error naming its line (``line_at``: its byte offset)."""
    try:
        rec = _loads(line)
    except orjson.JSONDecodeError as e:
        if isinstance(line, bytes):
            problem = utf8_problem(path, line, line_at, lineno)
            if problem is not None:
                raise problem from None
        elif "\x00" in line:
            head = sample_bytes(path)
            raise nul_error(path, codec, head.find(b"\x00"), head) from None
        msg = str(e).split(":")[0]
        pos = getattr(e, "pos", 0) or 0
        hint = markup_hint(line, "JSON Lines") if first else ""
        raise InputError(
            f"invalid JSON ({msg}){hint}", path=path, position=f"{lineno}:{pos + 1}"
        ) from None
    if not isinstance(rec, dict):
        raise InputError(
            f"line holds {type(rec).__name__}, expected a JSON object",
            path=path,
            position=str(lineno),
        )
    return rec


_BLANK_START = re.compile(rb"\n(?=[ \t\r\n\x0b\x0c])")


_WS_BYTES = frozenset(b" \t\r\n\x0b\x0c")


def _blank_lines(chunk: bytes | bytearray, start: int, end: int) -> int:
    """How many of the whole lines in ``chunk[start:end]`` are blank (whitespace only, as
    :func:`jsonl_batches` skips them); only lines starting with whitespace are looked at."""
    starts = [m.end() for m in _BLANK_START.finditer(chunk, start, end)]
    if start < end and chunk[start] in _WS_BYTES:
        starts.insert(0, start)
    n = 0
    for s in starts:
        e = chunk.find(b"\n", s, end)
        if not chunk[s : e if e >= 0 else end].strip():
            n += 1
    return n


#: Newlines :func:`line_stats` finds one by one before it judges the lines' length.
_PROBE_LINES = 64


#: Average line length (bytes) below which :func:`line_stats` counts by whole-buffer scans.
_SHORT_LINE = 512


def line_stats(chunk: bytes | bytearray, start: int, end: int) -> tuple[int, int]:
    """``(newlines, blank lines)`` in ``chunk[start:end]``: the ``\\n`` bytes there, and how
    many of the lines starting there are blank (:func:`_blank_lines`).

    Why not ``count`` and a regular expression: each is a byte-by-byte scan (~1.3 GB/s each
    here), while MQuAKE lines are kilobytes long; ``find`` jumps from newline to newline at
    ``memchr`` speed and looks at the byte after each (a blank line starts with whitespace),
    ~4x less CPU on the whole. Lines shorter than :data:`_SHORT_LINE` on average (one Python
    step per line would cost more) go back to the two scans for the rest of the chunk.
    """
    find = chunk.find
    ws = _WS_BYTES
    newlines = blank = 0
    s = start
    while True:
        if s < end and chunk[s] in ws:  # a line starting with whitespace: is it blank?
            e = find(b"\n", s, end)
            blank += not chunk[s : e if e >= 0 else end].strip()
        i = find(b"\n", s, end)
        if i < 0:
            return newlines, blank
        newlines += 1
        s = i + 1
        if newlines == _PROBE_LINES and s - start < _PROBE_LINES * _SHORT_LINE:
            return newlines + chunk.count(b"\n", s, end), blank + _blank_lines(chunk, s, end)
