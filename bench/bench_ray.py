"""``--engine ray`` against the local engine, in the same run, on the same files.

Measured, each in a fresh child process (wall time and the child's own peak RSS, through GNU time):

* ``local, 1 core``  the local engine pinned to one core (``taskset -c 0``; icrl ``--workers 1``)
* ``local, 2 cores`` the local engine on both cores (icrl ``--workers 2``: its process pool)
* ``ray, 2 nodes``   ``--engine ray`` joining a cluster of two one-CPU nodes started here
  (``ray start --head`` + ``ray start --address``, as the tests do); the time includes joining
  the cluster, not starting it (a user's cluster is already up). Peak RSS: the driver's, and
  beside it the peak of the summed RSS of every process of the cluster (raylets, GCS, workers;
  sampled from /proc every 0.2 s) — the memory a Ray run really takes on this machine.

Every run's JSON report (timings masked) must equal the ``local, 1 core`` one: the benchmark
checks the engines agree on the benchmark's own data, not only the tests'.

Files (generated once, kept): an XLand-layout HDF5 (``bench_icrl.py``'s generator and file
name; default 64 tasks × 32 histories × 60,928 steps = 125 M steps, 3.6 GB decompressed, 0.26 GB
on disk; ``--tasks 512``: 2.1 GB on disk, 29 GB decompressed, the issue's multi-GB file)
and a MQuAKE-style JSON Lines file (``bench_ke_scale.py``'s generator; default 1 M
cases). Then the projection of a full XLand-100B audit (28,876 task groups, 112.6 G steps) on
1, 8 and 64 two-core machines from the measured per-step (hence per-group) cost and the measured
Ray efficiency.

With ``--parquet`` the MQuAKE cases are measured as parquet too (``bench_ke_scale.py``'s copy,
same folder). Knowledge editing on Ray reads whole input shards in the workers (JSON Lines byte
ranges, parquet row groups); the load average is printed before and after each family.

Run: ``python bench/bench_ray.py [--tasks 64 --histories 32 --steps 60928] [--cases 1000000]
[--skip-ke] [--skip-icrl] [--parquet] [--repeat 1]``. The machine may be shared: compare ratios
in one run.

``--record [DIR]`` (see ``bench/record.py``) also writes one page row per file measured: Ray's
extra time over the local engine on 2 cores, with both peaks (``ray-xland-<tasks>`` for 32
histories × 60,928 steps, ``ray-mquake-jsonl`` / ``ray-mquake-parquet`` for 1 M cases; other
shapes and sizes get ids of their own).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import record  # noqa: E402  (bench/record.py: what every script's --record shares)

XLAND_100B_STEPS = 112_598_843_392
XLAND_100B_GROUPS = 28_876
RAY_BIN = Path(sys.executable).with_name("ray")
_TIMING = re.compile(rb'"(scan_seconds|scan_workers|seconds)": [0-9.]+')


# --------------------------------------------------------------------------- the child


def child(family: str, path: str, engine: str, address: str, workers: int, out: str) -> None:
    """One audit in this process; writes the JSON report to ``out``, prints the seconds."""
    t0 = time.perf_counter()
    import curate
    from curate.core.engine import use_engine
    from curate.reports.render import render_json

    kw = {"workers": workers} if family == "icrl" else {}
    with use_engine(engine, address or None):
        report = curate.audit(family, path, **kw)
    seconds = time.perf_counter() - t0
    Path(out).write_text(render_json(report), encoding="utf-8")
    print(json.dumps({"seconds": seconds}))


# --------------------------------------------------------------------------- the cluster


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cluster_pids(marker: str) -> set[int]:
    procs: dict[int, tuple[str, int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            raw = Path(f"/proc/{d}/cmdline").read_bytes()
            ppid = int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        procs[int(d)] = (raw.replace(b"\0", b" ").decode("utf-8", "replace"), ppid)
    found = {p for p, (c, _) in procs.items() if marker in c} - {os.getpid()}
    grew = True
    while grew:
        grew = False
        for p, (_, pp) in procs.items():
            if pp in found and p not in found:
                found.add(p)
                grew = True
    return found


def _rss_mb(pids: set[int]) -> float:
    total = 0
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


class Cluster:
    """Two one-CPU nodes on 127.0.0.1 with their own temp dirs; stopped by PID, never by name."""

    def __init__(self, base: Path) -> None:
        self.base = base
        # the workers import curate from this checkout, as the children do (not from wherever
        # the interpreter's curate is installed: another worktree's)
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "RAY_AUTH_MODE": "disabled",
            "RAY_USAGE_STATS_ENABLED": "0",
        }
        port = _free_port()
        self.address = f"127.0.0.1:{port}"
        common = ["--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--disable-usage-stats"]
        head = ["--head", "--port", str(port), "--include-dashboard=false"]
        self._start([*head, "--temp-dir", str(base / "head"), *self._agent(), *common])
        node = ["--address", self.address, "--temp-dir", str(base / "worker")]
        self._start([*node, *self._agent(), *common])

    def _agent(self) -> list[str]:
        return ["--dashboard-agent-listen-port", str(_free_port())]

    def _start(self, args: list[str]) -> None:
        done = subprocess.run(
            [str(RAY_BIN), "start", *args], env=self.env, capture_output=True, text=True
        )
        if done.returncode:
            self.stop()
            raise SystemExit(f"ray start failed: {done.stderr[-1500:]}")

    def stop(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in _cluster_pids(str(self.base)):
                with contextlib.suppress(OSError):
                    os.kill(pid, sig)
            time.sleep(1.0)


# --------------------------------------------------------------------------- measuring


def measure(
    family: str, path: Path, engine: str, *, cores: int, cluster: Cluster | None, out: Path
) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--child", family, str(path), engine]
    cmd += [cluster.address if cluster else "", str(cores), str(out)]
    if cores == 1 and engine == "local":
        cmd = ["taskset", "-c", "0", *cmd]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled"}
    peak = [0.0]
    stop = threading.Event()

    def sample() -> None:
        while cluster is not None and not stop.is_set():
            peak[0] = max(peak[0], _rss_mb(_cluster_pids(str(cluster.base))))
            stop.wait(0.2)

    t = threading.Thread(target=sample)
    t.start()
    # the driver's own peak (GNU time): wait4's would carry this process's high-water mark
    with record.child_peak(cmd) as (wrapped, own_peak):
        proc = subprocess.Popen(wrapped, stdout=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        driver_rss = own_peak(usage)
    stop.set()
    t.join()
    text = proc.stdout.read().decode() if proc.stdout else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{family} {engine} failed: {text[-1500:]}")
    res = json.loads(text.strip().splitlines()[-1])
    return {"seconds": res["seconds"], "rss": driver_rss, "cluster_rss": peak[0]}


def xland_file(args: argparse.Namespace) -> tuple[Path, int, int]:
    from icrl_data import write_file

    folder = Path(tempfile.gettempdir()) / "curate-bench-icrl"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"xland_{args.tasks}x{args.histories}x{args.steps}.hdf5"
    if not path.exists():
        t0 = time.perf_counter()
        tmp = path.with_suffix(".part")
        write_file(tmp, tasks=args.tasks, histories=args.histories, steps=args.steps, seed=7)
        tmp.rename(path)
        print(f"  (generated {path} in {time.perf_counter() - t0:.0f} s)")
    return path, args.tasks, args.tasks * args.histories * args.steps


def ke_files(args: argparse.Namespace) -> tuple[Path, Path | None]:
    """The JSON Lines file (and with ``--parquet`` its parquet copy) of ``bench_ke_scale.py``,
    in its folder: generated once, reused by every bench that asks for the same size."""
    from bench_ke_scale import inputs

    return inputs(Path(tempfile.gettempdir()) / "curate-bench-ke", args.cases, args.parquet)


def _load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def run_family(
    label: str, family: str, path: Path, cluster: Cluster, repeat: int, work: Path
) -> dict[str, dict[str, float]]:
    runs = [
        ("local, 1 core", "local", 1),
        ("local, 2 cores", "local", 2),
        ("ray, 2 nodes", "ray", 1),
    ]
    best: dict[str, dict[str, float]] = {}
    reports: dict[str, bytes] = {}
    for _ in range(repeat):
        for name, engine, cores in runs:
            out = work / f"{family}-{engine}-{cores}.json"
            r = measure(
                family, path, engine, cores=cores, cluster=cluster if engine == "ray" else None,
                out=out,
            )  # fmt: skip
            reports[name] = _TIMING.sub(b"-", out.read_bytes())
            if name not in best or r["seconds"] < best[name]["seconds"]:
                best[name] = r
    # local 2 cores differs in its options (icrl --workers 2); Ray ran with the same options
    same = reports["ray, 2 nodes"] == reports["local, 1 core"]
    print(f"\n{label}: JSON report of Ray identical to local (timings masked): {same}")
    print("| run | seconds | x local 1 core | peak RSS MB (driver) | peak RSS MB (Ray cluster) |")
    print("|---|---:|---:|---:|---:|")
    one = best["local, 1 core"]["seconds"]
    for name, _, _ in runs:
        b = best[name]
        cl = f"{b['cluster_rss']:.0f}" if name.startswith("ray") else "-"
        print(f"| {name} | {b['seconds']:.2f} | {b['seconds'] / one:.2f} | {b['rss']:.0f} | {cl} |")
    two, ray = best["local, 2 cores"]["seconds"], best["ray, 2 nodes"]["seconds"]
    print(f"Ray overhead over local 2 cores: {100 * (ray / two - 1):+.1f} %")
    if not same:
        raise SystemExit("reports differ between engines")
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=64)
    ap.add_argument("--histories", type=int, default=32)
    ap.add_argument("--steps", type=int, default=60_928)
    ap.add_argument("--cases", type=int, default=1_000_000)
    ap.add_argument("--skip-icrl", action="store_true")
    ap.add_argument("--skip-ke", action="store_true")
    ap.add_argument(
        "--parquet", action="store_true", help="also the MQuAKE cases as parquet (row groups)"
    )
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    record.add_arguments(ap)
    args = ap.parse_args()
    if args.child:
        family, path, engine, address, cores, out = args.child
        child(family, path, engine, address, int(cores), out)
        return
    recorder = record.start(args)
    recorded: list[record.Row] = []
    work = Path(tempfile.mkdtemp(prefix="cb-ray-"))
    icrl = ke = None
    if not args.skip_icrl:
        icrl = xland_file(args)
    if not args.skip_ke:
        ke = ke_files(args)
    cluster = Cluster(work / "c")
    try:
        if icrl is not None:
            path, groups, steps = icrl
            size = path.stat().st_size
            print(
                f"XLand file: {groups} groups, {steps:,} steps, {size / 1e9:.2f} GB on disk, "
                f"{steps * 29 / 1e9:.2f} GB decompressed"
            )
            print(f"{_load()} (before)")
            best = run_family(
                "in-context RL (XLand layout)", "icrl", path, cluster, args.repeat, work
            )
            print(f"{_load()} (after)")
            project(best, steps)
            shape = (args.histories, args.steps)
            recorded.append(
                ray_row(
                    f"ray-xland-{groups}"
                    + ("" if shape == (32, 60_928) else f"x{args.histories}x{args.steps}"),
                    "in-context RL",
                    f"XLand layout, {groups} groups, {steps / 1e6:,.0f} M steps, "
                    f"{size / 1e9:.2f} GB on disk ({steps * 29 / 1e9:.2f} GB decompressed)",
                    best,
                )
            )
        if ke is not None:
            jsonl, parquet = ke
            for kind, path in (("JSON Lines", jsonl), ("parquet", parquet)):
                if path is None:
                    continue
                size = path.stat().st_size / 1e9
                print(f"\nMQuAKE {kind} file {path}: {args.cases:,} cases, {size:.2f} GB")
                print(f"{_load()} (before)")
                best = run_family(
                    f"knowledge editing (MQuAKE {kind})", "ke", path, cluster, args.repeat, work
                )
                print(f"{_load()} (after)")
                suffix = "jsonl" if kind == "JSON Lines" else "parquet"
                recorded.append(
                    ray_row(
                        f"ray-mquake-{suffix}"
                        + ("" if args.cases == 1_000_000 else f"-{args.cases}"),
                        "knowledge editing",
                        f"MQuAKE {record.size(args.cases)} cases, {kind}, {size:.2f} GB",
                        best,
                    )
                )
    finally:
        cluster.stop()
        # the reports and the cluster's logs (~200 MB a run): made here, for this run only
        shutil.rmtree(work, ignore_errors=True)
    if recorder:
        recorder.write(*recorded)


def ray_row(
    row_id: str, family: str, workload: str, best: dict[str, dict[str, float]]
) -> record.Row:
    """The page's row: Ray on 2 one-CPU nodes against the local engine on 2 cores."""
    local, ray = best["local, 2 cores"], best["ray, 2 nodes"]
    return record.Row(
        id=row_id,
        section="ray",
        benchmark=f"Ray vs local: {family}",
        workload=workload,
        peer="`--engine local`, 2 cores",
        curate_figure=f"{ray['seconds']:.2f} s",
        peer_figure=f"{local['seconds']:.2f} s",
        ratio=f"**{100 * (ray['seconds'] / local['seconds'] - 1):+.1f} %**",
        rss_curate=f"{ray['rss']:,.0f} + {ray['cluster_rss']:,.0f} MB",
        rss_peer=f"{local['rss']:,.0f}",
        values=best,
    )


def project(best: dict[str, dict[str, float]], steps: int) -> None:
    """A full XLand-100B audit on N two-core machines, from this run's measured rates."""
    per_step = best["local, 1 core"]["seconds"] / steps  # one core, everything included
    per_group = per_step * XLAND_100B_STEPS / XLAND_100B_GROUPS
    # Ray's efficiency on this run: work done per CPU-second against one local core.
    eff = best["local, 1 core"]["seconds"] / (2 * best["ray, 2 nodes"]["seconds"])
    print(
        f"\nper-step cost {per_step * 1e9:.0f} ns on one core -> {per_group:.1f} s per average "
        f"XLand-100B task group ({XLAND_100B_STEPS / XLAND_100B_GROUPS / 1e6:.2f} M steps); "
        f"Ray efficiency per CPU in this run {eff:.2f}"
    )
    print("| machines (2 cores each) | CPUs | projected hours | groups per CPU |")
    print("|---:|---:|---:|---:|")
    for n in (1, 8, 64):
        cpus = 2 * n
        eff_n = 1.0 if n == 1 else eff
        # one machine: the local engine's two processes (scaling measured above); more: Ray
        if n == 1:
            hours = (
                XLAND_100B_STEPS
                * per_step
                / 3600
                * (best["local, 2 cores"]["seconds"] / best["local, 1 core"]["seconds"])
            )
        else:
            hours = XLAND_100B_GROUPS * per_group / (cpus * eff_n) / 3600
        print(f"| {n} | {cpus} | {hours:.2f} | {XLAND_100B_GROUPS / cpus:.0f} |")


if __name__ == "__main__":
    main()
