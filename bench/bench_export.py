"""Export benchmark: `curate export mquake` on 20k and 200k realistic cases, time and peak RSS,
beside the peer a user would write instead.

The cases are the 429 real MQuAKE-hard cases replicated with re-keyed ids (``bench_ke``'s
generator: replica r maps ``Q123`` to ``Q123~r`` and suffixes labels, questions and answers), so
every case is valid and distinct. They are written as JSON Lines (the streamed input format) and
exported by the real command in a child process; its peak RSS is the child's own (through GNU
time, ``record.child_peak``: not this script's), its wall time from the clock around it. The
target is a 200k-case export under 2 GB peak RSS (before streaming: 10.7 GB).

The peer, measured the same way on the same file in the same run: ``datasets``'
``Dataset.from_json(file).to_parquet(out)``, the shortest way from JSON Lines to parquet a
Hugging Face user has (pyarrow's JSON reader into an Arrow cache on disk, then one parquet file).
It validates nothing and audits nothing, so it bounds from below what curate's extra work costs.

Run: ``python bench/bench_export.py`` (defaults: 20,000 and 200,000 cases; ~10 minutes on
2 cores, ~3 GB of temporary disk). ``--markdown`` prints the table as markdown for a dated
section of bench/history/ (bench/RESULTS.md takes the 200k row's figures);
``--no-peer`` skips ``datasets``.

``--record [DIR]`` (see ``bench/record.py``) also writes the page's row for the largest size
measured with the peer: ``export`` at 200k cases, ``export-<n>`` otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import record  # bench/record.py: what every script's --record shares
from bench_ke import HARD, rekey_record  # the KE benchmark's generator, shared


def write_cases(path: Path, n: int, real: list[dict]) -> None:
    with open(path, "wb") as fh:
        for i in range(n):
            fh.write(orjson.dumps(rekey_record(real[i % len(real)], i // len(real))) + b"\n")


#: The peer: what a ``datasets`` user writes to turn the JSON Lines into parquet.
PEER = """
import sys, datasets
datasets.disable_progress_bars()
ds = datasets.Dataset.from_json(sys.argv[1], cache_dir=sys.argv[3])
ds.to_parquet(sys.argv[2])
print(f"{ds.num_rows} rows")
"""


def run_export(src: Path, out: Path) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MiB, stdout) of one ``curate export`` child process."""
    return run_child(
        [sys.executable, "-m", "curate", "export", "mquake", str(src), "--out", str(out)]
    )


def run_peer(src: Path, out: Path, cache: Path) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MiB, stdout) of the ``datasets`` peer in a child process."""
    return run_child([sys.executable, "-c", PEER, str(src), str(out), str(cache)])


def run_child(cmd: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MiB, stdout) of one child process."""
    # Output to files, not pipes: the child is reaped with os.wait4 (for its own rusage), so
    # nothing may wait on it through subprocess.
    # The child's own peak through GNU time: wait4's would carry this process's high-water mark.
    with (
        tempfile.TemporaryFile() as out_fh,
        tempfile.TemporaryFile() as err_fh,
        record.child_peak(cmd) as (wrapped, own_peak),
    ):
        t0 = time.perf_counter()
        proc = subprocess.Popen(wrapped, stdout=out_fh, stderr=err_fh)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        rss = own_peak(usage)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out_fh.seek(0)
        err_fh.seek(0)
        stdout, stderr = out_fh.read().decode(), err_fh.read().decode(errors="replace")
    if proc.returncode != 0:
        sys.exit(f"{cmd[1:4]} failed ({proc.returncode}): {stderr}")
    return wall, rss, stdout


def describe(out: Path) -> dict:
    """Shards, rows and row-group figures of an exported folder, from the parquet footers."""
    files = sorted((out / "data").glob("*.parquet"))
    rows = 0
    groups = []
    for f in files:
        meta = pq.read_metadata(f)
        rows += meta.num_rows
        groups += [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    card = (out / "README.md").read_text(encoding="utf-8")
    num_bytes = next(int(line.split(":")[1]) for line in card.splitlines() if "num_bytes:" in line)
    return {
        "files": len(files),
        "rows": rows,
        "row_groups": len(groups),
        "max_group_rows": max(groups),
        "parquet_mib": sum(f.stat().st_size for f in files) / 2**20,
        "arrow_mib": num_bytes / 2**20,
    }


def machine() -> str:
    """CPU, cores, memory and library versions, for the record."""
    import datasets
    import polars
    import pyarrow
    import pydantic

    info = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next((ln.split(":", 1)[1].strip() for ln in info if ln.startswith("model name")), "?")
    meminfo = Path("/proc/meminfo").read_text().splitlines()
    mem = next(int(ln.split()[1]) for ln in meminfo if ln.startswith("MemTotal"))
    return (
        f"{cpu}, {os.cpu_count()} cores, {mem / 2**20:.0f} GiB; Python {sys.version.split()[0]}, "
        f"polars {polars.__version__}, pyarrow {pyarrow.__version__}, pydantic "
        f"{pydantic.__version__}, datasets {datasets.__version__}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[20_000, 200_000])
    ap.add_argument("--markdown", action="store_true", help="print the table as markdown")
    ap.add_argument("--no-peer", action="store_true", help="skip the datasets peer")
    record.add_arguments(ap)
    args = ap.parse_args()
    if not HARD.exists():
        sys.exit(f"real data missing: {HARD}")
    recorder = record.start(args)
    real = json.loads(HARD.read_text(encoding="utf-8"))
    print(machine(), flush=True)
    results = []
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "cases.jsonl"
            write_cases(src, n, real)
            size_mib = src.stat().st_size / 2**20
            wall, rss, said = run_export(src, Path(tmp) / "hf")
            info = describe(Path(tmp) / "hf")
            shutil.rmtree(Path(tmp) / "hf")
            peer = None
            if not args.no_peer:
                out = Path(tmp) / "peer.parquet"
                p_wall, p_rss, p_said = run_peer(src, out, Path(tmp) / "cache")
                assert pq.read_metadata(out).num_rows == n, p_said
                peer = (p_wall, p_rss, out.stat().st_size / 2**20)
        assert info["rows"] == n, (info, n)
        results.append((n, size_mib, wall, rss, info, peer))
        print(
            f"export {n:>9,} cases ({size_mib:,.0f} MiB JSONL): {wall:7.1f} s, "
            f"peak RSS {rss:,.0f} MiB; {info['files']} files, {info['row_groups']} row groups "
            f"(<= {info['max_group_rows']:,} rows), {info['arrow_mib']:,.0f} MiB Arrow, "
            f"{info['parquet_mib']:,.0f} MiB parquet  [{said.strip()}]",
            flush=True,
        )
        if peer:
            print(
                f"  peer datasets from_json + to_parquet: {peer[0]:7.1f} s, peak RSS "
                f"{peer[1]:,.0f} MiB, {peer[2]:,.0f} MiB parquet",
                flush=True,
            )
    if args.markdown:
        print()
        print(
            "| cases | JSON Lines | tool | wall time | peak RSS | shards | row groups | Arrow "
            "| parquet |"
        )
        print("|---:|---:|---|---:|---:|---:|---:|---:|---:|")
        for n, size_mib, wall, rss, info, peer in results:
            print(
                f"| {n:,} | {size_mib:,.0f} MiB | `curate export` (validate, audit, export) | "
                f"{wall:.1f} s | **{rss:,.0f} MiB** | {info['files']} | "
                f"{info['row_groups']} (≤ {info['max_group_rows']:,} rows) | "
                f"{info['arrow_mib']:,.0f} MiB | {info['parquet_mib']:,.0f} MiB |"
            )
            if peer:
                print(
                    f"| {n:,} | {size_mib:,.0f} MiB | `datasets` from_json + to_parquet | "
                    f"{peer[0]:.1f} s | {peer[1]:,.0f} MiB | 1 | | | {peer[2]:,.0f} MiB |"
                )
    with_peer = [r for r in results if r[5]]
    if recorder and with_peer:
        n, size_mib, wall, rss, _, peer = max(with_peer, key=lambda r: r[0])
        recorder.write(export_row(n, size_mib, wall, rss, peer))
    elif recorder:
        print("not recorded: the page's row compares with the peer (run without --no-peer)")


def export_row(n: int, size_mib: float, wall: float, rss: float, peer: tuple) -> record.Row:
    """The page's row: curate's export against the ``datasets`` peer on ``n`` cases."""
    p_wall, p_rss, _ = peer
    ratio = p_wall / wall
    text = f"**{ratio:.2f}×**" if ratio < 1 else f"**{ratio:.1f}×**"
    if ratio < 1:
        text += f": the peer is ~{1 / ratio:.0f}× faster"
    return record.Row(
        id="export" + ("" if n == 200_000 else f"-{n}"),
        section="peer",
        benchmark="export",
        workload=f"{record.size(n)} MQuAKE cases, JSON Lines, {size_mib:,.0f} MiB → HF folder",
        peer="`datasets` `Dataset.from_json(f).to_parquet(out)` (no validation, no audit)",
        curate_figure=f"{wall:.1f} s",
        peer_figure=f"{p_wall:.1f} s",
        ratio=f"{text} ({p_wall:.1f} s vs {wall:.1f} s)",
        rss_curate=f"{rss:,.0f}",
        rss_peer=f"{p_rss:,.0f} MiB",
        values={"wall_s": wall, "peak_mib": rss, "peer_wall_s": p_wall, "peer_peak_mib": p_rss},
    )


if __name__ == "__main__":
    main()
