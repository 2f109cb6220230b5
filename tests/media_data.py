"""Small real media files for the media scan and the deepfake file rules, written by the tests.

Every file is produced by the library a user's pipeline would use (Pillow, soundfile, PyAV), so
the scan reads real encodings, not hand-made bytes. :func:`write_media_set` writes one folder
with known exact duplicates, near-duplicates (a re-encoded JPEG, a resized and a lightly
cropped copy), truncated files, a mislabelled file and a name that is missing, and returns what
it planted so tests can assert each defect at its file.
"""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import soundfile as sf
from PIL import Image


def picture(seed: int, size: int = 256) -> Image.Image:
    """A smooth random picture (blurred noise): pHash-stable under re-encoding and resizing,
    and different pictures sit far apart (random noise would make every crop far)."""
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (6, 6, 3), dtype=np.uint8)
    return Image.fromarray(small).resize((size, size), Image.Resampling.BICUBIC)


def tone(seconds: float = 0.25, rate: int = 8000, freq: float = 440.0) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def write_wav(path: Path, seconds: float = 0.25, rate: int = 8000, freq: float = 440.0) -> Path:
    sf.write(path, tone(seconds, rate, freq), rate, subtype="PCM_16")
    return path


def write_mp4(
    path: Path, frames: int = 12, size: tuple[int, int] = (64, 48), fps: int = 12, seed: int = 0
) -> Path:
    """An H.264 (or MPEG-4 part 2 if libx264 is absent) MP4, moov atom at the end (the default)."""
    rng = np.random.default_rng(seed)
    with av.open(str(path), "w") as c:
        codec = "libx264" if "libx264" in av.codecs_available else "mpeg4"
        s = c.add_stream(codec, rate=fps)
        s.width, s.height = size
        s.pix_fmt = "yuv420p"
        for _ in range(frames):
            arr = rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
            for p in s.encode(av.VideoFrame.from_ndarray(arr, format="rgb24")):
                c.mux(p)
        for p in s.encode():
            c.mux(p)
    return path


def truncate(path: Path, keep: float = 0.5) -> Path:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    return path


def write_media_set(root: Path) -> dict[str, list[str]]:
    """The planted set; returns ``{defect: [file names]}``.

    ``clean`` files are distinct and readable; ``exact`` pairs share bytes; ``near`` pairs are
    one picture re-encoded / resized / cropped; the rest are broken as their key says.
    """
    root.mkdir(parents=True, exist_ok=True)
    pic = picture(1)
    pic.save(root / "a.png")
    (root / "a_copy.png").write_bytes((root / "a.png").read_bytes())
    pic.save(root / "a_reencoded.jpg", quality=70)
    pic.resize((128, 128), Image.Resampling.LANCZOS).save(root / "a_resized.png")
    pic.crop((4, 4, 252, 252)).save(root / "a_cropped.png")
    picture(2).save(root / "b.png")
    picture(3).save(root / "c.jpg", quality=90)
    write_wav(root / "tone.wav")
    write_wav(root / "tone2.wav", freq=660.0)
    write_mp4(root / "clip.mp4")
    # broken ones
    picture(4).save(root / "trunc.png")
    truncate(root / "trunc.png")
    picture(5).save(root / "trunc.jpg", quality=90)
    truncate(root / "trunc.jpg")
    truncate(write_wav(root / "trunc.wav"))
    truncate(write_mp4(root / "trunc.mp4", seed=1))
    picture(6).save(root / "really_png.wav", format="PNG")
    (root / "empty.png").write_bytes(b"")
    (root / "notes.jpg").write_text("not an image at all\n")
    return {
        "clean": ["a.png", "b.png", "c.jpg", "tone.wav", "tone2.wav", "clip.mp4"],
        "exact": ["a.png", "a_copy.png"],
        "near": ["a_reencoded.jpg", "a_resized.png", "a_cropped.png"],
        "truncated": ["trunc.png", "trunc.jpg", "trunc.wav", "trunc.mp4"],
        "mislabelled": ["really_png.wav"],
        "empty": ["empty.png"],
        "not-media": ["notes.jpg"],
        "missing": ["gone.png"],
    }
