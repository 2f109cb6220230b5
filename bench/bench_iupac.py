"""Throughput of curate.schemas.iupac against glycowork's glycan_to_nxGraph on real glycans.

Real strings: the IUPAC-condensed columns of the three glycowork files in ``shared/data/glycan``
(next to the repository) and, unless ``--no-glycowork-tables``, the glycan strings of the tables
glycowork ships in its wheel (``v12_df_species.csv``, ``v12_sugarbase.json.xz`` and the glycan
columns of ``v12_glycan_binding.csv``): real data from a dev dependency, used because the shared
files hold about 21,000 distinct strings and the target asks for 100,000 (there are not 100,000
distinct real strings in both together either: the script prints how many there are). Strings
either library rejects are left out and counted. Reported, glycans per second:

* ``canonical_key`` with its LRU bypassed (``canonical_key.__wrapped__``: every call parses) on
  every distinct string. Its per-token caches (residue, linkage and ``)``-unit spellings,
  bounded by the vocabulary) and its run cache (``_decode_segment``: the bracket-free runs of
  residues of branched glycans, such as the ``Man(b1-4)GlcNAc(b1-4)GlcNAc`` of every N-glycan)
  are warm: filled by a pass over the same strings, as after the first rows of any real column,
  which for runs that occur in one string only is generous. ``cold caches`` clears them all
  first, so every cache fills during the timed pass over the distinct strings in shuffled
  order: the honest figure. ``run cache bypassed`` empties the run cache and sets its size to
  0 for the pass (every run decoded from its units at every call; per-token caches warm);
* ``parse``: the full dataclass tree, canonical key included;
* glycowork's ``glycan_to_nxGraph`` with its LRU bypassed: ``glycan_to_nxGraph_int`` (where the
  ``lru_cache(50_000)`` sits) replaced by its ``__wrapped__`` for the pass, so no graph is looked
  up or retained — the peer for the three lines above;
* both libraries with their LRU on, as used: cleared before the pass, filled by it, over
  ``--rows`` strings drawn from the real rows (repeats included). glycowork's LRU then retains
  up to 50,000 graphs, which the cyclic garbage collector walks: that cost is part of "as used".

The cyclic GC stays on in every measurement (``gc.isenabled()`` is printed). ``--scaling``
instead times ``canonical_key`` and ``try_parse`` on long glycans (chains of 10k to 116k
residues, about 1 MiB, and nesting that ties siblings at every level), each in a fresh process,
with its peak RSS: time and memory must grow linearly with the length.

``--heldout`` instead runs the parser over every distinct string of glycowork's bundled tables
(the glycan column of ``df_glycan`` and ``df_species``, the glycan columns of ``glycan_binding``,
the motif list, the first column of every bundled glycomics and antibody-array dataset) that is
not in the shared data files, and prints how many it accepts and rejects, per table, and the
rejects by class (compositions, motif syntax, sample ids and labels, malformed structures), each
malformed structure with its error. These are the strings issue 9 measured the parser on; the
tests quote some of them but never read the tables, which change between glycowork versions.

First, with or without the data, the adversarial inputs of the test suite (a 5,001-residue chain,
2,000-deep nesting, three malformed giants) are timed against the 5 s budget the tests used to
assert; the figure is printed here because a wall-clock assertion does not belong in a test.

The measurements run interleaved, ``--repeat`` rounds of all of them, and each figure is the best
of its rounds: a shared machine only ever slows a pass down, and interleaving exposes both
libraries to the same load. Without glycowork installed the script prints a skip line for it
and still reports curate's rates.

``--record [DIR]`` (see ``bench/record.py``) also writes the rows of bench/RESULTS.md this run
measured: ``iupac-canonical-key`` (cold caches against glycowork with its LRU bypassed: the
honest pair) from the default mode, ``iupac-long-glycans`` (the 100,000-residue chain) from
``--scaling``. The rates are measured in one process (interleaved, the same load on both), so
the peak RSS of each side comes from a child of its own that makes one such pass over the same
distinct strings (imports included: what using the library costs), printed after the rates.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import gc
import json
import lzma
import random
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # runnable as ``python bench/bench_iupac.py`` without installing

import record  # noqa: E402  (bench/record.py: what every script's --record shares)

from curate.schemas import iupac  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "glycan"
SOURCES = (
    ("glycowork_upstream/glyco_targets_species_seq_all_V3.csv", "target"),
    ("glycowork_upstream/v3_sugarbase.csv", "glycan"),
    ("glycowork_sample.csv", "glycan"),
)
KEY = iupac.canonical_key.__wrapped__  # the parse behind the LRU


class Job(NamedTuple):
    """One timed measurement: ``reset`` runs untimed before every pass over ``strings``."""

    label: str
    func: Callable[[str], object]
    strings: Sequence[str]
    reset: Callable[[], None]
    baseline: str | None  # label of the glycowork job this one is compared with
    context: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext


def read_rows(data: Path) -> list[str]:
    """Every glycan cell of the three files, duplicates included (they are the real workload)."""
    rows: list[str] = []
    for name, column in SOURCES:
        with (data / name).open(newline="", encoding="utf-8") as handle:
            rows.extend(record[column] for record in csv.DictReader(handle))
    return rows


def glycowork_rows() -> dict[str, list[str]]:
    """The glycan strings of the tables in glycowork's wheel, per table (empty without it)."""
    try:
        from importlib.resources import files

        base = files("glycowork.glycan_data")
    except ModuleNotFoundError:
        return {}
    out: dict[str, list[str]] = {}
    csv.field_size_limit(1 << 30)
    with (base / "v12_df_species.csv").open(newline="", encoding="utf-8") as handle:
        out["v12_df_species.csv"] = [r["glycan"] for r in csv.DictReader(handle)]
    with lzma.open(str(base / "v12_sugarbase.json.xz")) as handle:
        table = json.load(handle)
    at = table["columns"].index("glycan")
    out["v12_sugarbase.json.xz"] = [row[at]["value"] for row in table["data"]]
    with (base / "v12_glycan_binding.csv").open(newline="", encoding="utf-8") as handle:
        header = next(csv.reader(handle))
    # the matrix's columns are glycans, apart from its protein/target/name columns
    out["v12_glycan_binding.csv (columns)"] = [h for h in header if "(" in h]
    return out


@contextlib.contextmanager
def glycowork_lru_bypassed():
    """glycowork's graph LRU out of the way: its cached ``glycan_to_nxGraph_int`` replaced by the
    function under the cache, which ``glycan_to_nxGraph`` looks up at every call."""
    from glycowork.motif import graph

    cached = graph.glycan_to_nxGraph_int
    graph.glycan_to_nxGraph_int = cached.__wrapped__
    try:
        yield
    finally:
        graph.glycan_to_nxGraph_int = cached


def clear_curate() -> None:
    iupac.canonical_key.cache_clear()
    iupac._normalize_residue.cache_clear()
    iupac._decode_link.cache_clear()
    iupac._decode_unit.cache_clear()
    iupac._decode_segment.cache_clear()


@contextlib.contextmanager
def run_cache_bypassed():
    """curate's run cache out of the way, as glycowork's LRU is in ``glycowork_lru_bypassed``:
    emptied, and with size 0 it stores nothing, so every run is decoded at every call."""
    memo = iupac._decode_segment
    memo.cache_clear()
    size, memo.size = memo.size, 0
    try:
        yield
    finally:
        memo.size = size


def warm_curate(strings: Sequence[str]) -> Callable[[], None]:
    """A reset that fills curate's per-token caches with what ``strings`` need."""
    distinct = list(dict.fromkeys(strings))
    return lambda: [KEY(s) for s in distinct] and None


def run(jobs: list[Job], rounds: int) -> dict[str, float]:
    """Best glycans/s of every job over ``rounds`` interleaved rounds."""
    best = dict.fromkeys((job.label for job in jobs), 0.0)
    for _ in range(rounds):
        for job in jobs:
            job.reset()
            with job.context():
                start = time.perf_counter()
                for s in job.strings:
                    job.func(s)
                took = time.perf_counter() - start
            best[job.label] = max(best[job.label], len(job.strings) / took)
    return best


#: What the test suite once timed (tests/test_iupac.py keeps the correctness checks).
ADVERSARIAL_BUDGET_S = 5.0


def adversarial_inputs() -> list[tuple[str, str, bool]]:
    """(label, string, parses) for the adversarial inputs of ``tests/test_iupac.py``."""
    return [
        ("5,001-residue chain", "Glc(a1-4)" * 5000 + "Glc", True),
        ("2,000-deep nesting", "[" * 2000 + "Glc(a1-6)" + "]Glc(a1-6)" * 2000 + "Glc", True),
        ("60,000-character residue", "Glc" + "NAc" * 20_000 + "X", False),
        ("45,000-character chain, cut off", "Glc(a1-4)" * 5000 + "Gl", False),
        ("10,000 open brackets", "[" * 10_000, False),
    ]


def time_adversarial(rounds: int) -> float:
    """Seconds for one pass over the adversarial inputs (best of ``rounds``, caches cleared)."""
    best = float("inf")
    for _ in range(rounds):
        clear_curate()
        start = time.perf_counter()
        for label, text, parses in adversarial_inputs():
            result = iupac.try_parse(text)
            assert isinstance(result, iupac.IUPACError) != parses, label
        best = min(best, time.perf_counter() - start)
    return best


def scaling_input(kind: str, residues: int) -> str:
    """A long glycan: a linear chain, or nesting where every level ties two siblings on one
    linkage (the case that compares sibling texts)."""
    if kind == "chain":
        return "Gal(b1-4)" * residues + "Glc"
    if kind == "cut-off chain":  # malformed at the very end: the diagnosis runs on it all
        return "Gal(b1-4)" * residues + "Gl"
    if kind == "crafted ties":
        # The one known quadratic shape: at every level a 21-residue chain beside the deeper
        # levels on one linkage, so the siblings' texts agree beyond the 128 characters a node
        # keeps and are written out to compare. ``residues`` is the number of levels.
        text = "Gal(?1-?)" * 30 + "Gal"
        for _ in range(residues):
            text = "Gal(?1-?)" * 21 + "[" + text + "(?1-?)]Glc"
        return text
    depth = residues // 2
    return "Gal(?1-?)[" * depth + "Gal(?1-?)" + "]Gal(?1-?)" * depth + "Glc"


def measure_one(kind: str, residues: int, what: str) -> None:
    """Time one call in this fresh process and print seconds and peak RSS (VmHWM, MiB)."""
    text = scaling_input(kind, residues)
    start = time.perf_counter()
    if what == "key":
        try:
            result: object = KEY(text)
        except iupac.IUPACError as error:
            result = error
    else:
        result = iupac.try_parse(text)
    seconds = time.perf_counter() - start
    peak = record.own_peak_mib()  # VmHWM: ru_maxrss would carry the parent's high-water mark
    ok = f"rejected@{result.position}" if isinstance(result, iupac.IUPACError) else "ok"
    print(f"{len(text)} {seconds:.4f} {peak:.0f} {ok}")


#: (kind, residues) measured by --scaling: the issue's chain lengths, and about 1 MB.
SCALING = [
    ("chain", 10_000),
    ("chain", 30_000),
    ("chain", 100_000),
    ("chain", 116_000),  # 1,044,003 characters, just under the 1 MiB cap
    ("chain", 117_000),  # 1,053,003 characters: rejected with a position
    ("cut-off chain", 116_000),
    ("tied nesting", 10_000),
    ("tied nesting", 30_000),
    ("tied nesting", 100_000),
    # levels, not residues: not linear (see bench/history/); 1,000 levels is ~200 KB
    ("crafted ties", 250),
    ("crafted ties", 500),
    ("crafted ties", 1_000),
]


def scaling() -> dict[tuple[str, int, str], tuple[int, float, float]]:
    """Each case in a fresh interpreter, so that its peak RSS is its own; returns
    {(kind, residues, op): (characters, seconds, peak MiB)}."""
    import subprocess

    results = {}
    print(
        f"{'input':<28}{'chars':>11}{'op':>7}{'seconds':>9}{'us/char':>9}{'peak MiB':>10}  result"
    )
    for kind, residues in SCALING:
        for what in ("key", "parse"):
            out = subprocess.run(
                [sys.executable, __file__, "--one", kind, str(residues), what],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.split()
            chars, seconds, peak, ok = int(out[0]), float(out[1]), out[2], out[3]
            unit = "levels" if kind == "crafted ties" else "residues"
            label = f"{kind}, {residues:,} {unit}"
            print(
                f"{label:<28}{chars:>11,}{what:>7}{seconds:>9.3f}"
                f"{seconds / chars * 1e6:>9.3f}{peak:>10}  {ok}"
            )
            results[(kind, residues, what)] = (chars, seconds, float(peak))
    return results


#: The page's long-glycan row: parse of this chain, its time per character against the shortest
#: chain's. Linear time: at most :data:`LINEAR_SLACK` times as much per character. Quadratic time
#: would be 10× per character from 10,000 to 100,000 residues; 2× tells the two apart and leaves
#: room for a shared machine's noise (the short parse takes ~15 ms, one timing; 1.5× failed on
#: noise once, at 0.25 against 0.16 µs/char).
LONG_CHAIN, SHORT_CHAIN, LINEAR_SLACK = 100_000, 10_000, 2.0


def long_glycans_row(results: dict[tuple[str, int, str], tuple[int, float, float]]) -> record.Row:
    """The ``iupac-long-glycans`` row from :func:`scaling`'s results."""
    chars, seconds, peak = results[("chain", LONG_CHAIN, "parse")]
    short_chars, short_seconds, short_peak = results[("chain", SHORT_CHAIN, "parse")]
    per_char, short_per_char = seconds / chars * 1e6, short_seconds / short_chars * 1e6
    met = "met" if per_char <= LINEAR_SLACK * short_per_char else "not met"
    return record.Row(
        id="iupac-long-glycans",
        section="target",
        benchmark="IUPAC parser: long glycans",
        workload=f"one chain of {LONG_CHAIN:,} residues ({chars:,} characters)",
        curate_figure=f"**{seconds:.2f} s** parse ({per_char:.2f} µs/char; "
        f"{short_per_char:.2f} at {SHORT_CHAIN:,} residues)",
        target=f"linear time (µs/char within {LINEAR_SLACK:g}× of the {SHORT_CHAIN:,}-residue "
        f"chain's): {met}",
        rss_curate=f"{peak:.0f} MiB ({short_peak:.0f} at {SHORT_CHAIN:,} residues)",
        values={f"{k}, {r}, {op}": list(v) for (k, r, op), v in results.items()},
    )


#: Monosaccharide symbols of glycan compositions (H3N4F1S2, Hex2HexNAc4NeuAc1, H5N4F1Sulf1).
COMPOSITION = re.compile(
    r"(?:(?:HexNAc|HexN|HexA|Hex|dHex|NeuAc|NeuGc|Neu5Ac|Neu5Gc|Kdn|Fuc|Sulf|Su|Pent|Ac|"
    r"[HNFSGP])\d*){2,}"
)


def heldout_strings(known: set[str]) -> dict[str, str]:
    """Distinct strings of glycowork's bundled tables that are not in ``known``: {string: table}."""
    from importlib import resources

    import pandas as pd
    from glycowork.glycan_data import loader

    found: dict[str, str] = {}

    def add(table: str, values: object) -> None:
        for value in values:  # type: ignore[attr-defined]
            if isinstance(value, str) and value not in known:
                found.setdefault(value, table)

    add("df_glycan", loader.df_glycan.glycan)
    add("df_species", loader.df_species.glycan)
    add("glycan_binding columns", loader.glycan_binding.columns)
    add("motif_list", loader.motif_list.motif)
    folder = resources.files("glycowork.glycan_data") / "datasets"
    for item in sorted(folder.iterdir(), key=lambda f: f.name):
        # glycan profiles (glycomics, antibody arrays); glycoproteomics and lectin arrays key
        # their rows by protein site or lectin, not by glycan
        if item.name.startswith(("glycomics_", "Ab_array_")):
            xz = "xz" if item.name.endswith(".xz") else None
            with item.open("rb") as handle:
                frame = pd.read_csv(handle, encoding="utf-8-sig", compression=xz)
            add("glycomics datasets", frame.iloc[:, 0])
    return found


def reject_class(text: str) -> str:
    """What a rejected string is, judged from its shape alone (not from the parser's error)."""
    if COMPOSITION.fullmatch(text):
        return "composition"
    if "!" in text or (text.startswith("r") and any(c in text for c in "|?{")):
        return "motif syntax"
    if "(" not in text:
        return "sample id or label"
    if re.search(r"\.\d+$", text):
        return "duplicate-column label (glycan + '.1')"
    return "malformed structure"


def heldout(data: Path) -> int:
    """Accepted and rejected held-out strings, the rejects by class."""
    try:
        import glycowork
    except ImportError:
        print("SKIP --heldout: glycowork is not installed (pip install glycowork)")
        return 0
    if not data.is_dir():
        print(f"SKIP --heldout: data folder {data} not found")
        return 0
    strings = heldout_strings(set(read_rows(data)))
    results = {s: iupac.try_parse(s) for s in strings}
    rejected = {s: r for s, r in results.items() if isinstance(r, iupac.IUPACError)}
    print(
        f"{len(strings):,} distinct strings in glycowork {glycowork.__version__}'s bundled tables "
        f"that are not in {len(SOURCES)} shared files: {len(strings) - len(rejected):,} accepted, "
        f"{len(rejected):,} rejected"
    )
    tables = sorted(set(strings.values()))
    print(f"{'table':<28}{'distinct':>10}{'accepted':>10}{'rejected':>10}")
    for table in tables:
        mine = [s for s, t in strings.items() if t == table]
        bad = sum(1 for s in mine if s in rejected)
        print(f"{table:<28}{len(mine):>10,}{len(mine) - bad:>10,}{bad:>10,}")
    classes: dict[str, list[str]] = {}
    for s in sorted(rejected):
        classes.setdefault(reject_class(s), []).append(s)
    print(f"{'rejected, by class':<40}{'strings':>8}  example")
    for name, members in sorted(classes.items(), key=lambda kv: -len(kv[1])):
        print(f"{name:<40}{len(members):>8}  {members[0][:60]}")
    print("malformed structures, each with its error:")
    for s in classes.get("malformed structure", []):
        print(f"  {rejected[s]}  |  {s[:110]}{'...' if len(s) > 110 else ''}")
    return 0


def rss_child(side: str, strings_file: str) -> None:
    """One pass over the strings of ``strings_file`` (one per line) in this fresh process: curate's
    ``canonical_key`` from cold caches, or glycowork's ``glycan_to_nxGraph`` with its LRU
    bypassed. Prints its own peak RSS (``VmHWM``: the parent's would leak into ``ru_maxrss``)."""
    strings = Path(strings_file).read_text(encoding="utf-8").split("\n")
    if side == "curate":
        clear_curate()
        for s in strings:
            KEY(s)
    else:
        from glycowork.motif.graph import glycan_to_nxGraph

        with glycowork_lru_bypassed(), contextlib.redirect_stdout(None):
            for s in strings:
                glycan_to_nxGraph(s)
    print(record.own_peak_mib())


def peak_rss(strings: Sequence[str], sides: Sequence[str]) -> dict[str, float]:
    """Peak RSS in MiB of one pass of each side, each in a child of its own."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="bench-iupac-") as tmp:
        path = Path(tmp) / "strings.txt"
        path.write_text("\n".join(strings), encoding="utf-8")
        peaks = {}
        for side in sides:
            done = subprocess.run(
                [sys.executable, __file__, "--rss-child", side, str(path)],
                capture_output=True,
                text=True,
            )
            if done.returncode:
                raise SystemExit(f"the {side} child failed: {done.stderr[-1000:]}")
            peaks[side] = float(done.stdout.split()[-1])
    return peaks


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) == 5 and sys.argv[1] == "--one":
        measure_one(sys.argv[2], int(sys.argv[3]), sys.argv[4])
        return 0
    if argv is None and len(sys.argv) == 4 and sys.argv[1] == "--rss-child":
        rss_child(sys.argv[2], sys.argv[3])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="folder with the glycan CSVs")
    parser.add_argument(
        "--rows", type=int, default=100_000, help="strings per LRU-on pass (repeats included)"
    )
    parser.add_argument(
        "--distinct",
        type=int,
        default=0,
        help="distinct strings timed with the LRUs bypassed (default 0: all of them)",
    )
    parser.add_argument(
        "--no-glycowork-tables",
        dest="glycowork_tables",
        action="store_false",
        help="only the shared files, not the tables in glycowork's wheel",
    )
    parser.add_argument("--repeat", type=int, default=3, help="rounds (the best pass counts)")
    parser.add_argument(
        "--scaling",
        action="store_true",
        help="only time and measure peak memory on long glycans (up to 1 MiB), one process each",
    )
    parser.add_argument(
        "--heldout",
        action="store_true",
        help="only count accepted/rejected strings of glycowork's bundled tables not in --data",
    )
    record.add_arguments(parser)
    args = parser.parse_args(argv)
    if args.heldout:
        return heldout(args.data)
    recorder = record.start(args)
    if args.scaling:
        results = scaling()
        if recorder:
            recorder.write(long_glycans_row(results))
        return 0

    seconds = time_adversarial(args.repeat)
    verdict = "within" if seconds < ADVERSARIAL_BUDGET_S else "OVER"
    print(
        f"adversarial inputs ({len(adversarial_inputs())} strings, parse or reject): "
        f"{seconds:.3f} s, best of {args.repeat}; {verdict} the {ADVERSARIAL_BUDGET_S:g} s budget"
    )
    if not args.data.is_dir():
        print(f"SKIP bench_iupac real-data rates: data folder {args.data} not found")
        return 0
    gc.enable()  # the cyclic GC is part of what either library costs as used
    raw = read_rows(args.data)
    extra = glycowork_rows() if args.glycowork_tables else {}
    try:
        from glycowork.motif.graph import glycan_to_nxGraph, glycan_to_nxGraph_int
    except ImportError:
        glycowork = None
        print("SKIP glycowork comparison: glycowork is not installed (pip install glycowork)")
    else:
        glycowork = (glycan_to_nxGraph, glycan_to_nxGraph_int.cache_clear)
    everything = raw + [s for rows in extra.values() for s in rows]
    distinct = list(dict.fromkeys(s for s in everything if s))
    ours = {s for s in distinct if isinstance(iupac.try_parse(s), iupac.IUPACError)}
    theirs: set[str] = set()
    if glycowork is not None:
        with glycowork_lru_bypassed(), contextlib.redirect_stdout(None):
            for s in distinct:
                try:
                    glycowork[0](s)
                except Exception:
                    theirs.add(s)
    good = [s for s in distinct if s not in ours and s not in theirs]
    random.Random(0).shuffle(good)
    subset = good[: args.distinct] if args.distinct else good
    pool = [s for s in raw if s and s not in ours and s not in theirs]
    random.Random(1).shuffle(pool)
    rows = (pool * (args.rows // len(pool) + 1))[: args.rows]
    print(
        f"real strings: {len(raw):,} rows of the {len(SOURCES)} shared files"
        + "".join(f" + {len(v):,} of glycowork's {k}" for k, v in extra.items())
        + f" = {len(distinct):,} distinct non-empty strings; {len(ours):,} rejected by curate, "
        f"{len(theirs - ours):,} more by glycowork, left out; {len(good):,} distinct strings both "
        f"accept, {len(subset):,} timed. LRU-on passes: {len(rows):,} strings drawn from the "
        f"{len(pool):,} accepted rows of the shared files (repeats included). Best of "
        f"{args.repeat} interleaved rounds; cyclic GC on: {gc.isenabled()}."
    )

    n, d = f"{len(rows):,} rows", f"{len(subset):,} distinct"
    gw_bypassed = f"glycowork glycan_to_nxGraph, LRU bypassed, {d}"
    gw_cached = f"glycowork glycan_to_nxGraph, LRU on as used, {n}"
    jobs = [
        Job(
            f"curate canonical_key, LRU bypassed, {d}",
            KEY,
            subset,
            warm_curate(subset),
            gw_bypassed,
        ),
        Job(f"curate canonical_key, cold caches, {d}", KEY, subset, clear_curate, gw_bypassed),
        Job(
            f"curate canonical_key, run cache bypassed, {d}",
            KEY,
            subset,
            warm_curate(subset),
            gw_bypassed,
            run_cache_bypassed,
        ),
        Job(
            f"curate parse (tree + key), {d}", iupac.parse, subset, warm_curate(subset), gw_bypassed
        ),
        Job(
            f"curate canonical_key, LRU on as used, {n}",
            iupac.canonical_key,
            rows,
            clear_curate,
            gw_cached,
        ),
    ]
    if glycowork is not None:
        build, clear = glycowork
        jobs.insert(0, Job(gw_bypassed, build, subset, clear, None, glycowork_lru_bypassed))
        jobs.append(Job(gw_cached, build, rows, clear, None))
    rates = run(jobs, args.repeat)

    print(f"{'operation':<62}{'glycans/s':>12}  vs glycowork")
    for job in jobs:
        versus = "1.0x" if job.baseline is None else ""
        if job.baseline in rates:
            versus = f"{rates[job.label] / rates[job.baseline]:.1f}x"
        print(f"{job.label:<62}{rates[job.label]:>12,.0f}  {versus}")
    if glycowork is not None:
        print("Ratios: LRU bypassed against LRU bypassed, LRU on against LRU on.")
    peaks = peak_rss(subset, ["curate"] + (["glycowork"] if glycowork is not None else []))
    print(
        f"peak RSS of one pass over the {len(subset):,} distinct strings, a child process per "
        "side (imports included): "
        + ", ".join(
            f"{side} {mib:,.0f} MiB"
            + (" (canonical_key, cold caches)" if side == "curate" else " (LRU bypassed)")
            for side, mib in peaks.items()
        )
    )
    if recorder:
        if glycowork is None:
            print("not recorded: the row's peer, glycowork, is not installed")
            return 0
        cold = next(job for job in jobs if "cold caches" in job.label)
        ours, theirs = rates[cold.label], rates[gw_bypassed]
        recorder.write(
            record.Row(
                id="iupac-canonical-key",
                section="peer",
                benchmark="IUPAC parser: canonical key",
                workload=f"{len(subset):,} distinct glycan strings, cold caches",
                peer="glycowork `glycan_to_nxGraph` (LRU bypassed)",
                curate_figure=f"{ours:,.0f} glycans/s",
                peer_figure=f"{theirs:,.0f} glycans/s",
                ratio=f"**{ours / theirs:.1f}×** ({ours:,.0f} vs {theirs:,.0f} glycans/s)",
                rss_curate=f"{peaks['curate']:,.0f}",
                rss_peer=f"{peaks['glycowork']:,.0f} MiB",
                values={"glycans_per_s": rates, "best_of": args.repeat, "peak_mib": peaks},
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
