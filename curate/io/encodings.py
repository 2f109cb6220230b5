"""Text encodings of JSON, JSON Lines and CSV inputs: BOMs, ``--encoding``, and the one-line
errors for bytes that are not text in the expected encoding.

Why apart from the readers: the three text formats decode alike and must fail alike (line and
byte offset, the encoding to try), and a reader should not need to know about BOMs.
"""

from __future__ import annotations

import codecs
from pathlib import Path

from curate.core.errors import InputError, UsageError, arg
from curate.io.sources import Blob, read_bytes, sample_bytes

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


UTF8 = ("utf-8", "utf-8-sig")


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


def resolve_encoding(path: Path | Blob, head: bytes, encoding: str | None) -> tuple[str, int]:
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


def encoding_error(
    path: Path | Blob,
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
    label = "UTF-8" if codec in UTF8 else codec
    msg = f"not valid {label} text: {what} at byte offset {offset}"
    if reason:
        msg += f" ({reason})"
    if len(sample) < _GUESS_BYTES:
        # one short line (a JSON Lines record) is too little to tell text from random bytes:
        # the file's start is added, as the whole-file readers see it
        sample += sample_bytes(path, _GUESS_BYTES)
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


def nul_error(
    path: Path | Blob, codec: str, offset: int, sample: bytes, option: bool = True
) -> InputError:
    """Text that decodes but holds NUL bytes: UTF-16/32 without a BOM, or binary data."""
    guess = guess_encoding(sample)
    label = "UTF-8" if codec in UTF8 else codec
    if guess is None:
        msg = f"NUL byte at byte offset {offset}: this looks like binary data, not {label} text"
    else:
        msg = (
            f"NUL bytes from byte offset {offset}: this looks like {guess} text without a byte "
            f"order mark, not {label}: "
            + (f"read it with {arg('--encoding', guess)}" if option else "save it as UTF-8")
        )
    return InputError(msg, path=path)


def utf8_problem(
    path: Path | Blob, data: bytes, start: int = 0, line: int | None = None, option: bool = True
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
            return encoding_error(
                path, "utf-8", start + e.start, data[e.start], sample, e.reason, line, option
            )
    if nul >= 0:  # before any invalid byte: UTF-16/32 of ASCII text is valid UTF-8 so far
        return nul_error(path, "utf-8", start + nul, data[: 1 << 16], option)
    return None


def decode(
    path: Path | Blob, data: bytes, encoding: str | None, option: bool = True
) -> bytes | str:
    """The text of a whole file: UTF-8 stays bytes (the parsers read it natively), without a BOM.

    Other encodings are decoded to ``str``; an undecodable byte becomes an InputError naming its
    byte offset.
    """
    codec, skip = resolve_encoding(path, data[:4], encoding)
    if codec in UTF8:
        return data[skip:] if skip else data
    try:
        text = data[skip:].decode(codec)
    except UnicodeDecodeError as e:
        at = skip + e.start
        bad = data[at] if at < len(data) else None
        sample = data[: 1 << 16]
        line = _line_at(data, at, codec)
        raise encoding_error(path, codec, at, bad, sample, e.reason, line, option) from None
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
    raw = read_bytes(p)
    data = decode(p, raw, None, option=False)
    if isinstance(data, str):
        return data
    problem = utf8_problem(p, raw, option=False)
    if problem is not None:
        raise problem
    return data.decode("utf-8")


_MARKUP = (b"<!doctype html", b"<html", b"<head", b"<body", b"<?xml", b"<!--")


def markup_hint(start: bytes | str, fmt: str) -> str:
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
