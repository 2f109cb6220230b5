"""Where bytes come from: local files, compressed streams, spooled pipes and remote blobs.

Why one module: every reader asks for "the bytes of this input" the same way, whether they sit
in a file, a ``.gz``/``.zst`` stream, standard input spooled to memory, or a Hub file; a truncated
or corrupt stream must be the same one-line error for each (how many decompressed bytes were
good), so the guarding wrapper (:class:`Guarded`) lives here once.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from curate.core.errors import InputError
from curate.io.records import COMPRESSIONS, FILE_FORMATS, InputName, brief


class Guarded(io.RawIOBase):
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


class View(io.RawIOBase):
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
class Blob:
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
                f"not readable {codec} data ({brief(e, True)})", path=self.label
            ) from None

        def error(e: BaseException, done: int) -> InputError:
            return InputError(
                f"truncated or corrupt {codec} data after {done:,} decompressed bytes "
                f"({brief(e, True)})",
                path=self.label,
            )

        return io.BufferedReader(Guarded(_Closing(inner, f), error), 1 << 16)


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


def split_config(text: str) -> tuple[str, str | None]:
    """``FOLDER:CONFIG`` → (``FOLDER``, ``CONFIG``); anything else → (text, None)."""
    head, sep, tail = text.rpartition(":")
    if not sep or not head or not tail or "/" in tail or "\\" in tail:
        return text, None
    return head, tail


def kind_of(name: str) -> tuple[str | None, str | None, str, str]:
    """(format or None when unknown, compression, format suffix, compression suffix) of a file
    name."""
    lower = name.lower()
    for ext, codec in COMPRESSIONS.items():
        if lower.endswith(ext):
            suffix = Path(name[: -len(ext)]).suffix.lower()
            return FILE_FORMATS.get(suffix), codec, suffix, ext
    suffix = Path(name).suffix.lower()
    return FILE_FORMATS.get(suffix), None, suffix, ""


def file_kind(name: str, label: Any) -> tuple[str, str | None, str]:
    """(format, compression, format suffix) of a file name; InputError when unknown."""
    fmt, compression, suffix, ext = kind_of(name)
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


def local_file(p: Path) -> Path | Blob:
    """A local file as the readers take it: the path itself, or a blob when compressed."""
    _, compression, suffix = file_kind(p.name, p)
    if compression is None:
        return p
    return Blob(str(p), lambda: open(p, "rb"), compression, suffix)


def open_bytes(src: Path | Blob) -> BinaryIO:
    if isinstance(src, Blob):
        return src.open()
    try:
        return open(src, "rb")
    except OSError as e:
        raise InputError(f"cannot read ({e.strerror or e})", path=src) from None


def read_bytes(src: Path | Blob) -> bytes:
    if isinstance(src, Blob):
        with src.open() as fh:
            return fh.read()
    try:
        return src.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read ({e.strerror or e})", path=src) from None


def sample_bytes(src: Path | Blob, size: int = 1 << 16) -> bytes:
    """The first bytes of an input (for error messages and sniffing): read anew, from the start."""
    try:
        with open_bytes(src) as fh:
            return fh.read(size)
    except (InputError, OSError):
        return b""


def suffix_of(src: Path | Blob) -> str:
    return src.suffix if isinstance(src, Blob) else src.suffix.lower()
