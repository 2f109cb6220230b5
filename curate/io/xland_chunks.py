"""Reading an HDF5 dataset's stored chunks directly: found through its chunk index, read by file
offset, inflated outside HDF5's filter pipeline, with HDF5's own answers wherever in doubt.

What :func:`curate.io.xland_scan.scan_tasks` reads a block of a history with
(:class:`ChunkBuffer`). A plain-deflate dataset chunked by history (:func:`direct_chunk_rows`)
has its stored chunks located once (``chunk_iter``), read with ``os.pread`` a window at a time
where they lie together, and inflated with libdeflate, or zlib-ng for a chunk of long runs
(:data:`RUNS_RATIO`): the same bytes as HDF5's ``read_direct`` with the system zlib, ~2.5x as
fast. Any doubt about a chunk (a filter skipped, not allocated, a stream that does not end or
inflates past the chunk, any exception) sends the whole block to HDF5, so fill values, corrupt
chunks and their error text stay HDF5's; a stream that ends cleanly short of its chunk, which
HDF5 reads without an error, is :class:`ShortChunk` on both paths. Kept apart from the scan's
checks so that each module holds one concern: how bytes come off the file here, what they
must satisfy there. Imports numpy, h5py, libdeflate and zlib-ng only (a scan worker's).
"""

from __future__ import annotations

import copy
import os
import zlib
from collections.abc import Callable, Sequence
from typing import Any

import h5py
import numpy as np

_inflate: Callable[[Any, int], bytearray] | None
_adler32: Callable[..., int]
try:  # libdeflate inflates HDF5's deflate chunks ~2.5x as fast as the system zlib (GIL released)
    from deflate import adler32 as _adler32
    from deflate import zlib_decompress as _inflate
except ImportError:  # pragma: no cover - a platform without its wheel: HDF5 reads everything
    _inflate = None
    _adler32 = zlib.adler32

_runs_decompressobj: Callable[[], Any] | None
try:  # zlib-ng copies long runs (long matches at distance 1 or 2) several times as fast
    from zlib_ng.zlib_ng import decompressobj as _runs_decompressobj
except ImportError:  # pragma: no cover - without its wheel, libdeflate inflates every chunk
    _runs_decompressobj = None

#: A stored chunk at most 1/``RUNS_RATIO`` of its inflated size is mostly long runs (rewards
#: not paid, dones not done, an edge chunk's padding past the dataset's end): zlib-ng inflates
#: it, libdeflate every other chunk. Why: libdeflate copies a long match at distance 1 or 2 at
#: ~0.6 GB/s, zlib-ng at several GB/s; on the published layout's chunks, timed one by one,
#: libdeflate took 1.6-3.7x zlib-ng's time for such rewards and dones chunks (and 1.5x for
#: the observations' edge chunks), where for chunks inflating less than 25-fold (actions,
#: observations) it takes 0.7-1.0x. On the issue's 32 x 32 x 30,464 file: ~75 ms of a ~1.1 s
#: scan.
RUNS_RATIO = 25


def _inflate_runs(stored: Any, size: int) -> bytes:
    """:data:`_inflate`'s contract through zlib-ng: the chunk's bytes, fewer for a stream that
    ends cleanly short of ``size``; raises for one that would inflate past ``size`` (at most one
    byte past it is ever written), does not end, or is corrupt (its Adler-32 too)."""
    assert _runs_decompressobj is not None
    d = _runs_decompressobj()
    # one byte past the size: a stream exactly ``size`` long then reaches its end (and its
    # checksum) within the call, and a longer one shows itself by that byte
    out = d.decompress(stored, size + 1)
    if not d.eof or len(out) > size:
        raise zlib.error("the stream does not end within the chunk's size")
    return out


#: Whether stored chunks can be read by file offset (``os.pread``: POSIX only).
_PREAD = hasattr(os, "pread")
#: Bytes between two of a block's stored chunks that one read may take with them: past that
#: (chunks written apart) they are read separately.
_GAP = 1 << 16

#: Stored bytes read at once ahead of the scan where a dataset's chunks lie together (see
#: :meth:`ChunkBuffer.locate`): several blocks' worth, a bounded amount of memory per dataset.
_READ_AHEAD = 1 << 23


class ShortChunk(RuntimeError):
    """A stored chunk whose deflate stream ends cleanly before the chunk's size: HDF5 reads it
    without an error and hands back whatever its buffer held for the rest, so the block's values
    (and the history's digest) are not the file's. Reported as the history's unreadable block
    (RL001), at the chunk's steps."""

    def __init__(self, ds: h5py.Dataset, h: int, c: int, rows: int, got: int, size: int) -> None:
        end = min(c + rows, int(ds.shape[1]))
        super().__init__(
            f"chunk of {ds.name} at history {h}, steps [{c}, {end}): its deflate stream ends "
            f"after {got:,} of the chunk's {size:,} bytes (HDF5 reads it without an error and "
            "returns unset memory for the rest)"
        )
        self.span: tuple[int, int] = (c, end)


class _Window:
    """Stored bytes read ahead: ``view`` holds the file's bytes from offset ``at``."""

    __slots__ = ("at", "view")

    def __init__(self) -> None:
        self.view = memoryview(b"")
        self.at = 0


class ChunkBuffer:
    """One dataset's reusable block buffer: ``read_direct`` into it instead of a fresh array
    per read (a fresh multi-MB array costs a page fault per 4 KB on every block).

    With ``direct`` and a dataset :func:`direct_chunk_rows` accepts, a block is read chunk by
    chunk as the stored bytes (found through the dataset's chunk index, :meth:`locate`, and read
    from the file; else ``read_direct_chunk``) and inflated with libdeflate (zlib-ng for a
    chunk of long runs, :data:`RUNS_RATIO`) instead of HDF5's
    filter pipeline (the system zlib): the same bytes, ~2.5x as fast (libdeflate inflates a
    whole buffer whose size is known, as a chunk's is, ~20% faster than zlib-ng's streams). Any
    doubt about a chunk (a filter skipped, not allocated, a stream that does not end or
    inflates past the chunk, any exception) sends the whole block to ``read_direct``, so fill
    values, corrupt chunks and their error text are exactly HDF5's.

    The one thing HDF5 does not say: a stream that ends cleanly *short* of the chunk's size
    (:class:`ShortChunk`). The direct path raises it; after a ``read_direct`` of such a dataset
    (``CURATE_ICRL_DIRECT=0``, or a block the direct path left to HDF5) :meth:`_check_chunks`
    finds it from the zlib stream's trailer, the Adler-32 of the bytes the stream inflates to,
    compared with the bytes HDF5 returned: a checksum pass over the block (a few percent of
    inflating it) and the stored bytes re-read, no second inflate unless they differ.
    """

    def __init__(self, ds: h5py.Dataset, steps: int, *, direct: bool = False) -> None:
        self.array = np.empty((steps, *ds.shape[2:]), dtype=ds.dtype)
        #: steps per chunk of a plain-deflate dataset chunked by history, else 0
        self.rows = direct_chunk_rows(ds, need_inflater=False)
        self.direct = bool(direct and _inflate is not None and self.rows)
        if self.rows:
            self.row_bytes = self.array[:1].nbytes
            # numpy's stubs give ndarray ``__buffer__`` only for Python >= 3.12
            self.bytes = memoryview(self.array.reshape(-1).view(np.uint8))  # type: ignore[arg-type]
            self.tail = (0,) * (ds.ndim - 2)
            self.zeros = bytes(self.rows * self.row_bytes)
        #: where each history's stored chunks are in the file (see :meth:`locate`), else None
        self.starts: list[list[int]] | None = None
        self.ends: list[list[int]] = []
        self.fd = -1
        #: the stored bytes of a run of the dataset's chunks read ahead (:meth:`_stored`),
        #: ``read_ahead`` bytes at most; one for the buffer and its copies (:meth:`into`)
        self.window = _Window()
        self.read_ahead = 0
        #: past-the-end byte of the dataset's last indexed chunk
        self.last_end = 0

    def locate(self, ds: h5py.Dataset, fd: int, *, history_by_history: bool = True) -> None:
        """Index where ``ds``'s stored chunks are in the file open as ``fd``, so a block's
        chunks are read with one ``os.pread`` instead of a ``read_direct_chunk`` each.

        Why: ``read_direct_chunk`` costs ~5 µs of HDF5 per call (a B-tree lookup, a fresh bytes
        object), a fifth of all the inflating on the published chunks of 4096 steps; the index
        (``chunk_iter``: one pass over the B-tree per dataset) and a read per block cost a tenth
        of that. Only chunks stored filtered (mask 0) and inside the file are indexed; a missing
        one sends its block to the per-chunk path's checks, i.e. to HDF5. The index is trusted
        only if the first chunk's bytes read through it are ``read_direct_chunk``'s (a file
        whose addresses are not file offsets, e.g. with a user block HDF5 does not add, keeps
        the per-chunk path).

        Where a dataset's chunks lie together in the file and in the order the scan reads them
        (``history_by_history``: each history whole before the next, not a block of every
        history of a group before the next block), they are read ahead, a window of
        :data:`_READ_AHEAD` bytes at a time (see :meth:`_stored`)."""
        if not self.direct or not _PREAD:
            return
        n_hist, steps = int(ds.shape[0]), int(ds.shape[1])
        per = -(-steps // self.rows)
        rows = self.rows
        infos: list[Any] = []
        try:
            # the callback is the list's own append: a Python function per chunk cost as much
            # as HDF5's walk of the index itself; the fields are then read column-wise
            ds.id.chunk_iter(infos.append)
            if not infos:
                return
            offsets, masks, where, sizes = zip(*infos, strict=True)
            first = infos[0]
            stored = ds.id.read_direct_chunk(first.chunk_offset)[1]
            if os.pread(fd, first.size, first.byte_offset) != stored:
                return
            at = np.array(offsets, dtype=np.int64).reshape(len(infos), -1)
            start = np.array(where, dtype=np.int64)
            end = start + np.array(sizes, dtype=np.int64)
            mask = np.array(masks, dtype=np.int64)
        except Exception:  # an HDF5 without chunk_iter, a layout it cannot walk: per chunk
            return
        h, c = at[:, 0], at[:, 1]
        # only chunks stored filtered, inside the dataset's extent and the file
        ok = (
            (mask == 0)
            & (h >= 0)
            & (h < n_hist)
            & (c >= 0)
            & (c < steps)
            & (c % rows == 0)
            & (end <= os.fstat(fd).st_size)
        )
        # per history, each chunk's first and past-the-end byte in the file (-1: not indexed)
        starts = np.full((n_hist, per), -1, dtype=np.int64)
        ends = np.full((n_hist, per), -1, dtype=np.int64)
        starts[h[ok], c[ok] // rows] = start[ok]
        ends[h[ok], c[ok] // rows] = end[ok]
        self.starts, self.ends, self.fd = starts.tolist(), ends.tolist(), fd
        # read ahead (several blocks per read) where the chunks lie together in the file (as
        # HDF5 writes a dataset's chunks) and in the scan's order, each history after the one
        # before it: a read per block was a tenth of the scan's time besides inflating. Not
        # where they lie between other datasets' (a window would read those too, once per
        # dataset), nor out of order (a window would be read again for every block)
        indexed = starts.reshape(-1) >= 0
        if indexed.all():
            lo, hi = int(starts.min()), int(ends.max())
            dense = int((ends - starts).sum()) >= 0.9 * (hi - lo)
            # each chunk after the one before it, history by history, but for each history's
            # last chunk (HDF5 may place an edge chunk apart: it is read on its own, _stored)
            body = (starts[:, :-1] if per > 1 else starts).reshape(-1)
            ordered = bool((np.diff(body) > 0).all())
            if dense and ordered and history_by_history:
                self.read_ahead, self.last_end = _READ_AHEAD, hi

    def into(self, array: np.ndarray) -> ChunkBuffer:
        """This buffer reading into ``array`` instead (C-contiguous, of its shape and dtype; a
        row of a group's buffer): the dataset's layout and chunk index are not looked up again
        (a few HDF5 calls per dataset, which per history added up to a tenth of the scan)."""
        other = copy.copy(self)
        other.array = array
        if self.rows:
            # numpy's stubs give ndarray ``__buffer__`` only for Python >= 3.12
            other.bytes = memoryview(array.reshape(-1).view(np.uint8))  # type: ignore[arg-type]
        return other

    def read(self, ds: h5py.Dataset, h: int, a: int, b: int) -> np.ndarray:
        if b - a <= 0:
            return self.array[:0]
        chunks = self._direct(ds, h, a, b)
        if chunks is None:
            return self._by_hdf5(ds, h, a, b)
        out, chunk_bytes = self.bytes, self.rows * self.row_bytes
        n = (b - a) * self.row_bytes
        o = 0
        for data in chunks:
            if o + chunk_bytes <= n:
                out[o : o + chunk_bytes] = data
            else:  # the dataset's last chunk: the steps past its end are not the block's
                out[o:n] = memoryview(data)[: n - o]
            o += chunk_bytes
        return self.array[: b - a]

    def parts(self, ds: h5py.Dataset, h: int, a: int, b: int) -> list[np.ndarray]:
        """:meth:`read`'s block as consecutive parts: on the direct path, its inflated chunks
        as they are (the steps past the dataset's end cut off), so the block is never copied
        together (a tenth of the inflating, for the observations); else the block."""
        if b - a <= 0:
            return [self.array[:0]]
        chunks = self._direct(ds, h, a, b)
        if chunks is None:
            return [self._by_hdf5(ds, h, a, b)]
        shape, rows = self.array.shape[1:], self.rows
        parts = [np.frombuffer(c, self.array.dtype).reshape(rows, *shape) for c in chunks]
        if parts and b - a < rows * len(parts):
            parts[-1] = parts[-1][: b - a - rows * (len(parts) - 1)]
        return parts

    def _direct(self, ds: h5py.Dataset, h: int, a: int, b: int) -> list[bytes | bytearray] | None:
        """The block's chunks inflated on the direct path, or None where HDF5 must read the
        block (not a direct dataset, a block not starting at a chunk, any doubt about a chunk:
        HDF5 then says what is wrong); a chunk that ends short raises :class:`ShortChunk`."""
        if not (self.direct and a % self.rows == 0):
            return None
        try:
            return self._inflated(ds, h, a, b)
        except ShortChunk:
            raise
        except Exception:
            return None

    def _by_hdf5(self, ds: h5py.Dataset, h: int, a: int, b: int) -> np.ndarray:
        """The block as HDF5 reads it (then checked for a chunk that ends short)."""
        ds.read_direct(self.array, np.s_[h, a:b], np.s_[0 : b - a])
        if self.rows and a % self.rows == 0:
            self._check_chunks(ds, h, a, b)
        return self.array[: b - a]

    def _inflated(self, ds: h5py.Dataset, h: int, a: int, b: int) -> list[bytes | bytearray]:
        """The block's chunks, read as stored and inflated, each whole (raises
        :class:`ShortChunk`, or :class:`_NotDirect` for a chunk HDF5 must read)."""
        rows, row_bytes = self.rows, self.row_bytes
        chunk_bytes = rows * row_bytes
        inflate = _inflate
        assert inflate is not None  # a direct read is chosen only where libdeflate imported
        stored = self._stored(ds, h, a, b)
        # at most the chunk's size is written (memory stays bounded whatever the stored bytes
        # claim): a stream that would inflate past it, or is corrupt, fails (then HDF5 reads
        # the block and says what is wrong); one that ends cleanly short of it returns what it
        # holds (a chunk is stored whole, edge chunks too). All chunks at once, then checked:
        # the per-chunk Python work was a fifth of the inflating itself.
        # a chunk of long runs by zlib-ng, any other by libdeflate (see RUNS_RATIO)
        runs = chunk_bytes // RUNS_RATIO if _runs_decompressobj is not None else -1
        try:
            chunks = [
                (_inflate_runs if len(s) <= runs else inflate)(s, chunk_bytes) for s in stored
            ]
        except Exception:  # deflate.DeflateError, zlib's error: which chunk decides (below)
            chunks = []
        if len(chunks) != len(stored) or min(map(len, chunks), default=chunk_bytes) < chunk_bytes:
            # the first that fails, each by the inflater that failed it above: the two do not
            # refuse the same streams (libdeflate takes a distance code 30 that zlib refuses)
            by = [_inflate_runs if len(s) <= runs else inflate for s in stored]
            for c, s, f in zip(range(a, b, rows), stored, by, strict=True):
                try:
                    got = len(f(s, chunk_bytes))
                except Exception as e:
                    raise _NotDirect from e
                if got != chunk_bytes:
                    raise ShortChunk(ds, h, c, rows, got, chunk_bytes)
            raise _NotDirect  # none failed on its own (cannot happen): HDF5 reads the block
        return chunks

    def _stored(self, ds: h5py.Dataset, h: int, a: int, b: int) -> Sequence[Any]:
        """The stored bytes of the block's chunks, in order (raises :class:`_NotDirect` for a
        chunk stored unfiltered, and for one not allocated on the indexed path)."""
        rows = self.rows
        stored: list[Any] = []
        if self.starts is None:
            dsid, tail = ds.id, self.tail
            for c in range(a, b, rows):
                mask, data = dsid.read_direct_chunk((h, c, *tail))
                if mask:  # a filter was skipped for this chunk: not plain deflate
                    raise _NotDirect
                stored.append(data)
            return stored
        k0, k1 = a // rows, -(-b // rows)
        starts, ends = self.starts[h][k0:k1], self.ends[h][k0:k1]
        lo = min(starts)
        if lo < 0:  # a chunk not indexed: not allocated, or stored unfiltered
            raise _NotDirect
        # runs of chunks that lie together in the file (a history's, as written, but for an
        # edge chunk HDF5 may place apart): one read each, or, reading ahead, the block's
        # first run from the window (refilled from that run on when it is not in it: the
        # histories' chunks, one after another) and any later run not in the window (an edge
        # chunk placed apart) read on its own, so the window follows the scan, not stragglers
        i, n, fd, ahead, window = 0, len(starts), self.fd, self.read_ahead, self.window
        while i < n:
            lo, hi, j = starts[i], ends[i], i + 1
            while j < n and 0 <= starts[j] - hi <= _GAP:
                hi = max(hi, ends[j])
                j += 1
            view, at = window.view, window.at
            if not (ahead and at <= lo and hi <= at + len(view)):
                # bounded either way: a window, or the run's own chunks
                size = min(lo + ahead, self.last_end) - lo if ahead and i == 0 else 0
                size = max(size, hi - lo)
                raw = os.pread(fd, size, lo)
                if len(raw) != size:
                    raise _NotDirect
                view, at = memoryview(raw), lo
                if size > hi - lo:
                    window.view, window.at = view, at
            stored += [view[starts[k] - at : ends[k] - at] for k in range(i, j)]
            i = j
        return stored

    def _check_chunks(self, ds: h5py.Dataset, h: int, a: int, b: int) -> None:
        """Raise :class:`ShortChunk` for a chunk of the block just read by HDF5 whose stream
        ends short. A chunk whose trailer (the Adler-32 of what it inflates to) matches the
        bytes HDF5 returned is whole; an edge chunk is compared with its steps past the
        dataset's end taken as zeros (what HDF5 writes there); only a chunk that does not match
        is inflated (the system zlib) to measure it."""
        rows, row_bytes, out, tail = self.rows, self.row_bytes, self.bytes, self.tail
        chunk_bytes = rows * row_bytes
        dsid = ds.id
        for c in range(a, b, rows):
            try:
                mask, stored = dsid.read_direct_chunk((h, c, *tail))
            except Exception:  # never written: HDF5 returned the fill value
                continue
            if mask or len(stored) < 6:  # stored unfiltered, or no zlib stream to check
                continue
            n = min(rows, b - c) * row_bytes
            o = (c - a) * row_bytes
            check = _adler32(out[o : o + n])
            if n < chunk_bytes:
                check = _adler32(self.zeros[: chunk_bytes - n], check)
            if check == int.from_bytes(stored[-4:], "big"):
                continue
            inflater = zlib.decompressobj()
            try:
                got = len(inflater.decompress(stored, chunk_bytes + 1))
            except zlib.error:  # not a stream HDF5 could have read either: its data stands
                continue
            if inflater.eof and got < chunk_bytes:
                raise ShortChunk(ds, h, c, rows, got, chunk_bytes)


class _NotDirect(Exception):
    """A chunk the direct path does not read (the block goes to HDF5)."""


def direct_chunk_rows(ds: h5py.Dataset, *, need_inflater: bool = True) -> int:
    """Steps per chunk if ``ds``'s stored chunks can be inflated outside HDF5 with the same
    result, else 0 (and 0 without libdeflate, unless ``need_inflater`` is false).

    That holds when the dataset is chunked ``(1, C, *shape[2:])`` (a chunk is C whole steps of
    one history), its filter pipeline is deflate alone (no shuffle, checksum, scale-offset...),
    and its type in the file is exactly the in-memory type h5py reads it as (no conversion).
    """
    if _inflate is None and need_inflater:
        return 0
    try:
        chunks = ds.chunks
        if chunks is None or ds.ndim < 2 or chunks[0] != 1 or chunks[2:] != ds.shape[2:]:
            return 0
        plist = ds.id.get_create_plist()
        if plist.get_layout() != h5py.h5d.CHUNKED or plist.get_nfilters() != 1:
            return 0
        if plist.get_filter(0)[0] != h5py.h5z.FILTER_DEFLATE:
            return 0
        if ds.dtype.hasobject or not ds.id.get_type().equal(h5py.h5t.py_create(ds.dtype)):
            return 0
    except Exception:  # a type or property h5py cannot describe: HDF5 reads it
        return 0
    return int(chunks[1])


def direct_default() -> bool:
    """Whether scans inflate chunks themselves (``CURATE_ICRL_DIRECT=0`` turns it off)."""
    return os.environ.get("CURATE_ICRL_DIRECT", "1") != "0"


__all__ = [
    "RUNS_RATIO",
    "ChunkBuffer",
    "ShortChunk",
    "direct_chunk_rows",
    "direct_default",
]
