"""Knowledge editing at scale: load and memory of ``curate audit mquake`` on 100k-3M cases.

Every figure comes from a child process of its own (wall time, and its own peak RSS through GNU
time, ``record.child_peak``),
so one measurement's memory never inflates another's. Measured in the same run:

* ``curate audit mquake FILE`` end to end (the CLI, JSON report to a file) per size, beside its
  floor: a child that reads the same file and ``orjson.loads`` every line on one core, each
  object dropped as it goes (the least any JSON Lines reader in Python does). The row gives the
  end-to-end time as a multiple of the floor's, and both processes' CPU seconds and peak RSS;
* the same audit staged in one child (load, rules, render), with the peak RSS after the load:
  the load and the rule time separately;
* the peer for the load: ``TypeAdapter(list[MQuAKECase]).validate_json`` on the same bytes (the
  JSON Lines joined into one array) and the same model. It keeps every object, so it fits in
  memory only up to a few 100k cases; past ``--peer-max`` it is run batched (the same call per
  8,192 records, objects dropped after each), what a user would write at that size;
* parquet vs JSON Lines: the same raw cases written as parquet, loaded by ``curate`` (the
  columnar path reads Arrow record batches; no JSON at all), in ~14k-row groups and again in
  1,000-row groups (read several to a batch);
* the load with ``--workers 1`` beside the default (the cores): what the threads gain. Load rows
  also give the child's CPU seconds (user + system), less inflated than wall time by a busy
  machine.

Cases come from the bench generator (``bench_ke.rekey_record``: MQuAKE-hard re-keyed per
replica), written to ``--workdir`` (default: the system temporary folder), never into the
repository.

Run: ``python bench/bench_ke_scale.py`` (100k and 1M; ~10 min on 2 quiet cores, 5 GB of disk);
``--sizes 100000`` for a quick run (``--no-peer --parquet``: without the slow peer;
``--end-to-end``: only the CLI against its floor); ``--big``
adds 3M cases (memory of the full audit; 15 GB of disk, ~15 min).

``--record [DIR]`` (see ``bench/record.py``) also writes the page's rows, per size: the load
against the peer (``ke-load`` at 100k, ``ke-load-<n>`` otherwise; not with ``--no-peer``) and
the end-to-end CLI run against the floor (``ke-memory-100k`` at 100k, ``ke-1m-end-to-end`` at
1 M with its targets, issue 36: at most 2.0x the floor's time and 2.5 GB peak RSS,
``ke-end-to-end-<n>`` otherwise).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import record  # noqa: E402  (bench/record.py: what every script's --record shares)

HARD = HERE.parents[1] / "shared" / "data" / "mquake" / "MQuAKE-hard.json"
_MARK = "@@R@@"


# --------------------------------------------------------------------------- the generator


def _template(rec: dict[str, Any]) -> tuple[list[bytes], list[bytes]]:
    """A record serialised with a placeholder where the replica number goes (strings) and one
    where the case id goes: a replica is then two joins, not a walk over the record."""

    def walk(x: Any, key: str | None = None) -> Any:
        if isinstance(x, dict):
            return {k: walk(v, k) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v, key) for v in x]
        if isinstance(x, int) and key == "case_id":
            return "@@C@@"
        if isinstance(x, str):
            if key in ("prompt", "relation_id") or (x[:1] == "P" and x[1:].isdigit()):
                return x
            return f"{x}~{_MARK}"
        return x

    head, tail = orjson.dumps(walk(rec)).split(b'"@@C@@"')
    return head.split(_MARK.encode()), tail.split(_MARK.encode())


def write_cases(path: Path, n: int) -> None:
    """``n`` cases as JSON Lines, line i = ``bench_ke.rekey_record(hard[i % 429], i // 429)``
    (checked for the first 2,000 lines)."""
    from bench_ke import rekey_record

    real = json.loads(HARD.read_text(encoding="utf-8"))
    templates = [_template(r) for r in real]
    tmp = path.with_suffix(".part")
    with open(tmp, "wb") as fh:
        for i in range(n):
            r, k = divmod(i, len(real))
            if r == 0:
                fh.write(orjson.dumps(real[k]) + b"\n")
                continue
            head, tail = templates[k]
            rs = str(r).encode()
            cid = str(real[k]["case_id"] + r * 10**6).encode()
            fh.write(rs.join(head) + cid + rs.join(tail) + b"\n")
    with open(tmp, "rb") as fh:
        for i, line in zip(range(2000), fh, strict=False):
            expected = rekey_record(real[i % len(real)], i // len(real))
            assert orjson.loads(line) == expected, f"generator differs at line {i}"
    tmp.rename(path)


def write_parquet(jsonl: Path, path: Path, group: int = 65536) -> None:
    """The same raw cases as parquet (nested columns as the records have them), streamed; row
    groups of ``group`` rows at most (the default: one per 64 MiB of JSON Lines, ~14k)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from curate.families.knowledge_editing_columns import parse_json
    from curate.families.knowledge_editing_read import parse_type

    struct = parse_type(int)
    schema = pa.schema(list(struct))
    tmp = path.with_suffix(".part")
    with pq.ParquetWriter(tmp, schema) as w, open(jsonl, "rb") as fh:
        while True:
            lines = fh.readlines(64 << 20)
            if not lines:
                break
            table = parse_json(b"".join(lines), len(lines), schema)
            assert table is not None
            w.write_table(table, row_group_size=group)
    tmp.rename(path)


#: Rows per row group of the second parquet copy: small groups, read several to a batch.
SMALL_GROUPS = 1000


def inputs(workdir: Path, n: int, parquet: bool) -> tuple[Path, Path | None]:
    workdir.mkdir(parents=True, exist_ok=True)
    jsonl = workdir / f"ke-{n}.jsonl"
    if not jsonl.exists():
        t = time.perf_counter()
        write_cases(jsonl, n)
        print(f"  (wrote {jsonl}: {n:,} cases in {time.perf_counter() - t:.0f} s)", flush=True)
    pq_path = workdir / f"ke-{n}.parquet" if parquet else None
    if pq_path is not None and not pq_path.exists():
        write_parquet(jsonl, pq_path)
    if pq_path is not None and not small_groups(pq_path).exists():
        write_parquet(jsonl, small_groups(pq_path), SMALL_GROUPS)
    return jsonl, pq_path


def small_groups(pq_path: Path) -> Path:
    """The parquet copy in :data:`SMALL_GROUPS`-row groups."""
    return pq_path.with_name(f"{pq_path.stem}-g{SMALL_GROUPS}.parquet")


# --------------------------------------------------------------------------- children


def child(what: str, path: str, out: str) -> None:
    """One measurement, in this process (started by :func:`run`); prints one JSON line."""

    def peak() -> float:
        return record.own_peak_mib() / 1024  # GiB; VmHWM, not the parent's high-water mark

    res: dict[str, Any] = {}
    if what == "staged":
        from curate.families import get_family
        from curate.reports.render import render_json

        fam = get_family("knowledge-editing")
        t = time.perf_counter()
        data = fam.load([path])
        res["load"] = time.perf_counter() - t
        res["peak_after_load"] = peak()
        res["cases"] = data.cases.height
        t = time.perf_counter()
        report = fam.audit(data)
        res["rules"] = time.perf_counter() - t
        t = time.perf_counter()
        Path(out).write_text(render_json(report), encoding="utf-8")
        res["render"] = time.perf_counter() - t
        res["findings"] = report.findings.height
        res["peak"] = peak()
    elif what in ("load", "load-1"):
        from curate.families import get_family

        # load-1: the columnar path in one thread (--workers 1), for the parallel speed-up
        kw = {"workers": 1} if what == "load-1" else {}
        t = time.perf_counter()
        data = get_family("knowledge-editing").load([path], **kw)
        res["load"] = time.perf_counter() - t
        res["cases"] = data.cases.height
    elif what == "tables":
        # Resident bytes of each table, by dropping them one at a time after the load (what
        # the process gives back), beside polars' own estimate.
        import ctypes
        import gc

        from curate.families import get_family

        trim = ctypes.CDLL("libc.so.6").malloc_trim

        def rss() -> int:
            with open("/proc/self/statm") as fh:
                return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

        data = get_family("knowledge-editing").load([path])
        res["cases"] = n = data.cases.height
        gc.collect()
        trim(0)
        res["rss_after_load"] = rss()
        for name in ("hops", "edits", "cases"):
            frame = getattr(data, name)
            res[f"{name}_estimated"] = frame.estimated_size() / n
            before = rss()
            setattr(data, name, None)
            del frame
            gc.collect()
            trim(0)
            res[f"{name}_resident"] = (before - rss()) / n
    elif what == "load-stages":
        res.update(load_stages(path))
    elif what == "floor":
        # The end-to-end peer: JSON Lines parsed by orjson, one line at a time on one core,
        # nothing kept (the object of a line is dropped when the next is parsed)
        t = time.perf_counter()
        n = 0
        with open(path, "rb") as fh:
            for line in fh:
                orjson.loads(line)
                n += 1
        res["load"] = time.perf_counter() - t
        res["cases"] = n
    elif what in ("peer", "peer-batched"):
        from pydantic import TypeAdapter

        from curate.schemas.knowledge_editing import MQuAKECase

        adapter = TypeAdapter(list[MQuAKECase])
        t = time.perf_counter()
        n = 0
        with open(path, "rb") as fh:
            if what == "peer":
                n = len(adapter.validate_json(b"[" + b",".join(fh.read().splitlines()) + b"]"))
            else:
                while lines := [line for _, line in zip(range(8192), fh, strict=False)]:
                    n += len(adapter.validate_json(b"[" + b",".join(lines) + b"]"))
        res["load"] = time.perf_counter() - t
        res["cases"] = n
    print(json.dumps(res), flush=True)


def load_stages(path: str) -> dict[str, float]:
    """Where one core's CPU goes in the load's columnar path (run with ``POLARS_MAX_THREADS=1``,
    so that the process's CPU time is one core's): each stage's CPU seconds over the file's
    batches, as the reader runs them, then the whole load on one worker thread beside them
    (what the stages leave out: the main thread's ids and frames, records read one by one).

    Stages: ``read`` (the file into 16 MiB batches of lines), ``parse`` (Arrow's JSON reader
    into the declared type), ``parse checks`` (UTF-8, byte order marks, one chunk), ``codes``
    (the coded fields' dictionaries), ``tables`` (the cases, hops and edits frames).
    """
    import curate.families.knowledge_editing_columns as columns
    import curate.families.knowledge_editing_read as reader
    from curate.families import get_family
    from curate.io.read import open_source

    spent: dict[str, float] = dict.fromkeys(("read", "parse", "parse checks", "codes", "tables"), 0)

    def timed(module: Any, name: str, stage: str) -> None:
        inner = getattr(module, name)

        def run(*args: Any, **kw: Any) -> Any:
            t = time.process_time()
            try:
                return inner(*args, **kw)
            finally:
                spent[stage] += time.process_time() - t

        setattr(module, name, run)

    timed(columns, "_read_json", "parse")
    timed(reader, "parse_json", "parse checks")  # less the parse, below
    timed(reader, "json_coded", "codes")
    timed(reader, "tables", "tables")
    src = open_source(path, encoding=None, hash_input=False, dictionary=columns.CODED_FIELDS)
    batches, row, t0 = iter(src.batches), 0, time.process_time()
    while True:
        t = time.process_time()
        batch = next(batches, None)
        spent["read"] += time.process_time() - t
        if batch is None:
            break
        reader.batch_columns(reader._portable(batch), row)
        row += len(batch)
    spent["parse checks"] -= spent["parse"]
    res = {f"stage {k}": v for k, v in spent.items()}
    res["stages"] = time.process_time() - t0
    t = time.process_time()
    get_family("knowledge-editing").load([path], workers=1)
    res["load, one worker"] = time.process_time() - t
    return res


#: CPU seconds (user + system) of the last child :func:`run` waited for: on a shared machine
#: wall time tells little, CPU time less inflated by the other processes.
LAST_CPU = [0.0]


def run(args: list[str], env: dict[str, str] | None = None) -> tuple[float, float, dict[str, Any]]:
    """A child process: (wall seconds, peak RSS GiB, what it printed as JSON)."""
    child = record.run_child(args, env, stdout=True, stderr=True)
    LAST_CPU[0] = child.cpu
    if child.code not in (0, 1):  # 1: findings over the threshold, a normal audit outcome
        raise SystemExit(f"child failed ({child.code}): {' '.join(args)}\n{child.stderr[-2000:]}")
    last = child.stdout.strip().splitlines()[-1] if child.stdout.strip() else "{}"
    try:
        printed = json.loads(last)
    except json.JSONDecodeError:
        printed = {}
    return child.wall, child.peak_mib / 1024, printed


def me(what: str, path: Path, out: Path) -> list[str]:
    return [sys.executable, __file__, "--child", what, str(path), str(out)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--big", action="store_true", help="also 3M cases (memory of the audit)")
    ap.add_argument("--peer-max", type=int, default=100_000, help="whole-file peer up to N")
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "curate-bench-ke")
    ap.add_argument(
        "--no-peer",
        action="store_true",
        help="only curate's rows (end to end, staged, tables, load): no peer, no parquet",
    )
    ap.add_argument(
        "--parquet", action="store_true", help="with --no-peer: the parquet row all the same"
    )
    ap.add_argument(
        "--end-to-end",
        action="store_true",
        help="only the end-to-end CLI run and its floor per size (~2.5x the floor's time)",
    )
    ap.add_argument(
        "--stages",
        action="store_true",
        help="with the end-to-end run: its --durations (load, rules, render), and where one "
        "core's CPU goes in the load (one more child, about a single-threaded load's time)",
    )
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    record.add_arguments(ap)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    recorder = record.start(args)
    recorded: list[record.Row] = []
    if not HARD.exists():
        sys.exit(f"real data missing: {HARD}")
    sizes = [*args.sizes, *([3_000_000] if args.big else [])]
    rows: list[str] = []

    def row(*cells: Any) -> None:
        line = "| " + " | ".join(str(c) for c in cells) + " |"
        rows.append(line)
        print(line, flush=True)

    print("| what | cases | wall | peak RSS | note |\n|---|---:|---:|---:|---|", flush=True)
    report = args.workdir / "report.json"
    for n in sizes:
        big = n > 1_000_000
        jsonl, pq_path = inputs(
            args.workdir,
            n,
            parquet=not big and not args.end_to_end and (args.parquet or not args.no_peer),
        )
        mib = jsonl.stat().st_size / 2**20
        cli = [sys.executable, "-m", "curate", "audit", "mquake", str(jsonl), "-f", "json"]
        wall, rss, _ = run([*cli, "-o", str(report), *(["--durations"] if args.stages else [])])
        cpu = LAST_CPU[0]
        durations = json.loads(report.read_text()).get("durations", {})
        fwall, frss, fl = run(me("floor", jsonl, report))
        assert fl["cases"] == n, fl
        fcpu = LAST_CPU[0]
        stages = ""
        if args.stages:
            _, _, st = run(me("load-stages", jsonl, report), env={"POLARS_MAX_THREADS": "1"})
            stages = stages_note(durations, st, fl["load"])
        end = EndToEnd(wall, rss, cpu, fwall, frss, fcpu, stages)
        row(
            "`curate audit mquake` end to end (CLI)",
            f"{n:,}",
            f"{wall:.1f} s",
            f"{rss:.2f} GiB",
            f"JSON Lines, {mib:,.0f} MiB; process CPU {cpu:.1f} s; "
            f"**{wall / fwall:.2f}x the floor's time**{end.verdict(n)}",
        )
        row(
            "  **floor**: `orjson.loads` of every line, one core, nothing kept",
            f"{n:,}",
            f"{fwall:.1f} s",
            f"{frss:.2f} GiB",
            f"process CPU {fcpu:.1f} s ({fl['load']:.1f} s parsing)",
        )
        if stages:
            print(f"  where the time goes: {stages}", flush=True)
        recorded.append(end_to_end_row(n, mib, end))
        if big or args.end_to_end:
            continue
        wall, rss, st = run(me("staged", jsonl, report))
        row(
            "  staged: load / rules / render",
            f"{n:,}",
            f"{st['load']:.1f} / {st['rules']:.1f} / {st['render']:.1f} s",
            f"{rss:.2f} GiB",
            f"peak after load {st['peak_after_load']:.2f} GiB; {st['findings']:,} findings",
        )
        # polars' allocator (jemalloc) hands freed pages back after ~10 s; told to do it at once,
        # the drop-one-table figures are what each table holds, not what is left to decay
        _, _, tb = run(
            me("tables", jsonl, report),
            env={"_RJEM_MALLOC_CONF": "dirty_decay_ms:0,muzzy_decay_ms:0"},
        )
        per_case = sum(tb[f"{t}_resident"] for t in ("hops", "edits", "cases"))
        row(
            "  tables resident per case (dropped one by one after the load)",
            f"{n:,}",
            "",
            f"{tb['rss_after_load'] / 2**30:.2f} GiB after load",
            f"{per_case:,.0f} B/case: hops {tb['hops_resident']:,.0f}, edits "
            f"{tb['edits_resident']:,.0f}, cases {tb['cases_resident']:,.0f} (polars estimate "
            f"{sum(tb[f'{t}_estimated'] for t in ('hops', 'edits', 'cases')):,.0f})",
        )
        wall, rss, ld = run(me("load", jsonl, report))
        cpu = LAST_CPU[0]
        row(
            "load (read + validate + tables), JSON Lines",
            f"{n:,}",
            f"{ld['load']:.1f} s",
            f"{rss:.2f} GiB",
            f"{n / ld['load']:,.0f} cases/s; process CPU {cpu:.1f} s (import included)",
        )
        _, rss1, ld1 = run(me("load-1", jsonl, report))
        row(
            "  the same load in one thread (`--workers 1`)",
            f"{n:,}",
            f"{ld1['load']:.1f} s",
            f"{rss1:.2f} GiB",
            f"process CPU {LAST_CPU[0]:.1f} s; default workers "
            f"{ld1['load'] / ld['load']:.2f}x faster",
        )
        if not args.no_peer:
            peer = "peer" if n <= args.peer_max else "peer-batched"
            _, prss, pr = run(me(peer, jsonl, report))
            assert pr["cases"] == ld["cases"] == n, (pr, ld)
            label = "whole file" if peer == "peer" else "per 8,192 records"
            row(
                f"**peer**: `TypeAdapter(list[MQuAKECase]).validate_json`, {label}",
                f"{n:,}",
                f"{pr['load']:.1f} s",
                f"{prss:.2f} GiB",
                f"curate load = {ld['load'] / pr['load']:.2f}x the peer's time",
            )
            ours, theirs = ld["load"], pr["load"]
            recorded.append(
                record.Row(
                    id="ke-load" + ("" if n == 100_000 else f"-{n}"),
                    section="peer",
                    benchmark="knowledge editing: load",
                    workload=f"{record.size(n)} MQuAKE cases, JSON Lines, {mib:,.0f} MiB "
                    "(read + validate + tables)",
                    peer=f"`TypeAdapter(list[MQuAKECase]).validate_json`, {label}",
                    curate_figure=f"{ours:.1f} s",
                    peer_figure=f"{theirs:.1f} s",
                    ratio=f"**{theirs / ours:.1f}×** ({ours:.1f} s vs {theirs:.1f} s)",
                    rss_curate=f"{rss:.2f}",
                    rss_peer=f"{prss:.2f} GiB",
                    values={"load_s": ours, "peer_s": theirs, "cpu_s": cpu},
                )
            )
        if pq_path is None:
            continue
        _, qrss, qd = run(me("load", pq_path, report))
        assert qd["cases"] == n
        row(
            "load, parquet of the same raw cases",
            f"{n:,}",
            f"{qd['load']:.1f} s",
            f"{qrss:.2f} GiB",
            f"{ld['load'] / qd['load']:.1f}x faster than JSON Lines; process CPU "
            f"{LAST_CPU[0]:.1f} s ({cpu / LAST_CPU[0]:.1f}x less)",
        )
        _, srss, sd = run(me("load", small_groups(pq_path), report))
        assert sd["cases"] == n
        row(
            f"  the same parquet in {SMALL_GROUPS:,}-row groups",
            f"{n:,}",
            f"{sd['load']:.1f} s",
            f"{srss:.2f} GiB",
            f"{ld['load'] / sd['load']:.1f}x faster than JSON Lines; process CPU "
            f"{LAST_CPU[0]:.1f} s",
        )
    if recorder:
        recorder.write(*recorded)


#: The 1 M end-to-end targets of the page (issue 36, item 3): the CLI's wall time at most this
#: multiple of the orjson floor's, measured in the same run, and its peak RSS at most this
#: (GB, 10^9 bytes).
TARGET_FLOOR_X, TARGET_GB = 2.0, 2.5


@dataclasses.dataclass(frozen=True)
class EndToEnd:
    """One size's end-to-end CLI run and its floor (``*_gib``: peak RSS in GiB; ``*cpu``: CPU
    seconds, user + system), taken one after the other in the same run."""

    wall: float
    rss_gib: float
    cpu: float
    floor_wall: float
    floor_rss_gib: float
    floor_cpu: float
    #: ``--stages``: where the time went (:func:`stages_note`), else empty
    stages: str = ""

    @property
    def ratio(self) -> float:
        return self.wall / self.floor_wall

    def verdict(self, n: int) -> str:
        """The targets, met or not, where they apply (1 M cases); else nothing."""
        if n != 1_000_000:
            return ""
        fast = "met" if self.ratio <= TARGET_FLOOR_X else "not met"
        lean = "met" if self.rss_gib * 2**30 <= TARGET_GB * 1e9 else "not met"
        return f"; ≤ {TARGET_FLOOR_X:g}x the floor: {fast}; ≤ {TARGET_GB:g} GB RSS: {lean}"


def stages_note(durations: dict[str, float], stages: dict[str, float], floor: float) -> str:
    """The CLI run's own stages (``--durations``: load, the rules with their shared tables,
    render) and one core's CPU per stage of the load (:func:`load_stages`), each stage's also
    as a multiple of the floor's parsing time."""
    load = durations.get("load", 0.0)
    render = durations.get("render", 0.0)
    rules = sum(durations.values()) - load - render
    parts = [f"CLI run: load {load:.1f} s, rules {rules:.1f} s, render {render:.1f} s"]
    cpu = ", ".join(
        f"{k.removeprefix('stage ')} {v:.1f} s ({v / floor:.2f}x)"
        for k, v in stages.items()
        if k.startswith("stage ")
    )
    parts.append(
        f"one core's CPU in the load, as multiples of the floor's {floor:.1f} s: {cpu}; "
        f"the whole load on one worker {stages['load, one worker']:.1f} s "
        f"({stages['load, one worker'] / floor:.2f}x)"
    )
    return "; ".join(parts)


def end_to_end_row(n: int, mib: float, e: EndToEnd) -> record.Row:
    """The page's row for one size's end-to-end CLI run against its floor."""
    ids = {100_000: "ke-memory-100k", 1_000_000: "ke-1m-end-to-end"}
    return record.Row(
        id=ids.get(n, f"ke-end-to-end-{n}"),
        section="target",
        benchmark=f"knowledge editing: {'memory at 100k' if n == 100_000 else 'end to end'}",
        workload=f"{record.size(n)} cases end to end (CLI), JSON Lines, {mib:,.0f} MiB, "
        "`curate audit mquake … -f json`",
        curate_figure=f"**{e.ratio:.2f}×** the floor ({e.wall:.1f} s vs {e.floor_wall:.1f} s), "
        f"**{e.rss_gib:.2f} GiB** peak; CPU {e.cpu:.1f} s",
        peer="`orjson.loads` of every line, one core, nothing kept (the floor)",
        peer_figure=f"{e.floor_wall:.1f} s, CPU {e.floor_cpu:.1f} s",
        ratio=f"{e.ratio:.2f}× the floor's time",
        target=e.verdict(n).removeprefix("; ") or "—",
        rss_curate=f"{e.rss_gib:.2f} GiB",
        rss_peer=f"{e.floor_rss_gib:.2f} GiB",
        note=f"where the time goes: {e.stages}" if e.stages else None,
        values={
            "wall_s": e.wall,
            "peak_gib": e.rss_gib,
            "cpu_s": e.cpu,
            "floor_s": e.floor_wall,
            "floor_cpu_s": e.floor_cpu,
            "floor_peak_gib": e.floor_rss_gib,
            "floor_ratio": e.ratio,
        },
    )


if __name__ == "__main__":
    main()
