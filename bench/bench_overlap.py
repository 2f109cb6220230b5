"""Overlap benchmark: near-duplicate texts against datasketch, and the Jaccard matrix against sets.

**Near-duplicates** (``curate.audits.shared.minhash.near_duplicates`` vs ``datasketch``): N short
texts (default
100k) made from the real MQuAKE-hard questions — the multi-hop questions with their quoted first
subject replaced by another entity of the data, and single-hop questions (each rewrite's
question turned into a template by cutting out its subject) filled with entities — plus planted
paraphrase-like near-duplicates of 2 % of them (case and punctuation changed, a word dropped,
two words swapped, "What" ↔ "Which", a word inserted). Exact repeats are removed first. Both
sides get the same texts, the same shingles (character 5-grams of the text as written, a text
shorter than 5 characters being one shingle), the same number of permutations (128) and the
same threshold (0.8; datasketch's MinHashLSH picks bands × rows from it, curate picks the same).

* ``curate``: :func:`curate.audits.shared.minhash.near_duplicates` step by step — shingling,
one-permutation
  signatures with optimal densification, LSH banding (= "to candidates"), then the estimates and
  the exact Jaccard of every candidate whose estimate is within :func:`verify_margin` of the
  threshold (= "end to end");
* ``curate-minhash``: the same with the classic ``num_perm`` hash functions;
* ``datasketch``: what a user writes with the library to get the same output (candidate pairs
  with estimated and exact Jaccard): shingle sets in Python, ``MinHash.bulk`` (its default SHA-1
  hash), ``MinHashLSH`` with an insertion session and one ``query`` per text (= "to
  candidates"), then the estimates for all candidates with numpy over the stacked hash values
  and the exact Jaccard of the same estimate-filtered candidates with Python set operations on
  the shingle sets it already built (= "end to end").

Recall is measured on the planted pairs whose exact Jaccard (over the same shingles) is at least
the threshold: the pairs any tool should return — among the candidates and among the verified
pairs. Each side runs in a child process of its own; its peak RSS is the child's own (through
GNU time, ``record.child_peak``); the texts are read from a parquet file the parent wrote (not
timed).
``--seed-spread S`` also counts each side's candidates for hash seeds 1..S: on these templated
texts the count moves by ±40 % with the seed on *both* sides, so one run's counts differ
between the tools by chance.

**Jaccard matrix** (``curate.overlap.sets.overlap`` vs Python sets): C collections (default 30) of K
keys each (default 300k, text keys drawn from a universe of 10·K so that every pair overlaps),
the full pairwise matrix of intersection counts: curate (with the UpSet patterns too) against
``len(a & b)`` over built-in ``set`` objects for all C·(C−1)/2 pairs (set building included).

Run: ``python bench/bench_overlap.py`` (~2 minutes on 2 cores); ``--n``, ``--collections``,
``--keys``, ``--threshold``, ``--perm``, ``--shingle-k`` change the sizes; ``--skip-datasketch``
and ``--skip-matrix`` leave parts out; ``--seed-spread S`` adds the seed table.

``--record [DIR]`` (see ``bench/record.py``) also writes the page's rows: curate's
one-permutation sketch against datasketch end to end (``overlap-near-duplicates``; not with
``--skip-datasketch``) and the matrix (``overlap-jaccard-matrix``); other sizes than the
defaults get ids of their own (``overlap-near-duplicates-2000``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import record  # bench/record.py: what every script's --record shares

HARD = Path(__file__).resolve().parents[2] / "shared" / "data" / "mquake" / "MQuAKE-hard.json"


# --------------------------------------------------------------------------- data


def mquake_texts(
    n: int, planted_share: float, seed: int
) -> tuple[list[str], list[tuple[int, int]]]:
    """``n`` distinct short texts and the planted near-duplicate pairs (positions)."""
    rng = random.Random(seed)
    cases = json.loads(HARD.read_text(encoding="utf-8"))
    entities: set[str] = set()
    templates: set[str] = set()
    multi: list[tuple[str, str]] = []
    for c in cases:
        for rw in c["requested_rewrite"]:
            subj = rw["subject"]
            entities.update([subj, rw["target_new"]["str"], rw["target_true"]["str"]])
            q = rw.get("question") or ""
            if subj in q:
                templates.add(q.replace(subj, "{}", 1))
        for h in c.get("single_hops", []) + c.get("new_single_hops", []):
            entities.add(h["answer"])
            entities.update(a for a in h.get("answer_alias", []) if len(a) > 3)
        first = c["requested_rewrite"][0]["subject"]
        for q in c["questions"]:
            if first in q:
                multi.append((q, first))
    ents = sorted(e for e in entities if 3 <= len(e) <= 40)
    tmpl = sorted(templates)
    base_n = int(n / (1 + planted_share))
    seen: set[str] = set()
    texts: list[str] = []
    while len(texts) < base_n:
        if rng.random() < 0.5:
            q, subj = rng.choice(multi)
            t = q.replace(subj, rng.choice(ents), 1)
        else:
            t = rng.choice(tmpl).format(rng.choice(ents))
        if t not in seen:
            seen.add(t)
            texts.append(t)
    pairs = []
    for i in rng.sample(range(len(texts)), n - base_n):
        v = _variant(texts[i], rng)
        if v not in seen:
            seen.add(v)
            pairs.append((i, len(texts)))
            texts.append(v)
    return texts, pairs


def _variant(t: str, rng: random.Random) -> str:
    """A paraphrase-like edit of ``t`` (what a copied-and-touched-up question looks like)."""
    words = t.split(" ")
    kind = rng.randrange(6)
    if kind == 0:
        return t.lower().rstrip("?") + (" ?" if rng.random() < 0.5 else "")
    if kind == 1 and len(words) > 6:
        del words[rng.randrange(1, len(words) - 1)]
    elif kind == 2 and len(words) > 4:
        i = rng.randrange(1, len(words) - 2)
        words[i], words[i + 1] = words[i + 1], words[i]
    elif kind == 3:
        return re.sub(r"^(What|Which)\b", lambda m: "Which" if m[1] == "What" else "What", t)
    elif kind == 4:
        words.insert(
            rng.randrange(1, len(words)), rng.choice(["the", "exactly", "really", "actually"])
        )
    else:
        return t.replace('"', "").replace("'s", "s").replace("?", "").strip() + "?"
    return " ".join(words)


def char_shingles(t: str, k: int) -> set[str]:
    return {t[i : i + k] for i in range(max(len(t) - k + 1, 1))} if t else set()


# --------------------------------------------------------------------------- children


def child_curate(folder: Path, threshold: float, perm: int, k: int, method: str) -> dict[str, Any]:
    """:func:`curate.audits.shared.minhash.near_duplicates` step by step (the same calls in the
    same order),
    timing the candidates (signatures + LSH) apart from the whole (+ estimates + exact check)."""
    from curate.audits.shared import minhash as mh

    texts = pl.read_parquet(folder / "texts.parquet")["text"]
    t = time.perf_counter()
    b, r = mh.lsh_params(threshold, perm)
    sig, empty = mh.sketch(texts, "char", k, perm, method=method)
    cand = mh.candidate_pairs(sig, b, r, skip=empty)
    cand_seconds = time.perf_counter() - t
    est = mh.estimated_jaccard(sig, cand)
    near = est >= threshold - mh.verify_margin(threshold, perm)
    exact = mh.exact_jaccard(texts, cand[near], "char", k)
    seconds = time.perf_counter() - t
    found = cand[near][exact >= threshold - 1e-12]
    return _summary(folder, cand, int(near.sum()), found, cand_seconds, seconds)


def child_datasketch(folder: Path, threshold: float, perm: int, k: int) -> dict[str, Any]:
    """What a user writes with datasketch to get candidate pairs with estimated and exact
    Jaccard: shingle sets in Python, ``MinHash.bulk``, ``MinHashLSH`` (insertion session, one
    ``query`` per text), the estimates for all candidates at once with numpy over the stacked
    hash values, and the exact Jaccard of the candidates worth checking (the same estimate
    margin as curate's) with Python set operations on the shingle sets already built."""
    from datasketch import MinHash, MinHashLSH

    from curate.audits.shared.minhash import verify_margin

    texts = pl.read_parquet(folder / "texts.parquet")["text"].to_list()
    t = time.perf_counter()
    sets = [char_shingles(x, k) for x in texts]
    mhs = MinHash.bulk([[s.encode("utf-8") for s in x] for x in sets], num_perm=perm)
    lsh = MinHashLSH(threshold=threshold, num_perm=perm)
    with lsh.insertion_session() as session:
        for i, m in enumerate(mhs):
            session.insert(i, m)
    pairs: set[tuple[int, int]] = set()
    for i, m in enumerate(mhs):
        for j in lsh.query(m):
            if j != i:
                pairs.add((min(i, j), max(i, j)))
    cand = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
    cand_seconds = time.perf_counter() - t
    hv = np.stack([m.hashvalues for m in mhs])
    est = np.concatenate(
        [
            (hv[c[:, 0]] == hv[c[:, 1]]).mean(axis=1)
            for c in np.array_split(cand, max(1, len(cand) // 32768))
        ]
    )
    near = est >= threshold - verify_margin(threshold, perm)
    exact = np.array(
        [len(sets[i] & sets[j]) / len(sets[i] | sets[j]) for i, j in cand[near].tolist()]
    )
    seconds = time.perf_counter() - t
    found = cand[near][exact >= threshold - 1e-12]
    return _summary(folder, cand, int(near.sum()), found, cand_seconds, seconds)


def _summary(
    folder: Path,
    cand: np.ndarray,
    checked: int,
    found: np.ndarray,
    cand_seconds: float,
    seconds: float,
) -> dict[str, Any]:
    as_set = lambda a: set(zip(a[:, 0].tolist(), a[:, 1].tolist(), strict=True))  # noqa: E731
    return {
        "seconds": seconds,
        "cand_seconds": cand_seconds,
        "candidates": len(cand),
        "checked": checked,
        "pairs": len(found),
        "cand_found": _recall(folder, as_set(cand)),
        "found": _recall(folder, as_set(found)),
    }


def child_seeds(folder: Path, threshold: float, perm: int, k: int, seeds: int) -> dict[str, Any]:
    """Candidate counts of curate (both methods) and datasketch for hash seeds 1..``seeds`` on
    the same texts: on templated texts the count swings with the seed (one band whose rows all
    fall on a template's shingles makes that template's texts candidates by the thousand)."""
    from datasketch import MinHash

    from curate.audits.shared import minhash as mh

    texts = pl.read_parquet(folder / "texts.parquet")["text"]
    b, r = mh.lsh_params(threshold, perm)
    sets = [[s.encode("utf-8") for s in char_shingles(x, k)] for x in texts.to_list()]
    out: dict[str, list[int]] = {"oph": [], "minhash": [], "datasketch": []}
    for seed in range(1, seeds + 1):
        for method in ("oph", "minhash"):
            sig, empty = mh.sketch(texts, "char", k, perm, seed=seed, method=method)
            out[method].append(len(mh.candidate_pairs(sig, b, r, skip=empty)))
        hv = np.stack([m.hashvalues for m in MinHash.bulk(sets, num_perm=perm, seed=seed)])
        # datasketch's own banding gives the same pairs (tests/test_minhash.py)
        out["datasketch"].append(len(mh.candidate_pairs(hv.astype(np.uint32), b, r)))
    return out


def _recall(folder: Path, pairs: set[tuple[int, int]]) -> int:
    truth = pl.read_parquet(folder / "truth.parquet")
    return sum((i, j) in pairs for i, j in truth.select("i", "j").iter_rows())


def child_matrix(folder: Path, side: str) -> dict[str, Any]:
    members = pl.read_parquet(folder / "members.parquet")
    if side == "curate":
        from curate.overlap.sets import overlap

        t = time.perf_counter()
        o = overlap(members)
        seconds = time.perf_counter() - t
        total = int(o.pairs["intersection"].sum())
    else:
        cols = members.partition_by("collection", as_dict=True, maintain_order=True)
        lists = [df["key"].to_list() for df in cols.values()]
        del cols, members
        t = time.perf_counter()
        sets = [set(x) for x in lists]
        total = 0
        for a in range(len(sets)):
            for b in range(a + 1, len(sets)):
                total += len(sets[a] & sets[b])
        seconds = time.perf_counter() - t
    return {"seconds": seconds, "total": total}


def run_child(argv: list[str]) -> tuple[dict[str, Any], float]:
    """Run this script as a child; its result (JSON) and its peak RSS in MiB."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        out = Path(fh.name)
    try:
        # the child's own peak (GNU time): wait4's would carry this process's high-water mark
        with record.child_peak([sys.executable, __file__, *argv, "--out", str(out)]) as (
            cmd,
            own_peak,
        ):
            proc = subprocess.Popen(cmd)
            _, status, usage = os.wait4(proc.pid, 0)
            rss = own_peak(usage)
        code = os.waitstatus_to_exitcode(status)
        if code:
            sys.exit(f"child {argv} failed with exit code {code}")
        return json.loads(out.read_text()), rss
    finally:
        out.unlink(missing_ok=True)


# --------------------------------------------------------------------------- main


def run_near(a: argparse.Namespace, folder: Path, common: list[str]) -> record.Row | None:
    """The near-duplicate comparison (see the module docstring); the page's row if the peer ran."""
    texts, planted = mquake_texts(a.n, a.planted, a.seed)
    sh = [char_shingles(t, a.shingle_k) for t in texts]
    truth = [(i, j, len(sh[i] & sh[j]) / len(sh[i] | sh[j])) for i, j in planted]
    should = [(i, j) for i, j, jac in truth if jac >= a.threshold]
    pl.DataFrame({"text": texts}).write_parquet(folder / "texts.parquet")
    pl.DataFrame(should, schema=["i", "j"], orient="row").write_parquet(folder / "truth.parquet")
    from curate.audits.shared.minhash import lsh_params

    b, r = lsh_params(a.threshold, a.perm)
    print(
        f"## near-duplicates: {len(texts):,} texts from MQuAKE-hard questions, "
        f"{len(planted):,} planted near-duplicates ({len(should):,} with exact Jaccard >= "
        f"{a.threshold}); char {a.shingle_k}-grams, {a.perm} permutations, threshold "
        f"{a.threshold} ({b} bands x {r} rows)\n"
    )
    rows = []
    sides = [
        ("curate (one-permutation)", ["curate", "oph"]),
        ("curate (classic MinHash)", ["curate", "minhash"]),
    ]
    if not a.skip_datasketch:
        sides.append(("datasketch (MinHash.bulk + MinHashLSH)", ["datasketch"]))
    for label, child in sides:
        res, rss = run_child(["--child", *child, "--folder", str(folder), *common])
        rows.append((label, res, rss))
    peer = rows[-1][1] if not a.skip_datasketch else None
    print(
        "| side | to candidates s | end to end s | peak RSS MiB | candidates | exact-checked | "
        "verified pairs | planted recall (candidates / verified) | speed-up (candidates / "
        "end to end) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, res, rss in rows:
        speed = (
            f"{peer['cand_seconds'] / res['cand_seconds']:.1f}x / "
            f"{peer['seconds'] / res['seconds']:.1f}x"
            if peer
            else "-"
        )
        print(
            f"| {label} | {res['cand_seconds']:.2f} | {res['seconds']:.2f} | {rss:.0f} | "
            f"{res['candidates']:,} | {res['checked']:,} | {res['pairs']:,} | "
            f"{res['cand_found'] / max(1, len(should)):.4f} / "
            f"{res['found'] / max(1, len(should)):.4f} ({res['found']}/{len(should)}) | {speed} |"
        )
    print()
    if a.seed_spread:
        res, _ = run_child(
            ["--child", "seeds", str(a.seed_spread), "--folder", str(folder), *common]
        )
        print(f"Candidate pairs by hash seed (1..{a.seed_spread}), same texts, bands and rows:\n")
        print(
            "| side | " + " | ".join(f"seed {s}" for s in range(1, a.seed_spread + 1)) + " | mean |"
        )
        print("|---|" + "---:|" * (a.seed_spread + 1))
        for side, counts in res.items():
            print(
                f"| {side} | "
                + " | ".join(f"{c:,}" for c in counts)
                + f" | {np.mean(counts):,.0f} |"
            )
        print()
    if peer is None:
        return None
    (_, ours, ours_rss), (_, theirs, theirs_rss) = rows[0], rows[-1]
    recall = [side["found"] / max(1, len(should)) for side in (ours, theirs)]
    return record.Row(
        id="overlap-near-duplicates" + ("" if a.n == 100_000 else f"-{a.n}"),
        section="peer",
        benchmark="overlap: near-duplicate texts",
        workload=f"{len(texts):,} MQuAKE-hard questions, {len(planted):,} planted "
        f"near-duplicates; char {a.shingle_k}-grams, {a.perm} permutations, threshold "
        f"{a.threshold}",
        peer="datasketch `MinHash.bulk` + `MinHashLSH`",
        curate_figure=f"{ours['seconds']:.2f} s",
        peer_figure=f"{theirs['seconds']:.2f} s",
        ratio=f"**{theirs['seconds'] / ours['seconds']:.1f}×** end to end "
        f"({ours['seconds']:.2f} s vs {theirs['seconds']:.2f} s); recall {recall[0]:.3f} vs "
        f"{recall[1]:.3f}",
        rss_curate=f"{ours_rss:,.0f}",
        rss_peer=f"{theirs_rss:,.0f} MiB",
        values={label: {**res, "peak_mib": rss} for label, res, rss in rows},
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100_000, help="texts (default 100k)")
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--perm", type=int, default=128)
    ap.add_argument("--shingle-k", type=int, default=5)
    ap.add_argument("--planted", type=float, default=0.02, help="share of planted near-duplicates")
    ap.add_argument("--collections", type=int, default=30)
    ap.add_argument("--keys", type=int, default=300_000, help="keys per collection")
    ap.add_argument("--skip-datasketch", action="store_true")
    ap.add_argument(
        "--seed-spread",
        type=int,
        default=0,
        metavar="S",
        help="also count candidates for hash seeds 1..S on both sides (needs datasketch)",
    )
    ap.add_argument("--skip-matrix", action="store_true")
    ap.add_argument("--skip-near", action="store_true", help="only the Jaccard matrix")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--child", nargs="*", help=argparse.SUPPRESS)
    ap.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    record.add_arguments(ap)
    a = ap.parse_args()

    if a.child:
        kind, *rest = a.child
        if kind == "curate":
            res = child_curate(a.folder, a.threshold, a.perm, a.shingle_k, rest[0])
        elif kind == "datasketch":
            res = child_datasketch(a.folder, a.threshold, a.perm, a.shingle_k)
        elif kind == "seeds":
            res = child_seeds(a.folder, a.threshold, a.perm, a.shingle_k, int(rest[0]))
        else:
            res = child_matrix(a.folder, rest[0])
        a.out.write_text(json.dumps(res))
        return

    common = [
        "--threshold",
        str(a.threshold),
        "--perm",
        str(a.perm),
        "--shingle-k",
        str(a.shingle_k),
    ]
    recorder = record.start(a)
    recorded: list[record.Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-overlap-") as tmp:
        folder = Path(tmp)
        if not a.skip_near and (near := run_near(a, folder, common)):
            recorded.append(near)
        if not a.skip_matrix:
            rng = np.random.default_rng(a.seed)
            universe = 10 * a.keys
            frames = []
            for c in range(a.collections):
                ks = np.unique(rng.integers(0, universe, a.keys))
                frames.append(pl.DataFrame({"collection": f"c{c:02d}", "key": ks}))
            members = pl.concat(frames).with_columns(pl.format("k{}", "key").alias("key"))
            members.write_parquet(folder / "members.parquet")
            print(
                f"## Jaccard matrix: {a.collections} collections, {members.height:,} keys "
                f"(~{a.keys:,} each, text keys)\n"
            )
            print("| side | seconds | peak RSS MiB | speed-up |")
            print("|---|---:|---:|---:|")
            mres = {}
            for side in ("curate", "sets"):
                res, rss = run_child(["--child", "matrix", side, "--folder", str(folder)])
                mres[side] = (res, rss)
            if mres["curate"][0]["total"] != mres["sets"][0]["total"]:
                sys.exit("the two sides disagree on the intersections")
            for side, label in (
                ("curate", "curate overlap()"),
                ("sets", "Python sets, len(a & b)"),
            ):
                res, rss = mres[side]
                print(
                    f"| {label} | {res['seconds']:.2f} | {rss:.0f} | "
                    f"{mres['sets'][0]['seconds'] / res['seconds']:.1f}x |"
                )
            print()
            recorded.append(matrix_row(a, members.height, mres))
    if recorder:
        recorder.write(*recorded)


def matrix_row(
    a: argparse.Namespace, keys: int, mres: dict[str, tuple[dict[str, Any], float]]
) -> record.Row:
    """The page's row for the Jaccard matrix: curate's ``overlap`` against Python sets."""
    (ours, ours_rss), (theirs, theirs_rss) = mres["curate"], mres["sets"]
    pairs = a.collections * (a.collections - 1) // 2
    default = (a.collections, a.keys) == (30, 300_000)
    return record.Row(
        id="overlap-jaccard-matrix" + ("" if default else f"-{a.collections}x{a.keys}"),
        section="peer",
        benchmark="overlap: Jaccard matrix",
        workload=f"{a.collections} collections of ~{a.keys:,} keys ({keys / 1e6:.2f} M keys in "
        "all, random overlap)",
        peer=f"Python sets, `len(a & b)` for all {pairs:,} pairs",
        curate_figure=f"{ours['seconds']:.1f} s",
        peer_figure=f"{theirs['seconds']:.1f} s",
        ratio=f"**{theirs['seconds'] / ours['seconds']:.1f}×** ({ours['seconds']:.1f} s vs "
        f"{theirs['seconds']:.1f} s)",
        rss_curate=f"{ours_rss:,.0f}",
        rss_peer=f"{theirs_rss:,.0f} MiB",
        values={side: {**res, "peak_mib": rss} for side, (res, rss) in mres.items()},
    )


if __name__ == "__main__":
    main()
