"""Label issues (TB302, issue 33) at the sizes the issue names, against cleanlab called by hand.

Two workloads, each side in a child process with its own peak RSS:

* ``pred-probs``: 1 M rows × 100 classes with the user's predicted probabilities (``.npy``,
  float32, rows in the records' order). curate: ``curate audit table DATA --id id --label label
  --pred-probs P.npy --select TB302`` (the CLI, report rendered). Peer: what a cleanlab user
  writes — ``np.load`` the same arrays, ``cleanlab.filter.find_label_issues`` (its default,
  a process pool on the physical cores) and ``rank.get_label_quality_scores``. The parent
  asserts that curate flagged exactly cleanlab's rows. Target: < 30 s.
* ``built-in``: 100 k rows of bench_table's QA table (MusicCaps questions and two-sentence
  contexts, labelled by the context's clip's musicality rating), 5 % of the labels flipped
  (seeded). curate: ``curate audit table DATA --id id --label label --text q,c --select TB302``
  (its built-in model, 5 grouped folds). Peer: the same pipeline written by hand with
  scikit-learn — ``TfidfVectorizer`` word 1-2-grams of ``q + c``, ``cross_val_predict`` of a
  ``LogisticRegression`` fitted as curate fits it (SAG, tol 1e-3, C=10; 5 plain folds on both
  cores), ``find_label_issues``.
  Precision and recall of each side's flagged set against the flips are printed beside the
  time. Target: < 60 s.

The synthetic probabilities of ``pred-probs`` are drawn per row (seeded): a true class, a
noisy softmax that favours it, and the given label flipped to another class for 5 % of the
rows; they only have to exercise cleanlab's code paths at that size, not to look like a model.

    python bench/bench_label_issues.py                   # both workloads
    python bench/bench_label_issues.py --only pred-probs --record --machine quiet
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import record

BENCH = Path(__file__).resolve().parent
TARGETS = {"pred-probs": 30.0, "built-in": 60.0}


def make_pred_probs(rows: int, classes: int, seed: int, out: Path) -> dict:
    """``data.parquet`` (id, label) and ``probs.npy`` (rows × classes, float32) in ``out``."""
    import polars as pl

    rng = np.random.default_rng(seed)
    true = rng.integers(0, classes, rows)
    logits = rng.normal(0.0, 1.0, (rows, classes)).astype(np.float32)
    logits[np.arange(rows), true] += rng.uniform(1.0, 5.0, rows).astype(np.float32)
    logits -= logits.max(axis=1, keepdims=True)
    probs = np.exp(logits)
    probs /= probs.sum(axis=1, keepdims=True)
    flipped = rng.random(rows) < 0.05
    given = true.copy()
    given[flipped] = (true[flipped] + rng.integers(1, classes, flipped.sum())) % classes
    names = [f"c{i:03d}" for i in range(classes)]  # sorted order = index order
    pl.DataFrame(
        {"id": [f"r{i}" for i in range(rows)], "label": np.array(names)[given]}
    ).write_parquet(out / "data.parquet")
    np.save(out / "probs.npy", probs.astype(np.float32))
    np.save(out / "flips.npy", flipped)
    return {"rows": rows, "classes": classes, "flipped": int(flipped.sum())}


def make_built_in(rows: int, seed: int, out: Path) -> dict:
    """bench_table's QA table cut to ``rows``, labels flipped at 5 % (``flips.npy``)."""
    import polars as pl

    sys.path.insert(0, str(BENCH))
    import bench_table

    cache = Path(tempfile.gettempdir()) / "curate-bench" / "table"
    rates = {k: 0.0 for k in ("dup", "variant", "conflict", "leak", "id", "null")}
    qa = bench_table.table_file(cache, rows, rates, seed)
    df = pl.read_parquet(qa).select("id", "q", "c", "label")
    rng = np.random.default_rng(seed + 1)
    classes = sorted(df["label"].unique().to_list())
    flipped = rng.random(df.height) < 0.05
    labels = np.array(df["label"].to_list(), dtype=object)
    for i in np.flatnonzero(flipped):
        others = [c for c in classes if c != labels[i]]
        labels[i] = others[rng.integers(0, len(others))]
    df = df.with_columns(pl.Series("label", labels.tolist(), dtype=df["label"].dtype))
    df.write_parquet(out / "data.parquet")
    np.save(out / "flips.npy", flipped)
    return {"rows": df.height, "classes": len(classes), "flipped": int(flipped.sum())}


# ------------------------------------------------------------------ sides (child processes)


def curate_command(work: Path, workload: str) -> list[str]:
    args = [sys.executable, "-m", "curate", "audit", "table", str(work / "data.parquet")]
    args += ["--id", "id", "--label", "label", "--select", "TB302", "--format", "json"]
    if workload == "pred-probs":
        return [*args, "--pred-probs", str(work / "probs.npy")]
    return [*args, "--text", "q,c"]


def side_cleanlab(work: Path, workload: str) -> None:
    """The peer, in this (child) process: cleanlab as its user calls it."""
    import polars as pl
    from cleanlab.filter import find_label_issues
    from cleanlab.rank import get_label_quality_scores

    labels = pl.read_parquet(work / "data.parquet")
    classes = sorted(labels["label"].unique().to_list())
    index = {c: i for i, c in enumerate(classes)}
    y = np.array([index[v] for v in labels["label"].to_list()])
    if workload == "pred-probs":
        probs = np.load(work / "probs.npy")
    else:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import cross_val_predict

        text = (labels["q"] + " " + labels["c"].fill_null("")).to_list()
        x = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True).fit_transform(text)
        # the solver curate uses (SAG, tol 1e-3, C=10): lbfgs, scikit-learn's default, takes
        # several times longer on these features, so the peer is the fast pipeline by hand
        model = LogisticRegression(C=10.0, solver="sag", tol=1e-3, max_iter=300, random_state=0)
        probs = cross_val_predict(model, x, y, cv=5, method="predict_proba", n_jobs=2)
    issues = find_label_issues(y, probs)
    get_label_quality_scores(y, probs)
    np.save(work / "cleanlab.npy", np.flatnonzero(issues).astype(np.int64))


def run_side(side: str, workload: str, work: Path) -> dict:
    """Wall seconds (as this process sees them) and the child's own peak RSS."""
    if side == "curate":
        cmd = curate_command(work, workload)
    else:
        cmd = [sys.executable, __file__, "--child", side, "--workload", workload]
        cmd += ["--work", str(work)]
    out = work / f"{side}.out"
    with record.child_peak(cmd) as (wrapped, own_peak), open(out, "w") as fh:
        t0 = time.perf_counter()
        proc = subprocess.Popen(wrapped, stdout=fh, stderr=subprocess.DEVNULL, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        rss = own_peak(usage)
    code = os.waitstatus_to_exitcode(status)
    if code not in ((0, 1) if side == "curate" else (0,)):
        raise SystemExit(f"{side} failed on {workload} (exit {code})")
    if side == "curate":
        report = json.loads(out.read_text())
        rows = sorted(int(f["row"]) for f in report["findings"] if f["rule"] == "TB302")
        np.save(work / "curate.npy", np.array(rows, dtype=np.int64))
    return {"seconds": wall, "peak_mib": rss}


def quality(found: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    flags = set(found.tolist())
    real = set(np.flatnonzero(truth).tolist())
    hit = len(flags & real)
    return hit / max(len(flags), 1), hit / max(len(real), 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=sorted(TARGETS), help="one workload")
    ap.add_argument("--rows-pred-probs", type=int, default=1_000_000)
    ap.add_argument("--classes", type=int, default=100)
    ap.add_argument("--rows-built-in", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--child", dest="side", help=argparse.SUPPRESS)
    ap.add_argument("--workload", help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    record.add_arguments(ap)
    args = ap.parse_args()
    if args.side:
        side_cleanlab(Path(args.work), args.workload)
        return
    rec = record.start(args)
    rows = []
    for workload in [args.only] if args.only else list(TARGETS):
        with tempfile.TemporaryDirectory(prefix="curate-bench-labels-") as tmp:
            work = Path(tmp)
            if workload == "pred-probs":
                made = make_pred_probs(args.rows_pred_probs, args.classes, args.seed, work)
            else:
                made = make_built_in(args.rows_built_in, args.seed, work)
            results = {side: run_side(side, workload, work) for side in ("curate", "cleanlab")}
            mine, theirs = np.load(work / "curate.npy"), np.load(work / "cleanlab.npy")
            truth = np.load(work / "flips.npy")
            if workload == "pred-probs" and not np.array_equal(mine, theirs):
                raise SystemExit(f"curate flagged {len(mine)} rows, cleanlab {len(theirs)}")
            print(f"\n{workload}: {made}")
            for side, res in results.items():
                p, r = quality(mine if side == "curate" else theirs, truth)
                res |= {"flagged": len(mine if side == "curate" else theirs)}
                res |= {"precision": round(p, 4), "recall": round(r, 4)}
                print(
                    f"  {side:<9} {res['seconds']:7.2f} s  {res['peak_mib']:8,.0f} MiB  "
                    f"flagged {res['flagged']:>7,}  precision {p:.3f}  recall {r:.3f}"
                )
            cur, peer = results["curate"], results["cleanlab"]
            met = "met" if cur["seconds"] < TARGETS[workload] else "not met"
            same = "the same rows as cleanlab" if workload == "pred-probs" else ""
            print(f"  target < {TARGETS[workload]:g} s: {met} {same}")
            rows.append(row_for(workload, made, cur, peer, met))
    if rec:
        rec.write(*rows)


def row_for(workload: str, made: dict, cur: dict, peer: dict, met: str) -> record.Row:
    if workload == "pred-probs":
        load = (
            f"{record.size(made['rows'])} rows × {made['classes']} classes, the user's "
            f"probabilities (.npy float32), 5 % of labels flipped; flagged {cur['flagged']:,} = "
            "cleanlab's set"
        )
        peer_text = (
            "cleanlab 2.9 `find_label_issues` (its process pool) + "
            "`get_label_quality_scores` on the same arrays"
        )
    else:
        load = (
            f"{record.size(made['rows'])} rows of MusicCaps QA (q, c), {made['classes']} "
            f"classes, 5 % flipped; curate precision {cur['precision']:.2f} / recall "
            f"{cur['recall']:.2f}, peer {peer['precision']:.2f} / {peer['recall']:.2f}"
        )
        peer_text = (
            "by hand: `TfidfVectorizer` + `cross_val_predict(LogisticRegression(solver='sag'), "
            "n_jobs=2)` + cleanlab `find_label_issues`"
        )
    what = "given pred-probs" if workload == "pred-probs" else "built-in model"
    target = TARGETS[workload]
    return record.Row(
        id=f"label-issues-{workload}",
        section="peer",
        benchmark=f"label issues (TB302), {what}, CLI",
        workload=load,
        peer=peer_text,
        curate_figure=f"{cur['seconds']:.2f} s",
        peer_figure=f"{peer['seconds']:.2f} s",
        ratio=f"**{peer['seconds'] / cur['seconds']:.2f}×** (target < {target:g} s: {met})",
        rss_curate=f"{cur['peak_mib']:,.0f} MiB",
        rss_peer=f"{peer['peak_mib']:,.0f} MiB",
        values={"workload": made, "curate": cur, "peer": peer},
    )


if __name__ == "__main__":
    main()
