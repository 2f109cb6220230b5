"""The one pass over a media file: its bytes hashed once, its real kind and metadata read.

:func:`scan_file` is a pure function of a path: it streams the file in fixed-size blocks through
SHA-256, recognises the content from its first bytes (never from the extension, so a ``.wav``
that is really a PNG is seen as an image), and reads the metadata with the library that owns
the format — Pillow for images (decoded in full, so a truncated image is caught, and hashed
perceptually with ``imagehash.phash``), ``soundfile`` for audio, PyAV for video (the packets are
demuxed to the end and the first frame decoded, so a cut-off file is caught without decoding
every frame). It returns one plain ``dict`` with the columns of :data:`COLUMNS`; nothing it finds
wrong with a file is raised: a missing, unreadable, empty, truncated or unrecognised file is a row
with ``error_kind`` and a short ``error``.

Why one pass, and bytes read once: on a dataset of a million files the cost is the read. An image
(at most :data:`IN_MEMORY_MAX` bytes) is parsed from the very blocks that were hashed; an audio or
video file is hashed streamed and its library then reads only what it needs (headers, a frame,
the packet index) from the page cache the hash just filled.

Why threads can run it in parallel: :mod:`hashlib` releases the GIL while it hashes a block, and
Pillow, libsndfile and FFmpeg release it while decoding, so a thread pool over files keeps both
cores busy without starting processes (``bench/bench_media.py`` measures threads against
processes). Like the HDF5 scan (:mod:`curate.io.xland_scan`) it imports nothing else of curate, so a
worker process (or a cluster task) starts with only the media libraries.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import struct
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # PyAV is imported only by the scan that reads a video
    from av.audio.stream import AudioStream
    from av.video.stream import VideoStream

#: Bytes read per block (1 MiB: large enough that hashing, not the call, dominates).
BLOCK = 1 << 20
#: Images up to this size are decoded from the bytes read for the hash (no second read).
IN_MEMORY_MAX = 256 << 20
#: Video packets demuxed at most to detect truncation (a bound on the cost of a very long file).
MAX_PACKETS = 1_000_000

#: The scan's columns and their types (``path`` is the path as given).
COLUMNS: dict[str, type] = {
    "path": str,
    "size": int,
    "mtime_ns": int,
    "sha256": str,
    "kind": str,
    "format": str,
    "codec": str,
    "mode": str,
    "width": int,
    "height": int,
    "fps": float,
    "duration_s": float,
    "sample_rate": int,
    "channels": int,
    "frames": int,
    "phash": int,
    "error_kind": str,
    "error": str,
}

#: What a file can be wrong with (``error_kind``): the file-level rules map these to codes.
ERROR_KINDS = ("missing", "unreadable", "empty", "not-media", "truncated", "corrupt")

#: The media kind each file extension promises (lower case, with the dot).
EXTENSION_KINDS: dict[str, str] = {
    **dict.fromkeys(
        (".png", ".jpg", ".jpeg", ".jpe", ".gif", ".bmp", ".webp", ".tif", ".tiff"), "image"
    ),
    **dict.fromkeys(
        (".wav", ".wave", ".flac", ".ogg", ".oga", ".opus", ".mp3", ".aif", ".aiff", ".m4a"),
        "audio",
    ),
    **dict.fromkeys((".mp4", ".m4v", ".mov", ".mkv", ".webm", ".avi", ".ogv"), "video"),
}


def extension_kind(path: str) -> str | None:
    """The kind ``path``'s extension promises (``image``/``audio``/``video``), or None."""
    return EXTENSION_KINDS.get(os.path.splitext(path)[1].lower())


def sniff(head: bytes) -> tuple[str, str] | None:
    """``(kind, format)`` recognised from a file's first bytes, or None.

    Magic numbers, not extensions: the content decides. MP4/QuickTime (``ftyp``) is called
    video here; PyAV decides later whether it holds a video stream or only audio (``.m4a``).
    """
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image", "PNG"
    if head.startswith(b"\xff\xd8\xff"):
        return "image", "JPEG"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image", "GIF"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image", "WEBP"
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return "image", "TIFF"
    if head[:2] == b"BM" and len(head) >= 26:
        return "image", "BMP"
    if head[:4] in (b"RIFF", b"RIFX", b"RF64") and head[8:12] == b"WAVE":
        return "audio", "WAV"
    if head[:4] == b"RIFF" and head[8:12] == b"AVI ":
        return "video", "AVI"
    if head[:4] == b"fLaC":
        return "audio", "FLAC"
    if head[:4] == b"OggS":
        return ("video", "OGG") if b"\x80theora" in head[:512] else ("audio", "OGG")
    if head[:4] == b"FORM" and head[8:12] in (b"AIFF", b"AIFC"):
        return "audio", "AIFF"
    if head[:3] == b"ID3" or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE6 in (0xE2,)):
        return "audio", "MP3"
    if head[4:8] == b"ftyp":
        return "video", "MP4"
    if head[:4] == b"\x1aE\xdf\xa3":
        return "video", "MATROSKA"
    return None


def _row(path: str) -> dict[str, Any]:
    return dict.fromkeys(COLUMNS) | {"path": path}


def _fail(row: dict[str, Any], kind: str, message: str) -> dict[str, Any]:
    row["error_kind"] = kind
    row["error"] = message
    return row


def _message(e: BaseException | str) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0][:200]


def error_row(path: str, e: OSError) -> dict[str, Any]:
    """The row of a file that could not be opened (``missing`` or ``unreadable``)."""
    return _os_error(_row(path), e)


def _os_error(row: dict[str, Any], e: OSError) -> dict[str, Any]:
    if isinstance(e, FileNotFoundError):
        return _fail(row, "missing", "no such file")
    if isinstance(e, PermissionError):
        return _fail(row, "unreadable", "permission denied")
    if isinstance(e, IsADirectoryError):
        return _fail(row, "unreadable", "is a folder, not a file")
    return _fail(row, "unreadable", e.strerror or _message(e))


def scan_file(path: str, abspath: str | None = None) -> dict[str, Any]:
    """One row of :data:`COLUMNS` for the file at ``abspath`` (default ``path``); never raises
    for anything wrong with the file itself."""
    row = _row(path)
    target = abspath or path
    digest = hashlib.sha256()
    try:
        if not stat.S_ISREG(os.stat(target).st_mode):  # a folder, a FIFO (open would block)
            return _fail(row, "unreadable", "not a regular file")
        with open(target, "rb", buffering=0) as f:
            st = os.fstat(f.fileno())
            row["size"] = st.st_size
            row["mtime_ns"] = st.st_mtime_ns
            first = f.read(BLOCK)
            digest.update(first)
            recognised = sniff(first)
            keep = recognised is not None and recognised[0] == "image"
            keep = keep and st.st_size <= IN_MEMORY_MAX
            blocks = [first] if keep else None
            while True:
                block = f.read(BLOCK)
                if not block:
                    break
                digest.update(block)
                if blocks is not None:
                    blocks.append(block)
    except OSError as e:
        return _os_error(row, e)
    row["sha256"] = digest.hexdigest()
    if not first:
        return _fail(row, "empty", "empty file (0 bytes)")
    if recognised is None:
        return _fail(
            row,
            "not-media",
            f"not a known image, audio or video format (starts with {first[:8].hex(' ')})",
        )
    kind, fmt = recognised
    row["kind"], row["format"] = kind, fmt
    source: Any = io.BytesIO(b"".join(blocks)) if blocks is not None else target
    try:
        if kind == "image":
            _image(source, row)
        elif kind == "audio" and fmt != "MP3":
            _audio(source, row, first)
        else:
            _video(target, row)
    except OSError as e:  # the file vanished or became unreadable between hash and parse
        return _os_error(row, e)
    return row


def _image(source: Any, row: dict[str, Any]) -> None:
    """Format, size and mode; a full decode (truncation shows only there); the 64-bit pHash."""
    import imagehash
    from PIL import Image

    try:
        with Image.open(source) as im:
            row["format"] = im.format or row["format"]
            row["width"], row["height"] = im.size
            row["mode"] = im.mode
            row["frames"] = getattr(im, "n_frames", 1)
            im.load()
            bits = imagehash.phash(im).hash.flatten()
    except (OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError) as e:
        if isinstance(e, OSError) and e.errno is not None:
            raise
        _broken(row, e)
        return
    value = 0
    for b in bits:
        value = (value << 1) | int(b)
    row["phash"] = value


def _broken(row: dict[str, Any], e: BaseException | str) -> None:
    text = _message(e)
    low = text.lower()
    truncated = any(w in low for w in ("truncat", "end of file", "eof", "premature", "short"))
    _fail(row, "truncated" if truncated or isinstance(e, EOFError) else "corrupt", text)


def _riff_declared(head: bytes) -> int | None:
    """Total bytes a RIFF/AIFF header declares (chunk size + 8), or None."""
    if len(head) < 12:
        return None
    if head[:4] == b"RIFF":
        return int(struct.unpack_from("<I", head, 4)[0]) + 8
    if head[:4] in (b"RIFX", b"FORM"):
        return int(struct.unpack_from(">I", head, 4)[0]) + 8
    return None  # RF64 keeps its size elsewhere; the tail read below still applies


def _audio(source: Any, row: dict[str, Any], head: bytes) -> None:
    """Sample rate, channels, frames, duration; truncation from the declared size or the tail.

    libsndfile quietly shortens a WAV whose data chunk runs past the end of the file, so the
    frame count alone cannot show a cut-off file: the RIFF header's declared size is compared
    with the real size, and the last frames are read back (a compressed stream that ends early
    fails there).
    """
    import soundfile as sf

    declared = _riff_declared(head)
    if declared is not None and declared > row["size"] > 0 and declared - row["size"] > 1:
        _fail(
            row,
            "truncated",
            f"header declares {declared} bytes, the file holds {row['size']}",
        )
    try:
        with sf.SoundFile(source) as f:
            row["format"] = f.format
            row["codec"] = f.subtype
            row["sample_rate"] = f.samplerate
            row["channels"] = f.channels
            row["frames"] = f.frames
            row["duration_s"] = f.frames / f.samplerate if f.samplerate else None
            if row["error_kind"] is None and f.frames > 0 and f.seekable():
                tail = min(f.frames, 4096)
                f.seek(f.frames - tail)
                got = len(f.read(tail, dtype="int16", always_2d=True))
                if got < tail:
                    _fail(
                        row,
                        "truncated",
                        f"{f.frames} frames declared, the last {tail - got} missing",
                    )
    except (sf.LibsndfileError, RuntimeError, ValueError, TypeError) as e:
        if row["error_kind"] is None:
            _broken(row, e)


def _video(path: str, row: dict[str, Any]) -> None:
    """Container, codec, size, fps and duration with PyAV; every packet demuxed (none decoded
    but the first frame) so a file cut off mid-stream shows as fewer packets than declared."""
    import av

    if row["format"] == "MP4":
        overrun = _box_overrun(path, row["size"])
        if overrun:
            _fail(row, "truncated", overrun)
    try:
        with av.open(path, metadata_errors="ignore") as c:
            videos, audios = c.streams.video, c.streams.audio
            if c.duration is not None:
                row["duration_s"] = c.duration / 1_000_000
            stream: AudioStream | VideoStream
            if not videos and audios:
                a = audios[0]
                row["kind"] = "audio"
                row["codec"] = a.codec_context.name
                row["sample_rate"] = a.codec_context.sample_rate
                row["channels"] = a.codec_context.channels
                stream = a
            elif videos:
                v = videos[0]
                row["codec"] = v.codec_context.name
                row["width"], row["height"] = v.codec_context.width, v.codec_context.height
                rate = v.average_rate or v.guessed_rate
                row["fps"] = float(rate) if rate else None
                if row["duration_s"] is None and v.duration is not None and v.time_base:
                    row["duration_s"] = float(v.duration * v.time_base)
                stream = v
            else:
                _fail(row, "corrupt", "container holds no audio or video stream")
                return
            declared = stream.frames
            row["frames"] = declared or None
            packets = 0
            decoded = False
            for packet in c.demux(stream):
                if packet.size == 0:  # the flush packet at the end
                    continue
                packets += 1
                if not decoded and stream.type == "video":
                    decoded = bool(packet.decode()) or decoded
                if packets >= MAX_PACKETS:
                    return
            if row["error_kind"] is not None:
                return
            if packets == 0:
                _fail(row, "truncated", "no packets: the stream holds no data")
            elif declared and packets < declared:
                _fail(row, "truncated", f"{declared} frames declared, {packets} present")
            elif stream.type == "video" and not decoded:
                _fail(row, "corrupt", "no frame could be decoded")
    except av.FFmpegError as e:
        if row["error_kind"] is None:
            _broken(row, getattr(e, "strerror", None) or e)
    except (ValueError, EOFError, IndexError) as e:
        if row["error_kind"] is None:
            _broken(row, e)


def _box_overrun(path: str, size: int) -> str | None:
    """Why an MP4/QuickTime file is cut off, from its top-level boxes, or None.

    FFmpeg says only "Invalid data found" when the index (``moov``, written last by default)
    is missing; walking the box headers (a few reads) tells a truncated file from a corrupt one.
    """
    pos = 0
    seen = set()
    with open(path, "rb") as f:
        for _ in range(10_000):
            if pos + 8 > size:
                break
            f.seek(pos)
            head = f.read(16)
            length, name = struct.unpack_from(">I4s", head)
            if length == 1 and len(head) >= 16:
                length = struct.unpack_from(">Q", head, 8)[0]
            elif length == 0:  # runs to the end of the file
                length = size - pos
            if length < 8:
                return None  # not a box structure we can follow: let FFmpeg judge
            box = name.decode("latin-1")
            seen.add(box)
            if pos + length > size:
                return (
                    f"'{box}' box runs past the end ({pos + length} bytes declared, {size} present)"
                )
            pos += length
    if "moov" not in seen and "moof" not in seen:
        return "no 'moov' index box: the file is cut off or was never finished"
    return None
