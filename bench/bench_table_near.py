"""Table near-duplicates benchmark: TB404 + TB406 end to end against the shared manager alone.

Issue 32 asks that the ``table`` family's near-duplicate rules be as fast as the existing
MinHash (``bench/bench_overlap.py`` measures the shared manager,
:func:`curate.audits.shared.minhash.near_duplicates`, against datasketch). This script times,
on the same generated texts and in the same run:

* ``rules``: ``curate.audit("table", frame, --id, --split, --text, select TB404,TB406)``, the
  whole route a user gets: the input normalised (``--normalise`` default), the distinct inputs
  sketched (128 permutations, character 5-grams), LSH with the rules' recall-targeted banding
  (:data:`curate.audits.table.near.RECALL`: 16 bands x 6 rows at 0.8), every candidate's exact
  Jaccard, the orientation by split and row, the findings;
* ``manager, rules' banding``: ``near_duplicates(recall=RECALL)`` alone on the distinct
  normalised texts (what the rules add over it is the normalisation, the joins and the
  findings);
* ``manager, overlap's banding``: ``near_duplicates`` with datasketch's banding (9 x 13), the
  call ``bench_overlap.py`` times, on the same texts;
* ``bench_overlap texts``: that call on ``bench_overlap.py``'s own MQuAKE texts
  (``--overlap-n``, default 100k), so the manager's rate here is comparable with its page.

Texts (realistic, not one caption repeated): each base text is the first sentence of one real
MusicCaps caption followed by the rest of another, with ~15 % of its words replaced by words
of the captions (so bases are distinct, alike only as captions are alike); 2 % more are planted
near copies of a base (a word replaced, dropped or two swapped). Splits are seeded 80/10/10.

Run: ``python bench/bench_table_near.py`` (100k and 1M rows; peak RSS 4.8 GB at 1M);
``--n 20000`` for a quick look. Prints rows/s for each line and the pairs found.

``--record [DIR]`` (see ``bench/record.py``) also writes a row per size for the page: the rules,
the peer and the manager each timed again in a fresh child process (the texts generated there
before the clock starts), each with its own peak RSS. The peer is datasketch as
``bench_overlap.py`` runs it, on the distinct normalised texts (the rules' own first step done
for it); the manager alone is in the row's note.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
import record  # bench/record.py: what every script's --record shares

import curate
from curate.audits.shared import minhash as mh
from curate.audits.table.near import RECALL
from curate.schemas.table import NORMALISE_PARTS, normaliser

CAPTIONS = (
    Path(__file__).resolve().parents[2]
    / "shared"
    / "data"
    / "deepfake"
    / "musiccaps-public-openai.csv"
)


def generate(n: int, planted: float, seed: int) -> pl.DataFrame:
    """``id, text, split``: ``n`` rows, of which ``planted`` are near copies of a base."""
    rng = random.Random(seed)
    caps = pl.read_csv(CAPTIONS, infer_schema=False)["caption"].drop_nulls().to_list()
    sentences = [re.split(r"(?<=[.!?])\s+", c.strip()) for c in caps]
    vocab = sorted({w for c in caps for w in c.split()})
    base_n = int(n / (1 + planted))
    texts: list[str] = []
    for _ in range(base_n):
        a, b = rng.choice(sentences), rng.choice(sentences)
        words = " ".join([a[0], *b[1:]] if len(b) > 1 else [a[0], *b]).split()
        for i in range(len(words)):
            if rng.random() < 0.15:
                words[i] = rng.choice(vocab)
        texts.append(" ".join(words))
    for _ in range(n - base_n):
        words = texts[rng.randrange(base_n)].split()
        i = rng.randrange(max(1, len(words) - 1))
        kind = rng.randrange(3)
        if kind == 0:
            words[i] = rng.choice(vocab)
        elif kind == 1 and len(words) > 3:
            del words[i]
        elif i + 1 < len(words):
            words[i], words[i + 1] = words[i + 1], words[i]
        texts.append(" ".join(words))
    splits = rng.choices(["train", "validation", "test"], [8, 1, 1], k=n)
    return pl.DataFrame({"id": [f"r{i}" for i in range(n)], "text": texts, "split": splits})


def timed(f, *args, **kw):
    gc.collect()
    t = time.perf_counter()
    out = f(*args, **kw)
    return out, time.perf_counter() - t


def line(what: str, rows: int, seconds: float, extra: str = "") -> None:
    print(f"  {what:<34} {seconds:8.2f} s  {rows / seconds:>10,.0f} rows/s  {extra}", flush=True)


def rules(df: pl.DataFrame) -> tuple[curate.Report, float]:
    """The rules' whole route, timed: what a user runs."""
    return timed(
        curate.audit, "table", df, id="id", split="split", text="text", select=["TB404", "TB406"]
    )


def distinct_normal(df: pl.DataFrame) -> pl.Series:
    """The distinct texts in the rules' normal form (what the manager and the peer are given)."""
    return df.select(normaliser(list(NORMALISE_PARTS))(pl.col("text")))["text"].unique()


def run(n: int, args: argparse.Namespace) -> None:
    df, gen = timed(generate, n, args.planted, args.seed)
    print(f"\n{n:,} rows (generated in {gen:.1f} s, not timed below)", flush=True)
    report, sec = rules(df)
    counts = report.findings.group_by("rule").len().sort("rule").rows()
    line("rules TB404+TB406 (audit)", n, sec, f"findings {dict(counts)}")
    del report
    best = 0
    normal = distinct_normal(df)
    for name, recall in (("manager, rules' banding", RECALL), ("manager, overlap's banding", None)):
        b, r = mh.recall_params(0.8, 128, recall) if recall else mh.lsh_params(0.8, 128)
        found, sec = timed(mh.near_duplicates, normal, threshold=0.8, num_perm=128, recall=recall)
        line(name, n, sec, f"{b}x{r}: {found.height:,} pairs")
        if recall is None:
            print(f"    (pairs the overlap banding misses: {best - found.height:,})")
        else:
            best = found.height


def _bench_overlap() -> Any:
    sys.path.insert(0, str(Path(__file__).parent))
    import bench_overlap

    return bench_overlap


def overlap_rate(n: int) -> None:
    texts, _ = _bench_overlap().mquake_texts(n, 0.02, 0)
    s = pl.Series("text", texts)
    print(f"\nbench_overlap.py's MQuAKE texts, {n:,}:")
    for name, recall in (("manager, overlap's banding", None), ("manager, rules' banding", RECALL)):
        found, sec = timed(mh.near_duplicates, s, threshold=0.8, num_perm=128, recall=recall)
        line(name, n, sec, f"{found.height:,} pairs")


def child(kind: str, n: int, args: argparse.Namespace) -> None:
    """One measurement in this (fresh) process; prints its seconds and what it found (JSON).
    The texts are generated (and for the peer written and normalised) before the clock."""
    df = generate(n, args.planted, args.seed)
    if kind == "rules":
        report, sec = rules(df)
        found = report.findings.height
    elif kind == "manager":
        normal = distinct_normal(df)
        pairs, sec = timed(mh.near_duplicates, normal, threshold=0.8, num_perm=128, recall=RECALL)
        found = pairs.height
    else:  # datasketch, as bench_overlap.py runs it (its own banding at 0.8)
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            distinct_normal(df).to_frame("text").write_parquet(folder / "texts.parquet")
            pl.DataFrame(schema={"i": pl.Int64, "j": pl.Int64}).write_parquet(
                folder / "truth.parquet"
            )
            got = _bench_overlap().child_datasketch(folder, 0.8, 128, 5)
        sec, found = got["seconds"], got["pairs"]
    print(json.dumps({"seconds": sec, "found": found}))


def recorded_row(n: int, args: argparse.Namespace) -> record.Row:
    """The page's row for ``n`` rows: each side in a child of its own. The peer is what a user
    would pick instead, datasketch (``MinHash.bulk`` + ``MinHashLSH`` + the exact check), given
    the work the rules do first already done (the distinct texts in normal form); the shared
    manager alone is beside it (what the rules add over it)."""
    got = {}
    for kind in ("rules", "datasketch", "manager"):
        argv = [sys.executable, __file__, "--child", kind, "--n", str(n)]
        argv += ["--planted", str(args.planted), "--seed", str(args.seed)]
        run = record.run_child(argv, stdout=True)
        if run.code:
            sys.exit(f"{kind} at {n:,} rows failed with exit code {run.code}")
        got[kind] = (json.loads(run.stdout.strip().splitlines()[-1]), run.peak_mib)
    (ours, ours_rss), (peer, peer_rss) = got["rules"], got["datasketch"]
    manager, manager_rss = got["manager"]
    b, r = mh.recall_params(0.8, 128, RECALL)
    rs, ps, ms = ours["seconds"], peer["seconds"], manager["seconds"]
    return record.Row(
        id=f"table-near-{n}",
        section="peer",
        benchmark="table: near-duplicate rows (TB404 + TB406)",
        workload=f"{record.size(n)} generated caption texts ({args.planted:.0%} planted near "
        f"copies), splits 80/10/10; char 5-grams, 128 permutations, {b} x {r} bands, 0.8",
        curate_figure=f"{rs:.2f} s ({n / rs:,.0f} rows/s), {ours['found']:,} findings",
        peer="datasketch `MinHash.bulk` + `MinHashLSH` (its banding) + exact Jaccard, on the "
        "distinct normalised texts",
        peer_figure=f"{ps:.2f} s, {peer['found']:,} pairs",
        ratio=f"**{ps / rs:.1f}×** end to end ({rs:.2f} s vs {ps:.2f} s)",
        rss_curate=f"{ours_rss:,.0f} MiB",
        rss_peer=f"{peer_rss:,.0f} MiB",
        values={"rules": ours, "datasketch": peer, "manager": manager},
        note=f"the shared manager alone, same texts and banding: {ms:.2f} s, "
        f"{manager['found']:,} pairs, {manager_rss:,.0f} MiB (the rules take {rs / ms:.2f}× "
        "its time)",
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, nargs="+", default=[100_000, 1_000_000])
    p.add_argument("--planted", type=float, default=0.02)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--overlap-n", type=int, default=100_000, help="0: skip")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument(
        "--record-max",
        type=int,
        default=200_000,
        help="record sizes up to this many rows: the peer holds every text's shingle set as a "
        "Python set (~1.1 GiB per 20k texts), more than this machine has at 1 M",
    )
    record.add_arguments(p)
    args = p.parse_args()
    if args.child:
        child(args.child, args.n[0], args)
        return
    recorder = record.start(args)
    if args.overlap_n:
        overlap_rate(args.overlap_n)
    for n in args.n:
        run(n, args)
    if recorder:
        sizes = [n for n in args.n if n <= args.record_max]
        for n in sorted(set(args.n) - set(sizes)):
            print(
                f"not recorded: {n:,} rows (over --record-max: the peer would need "
                f"~{n / 18e3:.0f} GiB)"
            )
        recorder.write(*(recorded_row(n, args) for n in sizes))


if __name__ == "__main__":
    main()
