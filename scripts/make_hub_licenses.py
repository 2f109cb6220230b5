"""Refresh ``curate/data/hub_licenses.json`` (the licence identifiers the Hub accepts) from the
table in huggingface/hub-docs' ``docs/hub/repositories-licenses.md``.

Why a dated copy: neither ``huggingface_hub`` nor ``datasets`` ships the list, and curate never
downloads at run time. The Hub adds licences (69 identifiers in April 2024, 83 in August 2026:
eupl-1.2, the Llama 3.x and 4 licences, openmdw-1.x, ...): run this against a checkout of
hub-docs and commit the result, which names the commit and date it was copied from.

    python scripts/make_hub_licenses.py PATH/TO/hub-docs            # a checkout
    python scripts/make_hub_licenses.py --file repositories-licenses.md --commit SHA --date D
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dated_copy import at_head, write

OUT = Path(__file__).resolve().parents[1] / "curate" / "data" / "hub_licenses.json"
DOC = "docs/hub/repositories-licenses.md"
#: A table row: ``| Full name | `identifier` |``, some with a trailing ``<!-- info: ... -->``.
ROW = re.compile(r"^\|\s*(?P<name>.+?)\s*\|\s*`(?P<id>[^`]+)`\s*\|(\s*<!--.*-->)?\s*$")


def parse(text: str) -> dict[str, str]:
    """Identifier → full name, in the table's order (between the ``region licenses``
    comments)."""
    start = text.index("<!-- region licenses -->")
    end = text.index("<!-- endregion -->", start)
    out: dict[str, str] = {}
    for line in text[start:end].splitlines():
        m = ROW.match(line.strip())
        if m:
            out[m["id"]] = m["name"].replace("\\*", "*")
    if len(out) < 50:
        raise SystemExit(f"only {len(out)} licences found: is this the licences page?")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", nargs="?", type=Path, help="a git checkout of hub-docs")
    parser.add_argument("--file", type=Path, help="the page itself, instead of a checkout")
    parser.add_argument("--commit", help="with --file: the hub-docs commit it is from")
    parser.add_argument("--date", help="with --file: that commit's date (YYYY-MM-DD)")
    args = parser.parse_args()
    if args.checkout is not None:
        text, commit, date = at_head(args.checkout, DOC)
    else:
        if args.file is None or not args.commit or not args.date:
            parser.error("give a hub-docs checkout, or --file with --commit and --date")
        text, commit, date = args.file.read_text("utf-8"), args.commit, args.date
    source = (
        "The Hugging Face Hub's licence identifiers, from the table 'License identifier "
        f"(to use in repo card)' in {DOC} of the huggingface/hub-docs repository (commit "
        f"{commit}, {date}), published as "
        "https://huggingface.co/docs/hub/repositories-licenses. Neither huggingface_hub "
        "nor datasets ships this list. Refresh with scripts/make_hub_licenses.py."
    )
    write(OUT, source, commit, date, "licenses", parse(text))


if __name__ == "__main__":
    main()
