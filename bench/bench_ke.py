"""Knowledge-editing benchmark: validate, full audit and contamination at 100k and 1M cases.

The 429 real MQuAKE-hard cases are scaled up by replication with re-keyed ids: replica r maps
entity ``Q123`` to ``Q123~r`` and suffixes every label, question and answer with ``~r`` (case ids
get ``r * 10**6`` added), so replicas are disjoint and findings scale linearly with N.

Measured in the same run:
* validate (read + pydantic + columnar tables) from a JSON Lines file of ``--load-n`` cases;
* full audit (every KE rule) and contamination (KE201+KE202) for ``all`` and ``random:K`` on N
  cases, where the N-case tables are built by replicating the loaded tables in polars;
* the peer: a straightforward per-case loop over all applied edits (MQuAKE-Remastered's
  ``get_masked_edits`` logic) on ``--naive-n`` cases, against curate on the same cases.

Run: ``python bench/bench_ke.py`` (defaults: sizes 100k and 1M; ~2-4 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from curate.audits.knowledge_editing.contamination import contamination
from curate.families import get_family
from curate.schemas.knowledge_editing_tables import KEData

HARD = Path(__file__).resolve().parents[2] / "shared" / "data" / "mquake" / "MQuAKE-hard.json"
FAM = get_family("knowledge-editing")


def rekey_record(rec: Any, r: int) -> Any:
    """Replica ``r`` of a raw record (r = 0 is the record itself)."""
    if r == 0:
        return rec

    def walk(x: Any, key: str | None = None) -> Any:
        if isinstance(x, dict):
            return {k: walk(v, k) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v, key) for v in x]
        if isinstance(x, int) and key == "case_id":
            return x + r * 10**6
        if isinstance(x, str):
            if key in ("prompt", "relation_id") or (x[:1] == "P" and x[1:].isdigit()):
                return x
            return f"{x}~{r}"
        return x

    return walk(rec)


def replicate(data: KEData, n: int) -> KEData:
    """N cases as columnar tables: the loaded tables repeated with re-keyed ids and labels."""
    base = data.cases.height
    reps = -(-n // base)
    text_cols = {
        "cases": ["answer", "new_answer"],
        "hops": ["s", "o", "s_label", "o_label", "sh_answer"],
        "edits": ["subject", "new_id", "new_str", "true_id", "true_str", "t_s", "t_o"],
    }
    out = {}
    for name, cols in text_cols.items():
        df: pl.DataFrame = getattr(data, name)
        parts = []
        for r in range(reps):
            sfx = f"~{r}" if r else ""
            lists = [
                c
                for c in ("questions", "answer_alias", "new_answer_alias", "sh_aliases")
                if c in df.columns
            ]
            parts.append(
                df.with_columns(
                    *[pl.col(c).list.eval(pl.element() + pl.lit(sfx)) for c in lists],
                    (pl.col("row") + r * base).alias("row"),
                    (pl.col("record").cast(pl.Int64) + r * 10**6).cast(pl.String).alias("record"),
                    *[pl.col(c) + pl.lit(sfx) for c in cols],
                )
            )
        full = pl.concat(parts, rechunk=True)
        out[name] = full.filter(pl.col("row") < n)
    return KEData(
        family=data.family,
        inputs=data.inputs,
        schema_findings=data.schema_findings,
        cases=out["cases"],
        hops=out["hops"],
        edits=out["edits"],
        all_ids=[f"{x}" for x in out["cases"]["record"].to_list()],
    )


def naive(records: list[dict[str, Any]], edited: set[Any]) -> tuple[int, int]:
    """The per-case loop over all applied edits (the reference definition)."""
    applied = [
        (c["case_id"], e)
        for c in records
        if c["case_id"] in edited
        for e in c["orig"]["edit_triples"]
    ]
    ce = cu = 0
    for c in records:
        is_edited = c["case_id"] in edited
        path = c["orig"]["new_triples" if is_edited else "triples"]
        for src, e in applied:
            if src != c["case_id"] and any(
                e[0] == p[0] and e[1] == p[1] and e[2] != p[2] for p in path
            ):
                if is_edited:
                    ce += 1
                else:
                    cu += 1
                break
    return ce, cu


def timed(fn, *args, **kw):
    gc.collect()
    t = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--load-n", type=int, default=100_000)
    ap.add_argument("--naive-n", type=int, nargs="+", default=[1000, 2000])
    args = ap.parse_args()
    if not HARD.exists():
        sys.exit(f"real data missing: {HARD}")
    real = json.loads(HARD.read_text(encoding="utf-8"))
    rows: list[tuple[str, str, str]] = []

    def row(what: str, n: int, seconds: float, note: str = "") -> None:
        rate = f"{n / seconds:,.0f} cases/s" if seconds > 0 else "-"
        rows.append((what, f"{n:,}", f"{seconds:.2f} s", rate, note))
        print(f"{what:<44} {n:>10,} {seconds:>9.2f} s  {rate:>18}  {note}", flush=True)

    # -- validate from JSON Lines
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cases.jsonl"
        with open(path, "wb") as fh:
            for i in range(args.load_n):
                fh.write(orjson.dumps(rekey_record(real[i % len(real)], i // len(real))) + b"\n")
        size_mb = path.stat().st_size / 2**20
        data, secs = timed(FAM.load, [path])
        row("validate (read+schema+tables) JSONL", args.load_n, secs, f"{size_mb:,.0f} MiB file")
        del data
    base = FAM.load([HARD])

    # -- same-run peer: per-case loop vs curate on the same cases
    for n in args.naive_n:
        recs = [rekey_record(real[i % len(real)], i // len(real)) for i in range(n)]
        # replicas are disjoint; keep contamination non-trivial by editing half of them
        rng = random.Random(100)
        k = n // 2
        edited_ids = set(rng.sample([c["case_id"] for c in recs], k))
        (ref_e, ref_u), t_naive = timed(naive, recs, edited_ids)
        data_n = replicate(base, n)
        flags = data_n.cases["record"].is_in([str(x) for x in edited_ids])
        j, t_curate = timed(contamination, data_n, flags)
        got_e = j.filter(pl.col("edited"))["record"].n_unique() if j.height else 0
        got_u = j.filter(~pl.col("edited"))["record"].n_unique() if j.height else 0
        assert (got_e, got_u) == (ref_e, ref_u), ((got_e, got_u), (ref_e, ref_u))
        row(f"peer: per-case loop, {k} edited", n, t_naive, f"{ref_e}+{ref_u} contaminated")
        row(
            f"curate contamination, {k} edited",
            n,
            t_curate,
            f"{t_naive / t_curate:,.0f}x faster than the loop",
        )

    # -- scale
    for n in args.sizes:
        data, t_build = timed(replicate, base, n)
        print(
            f"  (built {n:,}-case tables in {t_build:.1f} s: {data.hops.height:,} hops, "
            f"{data.edits.height:,} edits)",
            flush=True,
        )
        for spec in ("all", f"random:{n // 10}"):
            rep, secs = timed(FAM.audit, data, select=["KE2"], edit_set=spec)
            c = rep.stats["contamination"]
            row(
                f"contamination KE201+KE202, {spec}",
                n,
                secs,
                f"{c['edited_contaminated']}+{c['unedited_contaminated']} contaminated",
            )
        rep, secs = timed(FAM.audit, data, edit_set="all")
        row("full audit (all KE rules), all", n, secs, f"{rep.findings.height:,} findings")
        del data, rep
        gc.collect()
    print(f"peak RSS {peak_rss_mb():,.0f} MiB")


if __name__ == "__main__":
    main()
