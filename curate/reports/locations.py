"""Where a finding's record is in its input file: the 1-based line each record starts on.

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


def record_lines(path: str, fmt: str) -> tuple[int, ...] | None:
    """The 1-based line each record of ``path`` starts on, or None when the format has no lines
    (parquet, HDF5, folders) or the file is too large to scan again.

    Kept per file version (absolute path, size, modification time): one report asks for many
    findings of the same file, and a later run in the same process may see it edited."""
    p = Path(path)
    if not p.is_file():
        return None
    st = p.stat()
    if st.st_size > MAX_LINE_SCAN_BYTES:
        return None
    return _record_lines(str(p.resolve()), fmt, st.st_size, st.st_mtime_ns)


@cache
def _record_lines(path: str, fmt: str, _size: int, _mtime: int) -> tuple[int, ...] | None:
    p = Path(path)
    if fmt == "csv" or p.suffix.lower() in (".csv", ".tsv"):
        from curate.io.read import read_frame

        try:
            _, src = read_frame(path)
        except Exception:
            return None
        return tuple(src.row_lines) if src.row_lines is not None else None
    data = p.read_bytes()
    if fmt == "jsonl" or p.suffix.lower() == ".jsonl":
        return tuple(i for i, line in enumerate(data.split(b"\n"), 1) if line.strip())
    if fmt == "json" or p.suffix.lower() == ".json":
        return _json_array_lines(data)
    return None


_JSON_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _json_array_lines(data: bytes) -> tuple[int, ...] | None:
    """Lines where the elements of a top-level JSON array start (strings skipped whole, so a
    brace inside a value is not taken for structure)."""
    starts: list[int] = []
    depth = 0
    for m in _JSON_TOKEN.finditer(data):
        tok = m.group()
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
    lines, at, line = [], 0, 1
    for s in starts:
        line += data.count(b"\n", at, s)
        at = s
        lines.append(line)
    return tuple(lines)


def line_of(d: DatasetOutcome, row: dict[str, Any]) -> int | None:
    if row.get("input") is None or row.get("input_row") is None:
        return None
    fmt = next((i.format for i in d.report.inputs if i.path == row["input"]), "")
    lines = record_lines(row["input"], fmt)
    k = row["input_row"]
    return lines[k] if lines is not None and 0 <= k < len(lines) else None
