"""Glycan audit benchmark: full audits of the real GlycanML source tables.

Target (issue): a full taxonomy audit of the 13,209-row species file well under 2 s. The parse
rate against glycowork is measured by ``bench/bench_iupac.py``.

Run: ``python bench/bench_glycan.py`` (each figure is the best of 3 runs, parser cache cleared).
"""

from __future__ import annotations

import time
from pathlib import Path

from curate.families import get_family
from curate.schemas.iupac import canonical_key

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "glycan"
FAM = get_family("glycan")
CASES = [
    ("glycowork_upstream/glyco_targets_species_seq_all_V3.csv", None),
    ("glycowork_upstream/v3_sugarbase.csv", None),
    ("glycowork_upstream/v3_sugarbase.csv", "immunogenicity"),
    ("glycowork_sample.csv", None),
]


def main() -> None:
    print(f"{'file':<42} {'task':<15} {'rows':>7} {'load+audit':>11} {'rows/s':>9} findings")
    for rel, task in CASES:
        path = DATA / rel
        best = float("inf")
        for _ in range(3):
            canonical_key.cache_clear()
            t = time.perf_counter()
            data = FAM.load([path], task=task)
            report = FAM.audit(data)
            best = min(best, time.perf_counter() - t)
        rows = data.tables[0].raw.height
        print(
            f"{rel.split('/')[-1]:<42} {data.tables[0].task:<15} {rows:>7,} {best:>9.2f} s "
            f"{rows / best:>9,.0f} {report.findings.height:,}"
        )


if __name__ == "__main__":
    main()
