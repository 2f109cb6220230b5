"""A cheap look at an input, for telling which family's it is when the family asked refuses it.

Why: ``curate audit mquake glycans.csv`` used to report every row of the table as a malformed
case (4,900 KE001 findings, exit 1), and ``curate audit icrl cases.json`` said "not an HDF5 file"
without saying what it is. When a family finds that not one record of its input's first batch
is its own, it asks every other registered family whether the input looks like theirs
(:meth:`curate.families.base.Family.sniff`) and names the one that says yes, with the command
to run instead (:func:`curate.families.hints.other_family_hint`).

A :class:`Probe` is what they look at: the input's first bytes and the names its first records
or its header use. Cheap by construction: at most :data:`HEAD_BYTES` of the file are read (a
parquet file's footer for its column names), never the whole file, so an error path on a
multi-GB input costs milliseconds.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

#: How much of a file a probe reads.
HEAD_BYTES = 1 << 16
#: The HDF5 file signature (at offset 0, or after a user block at 512, 1024, …).
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


@dataclass(frozen=True)
class Probe:
    """What a family's :meth:`~curate.families.base.Family.sniff` gets: the input as given,
    its first bytes (empty for a folder, a stream or a file that cannot be read) and the
    field names of its first records or its header (empty when there are none to tell)."""

    path: str
    head: bytes
    keys: frozenset[str]

    @property
    def lower_keys(self) -> frozenset[str]:
        """The keys lower-cased and stripped, as the tabular families match column names."""
        return frozenset(k.lower().strip() for k in self.keys)

    @property
    def is_hdf5(self) -> bool:
        """The file has the HDF5 signature at one of the offsets HDF5 allows."""
        offset = 0
        while offset + len(HDF5_SIGNATURE) <= len(self.head):
            if self.head[offset : offset + len(HDF5_SIGNATURE)] == HDF5_SIGNATURE:
                return True
            offset = 512 if offset == 0 else offset * 2
        return False


def probe(path: str | Path, keys: Iterable[str] | None = None) -> Probe:
    """A :class:`Probe` of ``path``; ``keys`` when the caller already has them (the family
    that refused the input read its first batch), else read from the file's head."""
    head = _head(path)
    if keys is None:
        keys = _keys(path, head)
    return Probe(str(path), head, frozenset(str(k) for k in keys))


def _head(path: str | Path) -> bytes:
    p = Path(str(path))
    try:
        if not p.is_file():
            return b""
        with open(p, "rb") as fh:
            return fh.read(HEAD_BYTES)
    except OSError:
        return b""


def _keys(path: str | Path, head: bytes) -> list[str]:
    """Field names from the head: a parquet footer's columns, the first JSON records' keys, a
    CSV/TSV header. Compressed files are looked into when their head decompresses."""
    name = str(path).lower()
    try:
        if head.startswith(b"PAR1") or name.endswith(".parquet"):
            import pyarrow.parquet as pq

            return list(pq.read_schema(str(path)).names)
        text = _text(head, name)
    except Exception:  # a probe never fails: it only helps a message that is already an error
        return []
    if text is None:
        return []
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith(("[", "{")):
        return _json_keys(stripped)
    first = stripped.split("\n", 1)[0]
    sep = "\t" if name.removesuffix(".gz").removesuffix(".zst").endswith(".tsv") else ","
    if sep == "," and "\t" in first and "," not in first:
        sep = "\t"
    try:
        return next(csv.reader(io.StringIO(first), delimiter=sep), [])
    except csv.Error:
        return []


def _text(head: bytes, name: str) -> str | None:
    """The head as text (decompressed for ``.gz``/``.zst``), None when it is binary."""
    if head.startswith(b"\x1f\x8b"):
        import zlib

        head = zlib.decompressobj(wbits=31).decompress(head, HEAD_BYTES)
    elif head.startswith(b"\x28\xb5\x2f\xfd"):
        import pyarrow as pa

        with pa.CompressedInputStream(pa.BufferReader(head), "zstd") as f:
            try:
                head = f.read(HEAD_BYTES)
            except Exception:
                return None
    if b"\x00" in head[:4096]:
        return None
    return head.decode("utf-8", "replace")


def _json_keys(text: str) -> list[str]:
    """Keys of the complete records at the start of a JSON array or of JSON Lines text."""
    decoder = json.JSONDecoder()
    keys: dict[str, None] = {}
    at = 1 if text.startswith("[") else 0
    for _ in range(50):
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
        if at >= len(text) or text[at] != "{":
            break
        try:
            value, at = decoder.raw_decode(text, at)
        except ValueError:  # cut by the head, or not JSON
            break
        if isinstance(value, dict):
            keys.update(dict.fromkeys(map(str, value)))
    return list(keys)
