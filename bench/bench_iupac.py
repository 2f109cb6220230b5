"""Throughput of curate.schemas.iupac against glycowork's glycan_to_nxGraph on real glycans.

Reads the IUPAC-condensed columns of the three glycowork files in ``shared/data/glycan`` (next to
the repository), shuffles the well-formed rows deterministically and repeats them to at least
``--rows`` strings, then reports glycans per second:

* ``canonical_key`` uncached: every call parses (the LRU wrapper is bypassed and the per-token
  caches start cold), i.e. the cost of unique strings;
* ``canonical_key`` as used: the bounded LRU cache starts empty and serves repeated rows;
* ``parse`` (full dataclass tree) and ``parse`` + uncached ``canonical_key`` together;
* glycowork's ``glycan_to_nxGraph`` uncached (its own LRU cleared, each string once) on a prefix of
  the same row order, because it is slow, and as used (its LRU on, same rows as ours).

Each figure is the best of ``--repeat`` runs, because a shared machine only ever slows a run
down. Ratios compare the two libraries on the same strings. Without glycowork installed the
script prints a skip line for it and still reports curate's rates.
"""

from __future__ import annotations

import argparse
import csv
import random
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from curate.schemas import iupac  # noqa: E402

DATA = REPO.parent / "shared" / "data" / "glycan"
SOURCES = (
    ("glycowork_upstream/glyco_targets_species_seq_all_V3.csv", "target"),
    ("glycowork_upstream/v3_sugarbase.csv", "glycan"),
    ("glycowork_sample.csv", "glycan"),
)


def read_rows(data: Path) -> list[str]:
    """Every glycan cell of the three files, duplicates included (they are the real workload)."""
    rows: list[str] = []
    for name, column in SOURCES:
        with (data / name).open(newline="", encoding="utf-8") as handle:
            rows.extend(record[column] for record in csv.DictReader(handle))
    return rows


def rate(func: Callable[[str], object], strings: Sequence[str], repeat: int,
         reset: Callable[[], None] = lambda: None) -> float:
    """Best glycans/s over ``repeat`` timed passes; ``reset`` runs before each pass, untimed."""
    best = 0.0
    for _ in range(repeat):
        reset()
        start = time.perf_counter()
        for s in strings:
            func(s)
        best = max(best, len(strings) / (time.perf_counter() - start))
    return best


def clear_curate() -> None:
    iupac.canonical_key.cache_clear()
    iupac._normalize_residue.cache_clear()
    iupac._decode_link.cache_clear()


def parse_and_key(s: str) -> None:
    iupac.parse(s)
    iupac.canonical_key.__wrapped__(s)


def table(lines: Iterable[tuple[str, float, str]]) -> None:
    print(f"{'operation':<58}{'glycans/s':>12}  {'vs glycowork':<}")
    for label, value, ratio in lines:
        print(f"{label:<58}{value:>12,.0f}  {ratio}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="folder with the glycan CSVs")
    parser.add_argument("--rows", type=int, default=100_000, help="strings per timed pass")
    parser.add_argument("--glycowork-rows", type=int, default=10_000,
                        help="prefix of the rows for uncached glycowork (it is slow)")
    parser.add_argument("--repeat", type=int, default=3, help="passes per figure (best counts)")
    args = parser.parse_args(argv)

    if not args.data.is_dir():
        print(f"SKIP bench_iupac: data folder {args.data} not found")
        return 0
    raw = read_rows(args.data)
    good = [s for s in raw if not isinstance(iupac.try_parse(s), iupac.IUPACError)]
    random.Random(0).shuffle(good)
    rows = (good * (args.rows // len(good) + 1))[: args.rows]
    distinct_rows = list(dict.fromkeys(rows))
    subset = distinct_rows[: args.glycowork_rows]
    bad = sorted({s for s in raw if isinstance(iupac.try_parse(s), iupac.IUPACError)})
    print(
        f"{len(rows):,} glycans per pass: {len(raw):,} rows of {len(SOURCES)} files, "
        f"{len(set(good)):,} distinct well-formed strings, shuffled and repeated; "
        f"{len(raw) - len(good):,} rows ({len(bad)} distinct strings) are malformed and left out. "
        f"Best of {args.repeat}."
    )

    key_uncached = rate(iupac.canonical_key.__wrapped__, rows, args.repeat, clear_curate)
    key_cached = rate(iupac.canonical_key, rows, args.repeat, clear_curate)
    parsed = rate(iupac.parse, rows, args.repeat, clear_curate)
    both = rate(parse_and_key, rows, args.repeat, clear_curate)
    key_subset = rate(iupac.canonical_key.__wrapped__, subset, args.repeat, clear_curate)
    parse_subset = rate(iupac.parse, subset, args.repeat, clear_curate)

    try:
        from glycowork.motif.graph import glycan_to_nxGraph, glycan_to_nxGraph_int
    except ImportError:
        table([
            ("curate canonical_key, uncached", key_uncached, ""),
            ("curate canonical_key, LRU as used", key_cached, ""),
            ("curate parse (dataclass tree)", parsed, ""),
            ("curate parse + canonical_key, uncached", both, ""),
        ])
        print("SKIP glycowork comparison: glycowork is not installed (pip install glycowork)")
        return 0

    gw_uncached = rate(glycan_to_nxGraph, subset, args.repeat, glycan_to_nxGraph_int.cache_clear)
    gw_cached = rate(glycan_to_nxGraph, rows, min(args.repeat, 2),
                     glycan_to_nxGraph_int.cache_clear)
    table([
        (f"curate canonical_key, uncached ({len(subset):,} distinct)", key_subset,
         f"{key_subset / gw_uncached:.1f}x"),
        (f"curate parse (dataclass tree) ({len(subset):,} distinct)", parse_subset,
         f"{parse_subset / gw_uncached:.1f}x"),
        (f"glycowork glycan_to_nxGraph, uncached ({len(subset):,} distinct)", gw_uncached,
         "1.0x"),
        ("curate canonical_key, uncached", key_uncached, f"{key_uncached / gw_uncached:.1f}x"),
        ("curate parse (dataclass tree)", parsed, f"{parsed / gw_uncached:.1f}x"),
        ("curate parse + canonical_key, uncached", both, f"{both / gw_uncached:.1f}x"),
        ("curate canonical_key, LRU as used", key_cached, f"{key_cached / gw_cached:.1f}x"),
        ("glycowork glycan_to_nxGraph, LRU as used", gw_cached, "1.0x"),
    ])
    print("Uncached curate rows are compared with uncached glycowork, cached with cached.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
