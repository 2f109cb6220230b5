"""CSV and TSV files (flat tables only) through polars, with the checks polars does not make: a
last row cut short (a truncated file), a repeated header, an unterminated quote, markup served
instead of data.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import curate.io.records as io_records
from curate.core.errors import InputError
from curate.io.encodings import UTF8, decode, markup_hint, nul_error, resolve_encoding, utf8_problem
from curate.io.records import Batch, brief
from curate.io.sources import Blob, open_bytes, read_bytes, suffix_of


def read_csv(
    path: Path | Blob, encoding: str | None, *, with_lines: bool = False
) -> tuple[Any, list[int] | None]:
    """A CSV/TSV file as a polars frame of strings (``"007"`` stays ``"007"``), and with
    ``with_lines`` the physical line each row starts on (see :func:`_csv_row_lines`).

    UTF-8 files go to polars as they are; other encodings are decoded here and handed over as
    UTF-8. NUL bytes in the first 64 KiB mean UTF-16/32 text without a BOM (or binary data):
    polars would take them for odd header names and the family would then fail far from the
    cause.
    """
    import polars as pl

    sep = "\t" if suffix_of(path) == ".tsv" else ","
    # polars reads a plain file itself; other bytes (decompressed, downloaded) are read once
    # here and handed over.
    data = None if isinstance(path, Path) else read_bytes(path)
    if data is None:
        with open_bytes(path) as fh:
            head = fh.read(1 << 16)
    else:
        head = data[: 1 << 16]
    codec, skip = resolve_encoding(path, head, encoding)
    source: Any = path if data is None else data
    if codec in UTF8:
        if b"\x00" in head:
            raise nul_error(path, codec, head.index(b"\x00"), head)
        start = head[skip : skip + 1024]
    else:
        text = decode(path, read_bytes(path) if data is None else data, encoding)
        assert isinstance(text, str)  # decode() keeps bytes only for the UTF-8 codecs
        if "\x00" in text[: 1 << 16]:
            raise nul_error(path, codec, max(head.find(b"\x00"), 0), head)
        source = text.encode("utf-8")
        start = source[:1024]
    if not start.strip():
        raise InputError("empty file: expected a CSV header and rows", path=path)
    if hint := markup_hint(start, "CSV"):
        raise InputError(hint.removeprefix("; "), path=path)
    try:
        df = pl.read_csv(source, separator=sep, infer_schema=False, glob=False)
    except Exception as e:
        whole = source if isinstance(source, bytes) else read_bytes(path)
        if codec in UTF8:
            problem = utf8_problem(path, whole)
            if problem is not None:
                raise problem from None
        body = whole[skip:] if codec in UTF8 else whole
        opened = _unterminated_quote(body, sep)
        line: int | None
        why: str | None
        if opened is not None:
            line, why = opened, f"unterminated quoted field starting at line {opened}"
        else:
            line, why = _csv_problem(body.decode("utf-8", "replace"), sep)
        raise InputError(
            f"not a readable CSV file ({why or brief(e, True)})",
            path=path,
            position=str(line) if line else None,
        ) from None
    _refuse_repeated_header(df.columns, path)
    if df.width > 1 and df.height and df[-1, -1] is None:
        # polars fills a short row's missing fields with nulls; only a null last cell can be one
        rows: bytes | None = None
        if isinstance(source, bytes):
            rows = source[skip:] if codec in UTF8 else source
        _refuse_short_last_row(path, rows, skip, sep, df.width)
    rows_utf8: bytes | None = None  # the rows' UTF-8 bytes, when in memory
    if isinstance(source, bytes):
        rows_utf8 = source[skip:] if codec in UTF8 else source
    nulls = (
        df.select(pl.all_horizontal(pl.all().is_null())).to_series().arg_true().to_list()
        if df.width
        else []
    )
    if nulls:  # rows of nothing but nulls: blank lines among them are no records (below)
        if rows_utf8 is None:
            df, lines = _without_blank_lines(df, nulls, path, sep, skip)
        else:
            df, lines = _without_blank_lines(df, nulls, rows_utf8, sep)
        return df, lines if with_lines else None
    if not with_lines:
        return df, None
    if rows_utf8 is not None:
        return df, _csv_row_lines(rows_utf8, sep, df.height)
    return df, _csv_row_lines(path, sep, df.height, skip)


def _without_blank_lines(
    df: Any, nulls: list[int], rows: bytes | Path | Blob, sep: str, skip: int = 0
) -> tuple[Any, list[int] | None]:
    """``df`` without the rows polars made of blank lines, and the line each remaining row
    starts on (``nulls``: the rows of nothing but nulls; ``rows``: the UTF-8 rows without a
    BOM, or a UTF-8 file whose first ``skip`` bytes are one).

    Why: polars reads an empty line as a row of nulls, so a blank line in the middle of a file
    became a record failing the schema (``missing glycan``, TB002), while pandas, pyarrow and
    ``datasets`` skip it and ``curate diff`` called the file identical to one without it. A line
    of separators (``,,``) is a row of empty values, as everywhere, and stays. Only the lines of
    rows that are all null are looked at, a line at a time (splitting the whole file cost 3.5
    times its size). When the lines cannot be told (:func:`_csv_row_lines`), nothing is dropped."""
    import polars as pl

    lines = _csv_row_lines(rows, sep, df.height, skip)
    if lines is None:
        return df, None
    wanted = {lines[i] for i in nulls}
    last = max(wanted, default=0)
    blank: set[int] = set()
    with io.BytesIO(rows) if isinstance(rows, bytes) else open_bytes(rows) as fh:
        for n, line in enumerate(fh, 1):
            if n in wanted and not line.rstrip(b"\n").strip(b"\r"):
                blank.add(n)
            if n >= last:
                break
    if not blank:
        return df, lines
    keep = pl.Series([n not in blank for n in lines])
    return df.filter(keep), [n for n in lines if n not in blank]


#: How much of a CSV file's end is read to find its last row (more only when that row holds a
#: quoted line break or is longer than this).
_TAIL_BYTES = 1 << 20


def _refuse_short_last_row(
    path: Path | Blob, body: bytes | None, skip: int, sep: str, width: int
) -> None:
    """A CSV whose last row has fewer fields than the header is a cut file: exit 2 with the
    row's line.

    Why the last row only: a download or copy that stopped early ends inside a row, and polars
    reads that row with its missing fields as nulls, so the cut value (``G`` of a glycan, say)
    reached the rules as data and the missing columns were never mentioned. A short row in the
    middle of a file is a malformed record, which the family's rules report as such. Called only
    when the frame's last cell is null; ``body`` is the UTF-8 text without its BOM (None: the
    plain file ``path``, of which the tail is read, and the whole only when needed).
    """
    import csv
    import io as _io

    whole = body
    if whole is None:
        with open_bytes(path) as fh:
            size = fh.seek(0, io.SEEK_END)
            at = max(skip, size - _TAIL_BYTES)
            fh.seek(at)
            tail = fh.read()
    else:
        tail, at = whole, 0
    found = _last_record(tail, sep, whole is not None or at == skip)
    if found is None:  # a quoted line break in the last row, or a row longer than the tail
        whole = read_bytes(path)[skip:]
        tail, at = whole, 0
        found = _last_record(whole, sep, True)
    if found is None:
        return
    start, end = found
    record = tail[start:end].decode("utf-8", "replace")
    row = next(csv.reader(_io.StringIO(record, newline=""), delimiter=sep), [])
    if len(row) >= width:
        return
    if whole is not None:
        line = whole.count(b"\n", 0, start) + 1
    else:  # newlines before the tail, counted in chunks, then those in it
        line, left = tail.count(b"\n", 0, start) + 1, at - skip
        with open_bytes(path) as fh:
            fh.seek(skip)
            while left > 0 and (chunk := fh.read(min(io_records.DECODE_CHUNK, left))):
                line, left = line + chunk.count(b"\n"), left - len(chunk)
    raise InputError(
        f"truncated file: its last row has {len(row)} of the header's {width} fields (the "
        "file ends inside a row: a download or copy that stopped early?)",
        path=path,
        position=str(line),
    )


def _last_record(data: bytes, sep: str, complete: bool) -> tuple[int, int] | None:
    """(start, end) offsets of the last non-blank row of CSV text ``data``; ``complete``: the
    text starts at the file's start (else it is a tail, and a row whose start cannot be told
    from it gives None)."""
    end = len(data.rstrip(b"\r\n"))
    if end == 0:
        return None
    nl = data.rfind(b"\n", 0, end)
    if b'"' not in data[nl + 1 : end]:  # no quote on the last line: it is not inside one
        if nl < 0 and not complete:
            return None
        return nl + 1, end
    if not complete:
        return None
    start = 0  # the last line break outside a quoted field
    pos = 0
    for opened, closed in _quoted_spans(data[:end], sep):
        k = data.rfind(b"\n", pos, opened)
        if k >= 0:
            start = k + 1
        if closed < 0:
            return start, end
        pos = closed
    k = data.rfind(b"\n", pos, end)
    if k >= 0:
        start = k + 1
    return start, end


def _refuse_repeated_header(columns: list[str], path: Path | Blob) -> None:
    """A header naming one column twice is unusable input (exit 2), not data to carry on.

    polars renames the second ``glycan`` to ``glycan_duplicated_0``, so the audit would read
    one of the two silently and the export publish a column nobody wrote; which of the two is
    meant only the author knows.
    """
    names = set(columns)
    for c in columns:
        m = re.fullmatch(r"(.*)_duplicated_\d+", c)
        if m and m.group(1) in names:
            base = m.group(1)
            copy = re.compile(re.escape(base) + r"(_duplicated_\d+)?")
            where = [str(j + 1) for j, d in enumerate(columns) if copy.fullmatch(d)]
            raise InputError(
                f"the header names column {base!r} {len(where)} times (columns "
                f"{', '.join(where)}); rename them so that each column has one name",
                path=path,
                position="1",
            )


def _csv_row_lines(
    data: bytes | Path | Blob, sep: str, height: int, skip: int = 0
) -> list[int] | None:
    """The 1-based physical line on which each of the ``height`` rows starts (UTF-8 ``data``
    without its BOM, or a UTF-8 file whose first ``skip`` bytes are a BOM).

    Why: a quoted value may hold line breaks, and every row after it then starts further down
    than "row index + 2"; a record named ``line 5`` must be on line 5. The common file has no
    such value, and that is told by counting line breaks alone (polars reads every line, blank
    ones too, as a row): ``lines - 1 == height``. Only otherwise are the quoted fields walked
    (:func:`_quoted_spans`) to find the line breaks inside them. None when the two counts still
    disagree: better no line numbers than wrong ones.
    """
    if isinstance(data, bytes):
        newlines, last = data.count(b"\n"), data[-1:]
    else:
        newlines, last = 0, b""
        with open_bytes(data) as fh:
            while chunk := fh.read(io_records.DECODE_CHUNK):
                newlines, last = newlines + chunk.count(b"\n"), chunk[-1:]
    physical = newlines + (1 if last not in (b"", b"\n") else 0)
    if physical - 1 == height:
        return list(range(2, height + 2))
    if not isinstance(data, bytes):
        data = read_bytes(data)[skip:]
    inside: set[int] = set()  # lines that continue a quoted value
    line, at = 1, 0
    for opened, closed in _quoted_spans(data, sep):
        if closed < 0:
            return None
        line += data.count(b"\n", at, opened)
        at = opened
        k = data.count(b"\n", opened, closed)
        inside.update(range(line + 1, line + k + 1))
    starts = [n for n in range(1, physical + 1) if n not in inside][1:]  # [0]: the header
    return starts if len(starts) == height else None


def _quoted_spans(data: bytes, sep: str) -> Iterator[tuple[int, int]]:
    """(offset of the opening quote, of the closing one or -1) of each quoted field of CSV text.

    The quoting polars reads: a quote opens a field only at the start of one (after a separator
    or a line break); ``""`` inside is an escaped quote; a quote inside an unquoted value is a
    literal. Quote and line-break bytes never occur inside a UTF-8 multi-byte character, so
    the walk is over bytes, and it visits quotes only.
    """
    find = data.find
    starts = (ord(sep), 0x0A, 0x0D)
    i = 0
    while (q := find(b'"', i)) >= 0:
        if q and data[q - 1] not in starts:
            i = q + 1  # a literal quote inside an unquoted value
            continue
        j = q + 1
        while True:
            close = find(b'"', j)
            if close < 0:
                yield q, -1
                return
            if data[close + 1 : close + 2] == b'"':
                j = close + 2  # an escaped quote
                continue
            break
        yield q, close
        i = close + 1


def _unterminated_quote(data: bytes, sep: str) -> int | None:
    """The line where a quoted field that never closes begins (UTF-8 without BOM), else None.

    Why find it ourselves: polars reports such a file as "could not parse `<the rest of the
    file>`", without a position, and the csv module names the line where it gave up (the last
    one). Run only after polars failed.
    """
    for opened, closed in _quoted_spans(data, sep):
        if closed < 0:
            return data.count(b"\n", 0, opened) + 1
    return None


def _csv_problem(text: str, sep: str) -> tuple[int | None, str | None]:
    """The first row with more fields than the header, found with the csv module.

    polars only says that *some* row has too many fields; the line number is what lets a user
    open the file at the right place. Run only after polars failed.
    """
    import csv
    import io as _io

    reader = csv.reader(_io.StringIO(text.removeprefix("\ufeff"), newline=""), delimiter=sep)
    try:
        header = next(reader, None)
        if header is None:
            return None, None
        for row in reader:
            if len(row) > len(header):
                return reader.line_num, (
                    f"{len(row)} fields where the header has {len(header)}: "
                    "a separator inside an unquoted value, or not a CSV file"
                )
    except csv.Error as e:
        return reader.line_num, f"malformed CSV: {e}"
    return None, None


def csv_batches(path: Path | Blob, encoding: str | None = None) -> Iterator[Batch]:
    df, _ = read_csv(path, encoding)
    for start in range(0, df.height, io_records.BATCH_ROWS):
        yield Batch(None, start, df.slice(start, io_records.BATCH_ROWS).to_dicts())
