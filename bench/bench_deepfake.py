"""Exact duplicates and cross-split leakage on content hashes: curate's joins against pandas.

What is timed is exactly what the deepfake rules DF302 and DF303 run:
:func:`curate.audits.shared.duplicates.later_copies` (``by=["key", "split"]``: later copies of a
hash within its split) and :func:`~curate.audits.shared.duplicates.cross_split_copies` (rows
whose hash is already in an earlier split), on a frame of ``row``, ``split`` (an Enum) and
``sha256`` (the hex digest, as a manifest gives it). The timed work includes turning the hex
digest into the keys the joins group by (:func:`~curate.schemas.deepfake_tables.hash_keys`,
as :func:`content_table` does).

The peer is what a user would write in pandas: ``df.duplicated(["key", "split"])`` for the
copies and ``Series.isin`` of the earlier splits' keys for the leaks, on the hex digests. Two
pandas string types are measured and the faster one is the peer: Python ``str`` objects
(``object`` dtype) and ``string[pyarrow]``; the split is a pandas ``category`` for both.

The keys are random (``--rows``, 10 M by default): 80 / 10 / 10 % train / validation / test,
``--dup-rate`` of the rows copying an earlier key of their own split and ``--leak-rate`` of the
validation and test rows copying a training key. The data is written once to a parquet file;
each side runs in its own child process that reads it (untimed), runs its operation
``--repeat`` times (best time kept) and writes the row ids it found; the parent asserts that
both sides found the same rows (and exactly the planted ones) before it prints any time, and
reports each child's own peak RSS (through GNU time, ``record.child_peak``).

    python bench/bench_deepfake.py                 # 10 M keys
    python bench/bench_deepfake.py --rows 1000000 --repeat 5

``--record [DIR]`` (see ``bench/record.py``) also writes the page's row, curate against the
faster pandas: ``deepfake-duplicates`` at 10 M keys, ``deepfake-duplicates-<rows>`` at any other
size (so a reduced run is recorded as what it is, beside the 10 M row, never over it).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import record  # bench/record.py: what every script's --record shares

SPLITS = ("train", "validation", "test")


def make(rows: int, dup_rate: float, leak_rate: float, seed: int, out: Path) -> dict[str, int]:
    """Random 32-byte keys with planted copies; returns the planted counts."""
    import polars as pl

    rng = np.random.default_rng(seed)
    split = rng.choice(3, size=rows, p=[0.8, 0.1, 0.1]).astype(np.int8)
    keys = rng.integers(0, 256, size=(rows, 32), dtype=np.uint8)
    idx = np.arange(rows)
    # within-split duplicates: a row takes the key of an earlier row of its own split
    dup = rng.random(rows) < dup_rate
    planted_dups = 0
    is_source = np.zeros(rows, dtype=bool)
    for s in range(3):
        members = idx[split == s]
        chosen = members[dup[members]]
        # the source: an earlier member of the same split that is not itself a copy
        sources = members[~dup[members]]
        pos = np.searchsorted(sources, chosen)
        chosen, pos = chosen[pos > 0], pos[pos > 0]
        src = sources[rng.integers(0, pos)]
        keys[chosen] = keys[src]
        is_source[src] = True
        planted_dups += len(chosen)
    # leaks: validation/test rows take a training key
    train = idx[split == 0]
    later = idx[(split > 0) & ~dup & ~is_source]  # leaving the planted copies as they are
    leak = later[rng.random(len(later)) < leak_rate]
    keys[leak] = keys[rng.choice(train, size=len(leak), replace=False)]
    frame = pl.DataFrame(
        {
            "row": pl.Series(idx, dtype=pl.Int64),
            "sha256": pl.Series([k.tobytes() for k in keys], dtype=pl.Binary).bin.encode("hex"),
            "split": pl.Series(split).replace_strict(
                {0: "train", 1: "validation", 2: "test"}, return_dtype=pl.Enum(list(SPLITS))
            ),
        }
    )
    frame.write_parquet(out)
    return {"rows": rows, "planted_duplicates": planted_dups, "planted_leaks": len(leak)}


def side_curate(data: Path, repeat: int) -> tuple[float, np.ndarray, np.ndarray]:
    import polars as pl

    from curate.audits.shared.duplicates import cross_split_copies, later_copies
    from curate.schemas.deepfake_tables import hash_keys

    df = pl.read_parquet(data)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        keyed = hash_keys(df)  # as content_table does
        dups = later_copies(keyed, ["key", "split"], prefilter="key64")["row"]
        leaks = cross_split_copies(keyed, "key", prefilter="key64")["row"]
        best = min(best, time.perf_counter() - t0)
    return best, dups.to_numpy(), leaks.to_numpy()


def side_pandas(data: Path, repeat: int, keys: str) -> tuple[float, np.ndarray, np.ndarray]:
    import pandas as pd
    import pyarrow.parquet as pq

    table = pq.read_table(data)
    df = pd.DataFrame(
        {
            "row": table["row"].to_numpy(),
            "split": pd.Categorical(
                table["split"].to_pandas().astype(str), categories=list(SPLITS), ordered=True
            ),
        }
    )
    if keys == "pyarrow":
        df["key"] = table["sha256"].to_pandas(types_mapper=pd.ArrowDtype).astype("string[pyarrow]")
    else:
        df["key"] = table["sha256"].to_pandas().astype(object)  # Python str
    del table
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        dups = df["row"][df.duplicated(["key", "split"], keep="first")].to_numpy()
        code = df["split"].cat.codes
        leak_parts = []
        for s in (1, 2):
            earlier = df["key"][code < s]
            mine = df[code == s]
            leak_parts.append(mine["row"][mine["key"].isin(earlier)].to_numpy())
        leaks = np.sort(np.concatenate(leak_parts))
        best = min(best, time.perf_counter() - t0)
    return best, np.sort(dups), leaks


def child(args: argparse.Namespace) -> None:
    data = Path(args.data)
    if args.side == "curate":
        took, dups, leaks = side_curate(data, args.repeat)
    else:
        took, dups, leaks = side_pandas(data, args.repeat, args.side.removeprefix("pandas-"))
    np.save(data.with_name(f"{args.side}-dups.npy"), np.sort(dups))
    np.save(data.with_name(f"{args.side}-leaks.npy"), np.sort(leaks))
    print(f"{took:.6f}")


def run_child(side: str, data: Path, repeat: int) -> tuple[float, float]:
    """Seconds (best of ``repeat``) and peak RSS in MB of one side in a child process."""
    cmd = [sys.executable, __file__, "--child", side, "--data", str(data), "--repeat", str(repeat)]
    # the child's own peak through GNU time: os.wait4's would carry the parent's high-water
    # mark (the parent made the keys), which is larger than curate's own peak at 1 M keys
    with record.child_peak(cmd) as (wrapped, own_peak):
        proc = subprocess.Popen(wrapped, stdout=subprocess.PIPE, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        out = proc.stdout.read() if proc.stdout else ""
        rss = own_peak(usage)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{side} failed")
    return float(out.strip().splitlines()[-1]), rss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--dup-rate", type=float, default=0.01)
    ap.add_argument("--leak-rate", type=float, default=0.005)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--peers",
        default="object,pyarrow",
        help="pandas string types to measure (comma-separated: object, pyarrow)",
    )
    ap.add_argument("--child", dest="side", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--data", default=None, help=argparse.SUPPRESS)
    record.add_arguments(ap)
    args = ap.parse_args()
    if args.side:
        child(args)
        return
    recorder = record.start(args)
    with tempfile.TemporaryDirectory(prefix="bench-deepfake-") as tmp:
        data = Path(tmp) / "keys.parquet"
        t0 = time.perf_counter()
        planted = make(args.rows, args.dup_rate, args.leak_rate, args.seed, data)
        print(f"generated {planted} in {time.perf_counter() - t0:.1f} s")
        results = {}
        peers = [f"pandas-{p.strip()}" for p in args.peers.split(",") if p.strip()]
        for side in ("curate", *peers):
            results[side] = run_child(side, data, args.repeat)
        ref_d = np.load(data.with_name("curate-dups.npy"))
        ref_l = np.load(data.with_name("curate-leaks.npy"))
        for side in results:
            assert np.array_equal(np.load(data.with_name(f"{side}-dups.npy")), ref_d), side
            assert np.array_equal(np.load(data.with_name(f"{side}-leaks.npy")), ref_l), side
        # the planted copies, and (random 32-byte keys never collide) nothing else
        assert len(ref_d) == planted["planted_duplicates"], (len(ref_d), planted)
        assert len(ref_l) == planted["planted_leaks"], (len(ref_l), planted)
        print(f"identical results: {len(ref_d):,} duplicates, {len(ref_l):,} leaks")
        peer = min((s for s in results if s != "curate"), key=lambda s: results[s][0])
        ours = results["curate"][0]
        print(f"| side | seconds (best of {args.repeat}) | peak RSS MB |")
        print("|---|---:|---:|")
        for side, (took, rss) in results.items():
            print(f"| {side} | {took:.3f} | {rss:,.0f} |")
        print(f"curate: {ours:.3f} s on {args.rows:,} keys; "
              f"{results[peer][0] / ours:.1f}x faster than {peer} (the faster pandas)")  # fmt: skip
    if recorder:
        theirs, theirs_rss = results[peer]
        recorder.write(
            record.Row(
                id="deepfake-duplicates" + ("" if args.rows == 10_000_000 else f"-{args.rows}"),
                section="peer",
                benchmark="deepfake: duplicates and leakage (DF302/DF303)",
                workload=f"{record.size(args.rows)} sha256 keys, 80/10/10 splits, "
                f"{planted['planted_duplicates']:,} planted duplicates, "
                f"{planted['planted_leaks']:,} planted leaks",
                peer=f"pandas `duplicated` + `isin`, `{peer.removeprefix('pandas-')}` strings",
                curate_figure=f"{ours:.3f} s",
                peer_figure=f"{theirs:.3f} s",
                ratio=f"**{theirs / ours:.1f}×** ({ours:.3f} s vs {theirs:.3f} s)",
                rss_curate=f"{results['curate'][1]:,.0f}",
                rss_peer=f"{theirs_rss:,.0f} MB",
                values={"seconds_and_peak_mb": results, "best_of": args.repeat, **planted},
                note=None if args.rows == 10_000_000 else "reduced size",
            )
        )


if __name__ == "__main__":
    main()
