"""Write ``curate/data/families.json``: what the command line shows of curate's own families
(names, title, inputs, options, rules) without importing them (see
:mod:`curate.families.catalogue`).

Run after changing a family's options, a rule or its docstring, and commit the result;
``tests/test_startup.py`` fails while the file and the families disagree.

    python scripts/make_catalogue.py
"""

from __future__ import annotations

import json
from pathlib import Path

from curate.families.catalogue import CATALOGUE, catalogue_of

OUT = Path(__file__).resolve().parents[1] / "curate" / "data" / CATALOGUE


def main() -> None:
    text = json.dumps(catalogue_of(), indent=1, ensure_ascii=False, sort_keys=False) + "\n"
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT} ({len(text):,} bytes)")


if __name__ == "__main__":
    main()
