"""Reading dataset files into record batches, with one-line errors for unusable input.

Formats: JSON array, JSON Lines, parquet, CSV (flat tables only), and Hugging Face dataset folders
(the hub layout ``data/<split>-*.parquet`` and ``Dataset.save_to_disk`` output). Parquet, JSON Lines
and Arrow are streamed in batches so memory follows the batch, not the file; a JSON *array* must be
parsed whole (that is the format), so big data belongs in JSON Lines or parquet.

Why records as Python dicts: schema validation (pydantic) needs them to report the exact record and
field of every defect. Families turn the validated records into columnar tables for the rules.
"""

from __future__ import annotations

import codecs
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from curate.errors import InputError, UsageError
from curate.outputs import atomic_path, current_umask, write_bytes_atomic

__all__ = [
    "Batch",
    "Source",
    "atomic_path",
    "current_umask",
    "detect_format",
    "open_source",
    "read_frame",
    "read_text",
    "sha256_of",
    "write_bytes_atomic",
]

BATCH_ROWS = 8192
#: Bytes decoded at a time when a JSON Lines file is not UTF-8.
DECODE_CHUNK = 1 << 20


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
    #: :func:`read_frame` only: cells that held a list or an object and became text, per column
    #: (row index → ``list`` | ``nested list`` | ``object``), and those rows' records as read.
    #: Why keep them: a table family must report such a cell as malformed (and keep the record
    #: whole in a changelog), not treat its JSON text as an ordinary value.
    nested_cells: dict[str, dict[int, str]] = field(default_factory=dict)
    nested_records: dict[int, dict[str, Any]] = field(default_factory=dict)


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


def open_source(
    path: str | Path, *, hash_input: bool = True, encoding: str | None = None
) -> Source:
    """Open one input for reading; format errors found up front raise :class:`InputError`.

    ``encoding`` applies to the text formats (JSON, JSON Lines, CSV/TSV); ``None`` means UTF-8
    unless the file starts with a byte order mark, which then decides. Parquet and Arrow are
    binary formats whose strings are UTF-8 by specification, so it does not apply to them.
    """
    p = Path(path)
    if encoding is not None:
        check_encoding(encoding)  # fail before reading anything; messages keep the user's name
    fmt = detect_format(p)
    reader = {
        "json": _json_batches,
        "jsonl": _jsonl_batches,
        "parquet": _parquet_file_batches,
        "csv": _csv_batches,
        "hf-parquet": _hf_parquet_batches,
        "hf-disk": _hf_disk_batches,
    }[fmt]
    batches = reader(p, encoding) if fmt in TEXT_FORMATS else reader(p)
    try:
        digest = sha256_of(p) if hash_input else ""
    except OSError as e:
        raise InputError(f"cannot read ({e.strerror or e})", path=e.filename or p) from None
    return Source(p, fmt, batches, digest)


# --------------------------------------------------------------------------- text encodings

TEXT_FORMATS = ("json", "jsonl", "csv")

#: Byte order marks and the codec each one means. UTF-32-LE's mark begins with UTF-16-LE's,
#: so the longer marks are tried first.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
#: ``--encoding`` values (as normalised by :func:`codecs.lookup`) that agree with a BOM.
_BOM_COMPATIBLE = {
    "utf-8": {"utf-8", "utf-8-sig"},
    "utf-16-le": {"utf-16", "utf-16-le"},
    "utf-16-be": {"utf-16", "utf-16-be"},
    "utf-32-le": {"utf-32", "utf-32-le"},
    "utf-32-be": {"utf-32", "utf-32-be"},
}
_UTF8 = ("utf-8", "utf-8-sig")


def check_encoding(name: str) -> str:
    """The codec's canonical name (``"latin1"`` → ``"iso8859-1"``); UsageError when unknown.

    ``codecs.lookup`` also knows bytes-to-bytes codecs (base64, zlib) that cannot decode a file
    into text; ``bytes.decode`` is the public way to reject them too (it skips the lookup for
    empty input, hence one byte).
    """
    try:
        b"a".decode(name, "ignore")
        return codecs.lookup(name).name
    except LookupError:
        raise UsageError(
            f"--encoding {name!r}: unknown text encoding (try utf-8, utf-16, latin-1, cp1252)"
        ) from None


def sniff_bom(head: bytes) -> tuple[str | None, int]:
    """The encoding a byte order mark at the start of ``head`` declares, and its length."""
    for bom, codec in _BOMS:
        if head.startswith(bom):
            return codec, len(bom)
    return None, 0


def _resolve_encoding(path: Path, head: bytes, encoding: str | None) -> tuple[str, int]:
    """The codec to decode ``path`` with and how many leading BOM bytes to skip.

    Why a BOM decides when no encoding is given: it is the file saying what it is (Excel and
    Notepad write one), and refusing or misreading a self-describing file helps nobody. A BOM
    that contradicts an explicit ``--encoding`` is reported rather than decoded as garbage.
    """
    bom, skip = sniff_bom(head)
    if encoding is None:
        return bom or "utf-8", skip
    codec = check_encoding(encoding)
    if bom is None:
        return codec, 0
    if codec in _BOM_COMPATIBLE[bom]:
        return bom, skip
    raise InputError(
        f"the file starts with a {bom.upper()} byte order mark but --encoding {encoding} was "
        f"given: drop --encoding or use --encoding {bom}",
        path=path,
    )


def guess_encoding(sample: bytes) -> str | None:
    """A likely codec for bytes that are not UTF-8 (``None``: binary data, not text).

    Heuristics only, no dependency: UTF-16/32 text of mostly ASCII characters has NUL bytes in a
    fixed pattern (every other byte, or three bytes of four); text with many other control bytes
    is binary; bytes that decode as UTF-8 are UTF-8; otherwise a single-byte Western encoding,
    cp1252 when bytes 0x80-0x9F appear (printable there, invisible control codes in latin-1).
    """
    sample = sample[: 1 << 16]
    if b"\x00" in sample:
        n = len(sample) - len(sample) % 4
        nul = [sample[k:n:4].count(0) for k in range(4)]
        quarter = max(n // 4, 1)
        high = [c > 0.3 * quarter for c in nul]
        if high[1] and high[2] and high[3] and not high[0]:
            return "utf-32-le"
        if high[0] and high[1] and high[2] and not high[3]:
            return "utf-32-be"
        odd, even = nul[1] + nul[3], nul[0] + nul[2]
        if odd > 0.3 * (n // 2) and odd > 4 * even:
            return "utf-16-le"
        if even > 0.3 * (n // 2) and even > 4 * odd:
            return "utf-16-be"
        return None
    controls = sum(sample.count(c) for c in range(32) if c not in (9, 10, 12, 13))
    if controls > 0.05 * len(sample):
        return None
    try:  # non-final: the sample may end inside a character
        codecs.getincrementaldecoder("utf-8")().decode(sample)
        return "utf-8"
    except UnicodeDecodeError:
        pass
    if any(0x80 <= b <= 0x9F for b in sample):
        return "cp1252"
    return "latin-1"


def _encoding_error(
    path: Path,
    codec: str,
    offset: int,
    bad: int | None,
    sample: bytes,
    reason: str = "",
    line: int | None = None,
    option: bool = True,
) -> InputError:
    """One line: where the first undecodable byte is, what the file probably is, what to do.

    ``option``: the file is read with ``--encoding`` (a dataset), else the advice is to save it
    as UTF-8 (a side file such as an id list).
    """
    what = f"byte 0x{bad:02X}" if bad is not None else "end of data"
    label = "UTF-8" if codec in _UTF8 else codec
    msg = f"not valid {label} text: {what} at byte offset {offset}"
    if reason:
        msg += f" ({reason})"
    guess = guess_encoding(sample)
    if guess is None:
        msg += "; this looks like binary data, not text"
    elif not option:
        msg += f"; it looks like {guess}: save it as UTF-8"
    elif guess != codec:
        msg += f"; it looks like {guess}: read it with --encoding {guess}"
    else:
        msg += "; the file may be damaged or in another encoding: pass the right --encoding NAME"
    return InputError(msg, path=path, position=str(line) if line else None)


def _nul_error(
    path: Path, codec: str, offset: int, sample: bytes, option: bool = True
) -> InputError:
    """Text that decodes but holds NUL bytes: UTF-16/32 without a BOM, or binary data."""
    guess = guess_encoding(sample)
    label = "UTF-8" if codec in _UTF8 else codec
    if guess is None:
        msg = f"NUL byte at byte offset {offset}: this looks like binary data, not {label} text"
    else:
        msg = (
            f"NUL bytes from byte offset {offset}: this looks like {guess} text without a byte "
            f"order mark, not {label}: "
            + (f"read it with --encoding {guess}" if option else "save it as UTF-8")
        )
    return InputError(msg, path=path)


def _utf8_problem(
    path: Path, data: bytes, start: int = 0, line: int | None = None, option: bool = True
) -> InputError | None:
    """Why ``data`` (found at byte ``start`` of the file) is not usable UTF-8 text, or None.

    Called only after a parser failed, so that valid input never pays for the check.
    """
    nul = data.find(b"\x00")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        if not 0 <= nul < e.start:
            if line is None:
                line = data.count(b"\n", 0, e.start) + 1
            sample = data[: 1 << 16] + data[e.start : e.start + (1 << 16)]
            return _encoding_error(
                path, "utf-8", start + e.start, data[e.start], sample, e.reason, line, option
            )
    if nul >= 0:  # before any invalid byte: UTF-16/32 of ASCII text is valid UTF-8 so far
        return _nul_error(path, "utf-8", start + nul, data[: 1 << 16], option)
    return None


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read ({e.strerror or e})", path=path) from None


def _decode(path: Path, data: bytes, encoding: str | None, option: bool = True) -> bytes | str:
    """The text of a whole file: UTF-8 stays bytes (the parsers read it natively), without a BOM.

    Other encodings are decoded to ``str``; an undecodable byte becomes an InputError naming its
    byte offset.
    """
    codec, skip = _resolve_encoding(path, data[:4], encoding)
    if codec in _UTF8:
        return data[skip:] if skip else data
    try:
        text = data[skip:].decode(codec)
    except UnicodeDecodeError as e:
        at = skip + e.start
        bad = data[at] if at < len(data) else None
        sample = data[: 1 << 16]
        line = _line_at(data, at, codec)
        raise _encoding_error(path, codec, at, bad, sample, e.reason, line, option) from None
    return text[1:] if text.startswith("\ufeff") else text


def _line_at(data: bytes, offset: int, codec: str) -> int | None:
    """1-based line of a byte offset, for encodings where a newline is the byte 0x0A."""
    if codec.startswith(("utf-16", "utf-32")):
        return None
    return data.count(b"\n", 0, offset) + 1


def read_text(path: str | Path) -> str:
    """A small side file (an id list, a mapping) as text: UTF-8, or what its BOM says.

    Decoded like the dataset readers decode theirs, so an undecodable byte or NUL bytes raise an
    InputError naming the byte offset and the likely encoding instead of a UnicodeDecodeError.
    """
    p = Path(path)
    raw = _read_bytes(p)
    data = _decode(p, raw, None, option=False)
    if isinstance(data, str):
        return data
    problem = _utf8_problem(p, raw, option=False)
    if problem is not None:
        raise problem
    return data.decode("utf-8")


def _brief(e: BaseException, first_line_only: bool = False) -> str:
    """A library's (often multi-line) message as one short clause for an InputError."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    if first_line_only:
        lines = lines[:1]
    text = "; ".join(lines) or type(e).__name__
    return text if len(text) <= 300 else text[:297] + "..."


# --------------------------------------------------------------------------- JSON, JSON Lines


def _position(text: bytes | str, pos: int) -> str:
    nl = b"\n" if isinstance(text, bytes) else "\n"
    line = text.count(nl, 0, pos) + 1
    col = pos - (text.rfind(nl, 0, pos) + 1) + 1
    return f"{line}:{col}"


def _orjson_error_pos(err: orjson.JSONDecodeError, data: bytes | str) -> str:
    # orjson reports line/column in characters; its ``pos`` is a character offset too, so
    # counting bytes of ``data`` would drift on non-ASCII text.
    if getattr(err, "lineno", None):
        return f"{err.lineno}:{err.colno}"
    return _position(data, getattr(err, "pos", 0) or 0)


def _json_batches(path: Path, encoding: str | None = None) -> Iterator[Batch]:
    raw = _read_bytes(path)
    data = _decode(path, raw, encoding)
    if not data.strip():
        raise InputError("empty file: expected a JSON array of records", path=path)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        if isinstance(data, bytes):
            problem = _utf8_problem(path, raw)
            if problem is not None:
                raise problem from None
        elif "\x00" in data:
            codec = check_encoding(encoding or "utf-8")
            raise _nul_error(path, codec, max(raw.find(b"\x00"), 0), raw[: 1 << 16]) from None
        msg = str(e).split(":")[0]
        pos = _orjson_error_pos(e, data)
        raise InputError(
            f"invalid JSON ({msg}){_markup_hint(data, 'JSON')}", path=path, position=pos
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
    for start in range(0, len(doc), BATCH_ROWS):
        yield Batch(None, start, doc[start : start + BATCH_ROWS])


def _decoded_lines(path: Path, fh: BinaryIO, codec: str, start: int) -> Iterator[str]:
    """Lines of a non-UTF-8 file, decoded chunk by chunk so memory follows the chunk.

    The incremental decoder keeps an incomplete character between chunks; the bytes it holds
    are subtracted so a decoding error still names its exact byte offset in the file.
    """
    decoder = codecs.getincrementaldecoder(codec)(errors="strict")
    consumed = start
    pending: list[str] = []  # pieces of the current line (a list: a long line stays linear)
    first = True
    while True:
        chunk = fh.read(DECODE_CHUNK)
        held = len(decoder.getstate()[0])
        try:
            text = decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError as e:
            at = consumed - held + e.start
            bad = e.object[e.start] if e.start < len(e.object) else None
            fh.seek(0)
            sample = fh.read(1 << 16)
            raise _encoding_error(path, codec, at, bad, sample, e.reason) from None
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


def _jsonl_batches(path: Path, encoding: str | None = None) -> Iterator[Batch]:
    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    index = 0
    offset = 0
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below, after the generator finishes
    except OSError as e:
        raise InputError(f"cannot read ({e.strerror or e})", path=path) from None
    with fh:
        codec, skip = _resolve_encoding(path, fh.read(4), encoding)
        fh.seek(skip)
        utf8 = codec in _UTF8
        source: Iterator[bytes] | Iterator[str] = (
            fh if utf8 else _decoded_lines(path, fh, codec, skip)
        )
        at = skip  # byte offset of the current line (UTF-8 only)
        for lineno, line in enumerate(source, start=1):
            line_at, at = at, at + len(line)
            if not line.strip():
                continue
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError as e:
                if utf8:
                    problem = _utf8_problem(path, line, line_at, lineno)
                    if problem is not None:
                        raise problem from None
                elif "\x00" in line:
                    fh.seek(0)
                    head = fh.read(1 << 16)
                    raise _nul_error(path, codec, head.find(b"\x00"), head) from None
                msg = str(e).split(":")[0]
                pos = getattr(e, "pos", 0) or 0
                hint = _markup_hint(line, "JSON Lines") if index == 0 else ""
                raise InputError(
                    f"invalid JSON ({msg}){hint}", path=path, position=f"{lineno}:{pos + 1}"
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


# --------------------------------------------------------------------------- parquet, CSV, Arrow


def _parquet_batches(path: Path, split: str | None, offset: int) -> Iterator[Batch]:
    """Rows of one parquet file, row group by row group.

    Why per row group: a damaged data page only shows when its row group is decoded, long
    after the file opened fine; naming the row group tells the user how much of the file is
    still good.
    """
    import pyarrow.parquet as pq

    try:
        # Page checksums are optional in parquet; when a writer stored them, a flipped bit is
        # caught here instead of reaching the rules as plausible-looking data.
        pf = pq.ParquetFile(path, page_checksum_verification=True)
        n_groups = pf.num_row_groups
    except Exception as e:  # pyarrow raises several types for corrupt files
        raise InputError(f"not a readable parquet file ({_brief(e)})", path=path) from None
    for rg in range(n_groups):
        try:
            batches = pf.iter_batches(batch_size=BATCH_ROWS, row_groups=[rg])
        except Exception as e:
            raise _parquet_data_error(path, rg, n_groups, offset, e) from None
        while True:
            try:
                batch = next(batches, None)
                if batch is None:
                    break
                rows = batch.to_pylist()
            except Exception as e:
                raise _parquet_data_error(path, rg, n_groups, offset, e) from None
            yield Batch(split, offset, rows)
            offset += len(rows)


def _parquet_data_error(
    path: Path, rg: int, n_groups: int, offset: int, e: BaseException
) -> InputError:
    return InputError(
        f"corrupt parquet data in row group {rg} of {n_groups} ({_brief(e)})",
        path=path,
        record=f"#{offset} or later",
    )


def _parquet_file_batches(path: Path) -> Iterator[Batch]:
    yield from _parquet_batches(path, None, 0)


def _read_csv(path: Path, encoding: str | None) -> Any:
    """A CSV/TSV file as a polars frame of strings (``"007"`` stays ``"007"``).

    UTF-8 files go to polars as they are; other encodings are decoded here and handed over as
    UTF-8. NUL bytes in the first 64 KiB mean UTF-16/32 text without a BOM (or binary data):
    polars would take them for odd header names and the family would then fail far from the
    cause.
    """
    import polars as pl

    sep = "\t" if path.suffix.lower() == ".tsv" else ","
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError as e:
        raise InputError(f"cannot read ({e.strerror or e})", path=path) from None
    codec, skip = _resolve_encoding(path, head, encoding)
    source: Any = path
    if codec in _UTF8:
        if b"\x00" in head:
            raise _nul_error(path, codec, head.index(b"\x00"), head)
        start = head[skip : skip + 1024]
    else:
        text = _decode(path, _read_bytes(path), encoding)
        if "\x00" in text[: 1 << 16]:
            raise _nul_error(path, codec, max(head.find(b"\x00"), 0), head)
        source = text.encode("utf-8")
        start = source[:1024]
    if not start.strip():
        raise InputError("empty file: expected a CSV header and rows", path=path)
    if hint := _markup_hint(start, "CSV"):
        raise InputError(hint.removeprefix("; "), path=path)
    try:
        df = pl.read_csv(source, separator=sep, infer_schema=False, glob=False)
    except Exception as e:
        whole = source if isinstance(source, bytes) else _read_bytes(path)
        if codec in _UTF8:
            problem = _utf8_problem(path, whole)
            if problem is not None:
                raise problem from None
        line, why = _csv_problem(whole.decode("utf-8", "replace"), sep)
        raise InputError(
            f"not a readable CSV file ({why or _brief(e, True)})",
            path=path,
            position=str(line) if line else None,
        ) from None
    return df


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


_MARKUP = (b"<!doctype html", b"<html", b"<head", b"<body", b"<?xml", b"<!--")


def _markup_hint(start: bytes | str, fmt: str) -> str:
    """``"; it is an HTML page..."`` when a text file starts like markup (a saved web page).

    Why: downloading a dataset URL that answered with a login or error page is a common way to
    get such a file, and "invalid JSON at 1:1" does not say so.
    """
    head = start[:1024]
    if isinstance(head, str):
        head = head.encode("utf-8", "replace")
    head = head.removeprefix(codecs.BOM_UTF8).lstrip().lower()
    if not head.startswith(_MARKUP):
        return ""
    kind = "an XML document" if head.startswith(b"<?xml") else "an HTML page"
    return f"; the file is {kind}, not {fmt} (a saved web or error page?)"


def _csv_batches(path: Path, encoding: str | None = None) -> Iterator[Batch]:
    df = _read_csv(path, encoding)
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
        raise InputError(f"not a readable save_to_disk dataset ({_brief(e)})", path=path) from None
    parts = ds.items() if isinstance(ds, datasets.DatasetDict) else [(None, ds)]
    offset = 0
    for split, d in parts:
        files = [f.get("filename", "") for f in getattr(d, "cache_files", [])]
        where = Path(files[0]) if len(files) == 1 else path
        try:
            batches = d.data.table.to_batches(max_chunksize=BATCH_ROWS)
        except Exception as e:
            raise InputError(
                f"corrupt Arrow data in split {split or '(default)'} ({_brief(e)})", path=where
            ) from None
        for rb in batches:
            try:
                rows = rb.to_pylist()
            except Exception as e:
                raise InputError(
                    f"corrupt Arrow data in split {split or '(default)'} ({_brief(e)})",
                    path=where,
                    record=f"#{offset} or later",
                ) from None
            yield Batch(split, offset, rows)
            offset += len(rows)


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
        df = _read_csv(src.path, encoding)
        if df.width == 0:
            raise InputError("empty table", path=src.path)
        if df.height == 0:  # like an empty JSON array: a header alone is not a dataset
            raise InputError("no records found (a header line only)", path=src.path)
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
    path: Path, name: str, values: list[Any], nested: dict[str, dict[int, str]]
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
    kinds: dict[int, str] = {}
    for i, v in enumerate(values):
        if (kind := nested_kind(v)) is not None:
            kinds[i] = kind
        try:
            out.append(_as_text(v))
        except RecursionError:
            raise InputError(
                "value nested too deeply to read as a table cell",
                path=path,
                record=f"#{i}",
                field=name,
            ) from None
    if kinds:
        nested[name] = kinds
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
            import json  # the rare fallback; stdlib json goes as deep as the recursion limit

            try:
                return json.dumps(value, default=str, ensure_ascii=False)
            except (TypeError, ValueError):  # e.g. keys json cannot spell
                return str(value)
    return str(value)
