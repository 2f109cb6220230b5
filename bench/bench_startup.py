"""Start-up: what ``curate --help``, ``--version``, ``rules`` and a family's ``--help`` cost as
whole processes, against ``python -c pass`` run by the same interpreter in the same run.

Why whole processes: the cost is the interpreter's start plus every import on the way, which a
timer inside the process cannot see. Runs are paired (the peer, then each command, in turn, so
a busy moment hits both) and the median of ``--runs`` is reported with each command's peak RSS.
Targets (issue 36): at most 0.15 s wall and at most 6x ``python -c pass``.

Run: ``python bench/bench_startup.py`` (~30 s); ``--record`` writes row ``startup``;
``--explain`` also prints the largest imports of each command (``-X importtime``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import record

CURATE = str(Path(sys.executable).parent / "curate")
COMMANDS = {
    "curate --help": [CURATE, "--help"],
    "curate --version": [CURATE, "--version"],
    "curate rules": [CURATE, "rules"],
    "curate rules glycan": [CURATE, "rules", "glycan"],
    "curate audit mquake --help": [CURATE, "audit", "mquake", "--help"],
    "completion: curate export mquake --e<TAB>": [CURATE],
}
COMPLETION = {
    "_CURATE_COMPLETE": "complete_bash",
    "COMP_WORDS": "curate export mquake --e",
    "COMP_CWORD": "3",
}
PEER = [sys.executable, "-c", "pass"]
LIMIT_S, LIMIT_RATIO = 0.15, 6.0


def run_once(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one run of ``cmd``, output discarded."""
    run = record.run_child(cmd, env)
    if run.code != 0:
        raise SystemExit(f"bench_startup: {' '.join(cmd)} failed")
    return run.wall, run.peak_mib


def explain(cmd: list[str], env: dict[str, str] | None, top: int = 8) -> None:
    """The largest top-level imports of ``cmd`` (cumulative microseconds, ``-X importtime``)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "curate", *cmd[1:]],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|")
        if not cumulative.strip().isdigit():  # the header line
            continue
        if name.startswith(" ") and not name.startswith("  "):  # imported at the top level
            rows.append((int(cumulative), name.strip()))
    rows.sort(reverse=True)
    print("    " + ", ".join(f"{name} {us / 1000:.0f} ms" for us, name in rows[:top]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--explain", action="store_true")
    record.add_arguments(parser)
    args = parser.parse_args()
    recorder = record.start(args)

    walls: dict[str, list[float]] = {name: [] for name in COMMANDS}
    peaks: dict[str, list[float]] = {name: [] for name in COMMANDS}
    base: list[float] = []
    base_peak: list[float] = []
    for name, cmd in COMMANDS.items():  # one warm-up each: the page cache, pyc files
        run_once(cmd, COMPLETION if name.startswith("completion") else None)
    for _ in range(args.runs):
        for name, cmd in COMMANDS.items():
            wall, rss = run_once(PEER)
            base.append(wall)
            base_peak.append(rss)
            wall, rss = run_once(cmd, COMPLETION if name.startswith("completion") else None)
            walls[name].append(wall)
            peaks[name].append(rss)
    floor = statistics.median(base)
    print(
        f"python -c pass: {floor * 1000:.0f} ms, {max(base_peak):.0f} MiB (median of {len(base)})"
    )
    values: dict[str, dict[str, float]] = {}
    for name in COMMANDS:
        wall = statistics.median(walls[name])
        values[name] = {"s": wall, "ratio": wall / floor, "rss_mib": max(peaks[name])}
        ok = wall <= LIMIT_S and wall / floor <= LIMIT_RATIO
        print(
            f"{name:<44} {wall * 1000:5.0f} ms  {wall / floor:4.1f}x  "
            f"{max(peaks[name]):5.0f} MiB  {'ok' if ok else 'OVER'}"
        )
        if args.explain:
            explain(COMMANDS[name], COMPLETION if name.startswith("completion") else None)
    if recorder:
        figures = "; ".join(
            f"{n.removeprefix('curate ')} {v['s'] * 1000:.0f} ms" for n, v in values.items()
        )
        recorder.write(
            record.Row(
                id="startup",
                section="peer",
                benchmark="start-up: help, version, rules, completion",
                workload=f"each command as a new process, median of {args.runs} paired runs",
                curate_figure=figures,
                peer="python -c pass (same interpreter, same run)",
                peer_figure=f"{floor * 1000:.0f} ms",
                ratio="; ".join(
                    f"{n.removeprefix('curate ')} **{v['ratio']:.1f}×** ({v['s'] * 1000:.0f} ms)"
                    for n, v in values.items()
                )
                + f" (target <= {LIMIT_RATIO:g}× and <= {LIMIT_S * 1000:.0f} ms)",
                target=f"<= {LIMIT_S} s and <= {LIMIT_RATIO:g}x",
                rss_curate=f"{max(v['rss_mib'] for v in values.values()):.0f} MiB",
                rss_peer=f"{max(base_peak):.0f} MiB",
                values={"python -c pass": {"s": floor}, **values},
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
