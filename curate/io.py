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
"""

from __future__ import annotations

import codecs
import contextlib
import dataclasses
import functools
import hashlib
import io
import json
import os
import re
import stat
import sys
from collections.abc import Callable, Collection, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from curate.errors import InputError, UsageError, arg
from curate.outputs import atomic_path, current_umask, write_bytes_atomic

__all__ = [
    "STDIN",
    "Batch",
    "InputName",
    "Source",
    "Span",
    "SpanNumbering",
    "SplitInput",
    "atomic_path",
    "check_inputs",
    "count_span",
    "current_umask",
    "detect_format",
    "hub_configs",
    "input_spans",
    "local_input",
    "open_source",
    "read_frame",
    "read_text",
    "sha256_of",
    "split_of",
    "write_bytes_atomic",
]

BATCH_ROWS = 8192
#: Bytes decoded at a time when a JSON Lines file is not UTF-8.
DECODE_CHUNK = 1 << 20
#: The input name that means standard input.
STDIN = "-"
HF_SCHEME = "hf://"
#: Compression suffixes and the codec each one means.
COMPRESSIONS = {".gz": "gzip", ".gzip": "gzip", ".zst": "zstd", ".zstd": "zstd"}
#: How standard input says it is compressed.
_MAGIC = ((b"\x1f\x8b", "gzip"), (b"\x28\xb5\x2f\xfd", "zstd"))
#: Standard input (and a pipe) is kept in memory up to this size, then in an anonymous
#: temporary file.
STDIN_SPOOL_MEMORY = 64 << 20
_FILE_FORMATS = {
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
        self.split = split
        self.offset = offset
        self._rows = rows
        self._lines = lines
        self._raw = raw
        #: The batch as an Arrow record batch (parquet inputs): columns straight from the file.
        self.arrow = arrow
        self._error = error
        #: Makes ``rows`` from ``raw`` (JSON Lines), raising the reader's errors.
        self._parse = parse
        #: The records' lines in one piece (UTF-8 JSON Lines): what :attr:`raw` and
        #: :attr:`lines` are split from when asked.
        self.blob = blob

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

    __slots__ = ("split",)

    def __new__(cls, path: str, split: str) -> SplitInput:
        s = super().__new__(cls, path)
        s.split = split
        return s

    def __reduce__(self) -> tuple[Any, ...]:
        return (SplitInput, (str(self), self.split))


def split_of(path: Any) -> str | None:
    """The split a :class:`SplitInput` assigns, else None."""
    return getattr(path, "split", None) if isinstance(path, SplitInput) else None


def _tagged(batches: Iterator[Batch], split: str) -> Iterator[Batch]:
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
    #: Where the bytes come from (a :class:`Path` or a :class:`_Blob`), for :func:`read_frame`.
    location: Any = field(default=None, repr=False)


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
        batches = _tagged(batches, split)
    try:
        digest = inp.digest() if hash_input else ""
    except OSError as e:
        raise InputError(f"cannot read ({e.strerror or e})", path=e.filename or inp.label) from None
    return Source(inp.label, inp.format, batches, digest, config=inp.config, location=inp.where)


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
            raise UsageError(f"{p} is given twice (as {seen[key]!r} and {str(p)!r})")
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
        folder, config = _split_config(text)
        if config is not None and Path(folder).is_dir():
            return Path(folder)
    return p


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
            f"{arg('--encoding', name, quoted=True)}: unknown text encoding (try utf-8, utf-16, "
            "latin-1, cp1252)"
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
        f"the file starts with a {bom.upper()} byte order mark but {arg('--encoding', encoding)} "
        f"was given: drop {arg('--encoding')} or use {arg('--encoding', bom)}",
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
    controls = sum(sample.count(c) for c in (*range(32), 0x7F) if c not in (9, 10, 12, 13))
    if controls > 0.05 * len(sample):
        return None
    try:  # non-final: the sample may end inside a character
        codecs.getincrementaldecoder("utf-8")().decode(sample)
        return "utf-8"
    except UnicodeDecodeError:
        pass
    if any(0x80 <= b <= 0x9F for b in sample):
        # bytes cp1252 leaves undefined (and latin-1 reads as C1 control codes) are in no
        # Western text: random or binary bytes, not a file to re-read with another encoding
        if any(b in _CP1252_UNDEFINED for b in sample):
            return None
        return "cp1252"
    return "latin-1"


_CP1252_UNDEFINED = frozenset({0x81, 0x8D, 0x8F, 0x90, 0x9D})


#: Bytes an encoding guess wants to see at least (one line of a file is often much less).
_GUESS_BYTES = 4096


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
    if len(sample) < _GUESS_BYTES:
        # one short line (a JSON Lines record) is too little to tell text from random bytes:
        # the file's start is added, as the whole-file readers see it
        sample += _sample(path, _GUESS_BYTES)
    guess = guess_encoding(sample)
    if guess is None:
        msg += "; this looks like binary data, not a text file"
    elif not option:
        msg += f"; it looks like {guess}: save it as UTF-8"
    elif guess != codec:
        msg += f"; it looks like {guess}: read it with {arg('--encoding', guess)}"
    else:
        msg += "; the file may be damaged or in another encoding: pass the right " + arg(
            "--encoding", "NAME"
        )
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
            + (f"read it with {arg('--encoding', guess)}" if option else "save it as UTF-8")
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


# --------------------------------------------------------------------------- where bytes come from


class _Guarded(io.RawIOBase):
    """A raw stream over ``inner`` (a decompressor, a file on the Hub) whose every failure is an
    :class:`InputError` saying what was read and how far it got, so that a truncated download
    or a corrupt stream is one line wherever in a reader it surfaces."""

    def __init__(self, inner: Any, error: Callable[[BaseException, int], InputError]) -> None:
        super().__init__()
        self._inner = inner
        self._error = error
        self._done = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        try:
            return bool(self._inner.seekable())
        except Exception:
            return False

    def readinto(self, b: Any) -> int:
        try:
            data = self._inner.read(len(b))
        except InputError:
            raise
        except Exception as e:
            raise self._error(e, self._done) from None
        n = len(data)
        b[:n] = data
        self._done += n
        return n

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        try:
            pos = self._inner.seek(offset, whence)
            return self._inner.tell() if pos is None else pos
        except Exception as e:
            raise self._error(e, self._done) from None

    def tell(self) -> int:
        return self._inner.tell()

    def close(self) -> None:
        if not self.closed:
            with contextlib.suppress(Exception):
                self._inner.close()
        super().close()


class _View(io.RawIOBase):
    """A read position of its own over a shared seekable file (the spooled standard input), so
    a reader can look at the start again while another stream is open."""

    def __init__(self, f: Any) -> None:
        super().__init__()
        self._f = f
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        self._f.seek(self._pos)
        data = self._f.read(len(b))
        b[: len(data)] = data
        self._pos += len(data)
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._f.seek(0, io.SEEK_END)}
        self._pos = max(base[whence] + offset, 0)
        return self._pos

    def tell(self) -> int:
        return self._pos


@dataclass(frozen=True, eq=False)
class _Blob:
    """One input file that is not a plain local file: compressed, on the Hub, standard input or
    a pipe.

    :meth:`open` gives a fresh stream of its (decompressed) bytes from the start each time, so a
    reader can take a sample for an error message while it is reading. ``str()`` is its name in
    messages.
    """

    label: str
    raw: Callable[[], BinaryIO]
    compression: str | None
    #: The data format's suffix (``.jsonl``), compression suffix removed.
    suffix: str

    def __str__(self) -> str:
        return self.label

    @property
    def name(self) -> str:
        return InputName(self.label).name

    def open(self) -> BinaryIO:
        try:
            f = self.raw()
        except InputError:
            raise
        except OSError as e:
            raise InputError(f"cannot read ({e.strerror or e})", path=self.label) from None
        if self.compression is None:
            return f
        codec = self.compression
        try:
            if codec == "gzip":
                import gzip

                inner: Any = gzip.GzipFile(fileobj=f, mode="rb")
            else:
                import pyarrow as pa

                inner = pa.CompressedInputStream(f, codec)
        except Exception as e:
            f.close()
            raise InputError(
                f"not readable {codec} data ({_brief(e, True)})", path=self.label
            ) from None

        def error(e: BaseException, done: int) -> InputError:
            return InputError(
                f"truncated or corrupt {codec} data after {done:,} decompressed bytes "
                f"({_brief(e, True)})",
                path=self.label,
            )

        return io.BufferedReader(_Guarded(_Closing(inner, f), error), 1 << 16)


class _Closing:
    """A decompressor that also closes the file it reads (gzip and pyarrow leave it open)."""

    def __init__(self, inner: Any, f: BinaryIO) -> None:
        self._inner, self._f = inner, f

    def read(self, n: int) -> bytes:
        # read1: what one step decompressed, so that a stream cut short still hands over (and
        # counts) the bytes before the cut instead of discarding a whole request.
        read1 = getattr(self._inner, "read1", None)
        return read1(n) if read1 is not None else self._inner.read(n)

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._f.close()


def _split_config(text: str) -> tuple[str, str | None]:
    """``FOLDER:CONFIG`` → (``FOLDER``, ``CONFIG``); anything else → (text, None)."""
    head, sep, tail = text.rpartition(":")
    if not sep or not head or not tail or "/" in tail or "\\" in tail:
        return text, None
    return head, tail


def _kind_of(name: str) -> tuple[str | None, str | None, str, str]:
    """(format or None when unknown, compression, format suffix, compression suffix) of a file
    name."""
    lower = name.lower()
    for ext, codec in COMPRESSIONS.items():
        if lower.endswith(ext):
            suffix = Path(name[: -len(ext)]).suffix.lower()
            return _FILE_FORMATS.get(suffix), codec, suffix, ext
    suffix = Path(name).suffix.lower()
    return _FILE_FORMATS.get(suffix), None, suffix, ""


def _file_kind(name: str, label: Any) -> tuple[str, str | None, str]:
    """(format, compression, format suffix) of a file name; InputError when unknown."""
    fmt, compression, suffix, ext = _kind_of(name)
    if fmt is None:
        shown = suffix + ext
        raise InputError(
            f"unknown file type {shown or '(no suffix)'!r}: use .json, .jsonl, .parquet, .csv "
            "(.json, .jsonl and .csv may be .gz or .zst) or a dataset folder",
            path=label,
        )
    if fmt == "parquet" and compression:
        raise InputError(
            f"a {compression}-compressed parquet file is not read (parquet compresses its pages "
            "itself): decompress it first",
            path=label,
        )
    return fmt, compression, suffix


def _local_file(p: Path) -> Path | _Blob:
    """A local file as the readers take it: the path itself, or a blob when compressed."""
    _, compression, suffix = _file_kind(p.name, p)
    if compression is None:
        return p
    return _Blob(str(p), lambda: open(p, "rb"), compression, suffix)


def _open(src: Path | _Blob) -> BinaryIO:
    if isinstance(src, _Blob):
        return src.open()
    try:
        return open(src, "rb")
    except OSError as e:
        raise InputError(f"cannot read ({e.strerror or e})", path=src) from None


def _read_bytes(src: Path | _Blob) -> bytes:
    if isinstance(src, _Blob):
        with src.open() as fh:
            return fh.read()
    try:
        return src.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read ({e.strerror or e})", path=src) from None


def _sample(src: Path | _Blob, size: int = 1 << 16) -> bytes:
    """The first bytes of an input (for error messages and sniffing): read anew, from the start."""
    try:
        with _open(src) as fh:
            return fh.read(size)
    except (InputError, OSError):
        return b""


def _suffix(src: Path | _Blob) -> str:
    return src.suffix if isinstance(src, _Blob) else src.suffix.lower()


# --------------------------------------------------------------------------- resolving an input


@dataclass
class _Input:
    """An input resolved: its name, format, where its bytes are and how to hash them."""

    label: Path | InputName
    format: str
    #: A file (:class:`Path` or :class:`_Blob`) or a folder (:class:`_LocalTree` or
    #: :class:`_RemoteTree`).
    where: Any
    digest: Callable[[], str]
    config: str | None = None
    plan: _FolderPlan | None = None

    def batches(self, encoding: str | None, dictionary: Collection[str] = ()) -> Iterator[Batch]:
        if self.plan is not None:
            return _folder_batches(self.where, self.plan, encoding, dictionary)
        if self.format == "hf-disk":
            return _hf_disk_batches(self.where.root)
        if self.format == "parquet":
            return _parquet_batches(self.where, None, 0, dictionary=dictionary)
        reader = {"json": _json_batches, "jsonl": _jsonl_batches, "csv": _csv_batches}
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
        folder, config = _split_config(str(path))
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


#: Names of standard input as a path: read as ``-`` (once per command, its terminal refused).
STDIN_PATHS = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})


def is_stdin(text: str) -> bool:
    """Whether an input names standard input: ``-``, or ``/dev/stdin`` and its aliases (which
    the shell may have redirected from a file: the stream is read, not the file)."""
    return text == STDIN or os.path.normpath(text) in STDIN_PATHS


def _resolve_local(p: Path, config: str | None, encoding: str | None = None) -> _Input:
    if _is_pipe(p):
        spool, digest = _pipe_spool(p)
        return _resolve_spooled(p, spool, digest, encoding, p.name)
    if p.is_file():
        where = _local_file(p)
        return _Input(p, _file_kind(p.name, p)[0], where, lambda: sha256_of(p))
    if not p.is_dir():  # a device: /dev/zero would be read forever
        raise InputError("a device, not a file or a pipe", path=p)
    tree = _LocalTree(p)
    plan = _plan_folder(tree, config)
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
        raise InputError(f"cannot read {what} ({_brief(e, True)})", path=label) from None
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
        return io.BufferedReader(_View(spool))

    if name is not None and _kind_of(name)[0] is not None:
        fmt, compression, suffix = _file_kind(name, label)
        return _Input(label, fmt, _Blob(str(label), raw, compression, suffix), lambda: digest)
    with raw() as fh:
        magic = fh.read(4)
    compression = next((codec for m, codec in _MAGIC if magic.startswith(m)), None)
    probe = _Blob(str(label), raw, compression, "")
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
    fmt = _FILE_FORMATS[suffix]
    return _Input(label, fmt, _Blob(str(label), raw, compression, suffix), lambda: digest)


def _read_head(src: _Blob) -> bytes:
    """The first 64 KiB of a compressed input; a stream that is corrupt from its start is an
    error here rather than "empty input"."""
    with src.open() as fh:
        return fh.read(1 << 16)


def _sniff_text(src: _Blob, head: bytes, encoding: str | None) -> str:
    """The format suffix of text on standard input or a pipe (see the module docstring)."""
    codec, skip = _resolve_encoding(src, head[:4], encoding)
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


def _first_line(src: _Blob, skip: int, codec: str, text: str) -> tuple[bytes | str, bool]:
    """The first non-blank line (whole, however long, when UTF-8) and whether a non-blank line
    follows it."""
    if codec not in _UTF8:
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


# --------------------------------------------------------------------------- the Hugging Face Hub


def _hub_fs() -> Any:
    """``huggingface_hub.HfFileSystem`` (the ``hub`` extra); a usage error without it."""
    try:
        from huggingface_hub import HfFileSystem
    except ImportError:
        raise UsageError("hf:// inputs need huggingface_hub: pip install 'curate[hub]'") from None
    return HfFileSystem()


def _hub_error(label: Any, e: BaseException, done: int | None = None) -> InputError:
    """One line for a failure talking to the Hub: not found (or private), or unreachable."""
    if isinstance(e, FileNotFoundError):
        return InputError(
            "not found on the Hugging Face Hub (check the name; a private or gated dataset "
            "needs `hf auth login` or HF_TOKEN)",
            path=label,
        )
    after = f" after {done:,} bytes" if done else ""
    return InputError(
        f"reading from the Hugging Face Hub failed{after} ({type(e).__name__}: "
        f"{_brief(e, True)}); check the network connection, or HF_TOKEN for a private or gated "
        "dataset",
        path=label,
    )


def _hub_call(label: Any, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except (InputError, UsageError):
        raise
    except Exception as e:
        raise _hub_error(label, e) from None


def _remote_blob(fs: Any, fspath: str, label: InputName, data: bool = True) -> _Blob:
    """A file on the Hub; ``data=False``: any file (a card), read as stored, for its hash."""
    compression, suffix = None, ""
    if data:
        _, compression, suffix = _file_kind(fspath.rsplit("/", 1)[-1], label)

    def raw() -> BinaryIO:
        f = _hub_call(label, fs.open, fspath, "rb")
        return io.BufferedReader(_Guarded(f, lambda e, done: _hub_error(label, e, done)), 1 << 20)

    return _Blob(label, raw, compression, suffix)


def _remote_sha256(blob: _Blob, info: dict[str, Any]) -> str:
    """The Hub's LFS sha256 of a file when it has one (no download), else the hash of its bytes
    as stored (compressed, like a local file's)."""
    lfs = info.get("lfs") or {}
    if isinstance(lfs, dict) and lfs.get("sha256"):
        return str(lfs["sha256"])
    h = hashlib.sha256()
    with blob.raw() as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _resolve_remote(text: str) -> _Input:
    fs = _hub_fs()
    label = InputName(text)
    fspath = text[len(HF_SCHEME) :].rstrip("/")
    folder, config = _split_config(fspath)
    try:
        info = fs.info(fspath)
        config = None
    except Exception as e:
        # Not found as written (or refused: a colon is not valid in a repository id): a
        # FOLDER:CONFIG, if it has the shape of one.
        if config is None:
            raise _hub_error(label, e) from None
        label = InputName(HF_SCHEME + folder)
        fspath = folder
        info = _hub_call(label, fs.info, fspath)
    if info.get("type") != "directory":
        if config is not None:
            raise InputError(f"a config ({config!r}) is chosen in a folder, not a file", path=label)
        blob = _remote_blob(fs, fspath, label)
        fmt = _FILE_FORMATS[blob.suffix]
        return _Input(label, fmt, blob, lambda: _remote_sha256(blob, info))
    tree = _RemoteTree(fs, fspath, label, str(info.get("name", fspath)))
    plan = _plan_folder(tree, config)
    if plan is None:
        raise InputError(
            "not a dataset folder on the Hub: expected data/<split>-*.parquet or a README.md "
            "card with configs",
            path=label,
        )
    return _Input(label, plan.format, tree, lambda: tree.digest(plan), plan.config, plan)


# --------------------------------------------------------------------------- dataset folders


class _LocalTree:
    """A local dataset folder, as the folder readers see it (relative POSIX paths)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.label = root

    def glob(self, pattern: str) -> list[str]:
        try:
            found = [p for p in self.root.glob(pattern) if p.is_file()]
        except (ValueError, NotImplementedError, OSError) as e:
            raise InputError(
                f"cannot list {pattern!r} ({_brief(e, True)})", path=self.root
            ) from None
        return sorted(p.relative_to(self.root).as_posix() for p in found)

    def read_bytes(self, rel: str) -> bytes | None:
        p = self.root / rel
        if not p.is_file():
            return None
        return _read_bytes(p)

    def file(self, rel: str) -> Path | _Blob:
        return _local_file(self.root / rel)


class _RemoteTree:
    """A folder on the Hub (through an fsspec file system), as the folder readers see it."""

    def __init__(self, fs: Any, root: str, label: InputName, name: str) -> None:
        self.fs = fs
        self.root = root
        self.label = label
        self._name = name.rstrip("/")  # the file system's spelling of ``root``
        self.infos: dict[str, dict[str, Any]] = {}

    def _rel(self, name: str) -> str:
        name = name.rstrip("/")
        for prefix in (self._name, self.root):
            if name.startswith(prefix + "/"):
                return name[len(prefix) + 1 :]
        return name.rsplit("/", 1)[-1]

    def glob(self, pattern: str) -> list[str]:
        found = _hub_call(self.label, self.fs.glob, f"{self.root}/{pattern}", detail=True)
        out = []
        for name, info in found.items():
            if info.get("type") == "file":
                rel = self._rel(name)
                self.infos[rel] = info
                out.append(rel)
        return sorted(out)

    def read_bytes(self, rel: str) -> bytes | None:
        if not self.glob(rel):
            return None
        return _hub_call(self.label, self.fs.cat_file, f"{self.root}/{rel}")

    def file(self, rel: str) -> _Blob:
        return _remote_blob(self.fs, f"{self.root}/{rel}", InputName(f"{self.label}/{rel}"))

    def digest(self, plan: _FolderPlan) -> str:
        """sha256 of the sorted ``path NUL sha256`` lines of the card and the data files read."""
        rels = sorted(
            {*(r for files in plan.splits.values() for r in files), *self.glob("README.md")}
        )
        h = hashlib.sha256()
        for rel in rels:
            blob = _remote_blob(
                self.fs, f"{self.root}/{rel}", InputName(f"{self.label}/{rel}"), False
            )
            sha = _remote_sha256(blob, self.infos.get(rel, {}))
            h.update(f"{rel}\0{sha}\n".encode())
        return h.hexdigest()


@dataclass
class _FolderPlan:
    """What a dataset folder holds: the config read (if the card declares any) and its splits."""

    config: str | None
    #: Split → files (relative POSIX paths), in the card's (or the file names') order.
    splits: dict[str, list[str]]
    format: str = "hf-parquet"


_SHARD = re.compile(r"^(?P<split>[A-Za-z0-9_.]+?)(?:-\d{5}-of-\d{5})?(?:-[^/]*)?\.parquet$")
#: Split names ``datasets`` accepts.
_SPLIT_NAME = re.compile(r"^\w+(\.\w+)*$")
_FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?\r?\n)?---[ \t]*(?:\r?\n|\Z)", re.S)


def hub_configs(folder: str | Path) -> dict[str, dict[str, Any]] | None:
    """The ``configs`` of a dataset folder's README.md card (name → its YAML mapping), or None
    when there is no card or it declares none. Raises InputError for a card that is not valid."""
    text = str(folder)
    if text.startswith(HF_SCHEME):
        tree: Any = _RemoteTree(_hub_fs(), text[len(HF_SCHEME) :].rstrip("/"), InputName(text), "")
    else:
        tree = _LocalTree(Path(folder))
    return _card_configs(tree)


def _card_configs(tree: Any) -> dict[str, dict[str, Any]] | None:
    raw = tree.read_bytes("README.md")
    if raw is None:
        return None
    where = f"{tree.label}/README.md"
    m = _FRONT_MATTER.match(raw.decode("utf-8", "replace"))
    if not m:
        return None
    import yaml

    try:
        meta = yaml.safe_load(m.group(1) or "")
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = str(mark.line + 2) if mark is not None else None  # + the opening "---" line
        problem = getattr(e, "problem", None) or _brief(e, True)
        raise InputError(
            f"the card's YAML header is not valid YAML ({problem})", path=where, position=line
        ) from None
    configs = meta.get("configs") if isinstance(meta, dict) else None
    if configs is None:
        return None
    if not isinstance(configs, list) or not configs:
        raise InputError("the card's `configs` must be a list of configs", path=where)
    out: dict[str, dict[str, Any]] = {}
    for i, cfg in enumerate(configs):
        name = cfg.get("config_name") if isinstance(cfg, dict) else None
        if not isinstance(name, str) or not name:
            raise InputError(
                f"config #{i} of the card has no `config_name`", path=where, field="configs"
            )
        if name in out:
            raise InputError(f"config {name!r} is declared twice", path=where, field="configs")
        out[name] = cfg
    return out


def _choose_config(label: Any, configs: dict[str, dict[str, Any]], wanted: str | None) -> str:
    """The config ``wanted``, else the default as ``datasets.load_dataset`` picks it."""
    names = ", ".join(configs)
    if wanted is not None:
        if wanted in configs:
            return wanted
        raise InputError(
            f"no config {wanted!r} in the dataset card; its configs: {names}", path=label
        )
    defaults = [
        n
        for n, c in configs.items()
        if len(configs) == 1 or n == "default" or c.get("default") is True
    ]
    if len(defaults) == 1:
        return defaults[0]
    if defaults:
        raise InputError(
            f"the dataset card marks several configs as the default ({', '.join(defaults)}): "
            f"choose one as {label}:CONFIG",
            path=label,
        )
    raise InputError(
        f"the dataset card declares {len(configs)} configs and none is the default: choose one "
        f"as {label}:CONFIG (configs: {names})",
        path=label,
    )


def _plan_folder(tree: Any, config: str | None) -> _FolderPlan | None:
    """How to read a dataset folder: through its card's configs, else its parquet file layout
    (None: neither, e.g. ``save_to_disk`` output)."""
    configs = _card_configs(tree)
    if configs is None:
        if config is not None:
            raise InputError(
                f"no config {config!r}: the folder has no README.md card declaring configs",
                path=tree.label,
            )
        splits = _layout_splits(tree)
        return _FolderPlan(None, splits) if splits else None
    name = _choose_config(tree.label, configs, config)
    splits = _config_splits(tree, name, configs[name])
    formats = {
        _file_kind(r.rsplit("/", 1)[-1], tree.label)[0] for fs in splits.values() for r in fs
    }
    return _FolderPlan(name, splits, "hf-parquet" if formats == {"parquet"} else "hf-files")


def _layout_splits(tree: Any, under: str = "") -> dict[str, list[str]]:
    """Split → parquet files by the layout: ``data/<split>-*.parquet``, ``<split>-*.parquet``
    or ``<split>/*.parquet`` (the file-name conventions ``datasets`` infers splits from)."""
    pre = f"{under.strip('/')}/" if under.strip("/") else ""
    files = tree.glob(f"{pre}data/*.parquet") or tree.glob(f"{pre}*.parquet")
    splits: dict[str, list[str]] = {}
    if files:
        for rel in files:
            name = rel.rsplit("/", 1)[-1]
            m = _SHARD.match(name)
            splits.setdefault(m.group("split") if m else Path(name).stem, []).append(rel)
    else:
        for rel in tree.glob(f"{pre}*/*.parquet"):
            splits.setdefault(rel.split("/")[-2], []).append(rel)
    return splits


def _data_files(label: Any, name: str, value: Any) -> list[tuple[str, list[str]]]:
    """A config's ``data_files`` as (split, patterns): a string or a list of strings is the
    ``train`` split; a list of ``{split, path}`` or a ``{split: path}`` mapping names them."""

    def patterns(v: Any) -> list[str] | None:
        if isinstance(v, str) and v:
            return [v]
        if isinstance(v, list) and v and all(isinstance(x, str) and x for x in v):
            return list(v)
        return None

    if (single := patterns(value)) is not None:
        return [("train", single)]
    pairs: list[tuple[Any, Any]] = []
    if isinstance(value, dict):
        pairs = list(value.items())
    elif isinstance(value, list) and all(isinstance(x, dict) for x in value):
        pairs = [(x.get("split"), x.get("path")) for x in value]
    out = []
    for split, path in pairs:
        pats = patterns(path)
        if not isinstance(split, str) or pats is None:
            pairs = []
            break
        if not _SPLIT_NAME.match(split):
            raise InputError(
                f"config {name!r}: split name {split!r} is not valid (letters, digits and _, "
                "parts joined by dots)",
                path=label,
            )
        out.append((split, pats))
    if not out:
        raise InputError(
            f"config {name!r}: data_files must be a path, a list of paths, or a list of "
            f"{{split, path}} entries (got {_brief(ValueError(repr(value)), True)})",
            path=label,
        )
    return out


def _config_splits(tree: Any, name: str, cfg: dict[str, Any]) -> dict[str, list[str]]:
    """Split → files of one config: its ``data_files`` globs under ``data_dir``."""
    data_dir = cfg.get("data_dir") or ""
    if not isinstance(data_dir, str):
        raise InputError(f"config {name!r}: data_dir must be a path", path=tree.label)
    data_dir = data_dir.strip("/")
    if cfg.get("data_files") is None:
        splits = _layout_splits(tree, data_dir)
        if not splits:
            raise InputError(
                f"config {name!r} has no data_files and no parquet files under "
                f"{data_dir or 'the folder'}",
                path=tree.label,
            )
        return splits
    splits: dict[str, list[str]] = {}
    for split, pats in _data_files(tree.label, name, cfg["data_files"]):
        files = splits.setdefault(split, [])
        for pat in pats:
            pat = pat.removeprefix("./")
            if pat.startswith("/") or ".." in pat.split("/") or "://" in pat:
                raise InputError(
                    f"config {name!r}, split {split!r}: data file {pat!r} is not a path inside "
                    "the folder",
                    path=tree.label,
                )
            full = f"{data_dir}/{pat}" if data_dir else pat
            matched = [r for r in tree.glob(full) if r.rsplit("/", 1)[-1] != "README.md"]
            if not matched:
                raise InputError(
                    f"config {name!r}, split {split!r}: no file matches {full!r}", path=tree.label
                )
            files.extend(r for r in matched if r not in files)
    return splits


def hf_parquet_splits(path: Path) -> dict[str, list[Path]]:
    """Split → shard files for a hub-layout folder (``data/train-00000-of-00002.parquet``) as
    its file layout says (the card's configs are not read here)."""
    return {s: [path / r for r in rels] for s, rels in _layout_splits(_LocalTree(path)).items()}


def _folder_batches(
    tree: Any, plan: _FolderPlan, encoding: str | None, dictionary: Collection[str] = ()
) -> Iterator[Batch]:
    """The records of every split of a dataset folder, file after file, each tagged with its
    split; offsets run across the whole folder."""
    offset = 0
    for split, rels in plan.splits.items():
        for rel in rels:
            f = tree.file(rel)
            fmt = _file_kind(rel.rsplit("/", 1)[-1], f)[0]
            if fmt == "parquet":
                for b in _parquet_batches(f, split, offset, dictionary=dictionary):
                    offset += len(b)
                    yield b
                continue
            reader = {"json": _json_batches, "jsonl": _jsonl_batches, "csv": _csv_batches}[fmt]
            base = offset
            for b in reader(f, encoding):
                offset += len(b)
                yield b.moved(split, base + b.offset)


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
    pattern = _LONG_DIGITS if isinstance(data, bytes) else _LONG_DIGITS_TEXT
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        # orjson's only complaint about a valid document with a huge integer
        if "number is infinity" not in str(e) or pattern.search(data) is None:
            raise
        try:
            return _exact_loads(data)
        except json.JSONDecodeError as later:  # the integer was fine; something after it is not
            raise orjson.JSONDecodeError(later.msg, later.doc, later.pos) from None
        except (ValueError, RecursionError):  # a float too big for a double, as orjson said
            raise e from None
    if pattern.search(data) is None:
        return doc
    try:
        return _exact_loads(data)
    except (ValueError, RecursionError) as e:  # nested deeper than the stdlib parser goes
        raise orjson.JSONDecodeError(f"cannot read exactly: {_brief(e, True)}", "", 0) from None


def _exact_loads(data: bytes | str) -> Any:
    return json.loads(data, parse_float=_finite_float, parse_constant=_no_constant)


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError("number is infinity when parsed as double")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _json_batches(path: Path | _Blob, encoding: str | None = None) -> Iterator[Batch]:
    raw = _read_bytes(path)
    data = _decode(path, raw, encoding)
    if not data.strip():
        raise InputError("empty file: expected a JSON array of records", path=path)
    try:
        doc = _loads(data)
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


def _decoded_lines(path: Path | _Blob, fh: BinaryIO, codec: str, start: int) -> Iterator[str]:
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
            raise _encoding_error(path, codec, at, bad, _sample(path), e.reason) from None
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


def _jsonl_batches(path: Path | _Blob, encoding: str | None = None) -> Iterator[Batch]:
    """The records of a JSON Lines file, at most :data:`BATCH_ROWS` non-blank lines at a time.

    A UTF-8 file is read in whole blocks of lines (:func:`_jsonl_blocks`) and its records are
    parsed only when a reader asks for :attr:`Batch.rows`, with the same errors, naming the same
    line: a reader that builds its columns from the bytes in C++ then never makes the Python
    objects. Other encodings are decoded and parsed as they are read.
    """
    index = 0
    fh = _open(path)
    with fh:
        if fh.seekable():
            codec, skip = _resolve_encoding(path, fh.read(4), encoding)
            fh.seek(skip)
        else:  # a decompressing stream: look at its start through a second one
            codec, skip = _resolve_encoding(path, _sample(path, 4), encoding)
            fh.read(skip)
        if codec in _UTF8:
            # the bytes left, of a regular file only (a FIFO or device says 0, and would start
            # the buffer at one byte)
            st = os.fstat(fh.fileno()) if isinstance(path, Path) else None
            size = st.st_size - skip if st is not None and stat.S_ISREG(st.st_mode) else None
            batches = _jsonl_blocks(path, fh, skip, codec, size=size)
        else:
            batches = _decoded_jsonl(path, fh, codec, skip)
        for batch in batches:
            index += len(batch)
            yield batch
    if index == 0:
        raise InputError("empty file: expected JSON Lines records", path=path)


def _decoded_jsonl(path: Path | _Blob, fh: BinaryIO, codec: str, skip: int) -> Iterator[Batch]:
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
        if len(lines) >= BATCH_ROWS:
            yield Batch(None, offset, rows, lines)
            offset = index
            rows, lines = [], []
    if lines:
        yield Batch(None, offset, rows, lines)


#: Bytes a UTF-8 JSON Lines file is read in (a batch is at most this, or BATCH_ROWS lines):
#: under glibc's largest mmap threshold (32 MiB), so each batch's copy reuses the heap instead
#: of faulting fresh pages in (measured: 16-24 MiB fastest of 8-40 MiB).
JSONL_BLOCK = 16 << 20


def _jsonl_blocks(
    path: Path | _Blob,
    fh: BinaryIO,
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
        if nl + last_open > BATCH_ROWS:  # short lines: BATCH_ROWS of them make a batch
            pos = -1
            for _ in range(BATCH_ROWS):
                pos = buf.find(b"\n", pos + 1, cut)
            cut, nl = pos + 1, BATCH_ROWS
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
    path: Path | _Blob,
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
    path: Path | _Blob, line: bytes | str, lineno: int, line_at: int, first: bool, codec: str
) -> dict[str, Any]:
    """One JSON Lines record, or the error naming its line (``line_at``: its byte offset)."""
    try:
        rec = _loads(line)
    except orjson.JSONDecodeError as e:
        if isinstance(line, bytes):
            problem = _utf8_problem(path, line, line_at, lineno)
            if problem is not None:
                raise problem from None
        elif "\x00" in line:
            head = _sample(path)
            raise _nul_error(path, codec, head.find(b"\x00"), head) from None
        msg = str(e).split(":")[0]
        pos = getattr(e, "pos", 0) or 0
        hint = _markup_hint(line, "JSON Lines") if first else ""
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


# --------------------------------------------------------------------------- parquet, CSV, Arrow


def _parquet_batches(
    path: Path | _Blob,
    split: str | None,
    offset: int,
    groups: range | None = None,
    dictionary: Collection[str] = (),
) -> Iterator[Batch]:
    """Rows of one parquet file, row group by row group (``groups``: only those, ``offset``
    then being the index of the first one's first row in the file); the string fields named
    in ``dictionary`` (see :func:`open_source`) as dictionary arrays.

    Why per row group: a damaged data page only shows when its row group is decoded, long
    after the file opened fine; naming the row group tells the user how much of the file is
    still good.
    """
    import pyarrow.parquet as pq

    try:
        # Page checksums are optional in parquet; when a writer stored them, a flipped bit is
        # caught here instead of reaching the rules as plausible-looking data.
        source = path.open() if isinstance(path, _Blob) else path
        pf = pq.ParquetFile(source, page_checksum_verification=True)
        n_groups = pf.num_row_groups
        leaves = _dictionary_columns(pf.schema, dictionary) if dictionary else []
        coded = None
        if leaves:
            source = path.open() if isinstance(path, _Blob) else path
            coded = pq.ParquetFile(
                source,
                page_checksum_verification=True,
                read_dictionary=leaves,
                metadata=pf.metadata,
            )
    except InputError:
        raise
    except Exception as e:  # pyarrow raises several types for corrupt files
        raise InputError(f"not a readable parquet file ({_brief(e)})", path=path) from None
    todo = list(range(n_groups) if groups is None else groups)
    rows = [pf.metadata.row_group(rg).num_rows for rg in todo]
    i = 0
    while i < len(todo):
        # Row groups smaller than a batch are read together, several to a batch: a batch
        # costs the tables step ~200 polars calls whatever its size (200k MQuAKE cases in
        # 1,000-row groups: 3.5-3.8 s a group at a time, 1.8-2.2 s together). Should that
        # read fail, the groups are read again one by one, to name the bad one.
        run, total = 1, rows[i]
        while (
            i + run < len(todo)
            and todo[i + run] == todo[i + run - 1] + 1
            and total + rows[i + run] <= BATCH_ROWS
        ):
            total += rows[i + run]
            run += 1
        if run > 1:
            try:  # at most BATCH_ROWS rows: one batch; coded fields as dictionaries too
                read = list(
                    (pf if coded is None else coded).iter_batches(
                        batch_size=BATCH_ROWS, row_groups=todo[i : i + run], use_threads=False
                    )
                )
            except InputError:
                raise
            except Exception:
                read = None  # read again group by group below, which names the bad group
            for rg in todo[i : i + run] if read is None else ():
                offset = yield from _group_batches(pf, coded, path, rg, n_groups, split, offset)
            for batch in read or ():
                error = functools.partial(_parquet_data_error, path, todo[i], n_groups, offset)
                yield Batch(split, offset, arrow=batch, error=error)
                offset += batch.num_rows
            i += run
            continue
        offset = yield from _group_batches(pf, coded, path, todo[i], n_groups, split, offset)
        i += 1


def _group_batches(
    pf: Any,
    coded: Any,
    path: Path | _Blob,
    rg: int,
    n_groups: int,
    split: str | None,
    offset: int,
) -> Generator[Batch, None, int]:
    """One row group's batches (from ``offset``); returns the offset after them."""
    size, reader = BATCH_ROWS, pf
    rows = pf.metadata.row_group(rg).num_rows
    if coded is not None and rows <= _DICTIONARY_ROWS:
        # A row group's dictionaries come whole with each of its batches (a copy each):
        # read as one batch, a group hands each over once. A larger group is read decoded
        # (200k rows in one group: 1.6x the time with its dictionaries per batch).
        size, reader = max(BATCH_ROWS, rows), coded
    try:
        # One thread: the readers run their own work on the other cores while this one
        # decodes, and Arrow's threads cost 2.3x the CPU for the same nested batches
        # (measured on 100k MQuAKE cases: 1.97 vs 0.84 CPU-s).
        batches = reader.iter_batches(batch_size=size, row_groups=[rg], use_threads=False)
    except InputError:
        raise
    except Exception as e:
        raise _parquet_data_error(path, rg, n_groups, offset, e) from None
    while True:
        try:
            batch = next(batches, None)
            if batch is None:
                break
        except InputError:
            raise
        except Exception as e:
            raise _parquet_data_error(path, rg, n_groups, offset, e) from None
        # The Python records are made when a reader asks for them (Batch.rows), with the
        # same message should the data be corrupt.
        error = functools.partial(_parquet_data_error, path, rg, n_groups, offset)
        yield Batch(split, offset, arrow=batch, error=error)
        offset += batch.num_rows
    return offset


def _parquet_data_error(
    path: Path | _Blob, rg: int, n_groups: int, offset: int, e: BaseException
) -> InputError:
    return InputError(
        f"corrupt parquet data in row group {rg} of {n_groups} ({_brief(e)})",
        path=path,
        record=f"#{offset} or later",
    )


def _parquet_file_batches(path: Path | _Blob) -> Iterator[Batch]:
    yield from _parquet_batches(path, None, 0)


#: The largest row group read with its dictionaries (as one batch): see _parquet_batches.
_DICTIONARY_ROWS = 2 * BATCH_ROWS

#: Names parquet gives the levels of a list (``triples.list.element``; older writers ``item``,
#: ``array``, ``bag``): left out of a column's path to find the field it belongs to.
_LIST_LEVELS = frozenset({"list", "element", "item", "array", "bag", "array_element"})


def _dictionary_columns(schema: Any, fields: Collection[str]) -> list[str]:
    """The string leaf columns of a parquet schema that hold one of ``fields``."""
    out = []
    for i in range(len(schema)):
        col = schema.column(i)
        if col.physical_type != "BYTE_ARRAY":
            continue
        field = ".".join(p for p in col.path.split(".") if p not in _LIST_LEVELS)
        if field in fields:
            out.append(col.path)
    return out


# --------------------------------------------------------------------------- input shards

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
            blob = _Blob(str(label), lambda: open(where, "rb"), None, ".parquet")  # noqa: SIM115
            batches = _parquet_batches(blob, self.split, self.first_index, groups, dictionary)
        else:
            batches = _jsonl_span_batches(self)
            if self.split is not None:
                batches = _tagged(batches, self.split)
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
        fmt, compression, _ = _file_kind(p.name, p)
        if compression is not None or fmt not in ("jsonl", "parquet"):
            return None
        split = split_of(path)
        if fmt == "parquet":
            return _parquet_spans(p, text, split, parts)
        with open(p, "rb") as fh:
            codec, skip = _resolve_encoding(p, fh.read(4), encoding)
        size = p.stat().st_size
    except (OSError, InputError, UsageError):
        return None
    if codec not in _UTF8 or size <= skip:
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


_BLANK_START = re.compile(rb"\n(?=[ \t\r\n\x0b\x0c])")
_WS_BYTES = frozenset(b" \t\r\n\x0b\x0c")


def _blank_lines(chunk: bytes | bytearray, start: int, end: int) -> int:
    """How many of the whole lines in ``chunk[start:end]`` are blank (whitespace only, as
    :func:`_jsonl_batches` skips them); only lines starting with whitespace are looked at."""
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


def count_span(span: Span, fh: BinaryIO | None = None, digest: Any = None) -> tuple[int, int]:
    """``(lines, records)`` of a JSON Lines span: the lines it owns and those not blank.

    Chunk by chunk, counting in place (no copy of a chunk); ``fh``: the file, open (else it is
    opened); ``digest`` (a hashlib object) is updated with the span's bytes."""
    if fh is None:
        with _open(Path(span.path)) as f:
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
            got = fh.readinto(mv[: min(len(chunk), b - pos)]) or 0
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
        self.spans = list(spans)
        self.digest = digest
        self.lines = 0
        self.records = 0

    def __iter__(self) -> Iterator[Span]:
        spans = self.spans
        with _open(Path(spans[0].path)) as fh:
            if self.digest is not None and spans[0].skip:
                self.digest.update(fh.read(spans[0].skip))  # the byte order mark
            for span in spans:
                yield dataclasses.replace(span, first_line=self.lines + 1, first_index=self.records)
                lines, records = count_span(span, fh, self.digest)
                self.lines += lines
                self.records += records


class _Upto:
    """The next ``left`` bytes of a file, then end of file (what :func:`_jsonl_blocks` reads)."""

    def __init__(self, f: BinaryIO, left: int) -> None:
        self.f, self.left = f, left

    def readinto(self, b: Any) -> int:
        if self.left <= 0:
            return 0
        with memoryview(b) as mv:
            got = self.f.readinto(mv[: self.left]) or 0
        self.left -= got
        return got


def _jsonl_span_batches(span: Span) -> Iterator[Batch]:
    """:func:`_jsonl_batches` (UTF-8) of the lines a span owns, numbered as in the file."""
    path = Path(span.path)
    try:
        fh = open(span.where or span.path, "rb")  # noqa: SIM115  (closed below)
    except OSError as e:
        raise InputError(f"cannot read ({e.strerror or e})", path=path) from None
    with fh:
        a, b = _line_start(fh, span.start, span.skip), _line_start(fh, span.end, span.skip)
        fh.seek(a)
        upto = _Upto(fh, b - a)
        yield from _jsonl_blocks(
            path,
            upto,  # type: ignore[arg-type]
            a,
            "utf-8",
            span.first_line,
            span.first_index,
            size=b - a,
        )


def _read_csv(
    path: Path | _Blob, encoding: str | None, *, with_lines: bool = False
) -> tuple[Any, list[int] | None]:
    """A CSV/TSV file as a polars frame of strings (``"007"`` stays ``"007"``), and with
    ``with_lines`` the physical line each row starts on (see :func:`_csv_row_lines`).

    UTF-8 files go to polars as they are; other encodings are decoded here and handed over as
    UTF-8. NUL bytes in the first 64 KiB mean UTF-16/32 text without a BOM (or binary data):
    polars would take them for odd header names and the family would then fail far from the
    cause.
    """
    import polars as pl

    sep = "\t" if _suffix(path) == ".tsv" else ","
    # polars reads a plain file itself; other bytes (decompressed, downloaded) are read once
    # here and handed over.
    data = None if isinstance(path, Path) else _read_bytes(path)
    if data is None:
        with _open(path) as fh:
            head = fh.read(1 << 16)
    else:
        head = data[: 1 << 16]
    codec, skip = _resolve_encoding(path, head, encoding)
    source: Any = path if data is None else data
    if codec in _UTF8:
        if b"\x00" in head:
            raise _nul_error(path, codec, head.index(b"\x00"), head)
        start = head[skip : skip + 1024]
    else:
        text = _decode(path, _read_bytes(path) if data is None else data, encoding)
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
        body = whole[skip:] if codec in _UTF8 else whole
        opened = _unterminated_quote(body, sep)
        if opened is not None:
            line, why = opened, f"unterminated quoted field starting at line {opened}"
        else:
            line, why = _csv_problem(body.decode("utf-8", "replace"), sep)
        raise InputError(
            f"not a readable CSV file ({why or _brief(e, True)})",
            path=path,
            position=str(line) if line else None,
        ) from None
    _refuse_repeated_header(df.columns, path)
    if df.width > 1 and df.height and df[-1, -1] is None:
        # polars fills a short row's missing fields with nulls; only a null last cell can be one
        body: bytes | None = None
        if isinstance(source, bytes):
            body = source[skip:] if codec in _UTF8 else source
        _refuse_short_last_row(path, body, skip, sep, df.width)
    if not with_lines:
        return df, None
    if isinstance(source, bytes):
        return df, _csv_row_lines(source[skip:] if codec in _UTF8 else source, sep, df.height)
    return df, _csv_row_lines(path, sep, df.height, skip)


#: How much of a CSV file's end is read to find its last row (more only when that row holds a
#: quoted line break or is longer than this).
_TAIL_BYTES = 1 << 20


def _refuse_short_last_row(
    path: Path | _Blob, body: bytes | None, skip: int, sep: str, width: int
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
        with _open(path) as fh:
            size = fh.seek(0, io.SEEK_END)
            at = max(skip, size - _TAIL_BYTES)
            fh.seek(at)
            tail = fh.read()
    else:
        tail, at = whole, 0
    found = _last_record(tail, sep, whole is not None or at == skip)
    if found is None:  # a quoted line break in the last row, or a row longer than the tail
        whole = _read_bytes(path)[skip:]
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
        with _open(path) as fh:
            fh.seek(skip)
            while left > 0 and (chunk := fh.read(min(DECODE_CHUNK, left))):
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


def _refuse_repeated_header(columns: list[str], path: Path | _Blob) -> None:
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
    data: bytes | Path | _Blob, sep: str, height: int, skip: int = 0
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
        with _open(data) as fh:
            while chunk := fh.read(DECODE_CHUNK):
                newlines, last = newlines + chunk.count(b"\n"), chunk[-1:]
    physical = newlines + (1 if last not in (b"", b"\n") else 0)
    if physical - 1 == height:
        return list(range(2, height + 2))
    if not isinstance(data, bytes):
        data = _read_bytes(data)[skip:]
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


def _csv_batches(path: Path | _Blob, encoding: str | None = None) -> Iterator[Batch]:
    df, _ = _read_csv(path, encoding)
    for start in range(0, df.height, BATCH_ROWS):
        yield Batch(None, start, df.slice(start, BATCH_ROWS).to_dicts())


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
        df, src.row_lines = _read_csv(src.location, encoding, with_lines=True)
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
            # and at 64-bit integers; the rare fallback: stdlib json goes as deep as the
            # recursion limit and spells every integer
            try:
                return json.dumps(value, default=str, ensure_ascii=False)
            except (TypeError, ValueError):  # e.g. keys json cannot spell
                return str(value)
    return str(value)
