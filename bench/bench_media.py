"""Media scan benchmark: file hashing against ``sha256sum``, cold vs cached, and the metadata pass.

Every measurement runs in a fresh child process (wall time; its own peak RSS through GNU time), in
the same run, over the same files:

Hashing (``--files`` files of ``--mb`` MB of random bytes; not media, so only the hash runs):

* ``sha256sum``            coreutils on one core (``sha256sum FILES``)
* ``sha256sum -P2``        two cores (``xargs -P2 -n K sha256sum``)
* ``openssl dgst``         ``openssl dgst -sha256 FILES`` (OpenSSL's SHA-NI/AVX2 code, which
                           Python's hashlib also uses; coreutils 9.1 has its own, slower one)
* ``curate, 1 thread``     :func:`curate.io.media.scan_media` with ``workers=1``
* ``curate, 2 threads``    ``workers=2`` (the library's pool)
* ``curate, 2 procs``      :func:`curate.io.media_scan.scan_file` in a 2-process pool (spawn)
* ``curate, cached``       the 2-thread scan again with its cache warm (nothing read but it)

Files are read from the page cache in every row (they were just written, and each tool reads
them in turn), so the figures compare hashing and overhead, not the disk.

Metadata (``--images`` 256×256 PNG/JPEG, ``--audio`` 1 s WAV, ``--videos`` 12-frame MP4, written
by ``tests/media_data.py``): files/s of the full scan (hash, sniff, decode, pHash) with 1 thread,
2 threads and 2 processes.

Run: ``python bench/bench_media.py [--files 64 --mb 8] [--images 400 --audio 100 --videos 20]
[--dir DIR] [--repeat K]``; prints one table row per measurement (best of ``--repeat``).

``--record [DIR]`` (see ``bench/record.py``) also writes the two rows of bench/RESULTS.md:
``media-hashing`` (curate on 1 thread against ``sha256sum`` on one core, and ``openssl dgst``)
and ``media-metadata`` (the 2-thread scan). Other sizes than the defaults get ids of their
own (``media-hashing-16x8mb``), so a smaller run never replaces the row of the real workload.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import record  # noqa: E402  (bench/record.py: what every script's --record shares)

OLD_NS = 1_600_000_000_000_000_000  # files' mtime: old enough to be cached (not "racy")


def _child(args: argparse.Namespace) -> None:
    """Run one measurement in this (child) process; prints the file count it covered."""
    files = sorted(str(p) for p in Path(args.child_dir).iterdir() if p.is_file())
    if args.child == "procs":
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing import get_context

        from curate.io.media_scan import scan_file

        t0 = time.perf_counter()  # the pool's start-up counts: it is part of choosing processes
        with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
            rows = list(pool.map(scan_file, files, chunksize=max(1, len(files) // 16)))
        assert all(r["sha256"] for r in rows)
        print(time.perf_counter() - t0, len(rows), 0)
        return
    from curate.io.media import scan_media

    cache = args.child_cache or None
    t0 = time.perf_counter()
    df = scan_media(files, workers=int(args.child), cache=cache, strict_cache=True)
    assert df["sha256"].null_count() == 0
    print(time.perf_counter() - t0, df.height, int(df["cached"].sum()))


def _run(cmd: list[str] | str, shell: bool = False) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MB) and stdout of one child (its CPU seconds appended to the
    stdout as ``cpu=S``: on a shared machine CPU time is steadier than wall time). The peak is
    the child's own, through GNU time (``record.wrap_for_peak``): ``os.wait4``'s would carry
    this script's high-water mark; with ``time`` the wall time includes its ~1 ms start."""
    with record.child_peak(cmd) as (wrapped, own_peak):  # the child's own peak, not ours
        t0 = time.perf_counter()
        p = subprocess.Popen(wrapped, shell=shell, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out = p.stdout.read() if p.stdout else b""
        err = p.stderr.read() if p.stderr else b""
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        if status != 0:
            raise SystemExit(f"failed: {cmd}\n{err.decode()[-2000:]}")
        peak = own_peak(usage)
    cpu = usage.ru_utime + usage.ru_stime
    return wall, peak, out.decode() + f" cpu={cpu:.3f}"


def _best(cmd: list[str] | str, repeat: int, shell: bool = False) -> tuple[float, float, str]:
    """Best of ``repeat``; for curate's children the time is the scan's own (printed first),
    without starting Python and importing polars and the media libraries (~1-2 s)."""
    runs = [_run(cmd, shell) for _ in range(repeat)]
    runs = [(float(out.split()[0]), rss, out) if not out.startswith(" cpu=") else (s, rss, out)
            for s, rss, out in runs]  # fmt: skip
    return min(runs, key=lambda r: r[0])


def _me(kind: str, folder: Path, cache: str = "") -> list[str]:
    return [sys.executable, __file__, "--child", kind, "--child-dir", str(folder),
            "--child-cache", cache]  # fmt: skip


def _write_random(folder: Path, files: int, mb: float) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    size = int(mb * (1 << 20))
    total = 0
    for i in range(files):
        p = folder / f"blob{i:05d}.bin"
        if not p.exists() or p.stat().st_size != size:
            p.write_bytes(os.urandom(size))
        os.utime(p, ns=(OLD_NS, OLD_NS))
        total += size
    return total


def _write_media(folder: Path, images: int, audio: int, videos: int) -> None:
    from media_data import picture, write_mp4, write_wav

    folder.mkdir(parents=True, exist_ok=True)
    for i in range(images):
        p = folder / (f"img{i:05d}.png" if i % 2 else f"img{i:05d}.jpg")
        if not p.exists():
            picture(i).save(p, **({} if i % 2 else {"quality": 90}))
    for i in range(audio):
        p = folder / f"snd{i:05d}.wav"
        if not p.exists():
            write_wav(p, seconds=1.0, rate=16000, freq=200.0 + i)
    for i in range(videos):
        p = folder / f"vid{i:05d}.mp4"
        if not p.exists():
            write_mp4(p, frames=12, seed=i)
    for p in folder.iterdir():
        os.utime(p, ns=(OLD_NS, OLD_NS))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=64)
    ap.add_argument("--mb", type=float, default=8.0)
    ap.add_argument("--images", type=int, default=400)
    ap.add_argument("--audio", type=int, default=100)
    ap.add_argument("--videos", type=int, default=20)
    ap.add_argument("--dir", default=None, help="work folder (default: a temporary one)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child-dir", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child-cache", default="", help=argparse.SUPPRESS)
    record.add_arguments(ap)
    args = ap.parse_args()
    if args.child:
        _child(args)
        return
    recorder = record.start(args)
    work = Path(args.dir or tempfile.mkdtemp(prefix="curate-bench-media-"))
    blobs, media = work / "blobs", work / "media"
    total = _write_random(blobs, args.files, args.mb)
    mb = total / (1 << 20)
    names = " ".join(shlex.quote(str(p)) for p in sorted(blobs.iterdir()))
    per = max(1, args.files // 2)
    print(f"hashing: {args.files} files x {args.mb} MB = {mb:.0f} MB (page cache warm)")
    print(f"{'run':<22}{'s':>8}{'MB/s':>9}{'RSS MB':>9}{'x sha256sum':>13}{'CPU s':>8}")
    rows = []
    rows.append(("sha256sum", *_best(f"sha256sum {names} > /dev/null", args.repeat, True)))
    rows.append(
        (
            "sha256sum -P2",
            *_best(
                f"ls {shlex.quote(str(blobs))}/*.bin | xargs -P2 -n {per} sha256sum > /dev/null",
                args.repeat,
                True,
            ),
        )
    )
    rows.append(
        ("openssl dgst", *_best(f"openssl dgst -sha256 {names} > /dev/null", args.repeat, True))
    )
    rows.append(("curate, 1 thread", *_best(_me("1", blobs), args.repeat)))
    rows.append(("curate, 2 threads", *_best(_me("2", blobs), args.repeat)))
    rows.append(("curate, 2 procs", *_best(_me("procs", blobs), args.repeat)))
    cache = work / "cache.parquet"
    cache.unlink(missing_ok=True)
    cold = _best(_me("2", blobs, str(cache)), 1)
    rows.append(("curate, cold+cache", *cold))
    warm = _best(_me("2", blobs, str(cache)), args.repeat)
    assert warm[2].split()[2] == str(args.files), warm[2]  # every file from the cache
    rows.append(("curate, cached", *warm))
    base = rows[0][1]
    for name, s, rss, out in rows:
        cpu = out.rsplit("cpu=", 1)[1]
        print(f"{name:<22}{s:>8.3f}{mb / s:>9.0f}{rss:>9.0f}{base / s:>13.2f}{cpu:>8}")

    _write_media(media, args.images, args.audio, args.videos)
    n = sum(1 for _ in media.iterdir())
    print(f"\nmetadata: {args.images} images (256x256 PNG/JPEG), {args.audio} WAV (1 s), "
          f"{args.videos} MP4 (12 frames): {n} files")  # fmt: skip
    print(f"{'run':<22}{'s':>8}{'files/s':>9}{'RSS MB':>9}")
    meta = {}
    for name, kind in (("1 thread", "1"), ("2 threads", "2"), ("2 procs", "procs")):
        s, rss, _ = _best(_me(kind, media), args.repeat)
        print(f"{name:<22}{s:>8.3f}{n / s:>9.0f}{rss:>9.0f}")
        meta[name] = (s, rss)
    print(
        "\n(curate rows: the scan's own time in its child, imports excluded; RSS: the child's peak;"
    )
    print(" CPU s: the whole child's user+system time, imports included)")
    if recorder:
        hashing = {name: (s, rss) for name, s, rss, _ in rows}
        recorder.write(*media_rows(args, mb, hashing, n, meta))


def media_rows(
    args: argparse.Namespace,
    mb: float,
    hashing: dict[str, tuple[float, float]],
    files: int,
    meta: dict[str, tuple[float, float]],
) -> list[record.Row]:
    """The page's two rows from the hashing and metadata tables: {run: (seconds, peak MB)}."""
    ours, ours_rss = hashing["curate, 1 thread"]
    sha, sha_rss = hashing["sha256sum"]
    ssl = hashing["openssl dgst"][0]
    sizes = f"{args.files}x{args.mb:g}mb"
    media = f"{args.images}+{args.audio}+{args.videos}"
    meta_s, meta_rss = meta["2 threads"]
    return [
        record.Row(
            id="media-hashing" + ("" if sizes == "64x8mb" else f"-{sizes}"),
            section="peer",
            benchmark="media scan: hashing",
            workload=f"{args.files} files × {args.mb:g} MB ({mb:.0f} MB), page cache warm; "
            "curate on 1 thread",
            peer="`sha256sum` (and `openssl dgst`)",
            curate_figure=f"{ours:.2f} s",
            peer_figure=f"{sha:.2f} s (`sha256sum`), {ssl:.2f} s (`openssl dgst`)",
            ratio=f"**{sha / ours:.1f}×** `sha256sum` ({ours:.2f} s vs {sha:.2f} s); "
            f"**{ssl / ours:.2f}×** `openssl dgst` ({ssl:.2f} s)",
            rss_curate=f"{ours_rss:.0f}",
            rss_peer=f"{sha_rss:.0f} MB",
            values={"seconds_and_peak_mb": hashing, "best_of": args.repeat},
        ),
        record.Row(
            id="media-metadata" + ("" if media == "400+100+20" else f"-{media}"),
            section="target",
            benchmark="media scan: metadata",
            workload=f"{files} files ({args.images} images, {args.audio} WAV, {args.videos} MP4)",
            curate_figure=f"**{files / meta_s:.0f} files/s** on 2 threads",
            target="—",
            rss_curate=f"{meta_rss:.0f} MB",
            values={"seconds_and_peak_mb": meta, "best_of": args.repeat},
        ),
    ]


if __name__ == "__main__":
    main()
