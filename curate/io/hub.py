"""The Hugging Face Hub as a source of bytes: ``hf://datasets/OWNER/NAME[@REVISION][/PATH]``,
read through ``huggingface_hub.HfFileSystem`` (the ``hub`` extra).

Why a module of its own: network errors (unreachable, missing, private, gated) must become one
line naming the input, never a traceback, and only this module imports ``huggingface_hub``.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable
from typing import Any, BinaryIO

from curate.core.errors import InputError, UsageError
from curate.io.records import InputName, brief
from curate.io.sources import Blob, Guarded, file_kind


def hub_fs() -> Any:
    """``huggingface_hub.HfFileSystem`` (the ``hub`` extra); a usage error without it."""
    try:
        from huggingface_hub import HfFileSystem
    except ImportError:
        raise UsageError("hf:// inputs need huggingface_hub: pip install 'curate[hub]'") from None
    return HfFileSystem()


def hub_error(label: Any, e: BaseException, done: int | None = None) -> InputError:
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
        f"{brief(e, True)}); check the network connection, or HF_TOKEN for a private or gated "
        "dataset",
        path=label,
    )


def hub_call(label: Any, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except (InputError, UsageError):
        raise
    except Exception as e:
        raise hub_error(label, e) from None


def remote_blob(fs: Any, fspath: str, label: InputName, data: bool = True) -> Blob:
    """A file on the Hub; ``data=False``: any file (a card), read as stored, for its hash."""
    compression, suffix = None, ""
    if data:
        _, compression, suffix = file_kind(fspath.rsplit("/", 1)[-1], label)

    def raw() -> BinaryIO:
        f = hub_call(label, fs.open, fspath, "rb")
        return io.BufferedReader(Guarded(f, lambda e, done: hub_error(label, e, done)), 1 << 20)

    return Blob(label, raw, compression, suffix)


def remote_sha256(blob: Blob, info: dict[str, Any]) -> str:
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
