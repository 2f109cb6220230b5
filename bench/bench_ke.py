"""Knowledge-editing benchmark: contamination against an indexed Python loop, per-rule times.

The 429 real MQuAKE-hard cases are scaled up by replication with re-keyed ids: replica r maps
entity ``Q123`` to ``Q123~r`` and suffixes every label, question and answer with ``~r`` (case ids
get ``r * 10**6`` added), so replicas are disjoint and findings scale linearly with N.

Measured, each in a child process of its own (so every figure has its own peak RSS, taken from
the child's own, through GNU time: ``record.child_peak``), on N cases (default 1 M) whose tables
are built once by replicating the loaded tables in polars and handed to the children as Arrow
IPC files:

* **contamination** (KE201+KE202, ``FAM.audit(select=[KE201, KE202])``: the edit set, the
  contamination join, the findings with their fixes, the report) for ``all`` and ``random:K``;
* **the peer**, a plain Python loop a strong user would write: a dict keyed by (subject id,
  relation) → set of (new object, case id) over the applied edits, then each case's correct path
  (``new_triples`` if edited, else ``triples``) walked hop by hop, a hop hit when an edit of
  *another* case sets its (subject, relation) to another object. Its cases are plain tuples
  built from the same re-keyed records (not timed, like curate's tables); drawing its edit set
  (``random.sample``, as ``--edit-set`` draws it) is timed, as it is in curate's audit. Before
  any time is printed, the two must agree on every (case, hop) hit *and* on its source cases;
* **per-rule times** of the full audit (``--edit-set all``): each shared table built once and
  timed on its own, then each rule, as :meth:`Family.audit` runs them.

``--before PATH`` runs the curate children a second time with ``PYTHONPATH=PATH`` (another
checkout of ``curate``, e.g. ``git archive <commit> curate | tar -x -C PATH``) for a before/after
column in the same run.

Run: ``python bench/bench_ke.py`` (1 M cases, 4 edit sets, per-rule times: ~10 minutes on 2
cores, peak ~6 GB per child); ``--n 100000`` for a quick run; ``--load-n 100000`` adds the
validate (read + schema + tables) row from a JSON Lines file.

``--record [DIR]`` (see ``bench/record.py``) also writes the page's contamination row: the
range of the loop / curate ratios over the edit sets, ``all`` spelt out; ``ke-contamination``
at 1 M cases, ``ke-contamination-<n>`` at any other size.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import record  # bench/record.py: what every script's --record shares

from curate.families import get_family
from curate.schemas.knowledge_editing_tables import KEData

HARD = Path(__file__).resolve().parents[2] / "shared" / "data" / "mquake" / "MQuAKE-hard.json"
FAM = get_family("knowledge-editing")
TABLES = ("cases", "hops", "edits")


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
    for name, all_cols in text_cols.items():
        df: pl.DataFrame = getattr(data, name)
        cols = [c for c in all_cols if c in df.columns]  # the tables' shape changed over time
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
                    *[
                        (pl.col("record").cast(pl.Int64) + r * 10**6).cast(pl.String)
                        for _ in ("record",)
                        if "record" in df.columns
                    ],
                    # coded (categorical) columns re-keyed as text, then coded again
                    *[(pl.col(c).cast(pl.String) + pl.lit(sfx)).cast(df.schema[c]) for c in cols],
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


# --------------------------------------------------------------------------- the peer

Triple = tuple[str | None, str | None, str | None]
Case = tuple[int, list[Triple], list[Triple], list[Triple]]


def peer_cases(real: list[dict[str, Any]], n: int) -> list[Case]:
    """The N re-keyed cases as a user would hold them after ``json.load``: (case_id, triples,
    new_triples, edit_triples), with the same re-keying as :func:`replicate`."""
    base = [
        (c["case_id"], c["orig"]["triples"], c["orig"]["new_triples"], c["orig"]["edit_triples"])
        for c in real
    ]

    def key(t: list[Any], sfx: str) -> Triple:
        s, r, o = t
        return (s + sfx, r, o + sfx)

    out: list[Case] = []
    for i in range(n):
        cid, tr, nt, et = base[i % len(base)]
        rep = i // len(base)
        sfx = f"~{rep}" if rep else ""
        out.append(
            (
                cid + rep * 10**6,
                [key(t, sfx) for t in tr],
                [key(t, sfx) for t in nt],
                [key(t, sfx) for t in et],
            )
        )
    return out


def peer(cases: list[Case], edited: set[int]) -> dict[tuple[bool, int, int], set[int]]:
    """Contamination as a plain indexed loop: (edited?, victim case id, hop) → source case ids.

    Mirrors KE201/KE202: the applied edits are the complete edit triples of edited cases; a hop
    (with subject and relation) of the victim's correct path is hit by an applied edit of another
    case with the same (subject, relation) and another object. The index is (subject, relation)
    → {new object: source case ids}, so a hop whose only edit is its own fact costs one lookup
    (a flat set of (object, case) pairs made the loop 4x slower on ``all``).
    """
    index: dict[tuple[str, str], dict[str, set[int]]] = {}
    for cid, _, _, edits in cases:
        if cid in edited:
            for s, r, o in edits:
                if s is not None and r is not None and o is not None:
                    index.setdefault((s, r), {}).setdefault(o, set()).add(cid)
    hits: dict[tuple[bool, int, int], set[int]] = {}
    for cid, triples, new_triples, _ in cases:
        is_edited = cid in edited
        for h, (s, r, o) in enumerate(new_triples if is_edited else triples):
            objects = index.get((s, r))
            if objects and (len(objects) > 1 or o not in objects):
                found = {c for o2, srcs in objects.items() if o2 != o for c in srcs}
                found.discard(cid)
                if found:
                    hits[(is_edited, cid, h)] = found
    return hits


def edited_ids(ids: list[int], spec: str) -> set[int]:
    """The edit set as :func:`resolve_edit_set` draws it (``random:K`` samples positions)."""
    if spec == "all":
        return set(ids)
    k = int(spec.split(":")[1])
    rng = random.Random()
    rng.seed(100)
    return set(rng.sample(ids, k))


# --------------------------------------------------------------------------- children


def load_tables(folder: Path) -> KEData:
    frames = {name: pl.read_ipc(folder / f"{name}.arrow").rechunk() for name in TABLES}
    base = FAM.load([HARD])
    # as a load leaves them: the case ids as the records hold them (integers), and the
    # reader's note of their type
    return KEData(
        family=base.family,
        inputs=base.inputs,
        schema_findings=base.schema_findings,
        all_ids=frames["cases"]["record"].cast(pl.Int64).to_list(),
        shape=base.shape,
        **frames,
    )


def hits_from_findings(findings: pl.DataFrame) -> list[list[Any]]:
    """(edited?, case id, hop, source case ids) per KE201/KE202 finding, from its fix."""
    f = findings.filter(pl.col("rule").is_in(["KE201", "KE202"]))
    out = []
    for rule, case, details, fix in f.select("rule", "record", "details", "fix").iter_rows():
        refs = sorted(int(x) for x in orjson.loads(fix)["refs"])
        out.append([rule == "KE201", int(case), orjson.loads(details)["hop"], refs])
    return sorted(out)


def child_build(folder: Path, n: int) -> dict[str, Any]:
    """The N-case tables, replicated from MQuAKE-hard and written as Arrow IPC for the others."""
    data, seconds = timed(replicate, FAM.load([HARD]), n)
    for name in TABLES:
        getattr(data, name).write_ipc(folder / f"{name}.arrow")
    return {"seconds": seconds, "hops": data.hops.height, "edits": data.edits.height}


def child_contamination(folder: Path, spec: str, repeat: int) -> dict[str, Any]:
    data = load_tables(folder)
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        rep = FAM.audit(data, select=["KE201", "KE202"], edit_set=spec)
        best = min(best, time.perf_counter() - t)
    c = rep.stats["contamination"]
    return {
        "seconds": best,
        "findings": rep.findings.height,
        "contaminated": [c["edited_contaminated"], c["unedited_contaminated"]],
        "hits": hits_from_findings(rep.findings),
    }


def child_peer(n: int, spec: str, repeat: int) -> dict[str, Any]:
    real = json.loads(HARD.read_text(encoding="utf-8"))
    cases = peer_cases(real, n)
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        # the edit set drawn inside the timed part, as curate's audit resolves ``--edit-set``
        # inside its own
        edited = edited_ids([c[0] for c in cases], spec)
        hits = peer(cases, edited)
        best = min(best, time.perf_counter() - t)
    victims = {True: set(), False: set()}
    for is_edited, cid, _ in hits:
        victims[is_edited].add(cid)
    return {
        "seconds": best,
        "contaminated": [len(victims[True]), len(victims[False])],
        "hits": sorted([e, c, h, sorted(s)] for (e, c, h), s in hits.items()),
    }


def child_rules(folder: Path) -> dict[str, Any]:
    """The full audit's rules one by one, each shared table first and on its own."""
    from curate.core.rules import AuditContext

    data = load_tables(folder)
    opts = FAM.options(None, edit_set="all")
    ctx = AuditContext(data, opts, FAM.rules.tables)
    times: dict[str, float] = {}
    # the process's peak RSS after each step (a high-water mark: the step that raises it is
    # the one whose intermediate frames set the audit's peak)
    peaks: dict[str, float] = {"tables loaded": peak_rss_mb()}
    rules = FAM.rules.select(None, None)
    needed = [t for r in rules for t in r.needs]
    for name in ["edited", *dict.fromkeys(needed)]:
        if ctx.built(name) is None:
            gc.collect()
            t = time.perf_counter()
            ctx.table(name)
            times[f"table {name}"] = time.perf_counter() - t
            peaks[f"table {name}"] = peak_rss_mb()
    findings = 0
    for rule in rules:
        gc.collect()
        t = time.perf_counter()
        out = rule.run(data, ctx.for_rule(rule))
        times[rule.code] = time.perf_counter() - t
        peaks[rule.code] = peak_rss_mb()
        findings += out.height
    return {"times": times, "findings": findings, "peaks": peaks}


def run_child(argv: list[str], pythonpath: str | None = None) -> tuple[dict[str, Any], float]:
    """Run this script as a child; its result (JSON) and its peak RSS in MiB."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        out = Path(fh.name)
    try:
        # the child's own peak (GNU time): wait4's would carry this process's high-water mark
        with record.child_peak([sys.executable, __file__, *argv, "--out", str(out)]) as (
            cmd,
            own_peak,
        ):
            proc = subprocess.Popen(cmd, env=env)
            _, status, usage = os.wait4(proc.pid, 0)
            rss = own_peak(usage)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            sys.exit(f"child {argv} failed with exit code {proc.returncode}")
        return json.loads(out.read_text()), rss
    finally:
        out.unlink(missing_ok=True)


# --------------------------------------------------------------------------- main


def timed(fn, *args, **kw):
    gc.collect()
    t = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t


def peak_rss_mb() -> float:
    return record.own_peak_mib()  # VmHWM: ru_maxrss would carry the parent's high-water mark


def gib(mib: float) -> str:
    return f"{mib / 1024:.1f} GiB"


def contamination_row(n: int, measured: dict[str, dict[str, float]]) -> record.Row:
    """The page's row: the ratio's range over the edit sets (each a line of the printed table)."""
    ratio = {spec: m["loop_s"] / m["curate_s"] for spec, m in measured.items()}
    low, high = min(ratio, key=ratio.__getitem__), max(ratio, key=ratio.__getitem__)
    if low == high:
        text = f"**{ratio[low]:.1f}×** (`{low}`)"
    else:
        text = f"**{ratio[low]:.1f}×** (`{low}`) to **{ratio[high]:.1f}×** (`{high}`)"
    if "all" in measured and "all" not in (low, high):
        m = measured["all"]
        text += f"; `all` {ratio['all']:.1f}× ({m['curate_s']:.2f} s vs {m['loop_s']:.1f} s)"

    def span(key: str) -> str:
        values = [m[key] / 1024 for m in measured.values()]
        lo, hi = min(values), max(values)
        return f"{lo:.1f}" if f"{lo:.1f}" == f"{hi:.1f}" else f"{lo:.1f}–{hi:.1f}"

    specs = ", ".join(f"`{spec}`" for spec in measured)
    return record.Row(
        id="ke-contamination" + ("" if n == 1_000_000 else f"-{n}"),
        section="peer",
        benchmark="knowledge editing: contamination (KE2xx)",
        workload=f"{record.size(n)} generated MQuAKE cases; edit sets {specs}",
        peer="an indexed pure-Python loop of the contamination definition",
        curate_figure=", ".join(f"{m['curate_s']:.3f} s (`{s}`)" for s, m in measured.items()),
        peer_figure=", ".join(f"{m['loop_s']:.2f} s (`{s}`)" for s, m in measured.items()),
        ratio=text,
        rss_curate=span("curate_rss_mib"),
        rss_peer=f"{span('loop_rss_mib')} GiB",
        values={"edit_sets": measured},
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="cases (default 1 M)")
    ap.add_argument(
        "--edit-sets",
        nargs="+",
        default=["all", "random:100", "random:10000", "random:100000"],
    )
    ap.add_argument("--repeat", type=int, default=3, help="best of R runs, both sides")
    ap.add_argument("--no-rules", action="store_true", help="skip the per-rule times")
    ap.add_argument("--before", help="another curate checkout for a before/after column")
    ap.add_argument("--load-n", type=int, default=0, help="also time validate on a JSONL file")
    ap.add_argument(
        "--child", choices=["build", "contamination", "peer", "rules"], help=argparse.SUPPRESS
    )
    ap.add_argument("--tables", help=argparse.SUPPRESS)
    ap.add_argument("--spec", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    record.add_arguments(ap)
    args = ap.parse_args()
    if not HARD.exists():
        sys.exit(f"real data missing: {HARD}")
    recorder = None if args.child else record.start(args)
    if args.child:
        if args.child == "build":
            res = child_build(Path(args.tables), args.n)
        elif args.child == "contamination":
            res = child_contamination(Path(args.tables), args.spec, args.repeat)
        elif args.child == "peer":
            res = child_peer(args.n, args.spec, args.repeat)
        else:
            res = child_rules(Path(args.tables))
        Path(args.out).write_bytes(orjson.dumps(res))
        return

    real = json.loads(HARD.read_text(encoding="utf-8"))
    if args.load_n:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "cases.jsonl"
            with open(path, "wb") as fh:
                for i in range(args.load_n):
                    rec = rekey_record(real[i % len(real)], i // len(real))
                    fh.write(orjson.dumps(rec) + b"\n")
            size_mb = path.stat().st_size / 2**20
            data, secs = timed(FAM.load, [path])
            print(
                f"validate (read+schema+tables) JSONL: {args.load_n:,} cases in {secs:.2f} s "
                f"({args.load_n / secs:,.0f} cases/s, {size_mb:,.0f} MiB file)",
                flush=True,
            )
            del data

    n = args.n
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        # Built in a child too: a child's ``ru_maxrss`` starts at its parent's RSS when forked,
        # so the parent must stay small for the children's peaks to mean anything.
        built, build_rss = run_child(["--child", "build", "--tables", str(folder), "--n", str(n)])
        print(
            f"built {n:,}-case tables in {built['seconds']:.1f} s: {built['hops']:,} hops, "
            f"{built['edits']:,} edits (peak RSS {gib(build_rss)})",
            flush=True,
        )
        common = ["--tables", str(folder), "--n", str(n), "--repeat", str(args.repeat)]
        once = ["--tables", str(folder), "--n", str(n), "--repeat", "1"]

        measured: dict[str, dict[str, float]] = {}  # edit set -> the figures of its row
        before_hdr = " before | before RSS |" if args.before else ""
        rows = [
            f"| edit set | cases | contaminated (edited+unedited) | indexed loop | loop RSS |"
            f"{before_hdr} curate | curate RSS | loop / curate |",
            "|---|---:|---:|---:|---:|" + ("---:|---:|" if args.before else "") + "---:|---:|---:|",
        ]
        for spec in args.edit_sets:
            if spec.startswith("random:") and int(spec.split(":")[1]) > n:
                continue
            # peer and curate alternate, one run each per repeat, best of the repeats: on a
            # shared machine both sides then see the same load, so the ratio holds up
            ref = got = None
            ref_rss = rss = 0.0
            for _ in range(args.repeat):
                r, r_rss = run_child(["--child", "peer", "--spec", spec, *once])
                g, g_rss = run_child(["--child", "contamination", "--spec", spec, *once])
                ref = r if ref is None or r["seconds"] < ref["seconds"] else ref
                got = g if got is None or g["seconds"] < got["seconds"] else got
                ref_rss, rss = max(ref_rss, r_rss), max(rss, g_rss)
            assert ref is not None and got is not None
            # identical contaminated cases, hops and sources before any time is shown
            assert got["contaminated"] == ref["contaminated"], (got["contaminated"], ref)
            assert got["hits"] == ref["hits"], f"{spec}: curate and the loop disagree"
            before = ""
            if args.before:
                old, old_rss = run_child(
                    ["--child", "contamination", "--spec", spec, *common], args.before
                )
                assert old["hits"] == ref["hits"], f"{spec}: before and the loop disagree"
                before = f" {old['seconds']:.3f} s | {gib(old_rss)} |"
            ce, cu = ref["contaminated"]
            measured[spec] = {
                "loop_s": ref["seconds"],
                "loop_rss_mib": ref_rss,
                "curate_s": got["seconds"],
                "curate_rss_mib": rss,
            }
            rows.append(
                f"| `{spec}` | {n:,} | {ce:,}+{cu:,} ({len(ref['hits']):,} hops) | "
                f"{ref['seconds']:.2f} s | {gib(ref_rss)} |{before} **{got['seconds']:.3f} s** | "
                f"{gib(rss)} | **{ref['seconds'] / got['seconds']:.1f}×** |"
            )
            print(rows[-1], flush=True)
        print("\n" + "\n".join(rows) + "\n", flush=True)
        if recorder and measured:
            recorder.write(contamination_row(n, measured))

        if not args.no_rules:
            now, rss = run_child(["--child", "rules", *common])
            old = None
            if args.before:
                old, old_rss = run_child(["--child", "rules", *common], args.before)
            names = list(dict.fromkeys([*(old["times"] if old else {}), *now["times"]]))
            hdr = "| step | " + ("before | " if old else "") + "after |"
            out = [hdr, "|---|" + ("---:|" if old else "") + "---:|"]
            for name in sorted(names, key=lambda k: -now["times"].get(k, 0.0)):
                b = f"{old['times'][name]:.2f} s | " if old and name in old["times"] else ""
                b = b or ("- | " if old else "")
                a = f"{now['times'][name]:.2f} s" if name in now["times"] else "-"
                out.append(f"| {name} | {b}{a} |")
            tot_b = f"**{sum(old['times'].values()):.1f} s** | " if old else ""
            out.append(
                f"| **all rules and tables** | {tot_b}**{sum(now['times'].values()):.1f} s** |"
            )
            peak_b = f"{gib(old_rss)} | " if old else ""
            out.append(f"| peak RSS (tables + audit) | {peak_b}{gib(rss)} |")
            print(
                f"per-rule times, full audit `--edit-set all`, {n:,} cases "
                f"({now['findings']:,} findings)\n"
            )
            print("\n".join(out), flush=True)
            peaks = now.get("peaks", {})
            raised = []  # the steps that raised the peak, and by how much
            last = peaks.get("tables loaded", 0.0)
            for name, mb in peaks.items():
                if mb - last >= 16:
                    raised.append(f"{name} +{mb - last:,.0f} MiB")
                last = max(last, mb)
            if peaks:
                print(
                    f"\npeak RSS after loading the tables {peaks['tables loaded']:,.0f} MiB; "
                    f"raised by: {', '.join(raised) or 'no step (< 16 MiB each)'}"
                )


if __name__ == "__main__":
    main()
