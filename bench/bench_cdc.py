"""How much of a remaster's upload the Hub's storage could de-duplicate against the original's.

The Hub stores files in Xet, which cuts each uploaded file into content-defined chunks (~64 KiB)
and uploads only chunks it does not hold yet. curate writes parquet as ``datasets`` 5.2 does
(``curate.publish.shards.writer_options``: content-defined chunking of pages, page index, its
compression and dictionary choices), so unchanged rows make identical pages, and identical
bytes for Xet to find. This script measures it.

Workload: ``--cases`` MQuAKE cases (bench_ke_scale's generator, parquet) and the remaster
bench_diff.py makes of them (1 % of the cases changed: an alias added, a case left out, a case
re-keyed, a case moved to test). Both are exported with ``curate export mquake`` twice: with
today's writer settings and with the ones before (zstd, no content-defined chunking), the
peer. Each export's shards are cut into chunks by a Gear rolling hash with Xet's parameters
(8 KiB minimum, 64 KiB target, 128 KiB maximum; the gear table is seeded here, not Xet's
own, so the cut points differ from Xet's but follow the same rule), and the share of the
remaster's bytes in chunks the original's export already has is printed.

Run: ``python bench/bench_cdc.py`` (~2 min); ``--record`` writes row ``cdc-reuse``.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import record  # noqa: E402

MIN_CHUNK, TARGET, MAX_CHUNK = 8 << 10, 64 << 10, 128 << 10
_GEAR = np.random.default_rng(20261206).integers(0, 2**63, size=256, dtype=np.uint64) * 2 + 1


def gear_hashes(data: bytes) -> np.ndarray:
    """The Gear rolling hash after every byte: ``h = (h << 1) + GEAR[b]`` over 64 bits, which
    only the last 64 bytes reach (each shift drops one), so it is a sum of 64 shifted
    lookups, computed a shift at a time over the whole buffer."""
    g = _GEAR[np.frombuffer(data, dtype=np.uint8)]
    h = np.zeros(len(g), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in range(64):
            h[k:] += g[: len(g) - k] << np.uint64(k)
    return h


def chunks(data: bytes) -> list[bytes]:
    """Content-defined chunks: a cut after a byte whose hash has its top bits zero (one byte in
    TARGET on average), no chunk under MIN_CHUNK or over MAX_CHUNK."""
    mask = np.uint64(((1 << (TARGET.bit_length() - 1)) - 1) << (64 - TARGET.bit_length() + 1))
    candidates = np.flatnonzero((gear_hashes(data) & mask) == 0) + 1
    out, start = [], 0
    i = 0
    while start < len(data):
        end = min(start + MAX_CHUNK, len(data))
        i = np.searchsorted(candidates, start + MIN_CHUNK, side="left")
        if i < len(candidates) and candidates[i] <= end:
            end = int(candidates[i])
        out.append(data[start:end])
        start = end
    return out


def chunk_set(folder: Path) -> dict[bytes, int]:
    """Chunk digest → size, over every parquet shard of an export."""
    out: dict[bytes, int] = {}
    for f in sorted((folder / "data").glob("*.parquet")):
        for c in chunks(f.read_bytes()):
            out[hashlib.sha256(c).digest()] = len(c)
    return out


def reuse(original: Path, remaster: Path) -> dict[str, Any]:
    have = chunk_set(original)
    new = chunk_set(remaster)
    shared = sum(n for d, n in new.items() if d in have)
    total = sum(new.values())
    return {"bytes": total, "reused": shared, "share": shared / total, "chunks": len(new)}


def export(src: Path, out: Path, old_settings: bool) -> None:
    import curate
    from curate.publish import shards

    def before(schema: Any) -> dict[str, Any]:
        return {"compression": "zstd"}

    with mock.patch.object(shards, "writer_options", before) if old_settings else _nothing():
        curate.export("mquake", src, out=out)


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *a: Any) -> None:
        return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "bench-diff")
    record.add_arguments(parser)
    args = parser.parse_args()
    recorder = record.start(args)
    from bench_diff import remaster
    from bench_ke_scale import inputs

    args.workdir.mkdir(parents=True, exist_ok=True)
    _, src = inputs(args.workdir, args.cases, parquet=True)
    assert src is not None
    changed = args.workdir / f"ke-{args.cases}-remastered"
    if not changed.exists():
        remaster(src, changed)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, old in (("datasets-5.2 settings", False), ("zstd, no CDC (before)", True)):
            a, b = Path(tmp) / f"a-{old}", Path(tmp) / f"b-{old}"
            export(src, a, old)
            export(changed, b, old)
            results[label] = reuse(a, b)
            r = results[label]
            print(
                f"{label:>24}: remaster {r['bytes'] / 2**20:7.1f} MiB in {r['chunks']:,} "
                f"chunks, {r['share']:.1%} of its bytes already in the original's upload",
                flush=True,
            )
    if recorder:
        now, then = results["datasets-5.2 settings"], results["zstd, no CDC (before)"]
        recorder.write(
            record.Row(
                id="cdc-reuse",
                section="peer",
                benchmark="export: a remaster's bytes the Hub could de-duplicate",
                workload=(
                    f"{record.size(args.cases)} MQuAKE cases and a remaster with 1 % changed, "
                    "both exported; Xet-like chunks (Gear hash, 8/64/128 KiB)"
                ),
                peer="the same exports written as before (zstd, no content-defined chunking)",
                curate_figure=f"{now['share']:.1%} of {now['bytes'] / 2**20:.1f} MiB re-used",
                peer_figure=f"{then['share']:.1%} of {then['bytes'] / 2**20:.1f} MiB re-used",
                ratio=f"**{now['share'] / max(then['share'], 1e-9):.1f}x** the bytes re-used",
                values=results,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
