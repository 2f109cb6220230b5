"""The ``table`` family's ``--schema`` validation on ``--engine ray`` against the local engine.

The workload: a generated table of 1 M rows (CSV; id, six-word text, label, split, score,
count; one row in ~500 broken: a one-word text or a score above 1) checked against a model
*with a validator* (``field_validator`` on the text), so every row goes through pydantic
(:func:`curate.schemas.records.validate_frame`'s row-wise path, ~µs a row): the family's
expensive stage, which ``--engine ray`` runs as slices of rows on the cluster.

Measured, each in a fresh child process running ``curate audit table`` through the API (wall
time, CPU time of the child, the validation stage's own wall time, peak RSS through GNU time):

* ``local, 1 core``  the local engine pinned to one core (``taskset -c 0``)
* ``local, 2 cores`` the local engine on both cores (the validation runs in this process, as
  the glycan family's parsing does: only polars' own threads use the second core)
* ``ray, 2 nodes``   ``--engine ray`` joining a cluster of two one-CPU nodes started here
  (``bench_ray.Cluster``: ``ray start --head`` + ``ray start --address``); joining is timed,
  starting is not. Peak RSS: the driver's, and the peak of the summed RSS of every process of
  the cluster (sampled every 0.2 s).

Every run's JSON report must equal the ``local, 1 core`` one (checked here too, not only by
``tests/test_ray.py``). The load average is printed before and after: the machine may be shared,
compare ratios within one run.

Run: ``python bench/bench_table_ray.py [--rows 1000000] [--repeat 1] [--record [DIR]]``
(``--record``: the row ``ray-table-<rows>`` of bench/RESULTS.md, Ray against local on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import record  # noqa: E402  (bench/record.py)
from bench_ray import Cluster, _cluster_pids, _load, _rss_mb, ray_row  # noqa: E402

MODEL = """
from typing import Literal

from pydantic import BaseModel, Field, field_validator


class Row(BaseModel):
    id: int
    text: str
    label: Literal["pos", "neg", "neutral"]
    split: Literal["train", "validation", "test"]
    score: float = Field(ge=0, le=1)
    count: int | None = None

    @field_validator("text")
    @classmethod
    def two_words(cls, v: str) -> str:
        if len(v.split()) < 2:
            raise ValueError("fewer than two words")
        return v
"""

WORDS = [
    "the",
    "a",
    "glycan",
    "binds",
    "lectin",
    "sugar",
    "chain",
    "branch",
    "root",
    "leaf",
    "cell",
    "protein",
    "fast",
    "slow",
    "high",
    "low",
    "river",
    "stone",
    "cloud",
    "seed",
]


def write_table(path: Path, rows: int, seed: int = 7) -> None:
    """``rows`` rows of the workload (see the module doc), written as CSV."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(seed)
    words = np.array(WORDS)
    text = [" ".join(r) for r in words[rng.integers(0, len(words), size=(rows, 6))]]
    for i in range(5, rows, 997):
        text[i] = "word"  # the validator refuses it
    score = rng.random(rows).round(4)
    score[7::1009] = 1.5  # the constraint refuses it
    idx = np.arange(rows)
    pl.DataFrame(
        {
            "id": idx,
            "text": text,
            "label": rng.choice(["pos", "neg", "neutral"], rows),
            "split": rng.choice(["train", "validation", "test"], rows, p=[0.8, 0.1, 0.1]),
            "score": score,
            "count": rng.integers(0, 1000, rows),
        }
    ).write_csv(path)


def inputs(rows: int) -> tuple[Path, Path]:
    """The table and its model (generated once per size, kept in the temp folder)."""
    folder = Path(tempfile.gettempdir()) / "curate-bench-table"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"table_{rows}.csv"
    if not path.exists():
        t0 = time.perf_counter()
        tmp = path.with_suffix(".part")
        write_table(tmp, rows)
        tmp.rename(path)
        print(f"  (generated {path} in {time.perf_counter() - t0:.0f} s)")
    models = folder / "models.py"
    if not models.exists() or models.read_text(encoding="utf-8") != MODEL:
        models.write_text(MODEL, encoding="utf-8")
    return path, models


def declaration(models: Path) -> dict[str, str]:
    return {
        "id": "id",
        "label": "label",
        "split": "split",
        "text": "text",
        "schema": f"{models}:Row",
    }


# --------------------------------------------------------------------------- the child


def child(path: str, models: str, engine: str, address: str, out: str) -> None:
    """One audit in this process; writes the JSON report, prints seconds (all, validation)."""
    t0 = time.perf_counter()
    import curate
    import curate.families.table as table
    from curate.core.engine import use_engine
    from curate.reports.render import render_json

    spent = [0.0]
    validate = table.validate_frame

    def timed(*args, **kwargs):
        t = time.perf_counter()
        try:
            return validate(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - t

    table.validate_frame = timed
    with use_engine(engine, address or None):
        report = curate.audit("table", path, **declaration(Path(models)))
    seconds = time.perf_counter() - t0
    Path(out).write_text(render_json(report), encoding="utf-8")
    invalid = int(report.summary()["by_rule"].get("TB001", {}).get("findings", 0))
    print(json.dumps({"seconds": seconds, "validate": spent[0], "tb001": invalid}))


# --------------------------------------------------------------------------- measuring


def measure(
    path: Path, models: Path, engine: str, *, cores: int, cluster: Cluster | None, out: Path
) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--child", str(path), str(models), engine]
    cmd += [cluster.address if cluster else "", str(out)]
    if cores == 1 and engine == "local":
        cmd = ["taskset", "-c", "0", *cmd]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled"}
    peak = [0.0]
    stop = threading.Event()
    before = _cpu(_cluster_pids(str(cluster.base))) if cluster else {}
    seen: dict[int, float] = dict(before)

    def sample() -> None:
        # a job's workers end with its driver: their CPU is read while they run
        while cluster is not None and not stop.is_set():
            pids = _cluster_pids(str(cluster.base))
            peak[0] = max(peak[0], _rss_mb(pids))
            seen.update(_cpu(pids))
            stop.wait(0.2)

    t = threading.Thread(target=sample)
    t.start()
    with record.child_peak(cmd) as (wrapped, own_peak):
        proc = subprocess.Popen(wrapped, stdout=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        driver_rss = own_peak(usage)
    stop.set()
    t.join()
    if cluster is not None:
        seen.update(_cpu(_cluster_pids(str(cluster.base))))
    cluster_cpu = sum(v - before.get(pid, 0.0) for pid, v in seen.items())
    text = proc.stdout.read().decode() if proc.stdout else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"table {engine} failed: {text[-1500:]}")
    res = json.loads(text.strip().splitlines()[-1])
    return {
        "seconds": res["seconds"],
        "validate": res["validate"],
        "cpu": usage.ru_utime + usage.ru_stime,
        "cluster_cpu": cluster_cpu,
        "tb001": res["tb001"],
        "rss": driver_rss,
        "cluster_rss": peak[0],
    }


def _cpu(pids: set[int]) -> dict[int, float]:
    """CPU seconds (user + system) each of ``pids`` has used so far (sampled every 0.2 s while
    a run lasts, so a worker's last fraction of a second may be missed)."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            out[pid] = (int(fields[11]) + int(fields[12])) / tick
        except (OSError, ValueError, IndexError):
            pass
    return out


RUNS = [("local, 1 core", "local", 1), ("local, 2 cores", "local", 2), ("ray, 2 nodes", "ray", 1)]


def run(path: Path, models: Path, cluster: Cluster, repeat: int, work: Path) -> dict:
    best: dict[str, dict[str, float]] = {}
    reports: dict[str, bytes] = {}
    for _ in range(repeat):
        for name, engine, cores in RUNS:
            out = work / f"table-{engine}-{cores}.json"
            r = measure(
                path, models, engine, cores=cores, cluster=cluster if engine == "ray" else None,
                out=out,
            )  # fmt: skip
            reports[name] = out.read_bytes()
            if name not in best or r["seconds"] < best[name]["seconds"]:
                best[name] = r
    same = all(reports[n] == reports["local, 1 core"] for n, _, _ in RUNS)
    print(f"\nJSON reports identical on every engine: {same}")
    print(f"TB001 findings (rows the model refuses): {best['local, 1 core']['tb001']:,}")
    print(
        "| run | seconds | x local 1 core | validation s | CPU s (driver + cluster) | "
        "peak RSS MB (driver) | peak RSS MB (Ray cluster) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    one = best["local, 1 core"]["seconds"]
    for name, _, _ in RUNS:
        b = best[name]
        ray = name.startswith("ray")
        cl = f"{b['cluster_rss']:.0f}" if ray else "-"
        cpu = f"{b['cpu']:.1f} + {b['cluster_cpu']:.1f}" if ray else f"{b['cpu']:.1f}"
        print(
            f"| {name} | {b['seconds']:.2f} | {b['seconds'] / one:.2f} | {b['validate']:.2f} | "
            f"{cpu} | {b['rss']:.0f} | {cl} |"
        )
    two, ray = best["local, 2 cores"], best["ray, 2 nodes"]
    print(
        f"Ray against local 2 cores: {100 * (ray['seconds'] / two['seconds'] - 1):+.1f} % "
        f"overall, {100 * (ray['validate'] / two['validate'] - 1):+.1f} % on the validation"
    )
    if not same:
        raise SystemExit("reports differ between engines")
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    record.add_arguments(ap)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    recorder = record.start(args)
    path, models = inputs(args.rows)
    size = path.stat().st_size / 1e6
    print(f"table {path}: {args.rows:,} rows, {size:.0f} MB CSV; model {models}:Row (a validator)")
    work = Path(tempfile.mkdtemp(prefix="cb-table-ray-"))
    cluster = Cluster(work / "c")
    try:
        print(f"{_load()} (before)")
        best = run(path, models, cluster, args.repeat, work)
        print(f"{_load()} (after)")
    finally:
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)  # the reports and the cluster's logs
    if recorder:
        recorder.write(
            ray_row(
                f"ray-table-{args.rows}",
                "table --schema (a validator model)",
                f"{record.size(args.rows)} rows, CSV, {size:.0f} MB, every row through pydantic",
                best,
            )
        )


if __name__ == "__main__":
    main()
