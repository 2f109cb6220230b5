"""Where a finding's record is in its input file: the 1-based line (and column) each record
starts on.

Why a module of its own: the text, Markdown, HTML, GitHub and SARIF reports all point at a line
(a CI annotation lands on it), and finding lines means reading the input again, so it is done
once per file version and shared.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

from curate.reports.verdict import DatasetOutcome

#: Files larger than this get no line numbers (finding them means reading the file again).
MAX_LINE_SCAN_BYTES = 256 << 20


def record_positions(path: str, fmt: str) -> tuple[tuple[int, int], ...] | None:
    """``(line, column)`` where each record of ``path`` starts, both 1-based, the column in
    Unicode code points (SARIF's default ``columnKind``); None as :func:`record_lines`.

    Why columns: a JSON array written on one line (``json.dump`` without ``indent``) puts
    every record on line 1; only the column tells them apart (an annotation, a code-scanning
    alert lands on the record, not on the file's first character)."""
    version = _version(path)
    return None if version is None else _record_positions(*version[:1], fmt, *version[1:])


def record_lines(path: str, fmt: str) -> tuple[int, ...] | None:
    """The 1-based line each record of ``path`` starts on, or None when the format has no lines
    (parquet, HDF5, folders) or the file is too large to scan again.

    Kept per file version (absolute path, size, modification time): one report asks for many
    findings of the same file, and a later run in the same process may see it edited."""
    version = _version(path)
    return None if version is None else _record_lines(*version[:1], fmt, *version[1:])


def _version(path: str) -> tuple[str, int, int] | None:
    """``(absolute path, size, mtime)`` of a file small enough to scan again, else None."""
    p = Path(path)
    if not p.is_file():
        return None
    st = p.stat()
    if st.st_size > MAX_LINE_SCAN_BYTES:
        return None
    return str(p.resolve()), st.st_size, st.st_mtime_ns


@cache
def _record_lines(path: str, fmt: str, size: int, mtime: int) -> tuple[int, ...] | None:
    found = _record_positions(path, fmt, size, mtime)
    return None if found is None else tuple(line for line, _ in found)


@cache
def _record_positions(
    path: str, fmt: str, _size: int, _mtime: int
) -> tuple[tuple[int, int], ...] | None:
    p = Path(path)
    if fmt == "csv" or p.suffix.lower() in (".csv", ".tsv"):
        from curate.io.read import read_frame

        try:
            _, src = read_frame(path)
        except Exception:
            return None
        return tuple((n, 1) for n in src.row_lines) if src.row_lines is not None else None
    data = p.read_bytes()
    if fmt == "jsonl" or p.suffix.lower() == ".jsonl":
        return tuple(
            (i, 1 + _code_points(line[: len(line) - len(line.lstrip())]))
            for i, line in enumerate(data.split(b"\n"), 1)
            if line.strip()
        )
    if fmt == "json" or p.suffix.lower() == ".json":
        return _json_array_positions(data)
    return None


def _code_points(raw: bytes) -> int:
    return len(raw.decode("utf-8", errors="replace"))


#: A JSON string (the unrolled form: one run of plain bytes between escapes; the alternation per
#: byte it replaces took 2 s and 2.3 GB for a 20 MB string value) or a bracket.
_JSON_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
#: A record that is a number, ``true``, ``false`` or ``null``: where one starts, in the text
#: between two tokens at the array's own depth (without them, the records after it were each
#: given the next one's position). Searched there only: numbers inside records (an embedding's
#: floats) never go round the loop.
_SCALAR = re.compile(rb"(?:^|,)[ \t\r\n]*([-0-9tfn])")


def _json_array_positions(data: bytes) -> tuple[tuple[int, int], ...] | None:
    """``(line, column)`` where the elements of a top-level JSON array start (strings skipped
    whole, so a brace inside a value is not taken for structure)."""
    starts: list[int] = []
    depth, end = 0, 0
    for m in _JSON_TOKEN.finditer(data):
        tok = m.group()
        if depth == 1 and m.start() > end:
            gap = data[end : m.start()]
            starts += [end + g.start(1) for g in _SCALAR.finditer(gap)]
        end = m.end()
        if tok[:1] == b'"':
            if depth == 1:
                starts.append(m.start())
            continue
        if tok in (b"[", b"{"):
            if depth == 1:
                starts.append(m.start())
            elif depth == 0 and tok != b"[":
                return None  # not a top-level array
            depth += 1
        else:
            depth -= 1
    # The column counts on from the previous record's on the same line: an array written on one
    # line (json.dump without indent) would otherwise decode its whole prefix once per record.
    out, at, line, column = [], 0, 1, 1
    for s in starts:
        n = data.count(b"\n", at, s)
        if n:
            line += n
            column = 1 + _code_points(data[data.rfind(b"\n", at, s) + 1 : s])
        else:
            column += _code_points(data[at:s])  # both ends are ASCII: no character is cut
        at = s
        out.append((line, column))
    return tuple(out)


def line_of(d: DatasetOutcome, row: dict[str, Any]) -> int | None:
    """The line a finding's record starts on in its input, when the format has lines."""
    found = position_of(d, row)
    return found[0] if found is not None else None


def position_of(d: DatasetOutcome, row: dict[str, Any]) -> tuple[int, int] | None:
    """``(line, column)`` where a finding's record starts in its input (see
    :func:`record_positions`)."""
    if row.get("input") is None or row.get("input_row") is None:
        return None
    fmt = next((i.format for i in d.report.inputs if i.path == row["input"]), "")
    found = record_positions(row["input"], fmt)
    k = row["input_row"]
    return found[k] if found is not None and 0 <= k < len(found) else None
